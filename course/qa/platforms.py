"""Check that every notebook gives the same verdict on other CPUs, other seeds and two threads.

The stored outputs were made on one machine. A reader's machine differs in three ways that change float
results: its CPU picks other vector kernels (ATen's AVX-512, AVX2 or plain code; MKL's and oneDNN's code
paths), JupyterLab runs with every core rather than the one thread `conftest.py` sets, and a reader who
changes a seed gets another run. A claim that survives only the stored run is not a claim. This script
checks all three, from the repository root, in the project's environment:

    python -m course.qa.platforms                 # everything (what .ci/run does, about 15 minutes on 2 cores)
    python -m course.qa.platforms kernels         # strict nbval under simulated other CPUs
    python -m course.qa.platforms threads         # the training notebooks with two threads, no conftest
    python -m course.qa.platforms seeds --offsets 1 2 3 notebooks/02_masking.ipynb

- ``kernels``: the test command's strict nbval (stored outputs compared) over every notebook with
  ``ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE DNNL_MAX_CPU_ISA=SSE41`` together, then over the notebooks
  that train with each of the three alone.
- ``threads``: the notebooks that train, executed top to bottom as a reader's JupyterLab would (two threads,
  no ``conftest.py``); no cell may raise.
- ``seeds``: each notebook executed with its seeds shifted by each offset (default: 3 and 7); no cell may raise
  (cells tagged ``raises-exception`` are meant to). In code cells, every integer literal ``N`` in
  ``set_seed(N)``, ``manual_seed(N)``, ``default_rng(N)`` or ``seed = N`` (any name ending in "seed", as an
  assignment or a keyword argument) becomes ``N + offset``; so do ``a`` and ``b`` in ``range(a, b)`` (or
  ``range(b)``) assigned to or looped over by a name containing "seed". Notebooks write their seeds in these
  forms (CONTRIBUTING.md).

Exit status 0 when every check passes; the last line counts them.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
# Notebooks that train a model live: their numbers are the ones other kernels and thread counts move.
TRAINING = [
    "notebooks/07_what_attention_learns.ipynb",
    "notebooks/solutions/07_what_attention_learns_solutions.ipynb",
    "notebooks/10_training_and_decoding.ipynb",
    "notebooks/solutions/10_training_and_decoding_solutions.ipynb",
    "notebooks/solutions/11_efficient_attention_solutions.ipynb",
    "notebooks/13_induction_heads.ipynb",
    "notebooks/solutions/13_induction_heads_solutions.ipynb",
    "notebooks/14_modern_attention_blocks.ipynb",
]
# Kernels of other CPUs, simulated on this one: ATen's scalar code instead of its AVX2/AVX-512 kernels, MKL's
# conditional-numerical-reproducibility mode (the code path of an older processor), oneDNN limited to SSE4.1.
OTHER_CPU = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "DNNL_MAX_CPU_ISA": "SSE41"}
DEFAULT_OFFSETS = (3, 7)
TIMEOUT = 900  # seconds per notebook: generous, for a loaded machine

_CALL = re.compile(r"\b((?:set_seed|manual_seed|default_rng)\(\s*)(\d+)(\s*\))")
_ASSIGN = re.compile(r"(\b\w*seed\s*=\s*)(\d+)(?![.\w])", re.IGNORECASE)
_RANGE = re.compile(
    r"(\b(?:for\s+)?\w*seed\w*\s*(?:=|\bin\b)\s*range\(\s*)(\d+)(?:(\s*,\s*)(\d+))?(\s*\))", re.IGNORECASE
)


def shift_seeds(source: str, offset: int) -> str:
    """Return cell source with every seed written in the conventional forms moved by ``offset``."""

    def call(m: re.Match) -> str:
        return f"{m[1]}{int(m[2]) + offset}{m[3]}"

    def assign(m: re.Match) -> str:
        return f"{m[1]}{int(m[2]) + offset}"

    def seed_range(m: re.Match) -> str:
        if m[4] is None:  # range(b) = range(0, b)
            return f"{m[1]}{offset}, {int(m[2]) + offset}{m[5]}"
        return f"{m[1]}{int(m[2]) + offset}{m[3]}{int(m[4]) + offset}{m[5]}"

    source = _RANGE.sub(seed_range, source)
    source = _CALL.sub(call, source)
    return _ASSIGN.sub(assign, source)


def rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def kernel_env(threads: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", *OTHER_CPU)}
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    env["PYTHONIOENCODING"] = "utf-8"  # the child prints cell sources ("√d_k") into a pipe we read as UTF-8
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    env.update(extra or {})
    return env


def execute_one(path: str, offset: int, threads: int) -> list[str]:
    """Execute one notebook (seeds shifted by ``offset``) in a fresh kernel; return the cells that raised."""
    import nbformat
    from nbclient import NotebookClient

    source = ROOT / path
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and offset:
            cell.source = shift_seeds(cell.source, offset)
    client = NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(source.parent)}},
    )
    client.execute()
    failures = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                line = failing_line(output.get("traceback", []))
                where = f" at `{line[:160]}`" if line else ""
                failures.append(f"cell {index} ({first[:60]}){where}: {output['ename']}: {output['evalue'][:300]}")
    return failures


def failing_line(traceback: list[str]) -> str:
    """The line of the cell that raised, from an IPython traceback (its frames' ANSI colours removed): the first
    line marked with an arrow, ``---> 12 assert ...``. An assert with no message says nothing else."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(traceback))
    for line in text.splitlines():
        marked = re.match(r"\s*-+>\s*\d+\s?(.*)$", line)
        if marked:
            return marked.group(1).strip()
    return ""


def run_execute(path: str, offset: int, threads: int) -> tuple[bool, str, float]:
    """Run execute_one in a child process with the kernel environment (one kernel per child)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        # The kernel starts in the notebook's folder, so the repository's conftest.py is never imported;
        # the environment alone sets the threads.
        proc = subprocess.run(
            [sys.executable, "-m", "course.qa.platforms", "_execute", path, str(offset), str(threads)],
            cwd=tmp,
            env=kernel_env(threads),
            capture_output=True,
            text=True,
            encoding="utf-8",
        )
    seconds = time.perf_counter() - start
    ok = proc.returncode == 0
    # The child prints the cells that raised; its stderr (kernel chatter) matters only if it died itself.
    detail = proc.stdout.strip() or ("" if ok else proc.stderr.strip()[-2000:])
    return ok, detail, seconds


def nbval(paths: list[str], extra: dict[str, str]) -> tuple[bool, str, float]:
    """The test command's strict nbval over ``paths``, with ``extra`` in every kernel's environment."""
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in OTHER_CPU}
    env.update(extra, PYTHONIOENCODING="utf-8")  # pytest's report may quote a cell ("√d_k"); we read it as UTF-8
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *paths],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    seconds = time.perf_counter() - start
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    detail = "\n".join(line for line in lines if line.startswith(("FAILED", "ERROR"))) or (lines[-1] if lines else "")
    return proc.returncode == 0, detail, seconds


def report(results: list[tuple[str, bool, str, float]]) -> int:
    passed = sum(ok for _, ok, _, _ in results)
    failed = len(results) - passed
    print()
    for name, ok, detail, _seconds in results:
        if not ok:
            print(f"FAILED {name}\n  " + detail.replace("\n", "\n  "))
    print(f"check_platforms: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def check_kernels(results: list) -> None:
    every = [rel(p) for p in NOTEBOOKS]
    variants = [("all three", OTHER_CPU, every)]
    variants += [(f"{k}={v}", {k: v}, TRAINING) for k, v in OTHER_CPU.items()]
    for label, extra, paths in variants:
        ok, detail, seconds = nbval(paths, extra)
        name = f"kernels [{label}] strict nbval over {len(paths)} notebooks"
        print(f"{'ok  ' if ok else 'FAIL'} {seconds:6.1f} s  {name}", flush=True)
        results.append((name, ok, detail, seconds))


def check_executions(results: list, jobs: list[tuple[str, int, int]], label) -> None:
    # Two notebooks at a time, each kernel with the jobs' thread count.
    workers = 1 if any(threads > 1 for _, _, threads in jobs) else 2
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [(job, pool.submit(run_execute, *job)) for job in jobs]
        for (path, offset, threads), future in futures:
            ok, detail, seconds = future.result()
            name = label(path, offset, threads)
            print(f"{'ok  ' if ok else 'FAIL'} {seconds:6.1f} s  {name}", flush=True)
            if not ok:
                print("     " + detail.replace("\n", "\n     "), flush=True)
            results.append((name, ok, detail, seconds))


def main(argv: list[str]) -> int:
    if argv[:1] == ["_execute"]:
        path, offset, threads = argv[1], int(argv[2]), int(argv[3])
        failures = execute_one(path, offset, threads)
        print("\n".join(failures))
        return 1 if failures else 0

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", nargs="?", default="all", choices=["all", "kernels", "threads", "seeds"])
    parser.add_argument("notebooks", nargs="*", help="notebook paths for 'seeds' and 'threads' (default: their set)")
    parser.add_argument("--offsets", nargs="+", default=[str(o) for o in DEFAULT_OFFSETS], help="seed offsets")
    args = parser.parse_args(argv)
    # `--offsets 1 2 nb.ipynb` takes the path as an offset too: hand back what is not a number.
    offsets = [int(o) for o in args.offsets if o.lstrip("-").isdigit()]
    chosen = [rel(Path(p)) for p in args.notebooks + [o for o in args.offsets if not o.lstrip("-").isdigit()]]
    start = time.perf_counter()
    results: list = []
    if args.check in ("all", "kernels"):
        check_kernels(results)
    if args.check in ("all", "threads"):
        jobs = [(path, 0, 2) for path in (chosen or TRAINING)]
        check_executions(results, jobs, lambda p, o, t: f"threads [2, no conftest] {p}")
    if args.check in ("all", "seeds"):
        jobs = [(path, offset, 1) for offset in offsets for path in (chosen or [rel(p) for p in NOTEBOOKS])]
        check_executions(results, jobs, lambda p, o, t: f"seeds [+{o}] {p}")
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    return report(results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
