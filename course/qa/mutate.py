"""Mutation check: do the unit tests notice small, plausible bugs in `helpers` and `course`?

A maintainer tool, not run by `pytest`. From the repository root, in the activated environment:

    python -m course.qa.mutate                          # every mutant (a while on 2 cores)
    python -m course.qa.mutate attention-03 encoder-08  # only these mutants
    python -m course.qa.mutate --list                   # list the mutants and their count, run nothing
    python -m course.qa.mutate tasks-02 -k reverse_targets_itself   # does this one test catch tasks-02?

The mutants are data, one TOML file per mutated file in `course/qa/mutants/` (`attention.toml` mutates
`helpers/attention.py`, `explorer_js.toml` mutates `course/explorer/explorer.js`, ...). Each holds `file`, the
file it edits, `tests`, the unit tests that run for it, and its `[[mutant]]` tables, one-line edits of that file
(a wrong softmax axis, a flipped mask, a dropped residual, a running sum not rescaled, a checker that compares an
answer with itself, ...), with ids named by the file (`attention-03`).

The engine copies `helpers/`, `course/`, `benchmarks/`, `tests/`, `notebooks/data/` (the saved model a test
decodes), the notebooks (a test runs notebook 14's inline code), `conftest.py` and `pyproject.toml` into a
temporary folder once. For each mutant it writes the edited file into that copy, runs only that file's tests
there (`pytest -x -q`, one thread, a fixed Hypothesis seed, the copy first on the import path so that
`import helpers` and `import course` find the mutant and not the editable install), and restores the file. The
working tree is never written to, so other processes importing `helpers` meanwhile are unaffected.

A mutant is *caught* when the tests fail (or error, or time out) and *survives* when they pass. The engine
first checks that each mutant's text occurs exactly once in its file (`tests/course/qa/test_mutants.py` checks
this too, so a stale mutant fails the test command) and that the unedited copy passes. Mutants marked
`equivalent` change nothing observable (the reason is given); they are run and reported but left out of the
score. The exit status is 1 when the caught share is below `--threshold` (default 0.95).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("helpers", "course", "benchmarks", "tests", "notebooks/data")  # folders the work copy holds
PACKAGES = ("helpers", "course")  # each must be imported from the copy, not from the editable install


@dataclass(frozen=True)
class Mutant:
    """One edit: `old` (text that occurs exactly once in the mutated file) replaced by `new`."""

    id: str
    old: str
    new: str
    what: str
    equivalent: str = ""  # why the edit cannot change behaviour, if it cannot


MUTANTS_DIR = Path(__file__).resolve().parent / "mutants"


@dataclass(frozen=True)
class Target:
    """A mutated file (relative to the root), the tests that run for it, and its mutants, from `name`.toml."""

    name: str
    file: str
    tests: tuple[str, ...]
    mutants: tuple[Mutant, ...]


def read_target(path: Path) -> Target:
    """One `course/qa/mutants/NAME.toml` as a :class:`Target`."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    mutants = tuple(Mutant(**fields) for fields in data["mutant"])
    return Target(path.stem, data["file"], tuple(data["tests"]), mutants)


def targets() -> list[Target]:
    """Every mutated file with its tests and mutants, read from `course/qa/mutants/*.toml`."""
    return [read_target(path) for path in sorted(MUTANTS_DIR.glob("*.toml"))]


PYTEST_ARGS = ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:nbval", "-p", "no:xdist",
               "-o", "addopts=", "--hypothesis-seed=0", "--no-header", "--tb=no", "-rfE"]  # fmt: skip


def preload() -> None:
    """Import the heavy libraries once, in this process, so that each forked test run skips that cost.

    `helpers` itself must not be imported here: each fork imports the mutated copy afresh.
    """
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    import hypothesis  # noqa: F401
    import matplotlib
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch
    import torch.nn.functional  # noqa: F401

    matplotlib.use("Agg")
    import matplotlib.pyplot

    torch.set_num_threads(1)
    assert "helpers" not in sys.modules


CHILD_ENV = {"PYTHONIOENCODING": "utf-8"}  # a child Python writes UTF-8 into the log we read, whatever the locale


def forking(no_fork: bool = False) -> bool:
    """Whether test runs fork this preloaded process: only where ``os.fork`` exists (not on Windows), unless
    ``--no-fork``. Otherwise each run is a fresh Python, stopped at the timeout by ``subprocess`` (no signals)."""
    return hasattr(os, "fork") and not no_fork


def _forked(workdir: Path, log: Path, timeout: float, body) -> tuple[int | None, float]:
    """Run ``body()`` (returning an exit code) in a forked child inside ``workdir``; its output goes to ``log``.

    POSIX only (``os.fork``, ``SIGKILL``): :func:`forking` decides whether it is used."""
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's code
        code = 70
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(workdir)
            sys.path.insert(0, str(workdir))  # before the editable install's finder
            for name in [name for name in sys.modules if name.split(".")[0] in PACKAGES]:
                del sys.modules[name]  # this process runs from `course`: the copy's must be imported afresh
            code = int(body())
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, time.perf_counter() - start
        time.sleep(0.05)


def run_tests(workdir: Path, tests: list[str], timeout: float, fork: bool, keyword: str | None = None):
    """Run `tests` in `workdir`; return ("pass" | "fail" | "timeout", seconds, a summary line)."""
    tests = [*tests, "-k", keyword] if keyword else tests
    shutil.rmtree(workdir / ".hypothesis", ignore_errors=True)  # no replay of an earlier mutant's failures
    log = workdir / "pytest.log"
    if fork:
        import pytest

        code, seconds = _forked(workdir, log, timeout, lambda: pytest.main([*tests, *PYTEST_ARGS]))
    else:
        env = {**os.environ, **CHILD_ENV, "PYTHONPATH": str(workdir), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        start = time.perf_counter()
        with log.open("w", encoding="utf-8") as out:
            try:
                command = [sys.executable, "-m", "pytest", *tests, *PYTEST_ARGS]
                code = subprocess.run(command, cwd=workdir, env=env, stdout=out, stderr=out, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = None
        seconds = time.perf_counter() - start
    if code is None:
        return "timeout", seconds, ""
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    # The first failing test's summary line, else the last line (e.g. "3 passed in 2.00s").
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    summary = (failed or lines or [""])[0 if failed else -1]
    return ("pass" if code == 0 else "fail"), seconds, summary[:160]


def imports_the_copy(workdir: Path, fork: bool) -> bool:
    """Whether `import helpers` and `import course`, as the test runs will do them, find the copy in `workdir`."""
    if fork:

        def check() -> int:
            import importlib

            found = [Path(importlib.import_module(name).__file__) for name in PACKAGES]
            return 0 if all(path.is_relative_to(workdir) for path in found) else 1

        return _forked(workdir, workdir / "import.log", 300, check)[0] == 0
    env = {**os.environ, **CHILD_ENV, "PYTHONPATH": str(workdir)}
    program = f"import importlib; print(*(importlib.import_module(n).__file__ for n in {PACKAGES!r}), sep='\\n')"
    found = subprocess.run(
        [sys.executable, "-c", program], cwd=workdir, env=env, capture_output=True, text=True, encoding="utf-8"
    )
    paths = found.stdout.split()
    return len(paths) == len(PACKAGES) and all(Path(path).is_relative_to(workdir) for path in paths)


def work_copy(work: Path) -> None:
    """Copy what the tests need into `work`."""
    for folder in COPIED:
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):  # tests/helpers/test_modern.py runs notebook 14's code
        shutil.copy2(notebook, work / "notebooks" / notebook.name)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, work / name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="run only these mutants (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their count, run nothing")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant's test run")
    parser.add_argument("--threshold", type=float, default=0.95, help="fail below this caught share")
    parser.add_argument("-k", dest="keyword", help="run only the tests matching this pytest -k expression")
    parser.add_argument(
        "--no-fork", action="store_true", help="start a fresh Python per run instead of forking a preloaded one"
    )
    args = parser.parse_args()

    chosen = [(t, m) for t in targets() for m in t.mutants if not args.ids or m.id in args.ids]
    if args.ids and len(chosen) != len(set(args.ids)):
        known = {m.id for t in targets() for m in t.mutants}
        parser.error(f"unknown mutant ids: {sorted(set(args.ids) - known)}")
    if args.list:
        for t, m in chosen:
            print(f"{m.id:<20} {t.file:<30} {m.what}" + (" [equivalent]" if m.equivalent else ""))
        equivalent = sum(bool(m.equivalent) for _, m in chosen)
        print(f"{len(chosen)} mutants in {len({t.file for t, _ in chosen})} files ({equivalent} equivalent)")
        return 0

    originals = {t.file: (ROOT / t.file).read_text(encoding="utf-8") for t, _ in chosen}
    for t, m in chosen:  # every edit must apply, exactly once, to the current source
        count = originals[t.file].count(m.old)
        if count != 1:
            print(f"{m.id}: {m.old!r} occurs {count} times in {t.file}; update the mutant")
            return 2

    with tempfile.TemporaryDirectory(prefix="mutation_check_") as tmp:
        work = Path(tmp)
        work_copy(work)
        fork = forking(args.no_fork)
        if fork:
            preload()
        if not imports_the_copy(work, fork):
            print(f"`import helpers` or `import course` does not find the copy in {work}")
            return 2
        needed = sorted({test for t, _ in chosen for test in t.tests})
        status, seconds, summary = run_tests(work, needed, args.timeout, fork, args.keyword)
        print(f"unmutated copy: {' '.join(needed)}: {status} ({seconds:.0f} s)")
        if status != "pass":
            print(f"the unmutated tests must pass first: {summary}")
            return 2

        results = []
        for t, m in chosen:
            path = work / t.file
            try:
                path.write_text(originals[t.file].replace(m.old, m.new, 1), encoding="utf-8")
                status, seconds, summary = run_tests(work, list(t.tests), args.timeout, fork, args.keyword)
            finally:
                path.write_text(originals[t.file], encoding="utf-8")
            caught = status != "pass"
            results.append((m, caught))
            flag = " [equivalent]" if m.equivalent else ""
            verdict = "caught  " if caught else "SURVIVED"
            print(f"{m.id:<20} {verdict} {seconds:5.1f} s  {m.what}{flag}", flush=True)
            if caught and summary:
                print(f"      {summary}")

    scored = [(m, caught) for m, caught in results if not m.equivalent]
    n_caught = sum(caught for _, caught in scored)
    print(
        f"\ncaught {n_caught}/{len(scored)} ({n_caught / max(len(scored), 1):.1%}); "
        f"{len(results) - len(scored)} equivalent mutants left out of the score"
    )
    for m, caught in results:
        if not caught:
            print(f"  survivor {m.id} ({m.what})" + (f": equivalent, {m.equivalent}" if m.equivalent else ""))
    return 0 if n_caught >= args.threshold * len(scored) else 1


if __name__ == "__main__":
    sys.exit(main())
