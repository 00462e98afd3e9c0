"""One deck per session of TEACHING.md: what that session presents, in order, across notebooks, cut for a lecture.

``python -m course.publish.slides`` writes them beside the notebooks' decks, ``session-N.html``, and lists them
first in its index. TEACHING.md is the one source: each session's timetable names the notebook sections of each
row ("01 §3–4"), its prediction moments ("Predict: ...?") and the exercises done in class ("Students do Exercise
01.1"). A session deck holds, in the timetable's order:

- a plan slide: the session's title and its timetable;
- for each row: a slide for each of its predictions, whose heading is the question (class ``prediction``), then the
  row's sections, so that the answer comes on a later slide; then each exercise done in class, its statement whole;
- a wrap-up slide with the discussion questions and the homework.

The lecture cut: top-level checks (``assert``, ``assert_close``) go to the speaker notes, a cell that then shows
nothing goes to the notes with the text that introduced it, and the notebooks' own title, summary and "what's next"
slides are left out (they are not numbered sections). In the debugging lab (notebook 08) a section's heading names its
bug, and so do ``# BUG:`` comments and the prose before the code: there the heading reads "Find the bug", that prose
goes to the notes, the comments leave the code, and a fragment after the first code cell names the bug.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course.publish.common import ROOT, slide_type
from course.publish.scripts import ROW

SOURCE = "source_notebook"  # cell metadata: the notebook a session deck's cell comes from

TEACHING = "TEACHING.md"
PREDICTION_TAG = "prediction"  # a prediction slide's cell; the deck's <section> gets the class "prediction"
LAB_NOTEBOOK = "08"  # the debugging lab: headings and BUG comments are the answers

_SESSION = re.compile(r"^## Session (\d+)[^·\n]*· (.+)$", re.MULTILINE)
_ROW = re.compile(r"^\| (\d+)–(\d+) \|(.*?)\|(.*?)\|(.*)\|\s*$", re.MULTILINE)
_SECTIONS = re.compile(r"(\d\d) (§\d+(?:[–-]\d+)?(?:, §\d+(?:[–-]\d+)?)*)")
_RANGE = re.compile(r"§(\d+)(?:[–-](\d+))?")
PREDICT = re.compile(r"[Pp]redict: (.+?\?)")
IN_CLASS = re.compile(r"Students do Exercise (\d\d\.\d+)")
_NUMBERED = re.compile(r"^##\s+(\d+)\.\s")
_EXERCISE = re.compile(r"^###\s+Exercise\s+(\d\d\.\d+)\b")
_BUG = re.compile(r"\s*#\s*BUG:?\s*(.*)$")


@dataclass
class Row:
    start: int
    end: int
    what: str
    notebook: str | None  # "01", or None for a row with no section (the wrap-up)
    sections: list[int]
    how: str

    @property
    def predictions(self) -> list[str]:
        return [(lambda q: q[:1].upper() + q[1:])(" ".join(q.split())) for q in PREDICT.findall(self.how)]

    @property
    def exercises(self) -> list[str]:
        return IN_CLASS.findall(self.how)


@dataclass
class Session:
    number: int
    title: str
    read_before: str
    rows: list[Row]
    discussion: list[str] = field(default_factory=list)
    homework: str = ""

    @property
    def core(self) -> bool:
        return "(optional)" not in self.title

    @property
    def name(self) -> str:
        return f"session-{self.number}.html"


def _sections(text: str) -> tuple[str | None, list[int]]:
    found = _SECTIONS.search(text)
    if not found:
        return None, []
    numbers = []
    for first, last in _RANGE.findall(found.group(2)):
        numbers += range(int(first), int(last or first) + 1)
    return found.group(1), numbers


def sessions(root: Path = ROOT) -> list[Session]:
    """The sessions of TEACHING.md, each with its timetable rows, discussion questions and homework."""
    text = (root / TEACHING).read_text(encoding="utf-8")
    heads = list(_SESSION.finditer(text))
    found = []
    for k, head in enumerate(heads):
        body = text[head.end() : heads[k + 1].start() if k + 1 < len(heads) else len(text)]
        body = re.split(r"^## ", body, flags=re.MULTILINE)[0]
        rows = []
        for row in _ROW.finditer(body):
            notebook, numbers = _sections(row.group(4))
            rows.append(
                Row(int(row.group(1)), int(row.group(2)), row.group(3).strip(), notebook, numbers, row.group(5))
            )
        read = re.search(r"^Read before: (.+?)(?=\n\n|$)", body, re.MULTILINE | re.DOTALL)
        discussion_block = re.search(r"^Discussion:\n((?:- .*\n(?:  .*\n)*)+)", body, re.MULTILINE)
        discussion = []
        if discussion_block:
            discussion = [" ".join(q.split()) for q in re.split(r"^- ", discussion_block.group(1), flags=re.M) if q]
        homework = re.search(r"^Homework: (.+?)(?=\n\n|$)", body, re.MULTILINE | re.DOTALL)
        title = f"Session {head.group(1)} · {head.group(2).strip()}"
        if "(optional)" in head.group(0):
            title = f"Session {head.group(1)} (optional) · {head.group(2).strip()}"
        found.append(
            Session(
                int(head.group(1)),
                title,
                " ".join(read.group(1).split()) if read else "",
                rows,
                discussion,
                " ".join(homework.group(1).split()) if homework else "",
            )
        )
    return found


def _markdown(source: str, kind: str, cell_id: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": kind}})
    if tags:
        cell.metadata["tags"] = list(tags)
    cell.id = cell_id
    return cell


def _by_section(nb: nbformat.NotebookNode) -> tuple[dict[int, list], dict[str, list]]:
    """The notebook's cells (cut at headings, as the decks cut them) by numbered section, and each exercise's cells
    (its heading, statement, stub and checker cell) by exercise id."""
    from course.publish.slides import split_at_sections

    sections: dict[int, list] = {}
    exercises: dict[str, list] = {}
    current: list | None = None
    for cell in split_at_sections(nb).cells:
        if cell.cell_type == "markdown":
            first = cell.source.lstrip().splitlines()[0] if cell.source.strip() else ""
            if numbered := _NUMBERED.match(first):
                current = sections.setdefault(int(numbered.group(1)), [])
            elif exercise := _EXERCISE.match(first):
                current = exercises.setdefault(exercise.group(1), [])
            elif first.startswith(("## ", "### ")):
                current = None
        if current is not None:
            current.append(copy.deepcopy(cell))
    return sections, exercises


def _is_check(node: ast.stmt) -> bool:
    """An ``assert`` statement, or a call of ``assert_close`` (``torch.testing.assert_close(...)``)."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.startswith("assert")
    return False


def split_checks(source: str) -> tuple[str, str]:
    """A code cell's source without its top-level checks, and the checks: (code, checks)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a magic or a shell line: leave the cell as it is
        return source, ""
    lines = source.splitlines()
    drop = set()
    for node in tree.body:
        if _is_check(node):
            drop.update(range(node.lineno - 1, node.end_lineno))
    if not drop:
        return source, ""
    code = "\n".join(line for k, line in enumerate(lines) if k not in drop)
    checks = "\n".join(line for k, line in enumerate(lines) if k in drop)
    return re.sub(r"\n{3,}", "\n\n", code).strip("\n"), checks


def _note(text: str, cell_id: str) -> nbformat.NotebookNode:
    return _markdown(text, "notes", cell_id)


def _lab_cut(cells: list) -> list:
    """A debugging-lab section with nothing that names its bug before the reveal: the heading reads "Find the bug",
    the prose before the buggy code goes to the notes, ``# BUG:`` comments leave the code, and a fragment after the
    first code cell names the bug (the heading's words and the comments')."""
    heading, bugs = "", []
    for cell in cells:
        if cell.cell_type == "code":
            for line in cell.source.splitlines():
                if found := _BUG.search(line):
                    bugs.append(found.group(1).strip())
            cell.source = "\n".join(_BUG.sub("", line) for line in cell.source.splitlines())
        elif numbered := _NUMBERED.match(cell.source.lstrip()):
            heading = cell.source.lstrip().splitlines()[0][numbered.end() :].strip()
    out, revealed, seen_code = [], False, False
    for cell in cells:
        if cell.cell_type == "markdown" and not seen_code:
            text = cell.source.lstrip()
            if numbered := _NUMBERED.match(text):
                rest = text.split("\n", 1)[1].strip() if "\n" in text else ""
                cell.source = f"## Find the bug ({numbered.group(1)})"
                out.append(cell)
                if rest:
                    out.append(_note(rest, f"{cell.id}-lab"))
            else:
                out.append(_note(cell.source, f"{cell.id}-lab"))
            continue
        out.append(cell)
        if cell.cell_type == "code" and not revealed:
            seen_code = revealed = True
            named = "; ".join(b for b in bugs if b)
            out.append(
                _markdown(f"**The bug:** {heading}" + (f" ({named})" if named else ""), "fragment", f"{cell.id}-bug")
            )
    return out


def _lecture_cut(cells: list, lab: bool) -> list:
    """The section's cells as a lecture shows them. Top-level checks (``assert``, ``assert_close``) go to the
    speaker notes; a cell that then shows nothing (no code that prints or draws) goes to the notes whole, with the
    text that introduced it. In the lab (:func:`_lab_cut`), nothing names the bug before its reveal."""
    out: list = []
    for index, cell in enumerate(cells):
        if cell.cell_type == "code":
            code, checks = split_checks(cell.source)
            if checks and not cell.get("outputs"):
                intro = out[-1] if out and out[-1].cell_type == "markdown" and slide_type(out[-1]) != "notes" else None
                if intro is not None and not intro.source.lstrip().startswith("#"):
                    out.pop()
                    kind = slide_type(intro)
                    if kind in ("slide", "subslide") and index + 1 < len(cells):
                        cells[index + 1].metadata["slideshow"] = {"slide_type": kind}
                    out.append(_note(intro.source, f"{intro.id}-cut"))
                out.append(_note(f"Checked in the notebook:\n\n```python\n{cell.source}\n```", f"{cell.id}-cut"))
                continue
            if checks:
                cell.source = code
                out.append(cell)
                out.append(_note(f"Checked in the notebook:\n\n```python\n{checks}\n```", f"{cell.id}-checks"))
                continue
        out.append(cell)
    return _lab_cut(out) if lab else out


def _owned(cells: list, notebook: str) -> list:
    """cells, each marked with the notebook it comes from (whose script file has its slide's entry)."""
    for cell in cells:
        cell.metadata[SOURCE] = notebook
    return cells


def session_notebook(session: Session, root: Path = ROOT) -> nbformat.NotebookNode:
    """The notebook the session's deck is made from (see the module's docstring)."""
    notebooks = {p.name[:2]: p for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
    parsed: dict[str, tuple[dict, dict]] = {}
    rows = "\n".join(f"| {r.start}–{r.end} | {r.what} |" for r in session.rows)
    cells = [
        _markdown(
            f"# {session.title}\n\n"
            + (f"Read before: {session.read_before}\n\n" if session.read_before else "")
            + f"| minutes | what |\n|---|---|\n{rows}",
            "slide",
            f"s{session.number}-plan",
            ("slide-keep-text",),
        )
    ]
    for k, row in enumerate(session.rows):
        first = len(cells)
        for j, question in enumerate(row.predictions):
            cells.append(
                _markdown(
                    f"## {question}\n\nPredict, and write your answer down.",
                    "slide",
                    f"s{session.number}-predict-{k}-{j}",
                    (PREDICTION_TAG, "slide-keep-text"),
                )
            )
        if row.notebook:
            if row.notebook not in parsed:
                parsed[row.notebook] = _by_section(nbformat.read(notebooks[row.notebook], as_version=4))
            sections = parsed[row.notebook][0]
            for number in row.sections:
                cells += _owned(_lecture_cut(sections.get(number, []), lab=row.notebook == LAB_NOTEBOOK), row.notebook)
        for exercise in row.exercises:
            notebook = exercise[:2]
            if notebook not in parsed:
                parsed[notebook] = _by_section(nbformat.read(notebooks[notebook], as_version=4))
            for n, cell in enumerate(parsed[notebook][1].get(exercise, [])):
                if n == 0:
                    cell.metadata["slideshow"] = {"slide_type": "slide"}
                if cell.cell_type == "markdown":
                    cell.metadata["tags"] = [*cell.metadata.get("tags", []), "slide-keep-text"]
                cells += _owned([cell], notebook)
        for cell in cells[first:]:  # the clock of the speaker notes (course/publish/scripts.py)
            cell.metadata[ROW] = [row.start, row.end, row.what.strip()]
    wrap = ["## Wrap-up"]
    if session.discussion:
        wrap.append("Discussion:\n\n" + "\n".join(f"- {q}" for q in session.discussion))
    if session.homework:
        wrap.append(f"Homework: {session.homework}")
    cells.append(_markdown("\n\n".join(wrap), "slide", f"s{session.number}-wrap-up", ("slide-keep-text",)))
    if session.rows:  # the plan opens the first row's minutes, the wrap-up closes the last row's
        first, last = session.rows[0], session.rows[-1]
        cells[0].metadata[ROW] = [first.start, first.end, first.what.strip()]
        cells[-1].metadata[ROW] = [last.start, last.end, last.what.strip()]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}}
    for cell in nb.cells:
        if slide_type(cell) is None:
            cell.metadata.setdefault("slideshow", {"slide_type": "-"})
    return nb


def mark_predictions(page: str) -> str:
    """Give the <section> of every prediction slide the class "prediction"."""
    marker = re.compile(rf"celltag_{PREDICTION_TAG}\b")
    openings = sorted({page.rfind("<section", 0, m.start()) for m in marker.finditer(page)}, reverse=True)
    for opening in openings:
        close = page.find(">", opening)
        tag = page[opening:close]
        tag = tag.replace('class="', 'class="prediction ', 1) if 'class="' in tag else tag + ' class="prediction"'
        page = page[:opening] + tag + page[close:]
    return page
