"""Build a reveal.js slide deck of every notebook that carries slide metadata, that presents offline.

Run from the repository root, in the project's environment:

    python scripts/build_slides.py              # -> build/slides/<notebook>.slides.html and index.html
    python scripts/build_slides.py --out DIR    # somewhere else

The decks show the outputs stored in the notebooks (nothing is executed, so this takes seconds). A
notebook gets a deck when at least one of its top-level cells has a slide type (in JupyterLab: the
property inspector, "Slide Type"; stored as ``cell.metadata.slideshow.slide_type``). The series uses
the types this way, the same in every notebook (tests/test_slides.py checks the first two points in notebooks 01-04):

- ``slide`` (left/right arrow keys): the title cell and every cell that starts a ``## `` section, the
  summary, the exercises and "What's next" included;
- ``skip``: housekeeping: the set-up cell, the exercise stubs and their checker cells, and a few
  secondary checks whose point the speaker notes carry;
- ``subslide`` (up/down arrow keys): a step inside a section, the text that says why or what to look at
  together with the code cell after it (``-``, same slide); code that does not fit under its text
  (a long definition, a figure) gets a sub-slide of its own; each exercise statement;
- ``fragment``: a short follow-up revealed on the same slide by the next key press;
- ``notes``: a conclusion or a digression that the presenter says rather than shows: in the speaker
  view (key ``s``), not on the slide.

A markdown cell in which a ``## `` heading follows some text is split in two at the heading, and the
part from the heading on starts a new slide, so that every section starts a slide whatever the cell
boundaries; likewise a diagram (an image alone on its line) after some text starts a sub-slide, with
the text after it. Long code above a figure is shown in a scroll box, so that the figure stays on the
slide (scripts/slides_template/slides.css), and math in speaker notes stays TeX source (the speaker
view cannot show MathJax's output). Nothing else about the notebook changes.

Everything a deck needs is in the output folder: reveal.js 5 and its speaker-notes plugin (from the
pinned sphinx-revealjs package, which bundles reveal.js's own distribution files; this script uses
only those, not Sphinx), the local MathJax 3 of scripts/build_html.py, and the series' slide style
(scripts/slides_template/). Figures and diagrams are embedded as data URIs. No deck loads anything
from the network. Links to another notebook that has a deck point to its deck; other links to files
of the repository become plain text, since the decks travel without the repository.
"""

from __future__ import annotations

import argparse
import base64
import copy
import html
import importlib.util
import mimetypes
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
from build_html import (
    MATHJAX_HEAD,
    copy_mathjax,
    notebook_title,
    series_title,
)  # scripts/build_html.py, next to this file
from jinja2 import FileSystemLoader
from nbconvert import SlidesExporter
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "slides"
TEMPLATE_DIR = Path(__file__).resolve().parent / "slides_template"
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
REVEAL_DIR = "reveal"  # inside the output folder
# The slide canvas in CSS pixels (16:9); reveal.js scales it to fit the screen.
WIDTH, HEIGHT = 1280, 720


def _revealjs_dist() -> Path:
    """reveal.js's own files, as bundled by sphinx-revealjs (found without importing it, so without Sphinx)."""
    spec = importlib.util.find_spec("sphinx_revealjs")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sphinx-revealjs is not installed: run `pip install -r requirements.txt`")
    return Path(next(iter(spec.submodule_search_locations))) / "_static" / "revealjs"


# What the decks load from reveal.js: the core, its white theme and the speaker-notes plugin.
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "plugin/notes/notes.js", "LICENSE")
REVEAL_FONTS = "dist/theme/fonts/source-sans-pro"  # the white theme's font, imported by white.css


def slide_type(cell: nbformat.NotebookNode) -> str | None:
    slideshow = cell.get("metadata", {}).get("slideshow")
    return slideshow.get("slide_type") if isinstance(slideshow, dict) else None


def deck_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks directly under notebooks/ that have slide metadata on at least one cell."""
    paths = sorted((root / "notebooks").glob("*.ipynb"))
    return [p for p in paths if any(slide_type(c) for c in nbformat.read(p, as_version=4).cells)]


def deck_name(notebook: Path) -> str:
    return f"{notebook.stem}.slides.html"


_SECTION = re.compile(r"^ {0,3}## ", re.MULTILINE)
_DIAGRAM = re.compile(r"^ {0,3}!\[[^\]]*\]\([^)]*\)\s*$", re.MULTILINE)  # an image alone on its line
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def split_at_sections(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of nb in which markdown cells are cut before each ``## `` heading and each diagram inside them.

    The piece from a heading on starts a new slide, the piece from a diagram on a new sub-slide (so a
    diagram gets the height of a slide); a skipped cell stays skipped, and a diagram in speaker notes
    stays in the notes.
    """
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            cells.append(cell)
            continue
        source, kind = cell.source, slide_type(cell) or "-"
        fences = [m.start() for m in _FENCE.finditer(source)]
        cuts = {}
        for pattern, piece_kind in ((_SECTION, "slide"), (_DIAGRAM, "subslide")):
            for m in pattern.finditer(source):
                if m.start() > 0 and sum(f < m.start() for f in fences) % 2 == 0:  # not inside a code block
                    hidden = kind == "skip" or (kind == "notes" and piece_kind == "subslide")
                    cuts[m.start()] = kind if hidden else piece_kind
        starts = sorted(cuts)
        for k, (start, end) in enumerate(zip([0, *starts], [*starts, len(source)], strict=True)):
            piece = copy.deepcopy(cell)
            piece.source = source[start:end].strip("\n")
            if k:
                piece.id = f"{cell.get('id', 'cell')[:60]}-{k}"
                piece.metadata["slideshow"] = {"slide_type": cuts[start]}
            if piece.source.strip():
                cells.append(piece)
    nb.cells = cells
    return nb


# Cell tags that change a cell on the slides only (the notebook reads as before).
HIDE_INPUT = "slide-hide-input"  # show only the output (plotting boilerplate)
OUTPUT_FRAGMENT = "slide-output-fragment"  # the output (and the checks that end the cell) on the next key press
KEEP_TEXT = "slide-keep-text"  # show the whole markdown cell (a table, a checklist), no cut to the notes
FIGURE_TAG = "slide-figure"  # set by this script on the copy of a cell that shows one figure alone

_HEADING = re.compile(r"^ {0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,3}[.)])\s+")
_BOLD_LEAD = re.compile(r"^\*\*[^*]+?\*\*:?\s*")
# Inline code, inline math and links are copied whole: a full stop inside them ends no sentence.
_PROTECTED = re.compile(r"`[^`]*`|\$[^$]+\$|\[[^\]]*\]\([^)]*\)")
_ABBREVIATIONS = ("e.g.", "i.e.", "al.", "cf.", "vs.", "Eq.", "Eqs.", "Fig.", "approx.", "resp.", "etc.")


def _blocks(source: str) -> list[str]:
    """A markdown cell's blocks: separated by blank lines (not inside a fenced code block or $$...$$), a
    heading line always a block of its own, and a list apart from the paragraph line above it."""
    blocks, current, fence, math = [], [], False, False
    for line in source.splitlines():
        stripped = line.strip()
        if not fence and not math and not stripped:
            if current:
                blocks.append(current)
            current = []
            continue
        if not fence and not math and _HEADING.match(line):
            if current:
                blocks.append(current)
            blocks.append([line])
            current = []
            continue
        if not fence and not math and current and _LIST_ITEM.match(line) and not _LIST_ITEM.match(current[0]):
            blocks.append(current)  # a list right under a paragraph line
            current = []
        current.append(line)
        if _FENCE.match(line):
            fence = not fence
        elif not fence:
            math ^= stripped.count("$$") % 2 == 1
    if current:
        blocks.append(current)
    return ["\n".join(b) for b in blocks]


def first_sentence(text: str) -> str:
    """The first sentence of a paragraph: up to the first ., ! or ? that a space and a capital (or code,
    math, emphasis) follow, outside code, math and links, and not after an abbreviation such as "e.g.".
    A bold lead-in (``**Step 2: scale.**``) counts as part of the sentence that follows it."""
    lead = _BOLD_LEAD.match(text)
    start = lead.end() if lead else 0
    masked = _PROTECTED.sub(lambda m: "X" * len(m.group(0)), text)  # capital: code after a full stop starts one
    for m in re.finditer(r"[.!?](?=\s+[A-Z*`$(\"'\[_])", masked[start:]):
        end = start + m.end()
        if not masked[:end].endswith(_ABBREVIATIONS):
            return text[:end].rstrip()
    return text.rstrip()


LONG_LIST = 6  # a list of more items shows only the bold lead-ins of those that have one (a checklist)


def _list_firsts(block: str) -> str:
    """A list with each top-level item cut to its marker and first sentence (nested lines dropped); in a list
    of more than LONG_LIST items, an item that opens with a bold lead-in keeps only the lead-in."""
    items, current = [], None
    for line in block.splitlines():
        if _LIST_ITEM.match(line) and len(line) - len(line.lstrip()) < 2:
            current = [line]
            items.append(current)
        elif current is not None and line.strip() and not _LIST_ITEM.match(line.lstrip()):
            current.append(line.strip())
        elif current is not None:
            current = None  # a nested list: its lines stay in the notes
    shown = []
    for item in items:
        marker = _LIST_ITEM.match(item[0]).group(0)
        text = " ".join([item[0][len(marker) :], *item[1:]]).strip()
        lead = _BOLD_LEAD.match(text)
        shown.append(marker + (lead.group(0).strip() if lead and len(items) > LONG_LIST else first_sentence(text)))
    return "\n".join(shown)


def slide_text(source: str) -> str:
    """What a markdown cell shows on its slide (the rule of the module docstring): headings, display math,
    diagrams and code blocks whole; the first sentence of the first paragraph, of every paragraph that
    opens with a bold lead-in and of every list item; no table, quote, indented block (the rest of a list
    item) or other paragraph."""
    shown, seen_prose = [], False
    for block in _blocks(source):
        first = block.lstrip()
        indent = len(block) - len(block.lstrip(" "))
        if _HEADING.match(block) or (
            indent < 2 and (first.startswith(("$$", "```", "~~~", "<")) or _DIAGRAM.fullmatch(block))
        ):
            shown.append(block)
        elif _LIST_ITEM.match(block) and indent < 2:
            shown.append(_list_firsts(block))
            seen_prose = True
        elif indent >= 2 or first.startswith(("|", ">")):
            continue
        else:
            if not seen_prose or _BOLD_LEAD.match(first):
                shown.append(first_sentence(block))
            seen_prose = True
    return "\n\n".join(shown)


def _notes_text(source: str) -> str:
    """A markdown cell's text for the speaker notes: all of it but the diagrams."""
    return "\n\n".join(b for b in _blocks(source) if not _DIAGRAM.fullmatch(b))


def _notes_cell(source: str, cell_id: str) -> nbformat.NotebookNode:
    notes = nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": "notes"}})
    notes.id = cell_id
    return notes


def _split_trailing_checks(source: str) -> tuple[str, str]:
    """A code cell's source cut before its closing block of checks (``assert ...`` and
    ``torch.testing.assert_close(...)`` lines after the last blank line), so that the answer they state is
    revealed with the output; ("source", "") when the cell does not end in such a block."""
    lines = source.rstrip().splitlines()
    blank = max((i for i, line in enumerate(lines) if not line.strip()), default=-1)
    tail = lines[blank + 1 :]
    statements = [line for line in tail if line.strip() and not line[0].isspace() and not line.startswith("#")]
    checks = re.compile(r"^(assert\b|torch\.testing\.assert_close\(|assert_close\()")
    if blank < 0 or not statements or not all(checks.match(line) for line in statements):
        return source, ""
    return "\n".join(lines[:blank]).rstrip(), "\n".join(tail)


def _is_figure(output: nbformat.NotebookNode) -> bool:
    return output.get("output_type") in ("display_data", "execute_result") and "image/png" in output.get("data", {})


def _piece(cell: nbformat.NotebookNode, suffix: str, kind: str, source: str, outputs: list, hide: bool):
    piece = copy.deepcopy(cell)
    piece.id = f"{cell.get('id', 'cell')[:50]}-{suffix}"
    piece.source, piece.outputs = source, outputs
    piece.metadata["slideshow"] = {"slide_type": kind}
    if hide or not source.strip():
        piece.metadata["transient"] = {"remove_source": True}
    return piece


def slides_of(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The copy of nb that becomes the deck (after split_at_sections): explanations cut to the speaker notes,
    figures on sub-slides of their own, and the cell tags of the module docstring applied."""
    nb = split_at_sections(nb)
    cells, intro = [], None  # intro: the full text of the last markdown cell shown, for a figure's notes
    after_figure = False  # what follows a figure starts a new sub-slide, so the figure stays alone
    for cell in nb.cells:
        kind, tags = slide_type(cell) or "-", set(cell.get("metadata", {}).get("tags", []))
        if kind in ("skip", "notes"):
            cells.append(cell)
            continue
        if after_figure and kind in ("-", "fragment"):
            kind = "subslide"
            cell.metadata["slideshow"] = {"slide_type": kind}
        after_figure = False
        if kind == "slide":
            intro = None
        if cell.cell_type == "markdown":
            cells.append(cell)
            notes = _notes_text(cell.source)
            intro = notes
            if KEEP_TEXT not in tags:
                shown = slide_text(cell.source)
                if " ".join(shown.split()) != " ".join(notes.split()):
                    cell.source = shown
                    cells.append(_notes_cell(notes, f"{cell.get('id', 'cell')[:50]}-notes"))
            continue
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        hide = HIDE_INPUT in tags
        figures = [o for o in cell.outputs if _is_figure(o)]
        others = [o for o in cell.outputs if not _is_figure(o)]
        pieces = []
        if OUTPUT_FRAGMENT in tags:
            head, checks = _split_trailing_checks(cell.source)
            if not hide:
                pieces.append(_piece(cell, "in", kind, head, [], hide))
            if others or (checks and not hide):
                pieces.append(_piece(cell, "out", "fragment", "" if hide else checks, others, hide))
        elif others or not hide:
            pieces.append(_piece(cell, "in", kind, cell.source, others, hide))
        for k, figure in enumerate(figures):
            fig = _piece(cell, f"fig{k}", "subslide", "", [figure], True)
            fig.metadata["tags"] = [*fig.metadata.get("tags", []), FIGURE_TAG]
            pieces.append(fig)
            if intro:
                pieces.append(_notes_cell(intro, f"{fig.id}-notes"))
        if pieces and kind == "slide" and slide_type(pieces[0]) != "slide":
            pieces[0].metadata["slideshow"] = {"slide_type": "slide"}  # the section still starts a slide
        after_figure = bool(figures)
        cells.extend(pieces)
    nb.cells = cells
    return nb


def _wrap_code_lines(page: str) -> str:
    """Each line of highlighted code in a span that wraps with a hanging indent (slides.css, ``.line``):
    its continuation lines start 4 characters right of the line's own indentation."""

    def replace(match: re.Match) -> str:
        indent = len(match.group(1))
        return f'<span class="line" style="--indent: {indent}ch">{match.group(1)}'

    page = re.sub(r'<span id="L-\d+">( *)', replace, page)
    return re.sub(r'\n</span>(?=<span class="line"|</pre>)', "</span>", page)


def _link_decks(page: str, notebook: Path, decks: dict[Path, str]) -> str:
    """Links to a notebook with a deck point to the deck; other relative links become their text."""

    def replace(match: re.Match) -> str:
        href, text = match.group(1), match.group(2)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^#", href):  # a web address or an anchor: keep
            return match.group(0)
        target = (notebook.parent / html.unescape(href).split("#")[0]).resolve()
        if target in decks:
            return match.group(0).replace(f'href="{href}"', f'href="{decks[target]}"', 1)
        return text

    return re.sub(r'<a\s+href="([^"]*)"[^>]*>(.*?)</a>', replace, page, flags=re.S)


def _embed_images(page: str, notebook: Path, root: Path) -> tuple[str, list[str]]:
    """Relative <img> sources (the diagrams, ``../img/x.svg``) become data URIs; returns the page and the missing ones.

    (nbconvert's own embed_images only reads files in the notebook's folder.)
    """
    missing = []

    def replace(match: re.Match) -> str:
        url = html.unescape(match.group(2))
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^/|^#", url):
            return match.group(0)
        source = (notebook.parent / unquote(urlsplit(url).path)).resolve()
        if not (source.is_file() and source.is_relative_to(root)):
            missing.append(url)
            return match.group(0)
        mime = mimetypes.guess_type(source.name)[0] or "application/octet-stream"
        data = base64.b64encode(source.read_bytes()).decode("ascii")
        return f'{match.group(1)}"data:{mime};base64,{data}"'

    return re.sub(r'(<img\b[^>]*?\ssrc=)"([^"]*)"', replace, page), missing


def copy_assets(out: Path) -> None:
    """reveal.js, MathJax 3 and the slide style, into out/ (afresh)."""
    dist = _revealjs_dist()
    shutil.rmtree(out / REVEAL_DIR, ignore_errors=True)
    for name in REVEAL_FILES:
        (out / REVEAL_DIR / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dist / name, out / REVEAL_DIR / name)
    shutil.copytree(dist / REVEAL_FONTS, out / REVEAL_DIR / REVEAL_FONTS)
    copy_mathjax(out)
    shutil.copyfile(TEMPLATE_DIR / "slides.css", out / "slides.css")


def count_slides(page: str) -> int:
    """Slides and sub-slides: the <section> elements that hold content (a slide with sub-slides holds only them)."""
    sections = re.findall(r"<section\b[^>]*>(?=(\s*<section\b)?)", page)
    return sum(1 for nested in sections if not nested)


INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}: slides</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 48em; margin: 2em auto;
  padding: 0 1em; line-height: 1.5; color: #222; }}
a {{ color: #1a5fb4; text-decoration: none; font-weight: 600; }}
a:hover {{ text-decoration: underline; }}
li {{ margin: 0.5em 0; }}
.note {{ color: #555; font-size: 0.95em; }}
</style>
</head>
<body>
<h1>{title}: slides</h1>
<ul>
{items}
</ul>
<p class="note">Keys: &rarr; / space next, &larr; back, &darr; &uarr; the steps of a section, o overview, f full screen,
s speaker notes (a second window), Esc leaves the overview or full screen.</p>
</body>
</html>
"""


def build(out: Path, root: Path = ROOT) -> list[Path]:
    """Write one deck per notebook with slide metadata, out/index.html and the assets they load."""
    notebooks = deck_notebooks(root)
    if not notebooks:
        raise SystemExit(f"no notebook under {root / 'notebooks'} has slide metadata")
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    decks = {path.resolve(): deck_name(path) for path in notebooks}
    for stale in out.glob("*.slides.html"):  # the deck of a notebook that is gone or lost its metadata
        if stale.name not in decks.values():
            stale.unlink()

    exporter = SlidesExporter(
        # each code line in its own span, for the hanging indent of wrapped lines (_wrap_code_lines)
        config=Config({"Highlight2HTML": {"extra_formatter_options": {"linespans": "L"}}}),
        extra_loaders=[FileSystemLoader(str(TEMPLATE_DIR))],
        template_file="deck.html.j2",
        reveal_url_prefix=REVEAL_DIR,
        reveal_theme="white",  # its font is a local file; nbconvert's default theme imports web fonts
        reveal_width=str(WIDTH),
        reveal_height=str(HEIGHT),
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    targets, items = [], []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        unknown = {t for c in nb.cells if (t := slide_type(c)) and t not in SLIDE_TYPES}
        if unknown:
            raise SystemExit(f"{path.relative_to(root)}: unknown slide types {sorted(unknown)}")
        title = notebook_title(nb, path.stem)
        resources = {
            "metadata": {"name": title, "path": str(path.parent)},
            "deck": {"mathjax": MATHJAX_HEAD.replace("{prefix}", ""), "css": "slides.css"},
        }
        page, _ = exporter.from_notebook_node(slides_of(nb), resources=resources)
        page = _wrap_code_lines(_link_decks(page, path.resolve(), decks))
        # The speaker view copies the notes' HTML into its own window, without MathJax's styles and glyph
        # cache, so typeset math would come out garbled there: notes keep their TeX source ($d_k$) instead.
        page = page.replace('<aside class="notes">', '<aside class="notes mathjax_ignore">')
        page, missing = _embed_images(page, path.resolve(), root.resolve())
        for url in missing:
            print(
                f"warning: {path.relative_to(root)} shows {url}, which is not a file in the repository", file=sys.stderr
            )
        target = out / deck_name(path)
        target.write_text(page, encoding="utf-8")
        targets.append(target)
        slides = count_slides(page)
        items.append(f'<li><a href="{target.name}">{html.escape(title)}</a> ({slides} slides)</li>')
        print(f"{target.name}: {slides} slides")
    (out / "index.html").write_text(
        INDEX.format(title=html.escape(series_title(root)), items="\n".join(items)), encoding="utf-8"
    )
    return targets


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    decks = build(args.out.resolve())
    print(f"{len(decks)} decks and index.html in {args.out} ({time.perf_counter() - start:.1f} s)")
    print(f"open {(args.out / 'index.html').resolve().as_uri()}")


if __name__ == "__main__":
    main(sys.argv[1:])
