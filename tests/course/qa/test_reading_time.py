"""Each numbered notebook says near its top how long its core path takes, and its optional parts keep their point.

The times are course/qa/reading_time.py's estimate (markdown at 130 words and code at 8 lines a minute, the method of
the series' reviews), rounded to 5 minutes; a notebook whose text grows or shrinks must say so again
(`python -m course.qa.reading_time --write`). Every optional part (a heading that says "Optional") starts with a
takeaway of at most TAKEAWAY_WORDS words.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course.qa import reading_time

ROOT = Path(__file__).resolve().parents[3]

NUMBERED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("notebook", NUMBERED, ids=lambda p: p.name[:2])
def test_notebook_states_its_times(notebook: Path):
    first = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    match = reading_time.STATEMENT.search(first)
    assert match, (
        f"{notebook.name}: no '{reading_time.statement(notebook)}' in its first cell (course/qa/reading_time.py --write)"
    )
    core, optional = reading_time.times(notebook)
    stated = (int(match.group(1)), int(match.group(2)) if match.group(2) else 0)
    expected = (reading_time.rounded(core), reading_time.rounded(optional) if optional else 0)
    assert stated == expected, f"{notebook.name} states {stated} minutes, the estimate is {expected}: run --write"


@pytest.mark.parametrize("notebook", NUMBERED, ids=lambda p: p.name[:2])
def test_optional_parts_have_a_short_takeaway(notebook: Path):
    for part in reading_time.parts(notebook):
        if part.optional and not part.exercises and reading_time.OPTIONAL.search(part.heading):
            assert part.takeaway, f"{notebook.name}, {part.heading!r}: no **Takeaway.** right under the heading"
            words = len(part.takeaway.split())
            assert words <= reading_time.TAKEAWAY_WORDS, f"{notebook.name}, {part.heading!r}: takeaway of {words} words"


def test_the_estimate_counts_words_and_code_and_splits_at_optional_headings(tmp_path: Path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# T\n\n" + "word " * 128},
        {
            "cell_type": "code",
            "metadata": {},
            "source": "a = 1\n# comment\n\nb = 2\n",
            "outputs": [],
            "execution_count": 1,
        },
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": "## 2. Optional: more\n\n**Takeaway.** Short.\n\n" + "w " * 120,
        },
        {"cell_type": "markdown", "metadata": {}, "source": "## 3. Core again\n\n" + "w " * 126},
        {"cell_type": "markdown", "metadata": {}, "source": "## Exercises\n\n" + "w " * 999},
    ]
    path = tmp_path / "01_t.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    core, optional = reading_time.times(path)
    assert core == pytest.approx((1 + 128 + 3 + 126) / 130 + 2 / 8)  # T, 128 words, "3. Core again", 2 code lines
    assert optional == pytest.approx((3 + 2 + 120) / 130)  # "2. Optional: more", the takeaway, 120 words
    assert [p.takeaway for p in reading_time.parts(path) if p.optional] == ["Short."]


@pytest.mark.parametrize("notebook", NUMBERED, ids=lambda p: p.name[:2])
def test_optional_parts_define_nothing_the_core_reads(notebook: Path):
    used = reading_time.optional_names_used(notebook)
    assert not used, f"{notebook.name}: cells outside the optional parts read names those parts define: {used}"


def _code(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}


def _markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def test_a_name_bound_in_an_optional_part_and_read_later_is_found(tmp_path: Path):
    cells = [
        _markdown("# T"),
        _code("import torch\nx = torch.ones(2)\nsquare = lambda t: t * t\n"),
        _markdown("### Optional: more\n\n**Takeaway.** Short."),
        _code(
            "import torch\nfrom math import pi\nx = x * pi\ny, (z, w) = 1, (2, 3)\nfor i in range(2):\n    pass\n"
            "def helper(a):\n    local = a\n    return local\n"
        ),
        _markdown("## 2. Core"),
        _code("print(torch.zeros(1), square(2), [i for i in range(3)])\n"),  # re-import, comprehension: not found
        _code("local = 0\nprint(local, [v for v in (y, w)], helper(1))\n%time x\n"),  # y, w, helper; x in a magic
        _code("x = torch.ones(1)\nprint(x, pi)\n"),  # x bound again in the core; pi imported only in the part
        _markdown("## Exercises"),
        _code("print(z)\n"),  # an exercise is read after the part too
    ]
    path = tmp_path / "01_t.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    found = reading_time.optional_names_used(path)
    assert [name for name, _ in found] == ["helper", "w", "y", "pi", "z"]
    assert {part for _, part in found} == {"Optional: more"}


def test_the_core_path_of_the_series_stays_under_its_budget():
    counted = [p for p in NUMBERED if int(p.name[:2]) <= reading_time.CORE_NOTEBOOKS]
    minutes = sum(reading_time.times(notebook)[0] for notebook in counted)
    assert len(counted) == reading_time.CORE_NOTEBOOKS and minutes < 60 * reading_time.CORE_HOURS, (
        f"the core path of notebooks 01-{reading_time.CORE_NOTEBOOKS} takes {minutes / 60:.1f} h by the estimate, "
        f"over {reading_time.CORE_HOURS} h: move a digression into a marked optional part (CONTRIBUTING.md)"
    )
