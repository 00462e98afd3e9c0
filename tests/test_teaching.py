"""The course plan (TEACHING.md) points only at things that exist, and each session fills its 90 minutes.

Every section reference such as `03 §10–11` must name numbered headings of that notebook, every exercise an
`### Exercise NN.K` heading (and "(checked)" only where the notebook's exercise is checked), every deck a deck
that course/publish/slides.py builds; every numbered notebook is taught in some session, with its deck; each
session's table runs from 0 to 90 minutes without a gap.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from tests.support import notebook_headings

ROOT = Path(__file__).resolve().parent.parent
TEACHING = ROOT / "TEACHING.md"
NUMBERED = {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
SECTIONS = re.compile(r"\b(\d\d) §(\d+)(?:[–-](\d+))?((?:, §\d+(?:[–-]\d+)?)*)")
EXERCISE = re.compile(r"Exercises? ((?:\d\d\.\d+(?:, | and )?)+)( \(checked\))?")


def _text() -> str:
    return TEACHING.read_text(encoding="utf-8")


def _sessions() -> list[str]:
    return re.split(r"^## ", _text(), flags=re.MULTILINE)[1:]


def test_section_references_name_real_sections():
    found = 0
    for match in SECTIONS.finditer(_text()):
        notebook = NUMBERED.get(match.group(1))
        assert notebook, f"TEACHING.md names notebook {match.group(1)}, which does not exist"
        sections, _ = notebook_headings(notebook)
        ranges = [(match.group(2), match.group(3)), *re.findall(r"§(\d+)(?:[–-](\d+))?", match.group(4) or "")]
        for first, last in ranges:
            for number in range(int(first), int(last or first) + 1):
                assert str(number) in sections, f"{match.group(0)!r}: {notebook.name} has no section {number}"
                found += 1
    assert found > 50


def test_exercises_exist_and_checked_ones_are_checked():
    checked = {}  # "01.1" -> whether its heading says "(checked)"
    for notebook in NUMBERED.values():
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            for line in "".join(cell["source"]).splitlines() if cell["cell_type"] == "markdown" else []:
                if match := re.match(r"^###\s+Exercise\s+(\d\d\.\d+)\b", line):
                    checked[match.group(1)] = "(checked)" in line
    assert checked
    named = 0
    for match in EXERCISE.finditer(_text()):
        for exercise in re.findall(r"\d\d\.\d+", match.group(1)):
            assert exercise in checked, f"TEACHING.md names Exercise {exercise}, which does not exist"
            if match.group(2):
                assert checked[exercise], f"TEACHING.md calls Exercise {exercise} checked; its notebook does not"
            named += 1
    assert named >= 30


def test_every_numbered_notebook_is_taught_with_its_deck():
    from course.publish.common import deck_name, deck_notebooks

    decks = {deck_name(p) for p in deck_notebooks(ROOT)}
    named = set(re.findall(r"`(\d\d_\w+\.slides\.html)`", _text()))
    assert named <= decks, f"TEACHING.md names decks that are not built: {sorted(named - decks)}"
    for notebook in NUMBERED.values():
        assert deck_name(notebook) in named, f"no session presents {notebook.name} with its deck"


def test_each_session_fills_90_minutes():
    sessions = _sessions()
    assert len(sessions) >= 4
    for session in sessions:
        title = session.splitlines()[0]
        spans = [(int(a), int(b)) for a, b in re.findall(r"^\| (\d+)–(\d+) \|", session, re.MULTILINE)]
        assert spans, f"session {title!r} has no timetable"
        assert spans[0][0] == 0 and spans[-1][1] == 90, f"{title!r}: {spans}"
        assert all(b == c for (_, b), (c, _) in itertools.pairwise(spans)), f"{title!r} has a gap or overlap: {spans}"
        assert "Discussion:" in session and "Homework:" in session, f"{title!r}: discussion or homework missing"
        assert "Predict" in session and "(checked)" in session, f"{title!r}: no prediction moment or checked exercise"


def test_readme_links_the_course():
    assert "(TEACHING.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_an_exercise_in_class_gets_its_own_time():
    """Issue 33: 80 people need 8-10 minutes for one checked exercise, so in a core session a row that gives one
    presents nothing else, and lasts at least 8 minutes."""
    from course.publish.sessions import sessions

    for session in sessions(ROOT):
        if not session.core:
            continue
        given = [row for row in session.rows if row.exercises]
        assert given, f"session {session.number}: no exercise in class"
        for row in given:
            assert row.end - row.start >= 8 and not row.sections, (session.number, row.what)
            assert len(row.exercises) == 1, (session.number, row.what)
