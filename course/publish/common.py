"""What the HTML site (site.py) and the slide decks (slides.py) share: the lists of notebooks and decks, titles,
the local MathJax, resolving a notebook's links to repository files, and the command line of both.

site.py imports slides.py (it builds the decks into its slides/ folder) and this module; slides.py imports only
this module.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import mathjax  # the django-static-mathjax package: MathJax's own distribution files, nothing else
import nbformat

ROOT = Path(__file__).resolve().parents[2]


def notebook_paths(root: Path = ROOT) -> list[Path]:
    """Every notebook under notebooks/, solutions included: one page each on the site."""
    return sorted(p for p in (root / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def slide_type(cell: nbformat.NotebookNode) -> str | None:
    slideshow = cell.get("metadata", {}).get("slideshow")
    return slideshow.get("slide_type") if isinstance(slideshow, dict) else None


def deck_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks directly under notebooks/ that have slide metadata on at least one cell: one deck each."""
    paths = sorted((root / "notebooks").glob("*.ipynb"))
    return [p for p in paths if any(slide_type(c) for c in nbformat.read(p, as_version=4).cells)]


def deck_name(notebook: Path) -> str:
    return f"{notebook.stem}.slides.html"


def notebook_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The text of the notebook's first markdown heading, without markdown emphasis."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        match = re.search(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", cell.source, re.MULTILINE)
        if match:
            return re.sub(r"\*\*|__|`", "", match.group(1)).strip()
    return fallback


def series_title(root: Path = ROOT) -> str:
    """The README's first heading, the series' name."""
    readme = root / "README.md"
    if readme.is_file():
        match = re.search(r"^#\s+(.+?)\s*$", readme.read_text(encoding="utf-8"), re.MULTILINE)
        if match:
            return match.group(1)
    return "Notebooks"


# Equations are typeset by a local copy of MathJax 3 (from the pinned django-static-mathjax package) instead of
# nbconvert's default CDN. Its TeX-to-SVG bundle draws glyphs as SVG paths from the script itself, so no web font
# is fetched (browsers refuse fonts from file:// pages). Delimiters and settings as in JupyterLab and nbconvert.
# The a11y, sre and ui folders are what the MathJax menu loads on demand.
MATHJAX_ES5 = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
MATHJAX_DIR = "mathjax"  # inside the output folder
MATHJAX_FILES = ("tex-svg-full.js", "a11y", "sre", "ui")
MATHJAX_HEAD = (
    """<script>
window.MathJax = {
  tex: {
    inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]],
    displayMath: [["$$", "$$"], ["\\\\[", "\\\\]"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "ams"
  },
  svg: {fontCache: "global"}
};
</script>
<script src="{prefix}"""
    + MATHJAX_DIR
    + """/tex-svg-full.js"></script>"""
)


def mathjax_head(prefix: str = "") -> str:
    """The <head> lines that configure and load the local MathJax, from a page ``prefix`` ("../") below the root."""
    return MATHJAX_HEAD.replace("{prefix}", prefix)


def copy_mathjax(out: Path) -> None:
    """Copy the local MathJax 3 (the files MATHJAX_HEAD loads, and its licence) to out/mathjax/, afresh."""
    shutil.rmtree(out / MATHJAX_DIR, ignore_errors=True)
    for name in MATHJAX_FILES:
        source = MATHJAX_ES5 / name
        if source.is_dir():
            shutil.copytree(source, out / MATHJAX_DIR / name)
        else:
            (out / MATHJAX_DIR).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / MATHJAX_DIR / name)
    shutil.copyfile(MATHJAX_ES5.parent / "LICENSE", out / MATHJAX_DIR / "LICENSE")


WEB_ADDRESS = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # https:, mailto:, data:


def linked_file(notebook: Path, url: str) -> Path | None:
    """The file a relative link or image source of a notebook points to (``../img/x.svg``, ``02_masking.ipynb#x``),
    resolved from the notebook's folder; None for a web address, a path from the root (``/x``) or an anchor."""
    if WEB_ADDRESS.match(url) or url.startswith(("/", "#")):
        return None
    return (notebook.parent / unquote(urlsplit(url).path)).resolve()


def warn_missing(page: Path, verb: str, urls: Iterable[str]) -> None:
    """On stderr: the page (a notebook's path in the repository) links or shows urls, which are not files."""
    for url in urls:
        print(f"warning: {page} {verb} {url}, which is not a file in the repository", file=sys.stderr)


def run_command(
    build: Callable[[Path], list[Path]], built: str, default_out: Path, doc: str, argv: list[str] | None = None
) -> None:
    """The command line of both builders: ``--out DIR``, then what ``build`` wrote (``built``: "decks") and where
    to open it. ``doc``: the module's docstring, whose first line is the command's description."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=default_out, help=f"output folder (default: {default_out})")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    start = time.perf_counter()
    written = build(args.out.resolve())
    print(f"{len(written)} {built} and index.html in {args.out} ({time.perf_counter() - start:.1f} s)")
    print(f"open {(args.out / 'index.html').resolve().as_uri()}")
