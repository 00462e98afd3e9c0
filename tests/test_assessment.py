"""The assessment kit (ASSESSMENT.md) covers the course plan (TEACHING.md) and every open exercise of the notebooks.

For every `## Session N ·` of TEACHING.md, ASSESSMENT.md has a section of the same number and title with 3 to 5
learning outcomes (each opening with a verb a teacher can check and naming a notebook section), an exit ticket of 3
to 5 questions with an answer each, and a model answer of 60 to 150 words to every discussion question, quoted in
italics word for word. In the core sessions (those not "(optional)") the exit ticket is given at the end of the
class, so each question cites, in the question or its answer, a section that the session's timetable presents, and
no other; an outcome cites the timetable's sections, or the homework line's inside "(homework: ...)". Every
`### Exercise NN.M` heading of the notebooks that is not "(checked)" has a rubric whose points add up to 10, and the
rubrics name no other exercise. Every reference such as `03 §11` names a numbered heading of that notebook. The
checks return a list of problems, so that the last test can show that each of them fails on a copy of the file with
one piece taken out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSESSMENT = ROOT / "ASSESSMENT.md"
TEACHING = ROOT / "TEACHING.md"
NUMBERED = {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}

SESSION = re.compile(r"^## Session (\d+)(?: \(optional\))? · (.+?)\s*$", re.MULTILINE)
CORE_SESSION = re.compile(r"^## Session (\d+) · ", re.MULTILINE)
SECTIONS = re.compile(r"\b(\d\d) §(\d+)(?:[–-](\d+))?((?:, §\d+(?:[–-]\d+)?)*)")
# A timetable row, "| 35–50 | what | 02 §2–3 | how |"; the section column may be empty.
ROW = re.compile(r"^\| (\d+)–(\d+) \|(.*?)\|(.*?)\|(.*)\|\s*$", re.MULTILINE)
# In a homework line a notebook's sections go on after "and" ("02 §1, §4 and §6–7"). The paper's sections have a
# dot (§3.2.2), or stand in a clause with no notebook number ("§4 of the paper").
HOMEWORK_SECTION = re.compile(r"(?:\b(\d\d) )?§(\d+)(?:[–-](\d+))?(?![.\d])")
NOT_IN_CLASS = re.compile(r"sections of (\d\d) not done in class")
EXERCISE = re.compile(r"^###\s+Exercise\s+(\d\d\.\d+)\s+·\s+(.+?)\s*$")
# Verbs whose result a teacher can see on paper or in a notebook.
VERBS = {
    "Build",
    "Compute",
    "Convert",
    "Count",
    "Derive",
    "Diagnose",
    "Distinguish",
    "Explain",
    "Identify",
    "Interpret",
    "Predict",
    "Read",
    "State",
    "Trace",
    "Write",
}
MAX_WORDS = 10200  # nine sessions and their rubrics


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _blocks(text: str, level: int) -> dict[str, str]:
    """The text under each heading of one level (`##` or `###`), keyed by the heading line without its hashes."""
    parts = re.split(rf"^{'#' * level} (?!#)", text, flags=re.MULTILINE)[1:]
    return {part.split("\n", 1)[0].strip(): part.split("\n", 1)[1] if "\n" in part else "" for part in parts}


def _sessions(text: str) -> dict[int, tuple[str, str]]:
    """Session number -> (title, body up to the next `##` heading)."""
    sessions = {}
    for heading, body in _blocks(text, 2).items():
        if match := SESSION.match(f"## {heading}"):
            sessions[int(match.group(1))] = (match.group(2), body)
    return sessions


def _items(text: str, pattern: str) -> list[str]:
    """The entries of a list whose entries start with `pattern` at the start of a line, continuation lines joined."""
    starts = [m.start() for m in re.finditer(pattern, text, flags=re.MULTILINE)]
    return [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _question_problems(where: str, block: str, low: int, high: int) -> list[str]:
    """A numbered list of `low` to `high` questions, each followed by a non-empty `Answer:` line."""
    questions = _items(block, r"^\d+\. ")
    problems = []
    if not low <= len(questions) <= high:
        problems.append(f"{where}: {len(questions)} questions, expected {low} to {high}")
    for number, question in enumerate(questions, 1):
        if not re.search(r"^\s*Answer: \S", question, flags=re.MULTILINE):
            problems.append(f"{where}, question {number}: no 'Answer:' line")
    return problems


def _discussion(body: str) -> list[str]:
    """The discussion bullets of one TEACHING.md session, whitespace-normalised."""
    match = re.search(r"^Discussion:\n((?:- .*\n(?:  .*\n)*)+)", body, flags=re.MULTILINE)
    return [_normalise(item[2:]) for item in _items(match.group(1), r"^- ")] if match else []


def _model_answers(block: str) -> dict[str, str]:
    """Quoted question (the paragraph in `*...*`, normalised) -> the paragraphs after it, up to the next quote."""
    answers, current = {}, None
    for paragraph in re.split(r"\n\s*\n", block):
        paragraph = paragraph.strip()
        if re.fullmatch(r"\*[^*\s](?:[^*]*[^*\s])?\*", paragraph, flags=re.DOTALL):
            current = _normalise(paragraph[1:-1])
            answers[current] = ""
        elif current is not None and paragraph:
            answers[current] = f"{answers[current]} {paragraph}".strip()
    return answers


def session_problems(assessment: str, teaching: str) -> list[str]:
    problems = []
    planned, written = _sessions(teaching), _sessions(assessment)
    if len(planned) < 8:
        problems.append(f"TEACHING.md has {len(planned)} sessions, expected 8")
    for number, (title, plan) in planned.items():
        if number not in written:
            problems.append(f"no '## Session {number} · {title}' in ASSESSMENT.md")
            continue
        where = f"session {number}"
        if written[number][0] != title:
            problems.append(f"{where}: title {written[number][0]!r}, TEACHING.md has {title!r}")
        parts = _blocks(written[number][1], 3)
        expected = ["Learning outcomes", "Exit ticket", "Model answers to the discussion questions"]
        if list(parts) != expected:
            problems.append(f"{where}: subsections {list(parts)}, expected {expected}")
            continue
        outcomes = _items(parts["Learning outcomes"], r"^- ")
        if not 3 <= len(outcomes) <= 5:
            problems.append(f"{where}: {len(outcomes)} learning outcomes, expected 3 to 5")
        for outcome in outcomes:
            verb = outcome[2:].split()[0] if outcome[2:].split() else ""
            if verb not in VERBS:
                problems.append(f"{where}: outcome {outcome[:50]!r} does not open with a checkable verb")
            if not SECTIONS.search(outcome):
                problems.append(f"{where}: outcome {outcome[:50]!r} names no notebook section")
        problems += _question_problems(f"{where}, exit ticket", parts["Exit ticket"], 3, 5)
        answers = _model_answers(parts["Model answers to the discussion questions"])
        questions = _discussion(plan)
        if not questions:
            problems.append(f"{where}: TEACHING.md lists no discussion questions")
        for question in questions:
            if question not in answers:
                problems.append(f"{where}: no model answer quoting {question[:60]!r}")
            elif not 60 <= len(answers[question].split()) <= 150:
                problems.append(f"{where}: the answer to {question[:40]!r} has {len(answers[question].split())} words")
        problems += [
            f"{where}: {q[:60]!r} is not a discussion question of TEACHING.md" for q in answers if q not in questions
        ]
    problems += [f"session {n} of ASSESSMENT.md is not in TEACHING.md" for n in written if n not in planned]
    return problems


def _expand(match: re.Match) -> set[tuple[str, int]]:
    """The (notebook, section) pairs of one SECTIONS match, such as "08 §1, §7, §11" or "03 §1–4"."""
    ranges = [(match.group(2), match.group(3)), *re.findall(r"§(\d+)(?:[–-](\d+))?", match.group(4) or "")]
    return {(match.group(1), number) for first, last in ranges for number in range(int(first), int(last or first) + 1)}


def cited(text: str) -> set[tuple[str, int]]:
    """Every (notebook, section) that a text cites as "NN §M", ranges and lists expanded."""
    return {pair for match in SECTIONS.finditer(text) for pair in _expand(match)}


def in_class_sections(plan: str) -> set[tuple[str, int]]:
    """The sections that one session of TEACHING.md presents in class: the section column of its timetable."""
    return {pair for row in ROW.finditer(plan) for pair in cited(row.group(4))}


def homework_sections(plan: str, in_class: set[tuple[str, int]], sections: dict[str, set[str]]) -> set[tuple[str, int]]:
    """The notebook sections that one session's "Homework:" line gives to read, clause by clause (split at ";").
    "the sections of NN not done in class" names every section of notebook NN (`sections`) not in `in_class`."""
    line = re.search(r"^Homework: (.+?)(?=\n\n|\n#|\Z)", plan, flags=re.MULTILINE | re.DOTALL)
    found: set[tuple[str, int]] = set()
    for clause in _normalise(line.group(1)).split(";") if line else []:
        notebook = None
        for part in HOMEWORK_SECTION.finditer(clause):
            notebook = part.group(1) or notebook
            if notebook is not None:
                found |= {(notebook, n) for n in range(int(part.group(2)), int(part.group(3) or part.group(2)) + 1)}
        for rest in NOT_IN_CLASS.findall(clause):
            found |= {(rest, int(n)) for n in sections.get(rest, ())} - in_class
    return found


def _name(pair: tuple[str, int]) -> str:
    return f"{pair[0]} §{pair[1]}"


def in_class_problems(assessment: str, teaching: str) -> list[str]:
    """In every core session: each exit-ticket question cites a section presented in class and no other section; each
    learning outcome cites sections presented in class, or, inside "(homework: ...)", sections of the homework."""
    problems = []
    sections = {number: notebook_sections(path) for number, path in NUMBERED.items()}
    planned, written = _sessions(teaching), _sessions(assessment)
    core = [int(number) for number in CORE_SESSION.findall(teaching)]
    if len(core) < 4:
        problems.append(f"TEACHING.md has {len(core)} core sessions, expected 4")
    for number in core:
        where = f"session {number}"
        if number not in written:
            problems.append(f"{where}: not in ASSESSMENT.md")
            continue
        in_class = in_class_sections(planned[number][1])
        homework = homework_sections(planned[number][1], in_class, sections)
        if not in_class:
            problems.append(f"{where}: the timetable of TEACHING.md names no section")
        parts = _blocks(written[number][1], 3)
        for index, question in enumerate(_items(parts.get("Exit ticket", ""), r"^\d+\. "), 1):
            references = cited(question)
            if not references & in_class:
                problems.append(f"{where}, exit-ticket question {index}: cites no section presented in class")
            problems += [
                f"{where}, exit-ticket question {index}: cites {_name(pair)}, which the class does not present"
                for pair in sorted(references - in_class)
            ]
        for outcome in _items(parts.get("Learning outcomes", ""), r"^- "):
            for match in SECTIONS.finditer(outcome):
                opened = outcome.rfind("(", 0, match.start())
                as_homework = opened >= 0 and "homework:" in outcome[opened : match.start()]
                allowed, source = (homework, "the homework line") if as_homework else (in_class, "the timetable")
                problems += [
                    f"{where}: outcome {outcome[2:50]!r} cites {_name(pair)}, which {source} does not name"
                    + (" (mark it '(homework: ...)')" if not as_homework and pair in homework else "")
                    for pair in sorted(_expand(match) - allowed)
                ]
    return problems


def notebook_exercises() -> dict[str, tuple[str, bool]]:
    """Every `### Exercise NN.M · title` heading of the numbered notebooks: id -> (title, whether it is checked)."""
    exercises = {}
    for notebook in NUMBERED.values():
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            for line in "".join(cell["source"]).splitlines() if cell["cell_type"] == "markdown" else []:
                if match := EXERCISE.match(line):
                    title = match.group(2)
                    exercises[match.group(1)] = (title, title.endswith("(checked)"))
    return exercises


def rubric_problems(assessment: str, exercises: dict[str, tuple[str, bool]]) -> list[str]:
    problems = []
    rubrics = _blocks(_blocks(assessment, 2).get("Rubric for the open exercises", ""), 3)
    found = set()
    for heading, body in rubrics.items():
        match = EXERCISE.match(f"### {heading}")
        if not match:
            problems.append(f"rubric heading {heading!r} is not '### Exercise NN.M · title'")
            continue
        number, title = match.groups()
        found.add(number)
        if number not in exercises:
            problems.append(f"a rubric names Exercise {number}, which no notebook has")
            continue
        if exercises[number][1]:
            problems.append(f"a rubric names Exercise {number}, which is checked")
        if title != exercises[number][0]:
            problems.append(f"Exercise {number}: rubric title {title!r}, notebook title {exercises[number][0]!r}")
        rows = [line for line in body.splitlines() if line.startswith("|")]
        if not rows or [cell.strip() for cell in rows[0].strip("|").split("|")] != ["criterion", "points"]:
            problems.append(f"Exercise {number}: no '| criterion | points |' table")
            continue
        points = [re.search(r"\|\s*(\d+)\s*\|\s*$", row) for row in rows[2:]]
        if len(points) < 3 or not all(points):
            problems.append(f"Exercise {number}: {len(points)} criteria, or a row without points")
        elif sum(int(p.group(1)) for p in points) != 10:
            problems.append(f"Exercise {number}: the points add up to {sum(int(p.group(1)) for p in points)}, not 10")
        if not re.search(r"^Common mistakes: \S", body, flags=re.MULTILINE):
            problems.append(f"Exercise {number}: no 'Common mistakes:' line")
    open_exercises = {number for number, (_, checked) in exercises.items() if not checked}
    problems += [f"Exercise {number} has no rubric" for number in sorted(open_exercises - found)]
    return problems


def notebook_sections(notebook: Path) -> set[str]:
    """The numbers of a notebook's numbered section headings (`## 3. ...` -> "3")."""
    sections = set()
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for line in "".join(cell["source"]).splitlines() if cell["cell_type"] == "markdown" else []:
            if match := re.match(r"^##\s+(\d+)\.\s", line):
                sections.add(match.group(1))
    return sections


def reference_problems(assessment: str, minimum: int = 40) -> list[str]:
    """Every "NN §M" of the text names a numbered section of notebook NN, and there are at least `minimum` of them."""
    problems, found = [], 0
    sections = {number: notebook_sections(path) for number, path in NUMBERED.items()}
    for match in SECTIONS.finditer(assessment):
        if match.group(1) not in sections:
            problems.append(f"{match.group(0)!r}: there is no notebook {match.group(1)}")
            continue
        ranges = [(match.group(2), match.group(3)), *re.findall(r"§(\d+)(?:[–-](\d+))?", match.group(4) or "")]
        for first, last in ranges:
            for number in range(int(first), int(last or first) + 1):
                found += 1
                if str(number) not in sections[match.group(1)]:
                    problems.append(f"{match.group(0)!r}: notebook {match.group(1)} has no section {number}")
    if found < minimum:
        problems.append(f"only {found} section references")
    return problems


def diagnostic_problems(assessment: str) -> list[str]:
    block = _blocks(assessment, 2).get("Pre-course diagnostic")
    if block is None:
        return ["no '## Pre-course diagnostic' section"]
    return _question_problems("diagnostic", block, 6, 8)


def _assessment() -> str:
    return ASSESSMENT.read_text(encoding="utf-8")


def test_every_session_has_outcomes_an_exit_ticket_and_model_answers():
    problems = session_problems(_assessment(), TEACHING.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_exit_tickets_and_outcomes_rest_on_what_the_session_presents():
    problems = in_class_problems(_assessment(), TEACHING.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_session_parser_reads_ranges_lists_empty_columns_and_homework():
    plan = """| time | what | notebook, section | how |
|---|---|---|---|
| 0–10 | One | 01 §1–2 | Predict: which key? |
| 10–25 | Alone | | Students do Exercise 01.1 (checked). |
| 35–50 | Two | 02 §2–3 | Show the heatmaps. |
| 55–80 | Lab | 08 §1, §7, §11 | In pairs. |

Homework: Exercises 01.2 and 02.2; read 01 §5, 02 §1, §4 and §6–7 (the table); the sections of 08 not done in
class, with the checklist; read §3.2.2 and §4 of the paper.
"""
    in_class = in_class_sections(plan)
    assert in_class == {("01", 1), ("01", 2), ("02", 2), ("02", 3), ("08", 1), ("08", 7), ("08", 11)}
    homework = homework_sections(plan, in_class, {"08": {"0", "1", "2", "7", "11"}})
    assert homework == {("01", 5), ("02", 1), ("02", 4), ("02", 6), ("02", 7), ("08", 0), ("08", 2)}
    lab = in_class_sections(_sessions(TEACHING.read_text(encoding="utf-8"))[2][1])
    assert {("03", 1), ("03", 6), ("04", 1), ("04", 4), ("08", 1), ("08", 7), ("08", 11)} <= lab
    assert not {("03", 7), ("04", 2), ("04", 5), ("08", 2)} & lab


def test_the_diagnostic_has_six_to_eight_answered_questions():
    problems = diagnostic_problems(_assessment())
    assert not problems, "\n".join(problems)


def test_every_open_exercise_has_a_rubric_of_ten_points():
    exercises = notebook_exercises()
    assert sum(not checked for _, checked in exercises.values()) >= 27
    problems = rubric_problems(_assessment(), exercises)
    assert not problems, "\n".join(problems)


def test_section_references_name_real_sections():
    problems = reference_problems(_assessment())
    assert not problems, "\n".join(problems)


def test_the_kit_is_in_order_and_short():
    text = _assessment()
    order = ["Pre-course diagnostic", *(f"Session {n} ·" for n in range(1, 10)), "Rubric for the open exercises"]
    where = [text.find(f"\n## {heading}") for heading in order]
    assert -1 not in where and where == sorted(where), (
        f"missing or out of order: {dict(zip(order, where, strict=True))}"
    )
    assert len(text.split()) <= MAX_WORDS, f"{len(text.split())} words, more than {MAX_WORDS}"


def test_the_checks_catch_a_missing_piece():
    text, teaching = _assessment(), TEACHING.read_text(encoding="utf-8")
    exercises = notebook_exercises()
    answer = re.search(r"^\s*Answer: .*\n", text.split("## Session 3 ·")[1], flags=re.MULTILINE).group(0)
    row = re.search(r"^\| .* \| \d+ \|\n", text.split("### Exercise 07.2 ·")[1], flags=re.MULTILINE).group(0)
    quote = re.search(r"^\*Label smoothing.*$", text, flags=re.MULTILINE).group(0)
    mutants = {
        "an exit-ticket answer removed": (session_problems, text.replace(answer, "", 1), teaching),
        "a discussion question misquoted": (
            session_problems,
            text.replace(quote, quote.replace("BLEU better", "BLEU higher"), 1),
            teaching,
        ),
        "a session removed": (session_problems, text.replace("## Session 6 ·", "## Part 6 ·", 1), teaching),
        "a rubric row removed": (rubric_problems, text.replace(row, "", 1), exercises),
        "a rubric for a checked exercise": (
            rubric_problems,
            text.replace("### Exercise 01.2 · Softmax over the wrong axis", "### Exercise 01.1 · Eq. 1 from memory", 1),
            exercises,
        ),
        "a section that does not exist": (reference_problems, text.replace("01 §2", "01 §12", 1), None),
        "a diagnostic answer removed": (
            diagnostic_problems,
            text.replace(re.search(r"^\s*Answer: .*\n", text, flags=re.MULTILINE).group(0), "", 1),
            None,
        ),
        "an exit-ticket question citing no section": (
            in_class_problems,
            text.replace("on each of the others (01 §2).", "on each of the others.", 1),
            teaching,
        ),
        "an exit-ticket question on homework reading": (
            in_class_problems,
            text.replace("agree bit for bit (02 §5).", "agree bit for bit (02 §6).", 1),
            teaching,
        ),
        "an outcome on homework reading not marked so": (
            in_class_problems,
            text.replace("(homework: 02 §4)", "(02 §4)", 1),
            teaching,
        ),
    }
    # The same checks on a copy of the plan whose session 1 no longer presents 02 §5 (its row's column emptied).
    row = "| 50–65 | A query with nothing to attend to | 02 §5 |"
    assert row in teaching
    moved = in_class_problems(text, teaching.replace(row, "| 50–65 | A query with nothing to attend to | |", 1))
    assert any(p.startswith("session 1, exit-ticket question 5: cites no section") for p in moved), moved
    assert any("session 1: outcome 'Predict what" in p and "02 §5" in p for p in moved), moved
    for name, (check, mutant, other) in mutants.items():
        assert mutant != text, f"{name}: the mutation changed nothing"
        assert check(mutant, other) if other is not None else check(mutant), f"{name}: no problem reported"
