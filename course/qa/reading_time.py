"""How long each notebook takes to read and run: its core path, and its optional parts.

Run from the repository root, in the project's environment:

    python -m course.qa.reading_time            # a table of every numbered notebook
    python -m course.qa.reading_time NB ...     # only those
    python -m course.qa.reading_time --write    # and update each notebook's sentence about its times

The estimate is the one the series' reviews used: markdown at READING_WPM words a minute (technical
prose) plus code at CODE_LINES_PER_MINUTE lines a minute (read, run and look at the output); running
time itself is a few seconds a notebook and is left out. The exercises are counted apart: they take as long
as a reader needs.

An optional part is a section or subsection whose heading says so (``## 8. Optional: ...``,
``### Optional: ...``); it runs to the next heading of the same or a higher level. Its first markdown cell
holds a ``**Takeaway.**`` of at most TAKEAWAY_WORDS words, so that a reader who skips the part keeps its
point, and it defines nothing that a later cell outside the optional parts reads (``optional_names_used``).
Each notebook states its times near its top in one sentence that tests/course/qa/test_reading_time.py compares
with this estimate: "The core path takes about N minutes to read and run[; the optional parts add about M]." The
core paths of notebooks 01 to CORE_NOTEBOOKS together stay under CORE_HOURS hours (tested too).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READING_WPM = 130
CODE_LINES_PER_MINUTE = 8
TAKEAWAY_WORDS = 60
CORE_HOURS = 10  # the core path of notebooks 01 to 14, the paper and what followed it, stays under this
CORE_NOTEBOOKS = 14  # notebook 15, a language model of our own, comes on top of them
HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*$", re.MULTILINE)
OPTIONAL = re.compile(r"\bOptional\b")
STATEMENT = re.compile(
    r"The core path takes about (\d+) minutes to read and run(?:; the optional parts add about (\d+))?"
)


@dataclass
class Part:
    heading: str
    level: int
    optional: bool
    exercises: bool
    words: int = 0
    code_lines: int = 0
    takeaway: str | None = None

    @property
    def minutes(self) -> float:
        return self.words / READING_WPM + self.code_lines / CODE_LINES_PER_MINUTE


def _words(markdown: str) -> int:
    markdown = re.sub(STATEMENT.pattern + r"[^.]*\.", " ", markdown)  # the statement of the times itself
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " x ", markdown, flags=re.DOTALL)  # an equation reads as a word
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)|<[^>]+>", " ", text)  # diagrams and tags are looked at, not read
    return len(re.findall(r"\S+", text))


def _code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def parts(path: Path) -> list[Part]:
    """The notebook cut at its headings (levels 1-3), each part with its words and code lines."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    current = Part("(top)", 1, False, False)
    found = [current]
    stack: list[Part] = []  # the enclosing headings, for "optional" and "exercises" inherited by subsections
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            current.code_lines += _code_lines(source) if cell["cell_type"] == "code" else 0
            continue
        pieces = HEADING.split(source)  # [text, hashes, heading, text, hashes, heading, text, ...]
        current.words += _words(pieces[0])
        for hashes, heading, text in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
            level = len(hashes)
            while stack and stack[-1].level >= level:
                stack.pop()
            inherited_optional = any(p.optional for p in stack)
            exercises = any(p.exercises for p in stack) or heading.startswith("Exercises")
            current = Part(heading, level, bool(OPTIONAL.search(heading)) or inherited_optional, exercises)
            if OPTIONAL.search(heading):
                match = re.search(r"\*\*Takeaway\.\*\*\s*(.+?)(?:\n\s*\n|$)", text, re.DOTALL)
                current.takeaway = " ".join(match.group(1).split()) if match else None
            current.words += _words(heading) + _words(text)
            stack.append(current)
            found.append(current)
    return found


def _code_cells(path: Path):
    """Each code cell's source with the heading of the optional part it sits in (None in the core) and whether it
    sits under "Exercises", cut at the headings as ``parts`` cuts them."""
    stack: list[tuple[int, str, bool, bool]] = []  # (level, heading, optional, exercises) of the enclosing headings
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for hashes, heading in HEADING.findall(source):
                while stack and stack[-1][0] >= len(hashes):
                    stack.pop()
                optional = bool(OPTIONAL.search(heading)) or any(s[2] for s in stack)
                exercises = heading.startswith("Exercises") or any(s[3] for s in stack)
                stack.append((len(hashes), heading, optional, exercises))
        elif cell["cell_type"] == "code":
            part = next((s[1] for s in stack if s[2]), None)  # the outermost optional heading
            yield source, part, any(s[3] for s in stack)


def _tree(source: str) -> ast.Module:
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]  # IPython magics
    return ast.parse("\n".join(lines))


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {(alias.asname or alias.name).split(".")[0] for alias in node.names}


def _assigned_at_top(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names a cell binds at its top level by assignment, def or class; names it imports there)."""
    assigned, imported = set(), set()
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            imported |= _imported(statement)
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            assigned.add(statement.name)
            continue
        todo = [statement]
        while todo:  # a name stored anywhere in the statement, except inside a new scope
            node = todo.pop()
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            scopes = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda | ast.comprehension
            todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, scopes))
    return assigned, imported


def _read_from_outside(tree: ast.Module) -> set[str]:
    """Names a cell reads and never binds itself (anywhere in it): those it takes from earlier cells."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= _imported(node)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def optional_names_used(path: Path) -> list[tuple[str, str]]:
    """(name, optional part) for each name that a core or exercise cell reads whose last binding before it was in an
    optional part: a reader who skipped that part would meet it undefined. Importing a module again is no binding."""
    owner: dict[str, str | None] = {}  # name -> the optional part that bound it last, None for the core
    found = []
    for source, part, _ in _code_cells(path):
        tree = _tree(source)
        if part is None:
            found += [(name, owner[name]) for name in sorted(_read_from_outside(tree)) if owner.get(name)]
        assigned, imported = _assigned_at_top(tree)
        for name in assigned:
            owner[name] = part
        for name in imported:
            owner[name] = owner.get(name, part) if part else None
    return found


def times(path: Path) -> tuple[float, float]:
    """(core, optional) minutes to read and run, exercises left out."""
    found = [p for p in parts(path) if not p.exercises]
    core = sum(p.minutes for p in found if not p.optional)
    optional = sum(p.minutes for p in found if p.optional)
    return core, optional


def rounded(minutes: float) -> int:
    """To the nearest 5 minutes, at least 5."""
    return max(5, 5 * round(minutes / 5))


def statement(path: Path) -> str:
    """The sentence a notebook states its times in (STATEMENT), from this estimate."""
    core, optional = times(path)
    text = f"The core path takes about {rounded(core)} minutes to read and run"
    if optional:
        text += f"; the optional parts add about {rounded(optional)}, each marked *Optional* and ending in a takeaway"
    return text + ", exercises apart."


def write_statement(path: Path) -> bool:
    """Put the statement after the glossary line of the notebook's first cell (or replace an older one there);
    True if the notebook changed. Only that markdown cell is touched."""
    import nbformat  # only for writing, in the repository's format

    nb = nbformat.read(path, as_version=4)
    cell = nb.cells[0]
    if cell.cell_type != "markdown" or "GLOSSARY.md" not in cell.source:
        raise SystemExit(f"{path.name}: its first cell has no glossary line to put the time after")
    old = re.search(STATEMENT.pattern + r"[^.]*\.", cell.source)
    new = statement(path)
    if old:
        source = cell.source.replace(old.group(0), new)
    else:
        paragraphs = cell.source.split("\n\n")
        at = next(i for i, p in enumerate(paragraphs) if "GLOSSARY.md" in p)
        paragraphs.insert(at + 1, new)
        source = "\n\n".join(paragraphs)
    if source == cell.source:
        return False
    cell.source = source
    nbformat.write(nb, path)
    return True


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--write", action="store_true", help="update each notebook's statement of its times")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.write:
        for path in paths:
            if write_statement(path):
                print(f"{path.name}: {statement(path)}")
    total_core = total_optional = 0.0
    print(f"{'notebook':40s} {'core':>6s} {'optional':>9s}  optional parts")
    for path in paths:
        core, optional = times(path)
        total_core, total_optional = total_core + core, total_optional + optional
        names = [p.heading for p in parts(path) if p.optional and not p.exercises and p.takeaway is not None]
        print(f"{path.name:40s} {core:5.0f}m {optional:8.0f}m  {'; '.join(names)}")
    print(f"{'all':40s} {total_core / 60:5.1f}h {total_optional / 60:8.1f}h")


if __name__ == "__main__":
    main(sys.argv[1:])
