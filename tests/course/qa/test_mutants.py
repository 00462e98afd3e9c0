"""The mutation check's data (`course/qa/mutants/`) stays in step with the source it edits.

Mutants match exact source text, so rewording a line of a helper can leave a mutant that no longer applies. These
checks fail the test command then, instead of a later manual `python -m course.qa.mutate`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from course.qa.mutate import ROOT, targets

TARGETS = targets()
MUTANTS = [(t, m) for t in TARGETS for m in t.mutants]


@pytest.mark.parametrize(("target", "mutant"), MUTANTS, ids=[m.id for _, m in MUTANTS])
def test_each_mutant_applies_exactly_once_and_changes_the_text(target, mutant):
    source = (ROOT / target.file).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1, f"{mutant.id}: its old text occurs {source.count(mutant.old)} times"
    assert mutant.new != mutant.old
    assert mutant.what.strip()


def test_ids_are_unique_and_named_by_their_module():
    ids = [m.id for _, m in MUTANTS]
    assert len(ids) == len(set(ids))
    for target in TARGETS:
        for mutant in target.mutants:
            assert re.fullmatch(rf"{target.name}-\d\d", mutant.id), mutant.id


def test_the_mutants_are_read_from_every_toml_file_and_ship_with_the_package():
    files = sorted((ROOT / "course" / "qa" / "mutants").glob("*.toml"))
    assert [t.name for t in TARGETS] == [p.stem for p in files] and len(files) >= 20
    assert '"course.qa.mutants" = ["*.toml"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_each_mutated_file_is_named_once_and_its_tests_exist():
    files = [t.file for t in TARGETS]
    assert len(files) == len(set(files))
    for target in TARGETS:
        assert (ROOT / target.file).is_file(), target.file
        assert target.tests and target.mutants, target.file
        for test in target.tests:
            assert (ROOT / test).is_file(), f"{target.file}: {test} does not exist"


def test_every_helpers_module_and_the_explorer_script_has_mutants():
    mutated = {t.file for t in TARGETS}
    modules = {f"helpers/{p.name}" for p in (ROOT / "helpers").glob("*.py") if p.name != "__init__.py"}
    assert modules - mutated == set()
    assert "course/explorer/explorer.js" in mutated


def test_the_list_prints_each_mutant_and_the_count(capsys, monkeypatch):
    from course.qa import mutate

    monkeypatch.setattr("sys.argv", ["mutate", "--list"])
    assert mutate.main() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith(f"{len(MUTANTS)} mutants in {len(TARGETS)} files")
    assert [line.split()[0] for line in out[:-1]] == [m.id for _, m in MUTANTS]


def test_the_work_copy_imports_helpers_and_course_from_itself(tmp_path: Path):
    from course.qa import mutate

    copy, elsewhere = tmp_path / "copy", tmp_path / "elsewhere"
    for folder in ("helpers", "course"):
        (copy / folder).mkdir(parents=True)
        (copy / folder / "__init__.py").write_text("", encoding="utf-8")
    elsewhere.mkdir()
    assert mutate.imports_the_copy(copy, fork=False)
    assert not mutate.imports_the_copy(elsewhere, fork=False)  # only the editable install is found


@pytest.mark.parametrize("module", ["mutate", "platforms", "reading_time", "execute"])
def test_each_tool_runs_as_a_module_from_anywhere(module, tmp_path: Path):
    """`python -m course.qa.NAME --help` works outside the repository (the editable install finds it)."""
    found = subprocess.run(
        [sys.executable, "-m", f"course.qa.{module}", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("usage:")
