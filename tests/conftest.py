"""Each test starts with no attempts counted: the checkers' hints depend on how many attempts at an exercise failed
before (``course.exercises`` counts them per kernel, or here per test process). The HTML site and its decks are
built once per run (``built_site``)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_attempts_counted():
    from course import exercises

    exercises.reset_attempts()
    yield


def _build_site(out: Path) -> str:
    """Run ``python -m course.publish.site`` (which builds the slide decks into the site's slides/ folder); returns its
    report."""
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "course.publish.site", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not result.stderr.strip(), result.stderr  # no warnings (a missing diagram, a deprecation)
    return f"site and decks built in {time.monotonic() - start:.1f} s:\n{result.stdout.strip()}"


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The HTML site with its slide decks (out/slides/), built once per test run for tests/course/publish/test_site.py and
    tests/course/publish/test_slides.py (12 s of the run, decks included). Under pytest-xdist those two files run in different
    worker processes: the first to get here builds into the run's shared temporary folder, the other waits for it.
    os.mkdir is atomic on every platform, so it is the claim."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: its own folder
        out = tmp_path_factory.mktemp("site")
        print(_build_site(out))
        return out
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, above each worker's own
    out, done = shared / "site", shared / "site.done"
    try:
        os.mkdir(shared / "site.claim")
    except FileExistsError:  # another worker builds it
        deadline = time.monotonic() + 900
        while not done.exists():
            assert time.monotonic() < deadline, f"the site was not built into {out} within 900 s"
            time.sleep(0.2)
        report = done.read_text(encoding="utf-8")
        assert not report.startswith("FAILED"), f"the site build failed in another worker:\n{report}"
        print(report)
        return out
    try:
        report = _build_site(out)
    except BaseException as error:
        done.write_text(f"FAILED\n{error}", encoding="utf-8")
        raise
    done.write_text(report, encoding="utf-8")
    print(report)
    return out
