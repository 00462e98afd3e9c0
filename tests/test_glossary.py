"""The glossary (GLOSSARY.md) is complete, checkable and linked from every notebook.

Each entry is a table row of six columns: term, Chinese, Russian, definition, paper, taught in. The "taught in"
column holds only references such as `[07 §3][07]` (section 3 of notebook 07, a `## 3.` heading) or
`[01 Ex. 01.3][01]` (an `### Exercise 01.3` heading), so that a renumbered section or a renamed notebook fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course import student_copy
from tests.support import notebook_headings

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "GLOSSARY.md"
NUMBERED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
COLUMNS = ["term", "中文", "русский", "definition", "paper", "taught in"]
REFERENCE = re.compile(r"\[(\d\d) (?:§(\d+)|Ex\. (\d\d\.\d+))\]\[(\d\d)\]")


def _rows(text: str) -> list[list[str]]:
    """The entries of every glossary table (header and separator rows left out), split into cells. Tables whose first
    column is not "term" (the naming table at the top) are not glossary entries."""
    rows, in_glossary_table = [], False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_glossary_table = False
            continue
        if re.match(r"^\|[-| ]+\|$", line):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells[0] == COLUMNS[0]:
            in_glossary_table = True
            if cells == COLUMNS:
                continue
        if in_glossary_table:
            rows.append(cells)
    return rows


def test_glossary_tables_have_the_six_columns():
    text = GLOSSARY.read_text(encoding="utf-8")
    headers = [line for line in text.splitlines() if line.startswith("| term ")]
    assert headers, "GLOSSARY.md has no table"
    for header in headers:
        assert [c.strip() for c in header.strip().strip("|").split("|")] == COLUMNS, header
    rows = _rows(text)
    assert len(rows) >= 50, f"only {len(rows)} glossary entries"
    for row in rows:
        assert len(row) == len(COLUMNS), f"{len(row)} columns, not {len(COLUMNS)} (a stray | ?): {row[:1]}"
        empty = [name for name, cell in zip(COLUMNS, row, strict=True) if not cell]
        assert not empty, f"glossary entry {row[0]!r} lacks {empty}"
    terms = [row[0] for row in rows]
    assert len(terms) == len(set(terms)), "a term is listed twice"


def test_glossary_references_name_real_notebooks_and_sections():
    text = GLOSSARY.read_text(encoding="utf-8")
    links = dict(re.findall(r"^\[(\d\d)\]:\s*(\S+)\s*$", text, re.MULTILINE))
    for label, target in links.items():
        path = ROOT / target
        assert path.is_file(), f"[{label}] points to {target}, which does not exist"
        assert path.name.startswith(f"{label}_"), f"[{label}] points to notebook {path.name}"
    for row in _rows(text):
        term, taught = row[0], row[-1]
        references = list(REFERENCE.finditer(taught))
        assert references, f"{term!r}: no reference like [07 §3][07] in {taught!r}"
        rest = REFERENCE.sub("", taught).replace(",", "").strip()
        assert not rest, f"{term!r}: 'taught in' holds text that is not a checkable reference: {rest!r}"
        for match in references:
            number, section, exercise, label = match.groups()
            assert label == number, f"{term!r}: {match.group(0)} links notebook {label}"
            assert label in links, f"{term!r}: no link definition [{label}]: notebooks/..."
            sections, exercises = notebook_headings(ROOT / links[label])
            if section:
                assert section in sections, f"{term!r}: notebook {number} has no '## {section}.' heading"
            else:
                assert exercise.startswith(f"{number}.") and exercise in exercises, (
                    f"{term!r}: notebook {number} has no '### Exercise {exercise}' heading"
                )


def test_the_paper_column_cites_the_paper_or_says_it_does_not():
    for row in _rows(GLOSSARY.read_text(encoding="utf-8")):
        paper = row[COLUMNS.index("paper")]
        assert re.search(r"§\d|Eq\. \d|Table \d|not in the paper|not named in the paper", paper), (
            f"{row[0]!r}: paper column {paper!r} cites no section, equation or table"
        )


@pytest.mark.parametrize("path", NUMBERED + SOLUTIONS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_notebook_links_the_glossary(path: Path):
    """In the notebook's first cell, with the link relative to where the notebook lies."""
    first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
    target = "../GLOSSARY.md" if path.parent.name == "notebooks" else "../../GLOSSARY.md"
    assert first["cell_type"] == "markdown" and f"]({target})" in "".join(first["source"]), (
        f"{path.name}: its first cell does not link the glossary as ({target})"
    )
    assert (path.parent / target).resolve() == GLOSSARY


def test_there_is_a_solution_notebook_for_every_numbered_one():
    """So that the parametrised link check above covers the whole series."""
    if student_copy.is_student_copy(ROOT):
        pytest.skip("a student copy has no worked solutions")
    assert len(NUMBERED) == 15 and {p.name[:2] for p in SOLUTIONS} == {p.name[:2] for p in NUMBERED}


def test_readme_links_the_glossary():
    assert "](GLOSSARY.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
