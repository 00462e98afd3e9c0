"""Write the repository as students should get it: no worked solutions, no answer keys, checkers in graded mode.

    python -m course.student_copy OUT

OUT must not exist yet (or be an empty folder) and must lie outside this repository. The copy holds every file
of the repository that git tracks (or, without git, every file but the virtual environments, ``build/`` and
caches), less what is in :data:`LEFT_OUT`; it gets the file ``course/exercises/GRADED``, which turns graded mode
on (no checker shows solution code, ``solution()`` says it is switched off; ``ATTENTION_GRADED=0`` turns it off
again), and a note at the top of its README saying so. Everything else runs with the README's two commands, the
test command included. Hand it out as a folder, a ZIP or a repository of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "course/exercises/GRADED"
"""The file that turns graded mode on (``course.exercises.engine.GRADED_MARKER``), relative to the repository."""

LEFT_OUT = ("notebooks/solutions", "ASSESSMENT.md")
"""Paths (folders or files, relative to the repository) that a student copy leaves out: the worked solutions and
the teacher's answer keys. Tests that check paths named in the docs skip these in a student copy."""

_NEVER = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", ".hypothesis"}

NOTE = """> **Student copy.** This copy has no worked solutions, and its exercise checkers run in graded mode: a failed
> attempt gets a hint about the idea, then a hint in code, but never the solution code, and `solution("01.1")`
> says that solutions are switched off (the file `course/exercises/GRADED` does it). Your teacher may collect your
> notebooks and run them to see which checked exercises pass. Everything else works as this README says.

"""


def is_student_copy(root: Path = ROOT) -> bool:
    """Whether ``root`` is a student copy (it has the graded-mode file)."""
    return (root / MARKER).exists()


def left_out(relative: str) -> bool:
    return any(relative == path or relative.startswith(path + "/") for path in LEFT_OUT)


def repository_files(root: Path = ROOT) -> list[str]:
    """The repository's files, as paths relative to ``root`` with "/": git's list where git knows the folder (so
    nothing untracked, like a folder of submissions, goes out), else a walk that skips environments and caches."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached"],
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8")
        files = [name for name in listed.split("\0") if name and (root / name).is_file()]
        if files:
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [
            s for s in subfolders if s not in _NEVER and not s.startswith(".venv") and not s.endswith(".egg-info")
        ]
        for name in names:
            files.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(files)


_SOLUTION_LINK = re.compile(r"\[[^\]\n\"]*\]\((?:\.\./)*(?:notebooks/)?solutions/[^)\n\"]*\)")
ELSEWHERE = "your teacher's copy"


def without_solution_links(text: str) -> str:
    """Text whose links to the worked solutions (left out of a student copy) say where those are instead."""
    return _SOLUTION_LINK.sub(ELSEWHERE, text)


def _unlink_solutions(path: Path) -> None:
    """Rewrite a copied notebook or markdown file so that no link points at the missing solutions (a notebook's
    JSON as text: a link is never cut over two lines, and the rest of the file stays byte for byte)."""
    text = path.read_text(encoding="utf-8")
    if _SOLUTION_LINK.search(text):
        path.write_text(without_solution_links(text), encoding="utf-8", newline="\n")


def write_copy(out: Path, root: Path = ROOT) -> list[str]:
    """Write the student copy of ``root`` into ``out``; returns the files written (relative paths)."""
    out = out.resolve()
    if out.is_relative_to(root.resolve()):
        raise ValueError(f"{out} is inside the repository {root}: choose a folder outside it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} already exists and is not an empty folder: choose a new one")
    written = []
    for relative in repository_files(root):
        if left_out(relative):
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
        if target.suffix in (".md", ".ipynb"):
            _unlink_solutions(target)
        written.append(relative)
    marker = out / MARKER
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(
        "Graded mode: no checker shows solution code (see course/exercises/__init__.py). Delete this file, or set\n"
        "ATTENTION_GRADED=0, to turn it off.\n",
        encoding="utf-8",
    )
    written.append(marker.relative_to(out).as_posix())
    readme = out / "README.md"
    if readme.exists():
        title, _, rest = readme.read_text(encoding="utf-8").partition("\n\n")
        readme.write_text(f"{title}\n\n{NOTE}{rest}", encoding="utf-8", newline="\n")
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m course.student_copy", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a new folder outside this repository")
    args = parser.parse_args(argv)
    try:
        written = write_copy(args.out)
    except ValueError as error:
        print(f"course.student_copy: {error}", file=sys.stderr)
        return 2
    print(f"{len(written)} files written to {args.out.resolve()} (left out: {', '.join(LEFT_OUT)}); graded mode on")
    return 0


if __name__ == "__main__":
    sys.exit(main())
