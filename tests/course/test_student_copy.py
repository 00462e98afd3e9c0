"""The student copy (course/student_copy.py): no solutions or answer keys, graded mode on, and still a repository
whose docs tests pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from course import student_copy
from course.exercises import engine
from course.exercises.engine import graded

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student") / "attention"
    student_copy.write_copy(out)
    return out


def test_the_copy_leaves_out_solutions_and_answer_keys_and_keeps_the_rest(copy):
    files = {p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()}
    repository = set(student_copy.repository_files())
    assert not any(student_copy.left_out(f) for f in files)
    assert any(f.startswith("notebooks/solutions/") for f in repository)  # there was something to leave out
    kept = {f for f in repository if not student_copy.left_out(f)}
    assert files == kept | {"course/exercises/GRADED"}
    for name in ("helpers/attention.py", "requirements.txt", "notebooks/01_scaled_dot_product_attention.ipynb"):
        original = (ROOT / name).read_text(encoding="utf-8")
        assert (copy / name).read_text(encoding="utf-8") == student_copy.without_solution_links(original)
    notebook = (copy / "notebooks/01_scaled_dot_product_attention.ipynb").read_text(encoding="utf-8")
    assert "solutions/" not in notebook and student_copy.ELSEWHERE in notebook  # no link to a missing file
    assert not any(part.startswith(".venv") or part in ("build", "__pycache__") for f in files for part in f.split("/"))


def test_the_copy_is_graded_and_its_readme_says_so(copy, monkeypatch):
    assert student_copy.is_student_copy(copy) and not student_copy.is_student_copy(ROOT)
    assert ROOT / student_copy.MARKER == engine.GRADED_MARKER
    readme = (copy / "README.md").read_text(encoding="utf-8")
    original = (ROOT / "README.md").read_text(encoding="utf-8")
    title = original.split("\n\n", 1)[0]
    rest = student_copy.without_solution_links(original.split("\n\n", 1)[1])
    assert readme.startswith(f"{title}\n\n> **Student copy.**") and readme.endswith(rest)
    assert "solution" in student_copy.NOTE and "graded mode" in student_copy.NOTE


def test_the_copys_docs_tests_pass_without_the_solutions(copy):
    """The link and path checks of the docs skip what a student copy leaves out; nothing else may be missing."""
    environment = {**os.environ, "PYTHONPATH": ""}
    environment.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "tests/test_readme.py",
            "tests/test_glossary.py",
            "-k",
            "links or paths or solution or python_m",
        ],
        cwd=copy,
        capture_output=True,
        encoding="utf-8",
        env=environment,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "skipped" in result.stdout  # the solutions' own checks skip in a copy


@pytest.mark.parametrize(
    ("where", "words"),
    [(lambda tmp: ROOT / "build" / "student", "inside the repository"), (lambda tmp: tmp, "not an empty folder")],
)
def test_a_bad_destination_is_refused(tmp_path, where, words, capsys):
    (tmp_path / "something").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=words):
        student_copy.write_copy(where(tmp_path))
    assert student_copy.main([str(where(tmp_path))]) == 2
    assert words in capsys.readouterr().err


def test_graded_mode_follows_the_variable_then_the_file(monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "GRADED_MARKER", tmp_path / "GRADED")
    for value, expected in [("1", True), ("0", False), ("", False)]:
        monkeypatch.setenv("ATTENTION_GRADED", value)
        assert graded() is expected
    (tmp_path / "GRADED").write_text("on", encoding="utf-8")
    monkeypatch.delenv("ATTENTION_GRADED")
    assert graded() is True
    monkeypatch.setenv("ATTENTION_GRADED", "0")
    assert graded() is False
    monkeypatch.setenv("ATTENTION_GRADED", "maybe")
    with pytest.raises(ValueError, match="ATTENTION_GRADED"):
        graded()
