"""The set-up check (course/doctor.py): one line per check, a fix under each failure, and the exit code."""

from __future__ import annotations

import importlib.metadata
import re
import time
from pathlib import Path

import pytest

from course import doctor

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("version", "passed", "words"),
    [
        ((3, 11, 7), True, "tested"),
        ((3, 13, 0), True, "tested"),
        ((3, 12, 4), True, "untested"),
        ((3, 10, 14), False, "3.11 and 3.13 only"),
        ((3, 14, 0), False, "3.11 and 3.13 only"),
    ],
)
def test_the_python_check_names_the_tested_versions(version, passed, words):
    check = doctor.check_python(version)
    assert check.passed is passed and words in check.said, check
    assert bool(check.fix) is not passed


def test_the_readme_names_the_same_tested_pythons():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    low, high = (f"{major}.{minor}" for major, minor in doctor.SUPPORTED_PYTHONS)
    assert f"Python {low} or {high}" in readme


def test_every_pin_of_requirements_is_read():
    pins = doctor.pins()
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert pins["torch"] == "2.13.0" and "-e ." not in pins
    assert len(pins) == len(re.findall(r"^[A-Za-z0-9_.\-]+==", text, re.MULTILINE)) >= 20


def test_a_package_that_differs_or_is_missing_is_named_with_the_fix():
    pinned = {"torch": "2.13.0", "numpy": "2.4.6", "nbval": "0.11.0"}
    installed = {"torch": "2.13.0+cpu", "numpy": "2.3.1"}

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    check = doctor.check_packages(pinned, version)
    assert not check.passed
    assert "not installed: nbval" in check.said and "numpy 2.3.1 (pinned 2.4.6)" in check.said, check.said
    assert "torch" not in check.said  # 2.13.0+cpu is the pinned torch
    assert "pip install -r requirements.txt" in check.fix
    installed["numpy"], installed["nbval"] = "2.4.6", "0.11.0"
    assert doctor.check_packages(pinned, version).passed


def test_a_cuda_build_of_torch_passes_with_the_cpu_line_as_a_tip_on_linux():
    cpu = doctor.check_torch_build(cuda=None)
    assert cpu.passed and not cpu.fix
    linux = doctor.check_torch_build(cuda="12.8", system="Linux")
    assert linux.passed and "CUDA 12.8" in linux.said
    assert "download.pytorch.org/whl/cpu" in linux.fix and "uninstall" in linux.fix
    lines = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doctor, "check_torch_build", lambda: linux)
        doctor.run(echo=lines.append)
    assert any(line.strip().startswith("tip: ") and "whl/cpu" in line for line in lines), lines


def test_a_check_that_raises_is_that_checks_failure():
    def broken():
        raise ImportError("no module named 'matplotlib'")

    check = doctor.guarded(broken, "figure")
    assert (check.name, check.passed) == ("figure", False) and "ImportError" in check.said and check.fix


def test_the_doctor_prints_one_line_per_check_and_passes_here(monkeypatch):
    lines = []
    start = time.perf_counter()
    ok = doctor.run(echo=lines.append)
    assert time.perf_counter() - start < 60
    results = [line for line in lines if line.startswith(("ok  ", "FAIL"))]
    assert [line.split()[1] for line in results] == ["Python", "packages", "torch", "checker", "figure", "weights"]
    failed = [line for line in results if line.startswith("FAIL")]
    assert not failed and ok, lines  # this environment is set up as the README says
    assert lines[-1].startswith("All 6 checks passed" if ok else f"{len(failed)} of 6 checks failed")
    monkeypatch.setattr(doctor, "run", lambda: False)
    assert doctor.main() == 1
    monkeypatch.setattr(doctor, "run", lambda: True)
    assert doctor.main() == 0
