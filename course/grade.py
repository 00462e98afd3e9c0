"""The gradebook: run a folder of students' notebooks and write who passed which checked exercise.

    python -m course.grade FOLDER --csv grades.csv [--time-limit 300]

Every ``.ipynb`` under FOLDER is executed top to bottom in a fresh kernel of this environment's Python, in graded
mode (no checker shows solution code), inside an empty temporary folder, and never past the time limit: a
notebook that hangs is stopped there and its kernel shut down, and one that raises stops where it raised; neither
stops the others. Each checker the notebook runs reports its verdict, and the CSV gets one row per notebook and
checked exercise of that notebook:

    student   the file's path under FOLDER without ".ipynb" ("alice", or "alice/01_scaled_dot_product_attention")
    notebook  the notebook's number, two digits ("01"), read from its exercise headings or its file name
    exercise  the checked exercise ("01.1")
    status    "passed", "failed", "not attempted" or "error" (the notebook stopped before this checker ran)
    mistake   the mistake the checker named, or empty
    detail    why "error" or "not attempted", or the failure's message

A student's last verdict for an exercise is the one recorded. Students' code runs on this machine with your
rights: run the command in a container or as a separate user (TEACHING.md, "Grading").
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import nbformat

from course.exercises.engine import GRADEBOOK_VARIABLE, GRADED_VARIABLE

COLUMNS = ("student", "notebook", "exercise", "status", "mistake", "detail")
ERROR = "error"
DEFAULT_TIME_LIMIT_S = 300.0


@dataclass
class Row:
    student: str
    notebook: str
    exercise: str
    status: str
    mistake: str = ""
    detail: str = ""


def checked_exercises() -> dict[str, list[str]]:
    """The checked exercises by notebook number: ``{"01": ["01.1"], "02": ["02.1", "02.2"], ...}``."""
    import course.exercises  # noqa: F401  (registers every checker's hints)
    from course.exercises.engine import registered_hints

    by_notebook: dict[str, list[str]] = {}
    for exercise in sorted(registered_hints()):
        by_notebook.setdefault(exercise[:2], []).append(exercise)
    return by_notebook


def notebook_number(nb: nbformat.NotebookNode, path: Path) -> str | None:
    """The series notebook this file is a copy of: the number of its first "### Exercise NN.M" heading, else the
    two digits its file name starts with."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if found := re.search(r"^#{2,4}\s+Exercise\s+(\d\d)\.\d+", cell.source, re.MULTILINE):
                return found.group(1)
    found = re.match(r"(\d\d)_", path.name)
    return found.group(1) if found else None


def _run(nb: nbformat.NotebookNode, time_limit: float, gradebook: Path) -> str:
    """Execute the notebook in a fresh kernel, in graded mode, in an empty folder; stop at ``time_limit`` seconds
    in all (kernel start included). Returns "" when every cell ran, else why it stopped."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    deadline = time.monotonic() + time_limit
    saved = {name: os.environ.get(name) for name in (GRADED_VARIABLE, GRADEBOOK_VARIABLE)}
    os.environ[GRADED_VARIABLE] = "1"  # the kernel inherits both
    os.environ[GRADEBOOK_VARIABLE] = str(gradebook)
    try:
        with tempfile.TemporaryDirectory(prefix="grade-") as folder:
            client = NotebookClient(
                nb,
                timeout=max(1, int(time_limit)),
                startup_timeout=max(1, int(time_limit)),
                kernel_name="python3",
                resources={"metadata": {"path": folder}},
                record_timing=False,
                shutdown_kernel="immediate",  # a kernel stuck in the student's loop is killed, not asked
            )
            number = 0
            try:
                with client.setup_kernel():
                    for index, cell in enumerate(nb.cells):
                        if cell.cell_type != "code":
                            continue
                        number += 1
                        remaining = deadline - time.monotonic()
                        if remaining < 1:
                            return f"ran past the time limit of {time_limit:g} s before code cell {number}"
                        client.timeout = int(remaining)
                        client.execute_cell(cell, index)
            except CellTimeoutError:
                return f"code cell {number} ran past the time limit of {time_limit:g} s; its kernel was stopped"
            except CellExecutionError as error:
                name = getattr(error, "ename", "") or "error"
                value = getattr(error, "evalue", "") or ""
                return f"code cell {number} raised {name}: {value}".strip().rstrip(":")
            except DeadKernelError:
                return f"the kernel died in code cell {number}"
            except RuntimeError as error:  # the kernel did not start in time
                return f"the kernel did not start: {error}"
            return ""
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def last_verdicts(gradebook: Path) -> dict[str, dict]:
    """The last verdict each checker wrote, by exercise id."""
    last: dict[str, dict] = {}
    if gradebook.exists():
        for line in gradebook.read_text(encoding="utf-8").splitlines():
            try:
                verdict = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(verdict, dict) and isinstance(verdict.get("exercise"), str):
                last[verdict["exercise"]] = verdict
    return last


def grade_notebook(path: Path, student: str, time_limit: float = DEFAULT_TIME_LIMIT_S) -> list[Row]:
    """One row per checked exercise of the notebook at ``path`` (one "error" row if it cannot be read or placed)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a student's file may be anything
        return [Row(student, "", "", ERROR, "", f"not a readable notebook: {error}".splitlines()[0])]
    number = notebook_number(nb, path)
    exercises = checked_exercises().get(number or "", [])
    if not exercises:
        where = f"notebook {number}" if number else "this file (no 'Exercise NN.M' heading, no NN_ file name)"
        return [Row(student, number or "", "", ERROR, "", f"no checked exercise in {where}")]
    with tempfile.TemporaryDirectory(prefix="gradebook-") as folder:
        gradebook = Path(folder) / "verdicts.jsonl"
        stopped = _run(nb, time_limit, gradebook)
        verdicts = last_verdicts(gradebook)
    rows = []
    for exercise in exercises:
        verdict = verdicts.get(exercise)
        if verdict is not None:
            status = verdict.get("status", "")
            detail = "" if status == "passed" else str(verdict.get("message", ""))
            rows.append(Row(student, number, exercise, status, verdict.get("mistake") or "", detail))
        elif stopped:
            rows.append(Row(student, number, exercise, ERROR, "", f"stopped before its checker ran: {stopped}"))
        else:
            rows.append(Row(student, number, exercise, "not attempted", "", "its checker never ran"))
    return rows


def submissions(folder: Path) -> list[tuple[str, Path]]:
    """(student, path) for every notebook under ``folder``, checkpoints left out, in name order."""
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        found.append((path.relative_to(folder).with_suffix("").as_posix(), path))
    return found


def grade(folder: Path, csv_path: Path, time_limit: float = DEFAULT_TIME_LIMIT_S, echo=print) -> list[Row]:
    """Grade every notebook under ``folder`` and write the CSV; returns its rows."""
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder of notebooks")
    if time_limit <= 0:
        raise ValueError(f"the time limit must be positive seconds, got {time_limit}")
    found = submissions(folder)
    if not found:
        raise ValueError(f"no .ipynb file under {folder}")
    rows: list[Row] = []
    for student, path in found:
        start = time.monotonic()
        graded = grade_notebook(path, student, time_limit)
        rows += graded
        passed = sum(row.status == "passed" for row in graded)
        echo(f"{student}: {passed} of {len(graded)} passed ({time.monotonic() - start:.0f} s)")
    with csv_path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        writer.writerows(astuple(row) for row in rows)
    echo(f"{len(rows)} rows for {len(found)} notebooks written to {csv_path}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grade", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder of students' notebooks (searched recursively)")
    parser.add_argument("--csv", type=Path, required=True, help="where to write the gradebook")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT_S,
        help=f"seconds one notebook may run in all, kernel start included (default {DEFAULT_TIME_LIMIT_S:g})",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        grade(args.folder, args.csv, args.time_limit)
    except ValueError as error:
        print(f"course.grade: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
