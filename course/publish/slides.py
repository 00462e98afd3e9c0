"""Build a reveal.js slide deck of every notebook that carries slide metadata, that presents offline.

    python -m course.publish.slides              # -> build/slides/<notebook>.slides.html and index.html
    python -m course.publish.slides --out DIR    # somewhere else

Run from the repository root, in the project's environment. The decks show the outputs stored in the notebooks
(nothing is executed, so this takes seconds); each slide's speaker notes (key ``s``) are its script from
course/publish/scripts/ (course/publish/scripts.py). Everything a deck needs is in the output folder, and no deck
loads anything from the network.
"""

from __future__ import annotations

import base64
import copy
import html
import importlib.util
import mimetypes
import re
import shutil
from pathlib import Path

import nbformat
from jinja2 import FileSystemLoader
from nbconvert import SlidesExporter
from traitlets.config import Config

from course.publish.common import (
    ROOT,
    WEB_ADDRESS,
    copy_mathjax,
    deck_name,
    deck_notebooks,
    linked_file,
    mathjax_head,
    notebook_title,
    run_command,
    series_title,
    slide_type,
    warn_missing,
)

# Made for a room of 60 on a 1920x1080 projector (reveal.js scales the 1280x720 canvas by 1.44). The notebooks
# stay written for reading; a deck shows one point per slide and the presenter has every word in the notes.
# tests/course/publish/test_slides.py steps through every slide in Chromium at 1920x1080 and fails on a slide that
# overflows, hides code in a scroll box, scrolls sideways, shows a small figure or printed output with no words.
DEFAULT_OUT = ROOT / "build" / "slides"
TEMPLATE_DIR = Path(__file__).resolve().parent / "slides_template"
# A notebook gets a deck when at least one of its top-level cells has a slide type (in JupyterLab: the property
# inspector, "Slide Type"; stored as ``cell.metadata.slideshow.slide_type``). The series uses the types this way,
# the same in every presented notebook (test_slides.py checks the first two points in every numbered notebook):
# - ``slide`` (left/right arrow keys): the title cell and every cell that starts a ``## `` section, the summary,
#   the exercises and "What's next" included;
# - ``skip``: housekeeping: the set-up cell, the exercise stubs and their checker cells, and a few secondary checks
#   whose point the speaker notes carry;
# - ``subslide`` (up/down arrow keys): a step inside a section, the text that says why or what to look at together
#   with the code cell after it (``-``, same slide); each exercise statement;
# - ``fragment``: a short follow-up revealed on the same slide by the next key press;
# - ``notes``: a conclusion or a digression that the presenter says rather than shows: in the speaker view.
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
# The slide canvas in CSS pixels (16:9); reveal.js scales it to fit the screen.
WIDTH, HEIGHT = 1280, 720

# reveal.js 5 and its speaker-notes plugin come from the pinned sphinx-revealjs package, which bundles reveal.js's
# own distribution files; this module uses only those, not Sphinx.
REVEAL_DIR = "reveal"  # inside the output folder


def _revealjs_dist() -> Path:
    """reveal.js's own files, as bundled by sphinx-revealjs (found without importing it, so without Sphinx)."""
    spec = importlib.util.find_spec("sphinx_revealjs")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sphinx-revealjs is not installed: run `pip install -r requirements.txt`")
    return Path(next(iter(spec.submodule_search_locations))) / "_static" / "revealjs"


# What the decks load from reveal.js: the core, its white theme and the speaker-notes plugin.
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "plugin/notes/notes.js", "LICENSE")
REVEAL_FONTS = "dist/theme/fonts/source-sans-pro"  # the white theme's font, imported by white.css


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


# Cell tags that change a cell on the slides only (the notebook reads and runs as before). With OUTPUT_FRAGMENT, for
# the moments where the room predicts the output first, a closing block of checks (the lines after the last blank
# line, all ``assert ...`` or ``torch.testing.assert_close(...)``) appears with the output, since it states the answer.
HIDE_INPUT = "slide-hide-input"  # show only the output (plotting boilerplate)
OUTPUT_FRAGMENT = "slide-output-fragment"  # the output (and the checks that end the cell) on the next key press
KEEP_TEXT = "slide-keep-text"  # show the whole markdown cell (a table, a checklist), no cut to the notes
FIGURE_TAG = "slide-figure"  # set by this module on the copy of a cell that shows one figure alone

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


# What a markdown cell shows on its slide: its headings, display equations, diagrams, code blocks and small tables
# (SMALL_TABLE words), and the *first sentence* of its first paragraph, of every paragraph that opens with a bold
# lead-in (``**Step 2: scale.** ...``) and of every list item (in a list of more than LONG_LIST items, only the bold
# lead-ins: a checklist). Whenever that cuts anything, the whole cell (less its headings and diagrams) becomes the
# speaker notes of that slide. Why: the series writes topic sentences and bold lead-ins, so first sentences read as
# the slide's claims, while a cut by paragraph left 60-150 words on a slide. A sub-slide without text of its own (a
# figure, code that continues, a long output) gets the notes of the text that introduced it, so nearly every slide
# has notes.
SMALL_TABLE = 80  # words: a larger table goes to the notes (a slide cannot hold it at a readable size)
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
    """What a markdown cell shows on its slide (the rule above SMALL_TABLE): headings, display math,
    diagrams, code blocks and small tables whole; the first sentence of the first paragraph, of every
    paragraph that opens with a bold lead-in and of every list item; no large table, quote, indented block
    (the rest of a list item) or other paragraph."""
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
        elif first.startswith("|") and indent < 2 and len(block.split()) <= SMALL_TABLE:
            shown.append(block)
        elif indent >= 2 or first.startswith(("|", ">")):
            continue
        else:
            if not seen_prose or _BOLD_LEAD.match(first):
                shown.append(first_sentence(block))
            seen_prose = True
    return "\n\n".join(shown)


def _notes_text(source: str) -> str:
    """A markdown cell's text for the speaker notes: all of it but the headings and diagrams (on the slide)."""
    return "\n\n".join(b for b in _blocks(source) if not (_DIAGRAM.fullmatch(b) or _HEADING.match(b)))


def _notes_cell(source: str, cell_id: str) -> nbformat.NotebookNode:
    notes = nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": "notes"}})
    notes.id = cell_id
    return notes


# Every sub-slide says in words what it shows. One that would show only printed output, with no heading or text (an
# output too long to share its code's slide, the output of a hidden cell), gets a one-line caption in the slide's
# prose size (CAPTION_TAG, slides.css): the comment line its code cell opens with, else the lead-in sentence of the
# text that introduced it (the claim the slide before showed; one longer than CAPTION_CHARS is cut after its first
# colon, or else not used), else the section's heading. A code sub-slide with no words whose code opens with a
# comment line (a cell of type ``subslide``, or the continuation of long code) gets that comment as its caption,
# taken out of the code. nbval's marker lines (``# NBVAL_IGNORE_OUTPUT``) are left out of the code on slides.
CAPTION_TAG = "slide-caption"  # set by this module on the one-line caption it gives a sub-slide (slides.css)
CAPTION_CHARS = 160  # a leading comment block longer than this (about two lines of prose on a slide) stays code
_DIRECTIVE = re.compile(r"^#\s*NBVAL_[A-Z_]+\s*$")  # nbval's cell markers: for the tests, not for the room


def _without_directives(source: str) -> str:
    """A code cell's source without its nbval marker lines (``# NBVAL_IGNORE_OUTPUT``)."""
    return "\n".join(line for line in source.split("\n") if not _DIRECTIVE.match(line.strip())).strip("\n")


def _leading_comment(source: str) -> tuple[str, str]:
    """(the text of the comment lines a code piece opens with, joined; the source after them), or ("", source)
    when it opens with code, when nothing but comments is left, or when the comment is longer than CAPTION_CHARS."""
    lines = source.strip("\n").split("\n")
    count = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    text = " ".join(line.lstrip("#").strip() for line in lines[:count]).strip()
    rest = "\n".join(lines[count:]).strip("\n")
    if not text or not rest.strip() or len(text) > CAPTION_CHARS:
        return "", source
    return text, rest


def _comment_as_markdown(text: str) -> str:
    """A code comment as one line of markdown: code spans (backticks) kept, and outside them the characters that
    markdown would read as markup (``<pad>``, ``*``, ``_``) escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    escaped = (re.sub(r"([*_\\\[\]])", r"\\\1", html.escape(part, quote=False)) for part in parts[::2])
    return "".join(p for pair in zip(escaped, [*parts[1::2], ""], strict=True) for p in pair)


def _lead_in(text: str) -> str:
    """The lead-in sentence of a markdown cell's text, as a caption: the first sentence of its first paragraph or
    list item; one longer than CAPTION_CHARS is cut after its first colon (outside code, math and brackets) if that
    is short enough, else "" (the caller then names the section)."""
    for block in _blocks(text):
        first = block.lstrip()
        if _HEADING.match(block) or _DIAGRAM.fullmatch(block) or first.startswith(("$$", "```", "~~~", "<", "|", ">")):
            continue
        if _LIST_ITEM.match(first):
            first = first[_LIST_ITEM.match(first).end() :]
        sentence = first_sentence(" ".join(first.split()))
        if len(sentence) <= CAPTION_CHARS:
            return sentence
        masked, depth = _PROTECTED.sub(lambda m: "X" * len(m.group(0)), sentence), 0
        for i, char in enumerate(masked[:CAPTION_CHARS]):
            depth += (char in "([{") - (char in ")]}")
            if char == ":" and depth == 0 and i > 20:
                return sentence[: i + 1]
        return ""
    return ""


def _caption_cell(text: str, kind: str, cell_id: str) -> nbformat.NotebookNode:
    """A caption's markdown cell; its text reads as a paragraph even where it starts like a list item or a heading
    (a section's heading "11. Cost: ...")."""
    text = re.sub(r"^(\d+)([.)])(?=\s)", r"\1\\\2", text)
    text = re.sub(r"^([-+*>#])(?=\s)", r"\\\1", text)
    caption = nbformat.v4.new_markdown_cell(text, metadata={"slideshow": {"slide_type": kind}, "tags": [CAPTION_TAG]})
    caption.id = cell_id
    return caption


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


# Code is 20px on the canvas (29 px on screen, about 14 pt), prose 26px (37 px, about 19 pt), the sizes slide guides
# give for the back of a room (slides.css); a line too long for the slide wraps with a hanging indent
# (_wrap_code_lines) and nothing scrolls. Code longer than MAX_LINES screen lines is cut at blank lines into
# consecutive sub-slides, and printed output that would not fit under its code gets a sub-slide of its own. A
# printed line too wide for the slide wraps at spaces, or the deck's script (slides_template/deck.html.j2) shrinks
# the output, to 26 px on screen at most, and on a slide still too full the code, to 3/4 at most (22 px).
# A figure (a PNG output) is alone on a sub-slide and fills it (slides.css: object-fit), whatever the cell's slide
# type; the code that drew it stays on the slide before, with the text (or is hidden by HIDE_INPUT), and what follows
# a figure starts a new sub-slide. An interactive attention view (course/explorer/) carries its static figure as a
# PNG too, so it is placed the same way; its script then replaces the figure with the view.
CODE_COLUMNS = 98  # characters of code or printed output in one line of a slide (20px monospace, 1230px)
FIGURE_WITH_WORDS = 40  # a figure whose code is hidden shares the sub-slide of a text this short
MAX_LINES = 18  # lines of code, or of code and its printed output, that share a slide with a little text


def _screen_lines(text: str) -> int:
    """How many lines text takes on a slide, its long lines wrapped."""
    return sum(max(1, -(-len(line) // CODE_COLUMNS)) for line in text.rstrip().splitlines()) if text.strip() else 0


def _output_text(outputs: list) -> str:
    texts = []
    for output in outputs:
        text = output.get("text") if output.get("output_type") == "stream" else output.get("data", {}).get("text/plain")
        texts.append("".join(text) if isinstance(text, list) else text or "")
    return "".join(texts)


def _chunks(source: str) -> list[str]:
    """Code cut into pieces of at most MAX_LINES screen lines, at blank lines before a top-level statement
    (a piece with no such cut inside stays whole: the deck's script shrinks it to fit)."""
    if _screen_lines(source) <= MAX_LINES:
        return [source]
    paragraphs = [p for p in re.split(r"\n\s*\n(?=\S)", source.strip("\n")) if p.strip()]
    chunks: list[str] = []
    for paragraph in paragraphs:
        if chunks and _screen_lines(chunks[-1]) + 1 + _screen_lines(paragraph) <= MAX_LINES:
            chunks[-1] += "\n\n" + paragraph
        else:
            chunks.append(paragraph)
    return chunks


def _is_figure_piece(piece: nbformat.NotebookNode) -> bool:
    return FIGURE_TAG in piece.metadata.get("tags", [])


_EXERCISE = re.compile(r"^ {0,3}###\s+Exercise\b")
STATEMENT_WORDS = 110  # an exercise statement longer than this goes on over sub-slides, whole


def _parts(cell: nbformat.NotebookNode, groups: list[list[str]], kind: str = "subslide") -> list[nbformat.NotebookNode]:
    """The cell as one cell per group of blocks, the later ones starting sub-slides of their own."""
    pieces = []
    for k, blocks in enumerate(groups):
        piece = copy.deepcopy(cell)
        piece.source = "\n\n".join(blocks)
        if k:
            piece.id = f"{cell.get('id', 'cell')[:50]}-part{k}"
            piece.metadata["slideshow"] = {"slide_type": kind}
        pieces.append(piece)
    return pieces


def _whole_statement(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """An exercise's statement, whole: cut between blocks into sub-slides of at most STATEMENT_WORDS words."""
    groups: list[list[str]] = [[]]
    words = 0
    for block in _blocks(cell.source):
        size = len(block.split())
        if groups[-1] and words + size > STATEMENT_WORDS and not _HEADING.match(groups[-1][-1]):
            groups.append([])
            words = 0
        groups[-1].append(block)
        words += size
    return _parts(cell, groups)


def _large_tables(source: str) -> list[str]:
    """The tables too large for the slide of their text (more than SMALL_TABLE words): each gets a sub-slide."""
    return [
        b
        for b in _blocks(source)
        if b.lstrip().startswith("|") and not b.startswith("  ") and len(b.split()) > SMALL_TABLE
    ]


def _markdown_on_slide(cell: nbformat.NotebookNode, tags: set[str]) -> list[nbformat.NotebookNode]:
    """A markdown cell cut to what its slide shows (slide_text) and, when that cut anything, a notes cell with the
    whole text (less headings and diagrams); with KEEP_TEXT, the cell as it is. Nothing is lost: an exercise's
    statement is shown whole (over sub-slides when long), and a table too large for its text's slide follows on a
    sub-slide of its own."""
    if KEEP_TEXT in tags:
        return [cell]
    if _EXERCISE.match(cell.source.lstrip("\n")):
        return _whole_statement(cell)
    shown = slide_text(cell.source)
    if " ".join(shown.split()) == " ".join(cell.source.split()):  # nothing was cut
        return [cell]
    notes = _notes_text(cell.source)
    tables = _large_tables(cell.source)
    cell.source = shown
    out = [cell, _notes_cell(notes, f"{cell.get('id', 'cell')[:50]}-notes")]
    for k, table in enumerate(tables):
        piece = _parts(cell, [[], [table]])[1]
        piece.id = f"{cell.get('id', 'cell')[:50]}-table{k}"
        piece.metadata["tags"] = [*piece.metadata.get("tags", []), KEEP_TEXT]
        out.append(piece)
    return out


def _code_pieces(
    cell: nbformat.NotebookNode, kind: str, tags: set[str], code: str, words_here: int | None
) -> list[nbformat.NotebookNode]:
    """A code cell (its source ``code``, nbval's markers taken out) as the cells that go on slides: its code in
    chunks (_chunks), its printed output with the last chunk, as a fragment after it or on a sub-slide of its own
    when too long, and each figure on a sub-slide of its own, or under the text before it when that is short
    (``words_here`` words on the sub-slide so far, None once it shows code or output)."""
    hide = HIDE_INPUT in tags
    figures = [o for o in cell.outputs if _is_figure(o)]
    others = [o for o in cell.outputs if not _is_figure(o)]
    source, checks = _split_trailing_checks(code) if OUTPUT_FRAGMENT in tags else (code, "")
    chunks = [] if hide else _chunks(source)
    pieces = [_piece(cell, f"in{j}", "subslide" if j else kind, chunk, [], hide) for j, chunk in enumerate(chunks)]
    out_lines = _screen_lines(checks) + _screen_lines(_output_text(others))
    apart = out_lines and _screen_lines(chunks[-1] if chunks else "") + out_lines > MAX_LINES
    if others or checks:
        if apart:  # too long to share the slide with its code: a sub-slide of its own
            out_kind = "subslide"
        elif OUTPUT_FRAGMENT in tags:
            out_kind = "fragment"
        elif pieces:  # with the code, in the same cell
            pieces[-1].outputs = others
            out_kind = None
        else:
            out_kind = kind
        if out_kind:
            pieces.append(_piece(cell, "out", out_kind, "" if hide else checks, others, hide))
    for k, figure in enumerate(figures):
        fig_kind = "subslide"
        if not pieces and kind in ("slide", "subslide"):  # the cell shows only figures: it starts their slide
            fig_kind = kind
        elif not pieces and words_here is not None and words_here <= FIGURE_WITH_WORDS:
            fig_kind = "-"  # under the short text that introduced it, filling the rest of the slide
        fig = _piece(cell, f"fig{k}", fig_kind, "", [figure], True)
        fig.metadata["tags"] = [*fig.metadata.get("tags", []), FIGURE_TAG]
        pieces.append(fig)
    return pieces


def _captioned(piece: nbformat.NotebookNode, output_caption: str) -> list[nbformat.NotebookNode]:
    """The piece, after a one-line caption cell when it starts a sub-slide with no words (the rule above
    CAPTION_TAG): the comment its code opens with, taken out of the code, or for printed output alone
    ``output_caption``."""
    if slide_type(piece) not in ("slide", "subslide") or _is_figure_piece(piece):
        return [piece]
    caption = ""
    if piece.source.strip() and not piece.metadata.get("transient", {}).get("remove_source"):  # it shows code
        comment, rest = _leading_comment(piece.source)
        if comment:
            caption, piece.source = _comment_as_markdown(comment), rest
    elif piece.outputs:  # printed output alone
        caption = output_caption
    if not caption:
        return [piece]
    caption_cell = _caption_cell(caption, slide_type(piece), f"{piece.id}-caption")
    piece.metadata["slideshow"] = {"slide_type": "-"}
    return [caption_cell, piece]


def slides_of(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The copy of nb that becomes the deck (after split_at_sections): explanations cut to the speaker notes,
    figures on sub-slides of their own, captions where a sub-slide has no words, and the cell tags applied."""
    nb = split_at_sections(nb)
    cells, intro = [], None  # intro: the full text of the last markdown cell shown, for a figure's notes
    heading = ""  # the text of the last heading shown in this section: a caption when nothing else names an output
    after_figure = False  # what follows a figure starts a new sub-slide, so the figure stays alone
    words_here: int | None = 0  # words of text on the current sub-slide; None once it shows code or output
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
            intro, heading = None, ""
        if kind in ("slide", "subslide"):
            words_here = 0
        if cell.cell_type == "markdown":
            intro = _notes_text(cell.source) or intro
            headings = [b for b in _blocks(cell.source) if _HEADING.match(b)]
            heading = re.sub(r"^ {0,3}#{1,6}\s+", "", headings[-1]).strip() if headings else heading
            cells += _markdown_on_slide(cell, tags)
            if words_here is not None:
                words_here += len(cell.source.split())
            continue
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        code = _without_directives(cell.source)
        # what names a printed output shown without its code or any text: the comment the cell opens with, else the
        # lead-in sentence of the text before it, else the section's heading
        output_caption = _comment_as_markdown(_leading_comment(code)[0]) or _lead_in(intro or "") or heading
        pieces = _code_pieces(cell, kind, tags, code, words_here)
        after_figure = any(_is_figure_piece(piece) for piece in pieces)
        for piece in pieces:
            starts = slide_type(piece) in ("slide", "subslide")  # a sub-slide, with no text of its own
            cells += _captioned(piece, output_caption)
            if intro and starts:
                cells.append(_notes_cell(intro, f"{piece.id}-notes"))
            words_here = (0 if starts else words_here) if _is_figure_piece(piece) else None
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
    """Links to a notebook with a deck point to the deck; other links to files of the repository become their text,
    since the decks travel without the repository."""

    def replace(match: re.Match) -> str:
        href, text = match.group(1), match.group(2)
        if WEB_ADDRESS.match(href) or href.startswith("#"):  # a web address or an anchor: keep
            return match.group(0)
        target = linked_file(notebook, html.unescape(href))
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
        source = linked_file(notebook, url)
        if source is None:
            return match.group(0)
        if not (source.is_file() and source.is_relative_to(root)):
            missing.append(url)
            return match.group(0)
        mime = mimetypes.guess_type(source.name)[0] or "application/octet-stream"
        data = base64.b64encode(source.read_bytes()).decode("ascii")
        return f'{match.group(1)}"data:{mime};base64,{data}"'

    return re.sub(r'(<img\b[^>]*?\ssrc=)"([^"]*)"', replace, page), missing


def copy_assets(out: Path) -> None:
    """reveal.js, MathJax 3 and the slide style (slides_template/slides.css), into out/ (afresh)."""
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
{back}
{sessions}
<ul>
{items}
</ul>
<p class="note">Keys: &rarr; / space next, &larr; back, &darr; &uarr; the steps of a section, o overview, f full screen,
s speaker notes (a second window), Esc leaves the overview or full screen.</p>
</body>
</html>
"""


def _exporter() -> SlidesExporter:
    """nbconvert's reveal.js exporter with the series' template (slides_template/deck.html.j2)."""
    return SlidesExporter(
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


def _deck(exporter: SlidesExporter, path: Path, root: Path, decks: dict[Path, str]) -> tuple[str, str]:
    """(the title, the deck's HTML) of the notebook at path; decks: the deck of each notebook that has one."""
    nb = nbformat.read(path, as_version=4)
    unknown = {t for c in nb.cells if (t := slide_type(c)) and t not in SLIDE_TYPES}
    if unknown:
        raise SystemExit(f"{path.relative_to(root)}: unknown slide types {sorted(unknown)}")
    title = notebook_title(nb, path.stem)
    return title, _page(exporter, nb, title, path, root, decks)


def _page(
    exporter: SlidesExporter, nb: nbformat.NotebookNode, title: str, path: Path, root: Path, decks: dict[Path, str]
) -> str:
    """The deck's HTML of nb, whose links and images are relative to ``path`` (a notebook's place)."""
    resources = {
        "metadata": {"name": title, "path": str(path.parent)},
        "deck": {"mathjax": mathjax_head(), "css": "slides.css"},
    }
    from course.publish.scripts import apply_scripts, read_scripts

    page, _ = exporter.from_notebook_node(apply_scripts(slides_of(nb), read_scripts(root)), resources=resources)
    page = _wrap_code_lines(_link_decks(page, path.resolve(), decks))
    # The speaker view copies the notes' HTML into its own window, without MathJax's styles and glyph
    # cache, so typeset math would come out garbled there: the scripts write math in Unicode, and MathJax
    # leaves the notes alone.
    page = page.replace('<aside class="notes">', '<aside class="notes mathjax_ignore">')
    page, missing = _embed_images(page, path.resolve(), root.resolve())
    warn_missing(path.relative_to(root), "shows", missing)
    return page


def _session_decks(exporter: SlidesExporter, out: Path, root: Path, decks: dict[Path, str]) -> list[str]:
    """Write one deck per session of TEACHING.md (course/publish/sessions.py); returns their index entries."""
    from course.publish.sessions import mark_predictions, session_notebook, sessions

    if not (root / "TEACHING.md").exists():
        return []
    items = []
    for session in sessions(root):
        place = root / "notebooks" / f"session-{session.number}.ipynb"  # links and images resolve as a notebook's
        page = mark_predictions(_page(exporter, session_notebook(session, root), session.title, place, root, decks))
        (out / session.name).write_text(page, encoding="utf-8")
        count = count_slides(page)
        items.append(f'<li><a href="{session.name}">{html.escape(session.title)}</a> ({count} slides)</li>')
        print(f"{session.name}: {count} slides")
    return items


def build(out: Path, root: Path = ROOT, site: str | None = None) -> list[Path]:
    """Write one deck per notebook with slide metadata, out/index.html and the assets they load. ``site``: the
    relative URL of the HTML site (site.py builds the decks into its slides/ folder with "../"), for links from the
    index back to each notebook's page."""
    notebooks = deck_notebooks(root)
    if not notebooks:
        raise SystemExit(f"no notebook under {root / 'notebooks'} has slide metadata")
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    decks = {path.resolve(): deck_name(path) for path in notebooks}
    for stale in out.glob("*.slides.html"):  # the deck of a notebook that is gone or lost its metadata
        if stale.name not in decks.values():
            stale.unlink()
    exporter = _exporter()
    for stale in out.glob("session-*.html"):
        stale.unlink()
    session_items = _session_decks(exporter, out, root, decks)
    targets, items = [], []
    for path in notebooks:
        title, page = _deck(exporter, path, root, decks)
        target = out / deck_name(path)
        target.write_text(page, encoding="utf-8")
        targets.append(target)
        slides = count_slides(page)
        page_link = ""
        if site is not None:
            page_link = f' &middot; <a class="page" href="{site}{path.relative_to(root).with_suffix(".html").as_posix()}">notebook page</a>'
        items.append(f'<li><a href="{target.name}">{html.escape(title)}</a> ({slides} slides){page_link}</li>')
        print(f"{target.name}: {slides} slides")
    back = (
        f'<p class="note"><a href="{site}index.html">&larr; The notebooks, as pages</a></p>' if site is not None else ""
    )
    sessions = ""
    if session_items:
        sessions = (
            "<h2>By session (TEACHING.md)</h2>\n<ul>\n" + "\n".join(session_items) + "\n</ul>\n<h2>By notebook</h2>"
        )
    (out / "index.html").write_text(
        INDEX.format(title=html.escape(series_title(root)), items="\n".join(items), back=back, sessions=sessions),
        encoding="utf-8",
    )
    return targets


def main(argv: list[str] | None = None) -> None:
    run_command(build, "decks", DEFAULT_OUT, __doc__, argv)


if __name__ == "__main__":
    main()
