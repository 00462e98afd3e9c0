"""The gradebook (course/grade.py): hand-made submissions run in fresh kernels, in graded mode, under a time limit."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import nbformat
import pytest

from course import grade

SPLIT_RIGHT = """
def my_split_heads(x, num_heads):
    batch, n, d_model = x.shape
    return x.reshape(batch, n, num_heads, d_model // num_heads).permute(0, 2, 1, 3)
"""
COMBINE_NAMED_MISTAKE = """
def my_combine_heads(x):
    return x.reshape(x.shape[0], x.shape[2], -1)  # no transpose: the checker names it
"""
MODULE_STUB = """
from torch import nn

class MyMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        raise NotImplementedError
"""


def _notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
        for kind, source in cells
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _three_exercises(path: Path) -> Path:
    """A copy of notebook 03's exercises: 03.1 right, 03.2 with a named mistake (checked three times, which in
    graded mode must never show a solution), 03.3 untouched."""
    return _notebook(
        path,
        [
            ("md", "### Exercise 03.1 · Split heads with `unflatten` (checked)"),
            (
                "code",
                SPLIT_RIGHT + "\nfrom course.exercises import check_split_heads\ncheck_split_heads(my_split_heads)",
            ),
            ("md", "### Exercise 03.2 · Combine heads with `flatten` (checked)"),
            ("code", COMBINE_NAMED_MISTAKE),
            (
                "code",
                "from course.exercises import check_combine_heads, solution\n"
                "for _ in range(3):\n"
                "    text = str(check_combine_heads(my_combine_heads))\n"
                "assert 'solution' not in text.lower() or 'switched off' in text, text\n"
                "assert 'switched off' in solution('03.2'), solution('03.2')",
            ),
            ("md", "### Exercise 03.3 · The module, from your own pieces (checked)"),
            (
                "code",
                MODULE_STUB + "\nfrom course.exercises import check_multi_head_attention\n"
                "check_multi_head_attention(MyMultiHeadAttention)",
            ),
        ],
    )


def test_a_right_a_named_mistake_and_an_untouched_exercise_each_get_their_row(tmp_path):
    folder = tmp_path / "submissions"
    _three_exercises(folder / "alice.ipynb")
    rows = grade.grade(folder, tmp_path / "grades.csv", time_limit=120, echo=lambda *_: None)
    with (tmp_path / "grades.csv").open(encoding="utf-8", newline="") as file:
        table = list(csv.DictReader(file))
    assert [tuple(r.values()) for r in table] == [tuple(map(str, vars(r).values())) for r in rows]
    assert list(table[0]) == list(grade.COLUMNS)
    got = {r["exercise"]: (r["student"], r["notebook"], r["status"], r["mistake"]) for r in table}
    assert got == {
        "03.1": ("alice", "03", "passed", ""),
        "03.2": ("alice", "03", "failed", "view without transpose"),
        "03.3": ("alice", "03", "not attempted", ""),
    }, table


def test_a_hanging_a_raising_and_an_unreadable_notebook_do_not_stop_the_others(tmp_path):
    folder = tmp_path / "submissions"
    _notebook(folder / "bob.ipynb", [("md", "### Exercise 01.1 · Eq. 1 (checked)"), ("code", "while True:\n    pass")])
    _notebook(
        folder / "carol" / "02_masking.ipynb",
        [("code", "1 / 0"), ("code", "from course.exercises import check_padding_mask")],
    )
    (folder / "dave.ipynb").write_text("this is not a notebook", encoding="utf-8")
    _notebook(folder / ".ipynb_checkpoints" / "bob-checkpoint.ipynb", [("code", "1")])
    limit = 6
    start = time.monotonic()
    rows = grade.grade(folder, tmp_path / "grades.csv", time_limit=limit, echo=lambda *_: None)
    assert time.monotonic() - start < 2 * limit + 20  # the hanging kernel was stopped, not waited for
    by_student = {}
    for row in rows:
        by_student.setdefault(row.student, []).append(row)
    assert sorted(by_student) == ["bob", "carol/02_masking", "dave"]
    (bob,) = by_student["bob"]
    assert (bob.notebook, bob.exercise, bob.status) == ("01", "01.1", "error")
    assert "time limit" in bob.detail, bob.detail
    carol = by_student["carol/02_masking"]
    assert [(r.notebook, r.exercise, r.status) for r in carol] == [("02", "02.1", "error"), ("02", "02.2", "error")]
    assert "ZeroDivisionError" in carol[0].detail, carol[0].detail
    (dave,) = by_student["dave"]
    assert dave.status == "error" and "not a readable notebook" in dave.detail, dave


def test_the_notebook_number_comes_from_its_headings_or_its_file_name(tmp_path):
    headed = _notebook(tmp_path / "x.ipynb", [("md", "intro"), ("md", "## Exercises\n\n### Exercise 11.2 · Cached")])
    named = _notebook(tmp_path / "14_modern.ipynb", [("md", "no exercise heading")])
    neither = _notebook(tmp_path / "y.ipynb", [("md", "nothing")])
    for path, number in [(headed, "11"), (named, "14"), (neither, None)]:
        assert grade.notebook_number(nbformat.read(path, as_version=4), path) == number
    (row,) = grade.grade_notebook(neither, "y")
    assert row.status == "error" and "no checked exercise" in row.detail


def test_the_last_verdict_counts_and_garbage_lines_are_skipped(tmp_path):
    log = tmp_path / "verdicts.jsonl"
    log.write_text(
        '{"exercise": "01.1", "status": "failed", "mistake": "softmax over the queries"}\n'
        "not json\n[1, 2]\n"
        '{"exercise": "01.1", "status": "passed", "mistake": null}\n',
        encoding="utf-8",
    )
    assert grade.last_verdicts(log) == {"01.1": {"exercise": "01.1", "status": "passed", "mistake": None}}
    assert grade.last_verdicts(tmp_path / "missing.jsonl") == {}


def test_every_checked_exercise_belongs_to_its_notebook():
    exercises = grade.checked_exercises()
    assert sorted(exercises) == ["01", "02", "03", "04", "05", "06", "07", "09", "10", "11", "12", "13", "14", "15"]
    assert all(e.startswith(n + ".") for n, ids in exercises.items() for e in ids)
    assert exercises["03"] == ["03.1", "03.2", "03.3"]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: (tmp / "missing", 10), "is not a folder"),
        (lambda tmp: (tmp, 0), "must be positive"),
        (lambda tmp: (tmp, 10), "no .ipynb file"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, make, words, capsys):
    folder, limit = make(tmp_path)
    with pytest.raises(ValueError, match=words):
        grade.grade(folder, tmp_path / "grades.csv", time_limit=limit)
    assert grade.main([str(folder), "--csv", str(tmp_path / "g.csv"), "--time-limit", str(limit)]) == 2
    assert words in capsys.readouterr().err
