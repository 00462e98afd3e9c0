"""Build a static HTML version of every notebook, plus an index page, that reads offline.

    python -m course.publish.site                # -> build/html/index.html, the decks in build/html/slides/
    python -m course.publish.site --out DIR      # somewhere else

Run from the repository root, in the project's environment. The pages show the outputs stored in the notebooks
(nothing is executed, so this takes seconds) and load nothing from the network.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from course.publish import slides
from course.publish.common import (
    ROOT,
    copy_mathjax,
    deck_name,
    deck_notebooks,
    linked_file,
    mathjax_head,
    notebook_paths,
    notebook_title,
    run_command,
    series_title,
    warn_missing,
)

# Everything a page needs is in the output folder, laid out like the repository: figures are embedded as data
# URIs, the diagrams a notebook shows (``../img/x.svg``) and any other repository file it links are copied next to
# the pages (_copy_referenced_files), and equations are typeset by the local MathJax (common.py). Links between
# notebooks (``02_masking.ipynb``) point to their HTML pages.
DEFAULT_OUT = ROOT / "build" / "html"
SECTION_NAMES = {"notebooks": "Notebooks", "notebooks/solutions": "Solutions"}
SLIDES_DIR = "slides"  # the decks, inside the site (slides.py)

# The series' own style and script (site_template/), copied to the site's root and linked by every page after
# JupyterLab's style: the reading measure, the navigation, the page's contents, and the projector mode. Projector
# mode is for showing the pages to a room (the decks are the lecture medium): prose about 28 px and code 22 px on a
# 1920x1080 screen instead of 14 and 13, the page at the screen's width, code and printed output wrapped (never a
# sideways scroll bar), figures at 1.5 times their natural size where there is room. The nav's button switches it;
# ``?projector`` or ``#projector`` in the address turns it on and ``?projector=off`` off; site.js remembers the
# choice (localStorage) for every page.
SITE_TEMPLATE = Path(__file__).resolve().parent / "site_template"
SITE_FILES = ("site.css", "site.js")
SITE_HEAD = '<link rel="stylesheet" href="{prefix}site.css">\n<script src="{prefix}site.js"></script>'
PROJECTOR_BUTTON = (
    '<button type="button" class="site-projector-toggle" aria-pressed="false" '
    'title="Larger text and wrapped code, for a projector (or add ?projector to the address)">Projector mode</button>'
)
TOC_ID = "site-contents"  # the page's list of its sections; each section's heading links back to it
# Sections every notebook ends with: the index lists a notebook's own sections, not these.
BOILERPLATE_SECTIONS = re.compile(r"^(?:\d+\.\s*)?(?:Summary|Exercises\b.*|What(?:'s| comes) next)$")

# nbconvert's JupyterLab template, minus everything it would fetch from a CDN: require.js (only
# needed by widgets and JavaScript outputs, which these notebooks do not have), MathJax (replaced
# by the local copy) and Mermaid (no diagrams of that kind here). Code input is Pygments' already
# escaped HTML, so the template's bleach pass over it (two thirds of the build time) is skipped.
TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{{ resources.site_mathjax }}{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}{{ resources.site_head }}{%- endblock html_head_css -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block input -%}
<div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor" data-type="inline">
<div class="cm-editor cm-s-jupyter">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
</div>
</div>
{%- endblock input -%}
{%- block body_header -%}{{ super() }}{{ resources.site_nav }}{%- endblock body_header -%}
{%- block body_footer -%}{{ resources.site_nav }}{{ super() }}{%- endblock body_footer -%}
"""

INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}</title>
{mathjax}
{site_head}
</head>
<body class="site-index">
<h1>{title}</h1>
<p class="note">A static copy of the notebooks with their stored outputs, readable without Jupyter and offline.
To run the code, open the notebooks in JupyterLab (see the README). For a lecture room, the
<a href="slides/index.html">slide decks</a>.<span class="site-js-only"> To project these pages instead, turn on
their projector mode (larger text, code wrapped; every page remembers it): {projector}</span></p>
{sections}
</body>
</html>
"""


def _strip_tags(fragment: str) -> str:
    return re.sub(r"<[^>]+>", "", fragment).strip()


_H2 = re.compile(r'<h2 id="([^"]+)">(.*?)</h2>', re.S)
_HEADING_LINKS = re.compile(r'<a class="(?:anchor-link|site-top)".*?</a>', re.S)  # the pilcrow and the "top" link


def section_headings(page: str) -> list[tuple[str, str]]:
    """(id, text) of each second-level heading in a built page, text still HTML-escaped."""
    return [(m.group(1), _strip_tags(_HEADING_LINKS.sub("", m.group(2)))) for m in _H2.finditer(page)]


def add_contents(page: str) -> str:
    """The page with a list of its ``## `` sections (id TOC_ID) after its title cell, and in each of those headings a
    link back to the list. A page with fewer than two sections is returned as it is."""
    headings = list(_H2.finditer(page))
    title = re.search(r"<h1\b", page)
    if len(headings) < 2 or not title:
        return page
    items = []
    for m in headings:
        inner = re.sub(r"</?a\b[^>]*>", "", _HEADING_LINKS.sub("", m.group(2))).strip()  # no link inside a link
        items.append(f'<li><a href="#{m.group(1)}">{inner}</a></li>')
    contents = (
        f'<nav class="site-toc" id="{TOC_ID}" aria-label="On this page">'
        f'<p class="site-toc-title">On this page</p><ul>{"".join(items)}</ul></nav>\n'
    )
    top = f'<a class="site-top" href="#{TOC_ID}" title="Back to the list of sections">&uarr;&nbsp;contents</a>'
    page = _H2.sub(lambda m: f'<h2 id="{m.group(1)}">{m.group(2)}{top}</h2>', page)
    after_title = page.find('<div class="jp-Cell ', title.end())  # the cell after the title's
    return page[:after_title] + contents + page[after_title:] if after_title > 0 else page


def _link_notebooks_to_pages(page: str) -> str:
    """Relative links to notebooks (``02_masking.ipynb#x``) point to their HTML pages instead."""
    return re.sub(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|/|#)([^"#]*?)\.ipynb(#[^"]*)?"', r'href="\1.html\2"', page)


def _copy_referenced_files(page: str, notebook: Path, root: Path, out: Path) -> list[str]:
    """Copy the repository files a page points to (``../img/x.svg``) to the same place in the site.

    Pages sit where their notebooks sit, so relative links keep working. Returns the links that
    point to nothing in the repository.
    """
    missing = []
    for url in re.findall(r'<(?:img|a)\b[^>]*?\s(?:src|href)="([^"]*)"', page):
        source = linked_file(notebook, url) if url else None
        if source is None:
            continue
        if source.suffix == ".html" and (source.with_suffix(".ipynb").is_file() or source == root / "index.html"):
            continue  # a notebook's page, or the index
        in_site = (out / os.path.relpath(source, root)).resolve()
        if in_site.is_relative_to((out / SLIDES_DIR).resolve()) and in_site.is_file():
            continue  # a deck, built into the site
        if not (source.is_file() and source.is_relative_to(root)):
            missing.append(url)
            continue
        target = out / source.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return missing


# Each page starts and ends with a navigation bar: the index, the notebook's slide deck, the previous and next
# notebook in its folder, and the projector-mode button.
def _nav(prefix: str, here: Path, neighbours: list[tuple[Path, str] | None], deck: str | None = None) -> str:
    contents = f'<a href="{prefix}index.html">Contents</a>'
    if deck:  # the notebook's slide deck, built into the site's slides/ folder
        contents += f' &middot; <a href="{prefix}{SLIDES_DIR}/{deck}">Slides</a>'
    contents += PROJECTOR_BUTTON
    links = [f"<span>{contents}</span>"]
    for arrow, neighbour in zip(("&larr; ", ""), neighbours, strict=True):
        if neighbour is None:
            links.append("<span></span>")
            continue
        target, title = neighbour
        href = Path(os.path.relpath(target, here.parent)).as_posix()
        text = f"{arrow}{html.escape(title)}" if arrow else f"{html.escape(title)} &rarr;"
        links.append(f'<a href="{href}">{text}</a>')
    return f'<nav class="site-nav">{"".join(links)}</nav>'


def _neighbours(i: int, paths: list[Path], targets: list[Path], titles: list[str]) -> list[tuple[Path, str] | None]:
    """The pages (target, title) of the previous and the next notebook in the folder of notebook i, or None."""
    same_folder = [j for j in range(len(paths)) if paths[j].parent == paths[i].parent]
    position = same_folder.index(i)
    neighbours = []
    for step in (-1, 1):
        j = position + step
        neighbours.append((targets[same_folder[j]], titles[same_folder[j]]) if 0 <= j < len(same_folder) else None)
    return neighbours


def copy_site_files(out: Path) -> None:
    """The site's style and script (course/publish/site_template/) to the site's root."""
    for name in SITE_FILES:
        shutil.copyfile(SITE_TEMPLATE / name, out / name)


def readme_summaries(root: Path = ROOT) -> dict[str, str]:
    """{'notebooks/01_x.ipynb': its one line in the README's table of notebooks}, as HTML (`code` kept)."""
    readme = root / "README.md"
    rows = re.findall(
        r"^\|\s*\d\d\s*\|\s*\[[^\]]*\]\((notebooks/[^)]+\.ipynb)\)\s*\|(.*?)\|",
        readme.read_text(encoding="utf-8") if readme.is_file() else "",
        re.MULTILINE,
    )
    return {
        path: re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text.strip(), quote=False)) for path, text in rows
    }


# The index lists every notebook with its one line from the README, its deck and its own sections (not the Summary,
# Exercises and What's next that every notebook ends with).
def _index_entry(href: str, title: str, page: str, deck: str | None, summary: str | None) -> str:
    """A notebook's item in the index: its page, its deck, its summary and the links to its sections."""
    items = "".join(
        f'<li><a href="{href}#{anchor}">{text}</a></li>'
        for anchor, text in section_headings(page)
        if not BOILERPLATE_SECTIONS.match(html.unescape(text).strip())
    )
    entry = f'<li class="notebook"><a href="{href}">{html.escape(title)}</a>'
    if deck:
        entry += f' <a class="deck" href="{SLIDES_DIR}/{deck}">slides</a>'
    if summary:
        entry += f'<p class="summary">{summary}</p>'
    return entry + (f'<ul class="sections">{items}</ul></li>' if items else "</li>")


def _write_index(out: Path, root: Path, toc: dict[str, list[str]]) -> None:
    """out/index.html: the index entries of each folder of notebooks, under the folder's name."""
    sections = "\n".join(
        f"<h2>{html.escape(SECTION_NAMES.get(folder, folder))}</h2>\n<ul>\n" + "\n".join(entries) + "\n</ul>"
        for folder, entries in toc.items()
    )
    (out / "index.html").write_text(
        INDEX.format(
            title=html.escape(series_title(root)),
            mathjax=mathjax_head(),
            site_head=SITE_HEAD.replace("{prefix}", ""),
            projector=PROJECTOR_BUTTON,
            sections=sections,
        ),
        encoding="utf-8",
    )


def build(out: Path, root: Path = ROOT) -> list[Path]:
    """Write out/index.html, one page per notebook (same folders as in the repository), out/mathjax/ and the
    slide decks in out/slides/ (slides.py), linked both ways."""
    paths = notebook_paths(root)
    if not paths:
        raise SystemExit(f"no notebooks under {root / 'notebooks'}")
    out.mkdir(parents=True, exist_ok=True)
    copy_mathjax(out)
    copy_site_files(out)
    with_decks = {path.resolve() for path in deck_notebooks(root)}
    if with_decks:
        slides.build(out / SLIDES_DIR, root, site="../")
    summaries = readme_summaries(root)

    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"offline.html.j2": TEMPLATE})],
        template_file="offline.html.j2",
    )
    notebooks = [(path, nbformat.read(path, as_version=4)) for path in paths]
    targets = [out / path.relative_to(root).with_suffix(".html") for path in paths]
    titles = [notebook_title(nb, path.stem) for path, nb in notebooks]
    for stale in (out / "notebooks").rglob("*.html") if (out / "notebooks").is_dir() else []:
        if stale not in targets:  # the page of a notebook that is gone
            stale.unlink()
    toc: dict[str, list[str]] = {}  # folder -> the index entries of its notebooks
    for i, ((path, nb), target) in enumerate(zip(notebooks, targets, strict=True)):
        rel = path.relative_to(root)
        prefix = "../" * (len(rel.parts) - 1)
        deck = deck_name(path) if path.resolve() in with_decks else None
        resources = {
            "metadata": {"name": titles[i], "path": str(path.parent)},
            "site_mathjax": mathjax_head(prefix),
            "site_head": SITE_HEAD.replace("{prefix}", prefix),
            "site_nav": _nav(prefix, target, _neighbours(i, paths, targets, titles), deck),
        }
        page, _ = exporter.from_notebook_node(nb, resources=resources)
        page = add_contents(_link_notebooks_to_pages(page))
        warn_missing(rel, "links", _copy_referenced_files(page, path, root, out))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
        entry = _index_entry(target.relative_to(out).as_posix(), titles[i], page, deck, summaries.get(rel.as_posix()))
        toc.setdefault(rel.parent.as_posix(), []).append(entry)
    _write_index(out, root, toc)
    return targets


def main(argv: list[str] | None = None) -> None:
    run_command(build, "notebook pages", DEFAULT_OUT, __doc__, argv)


if __name__ == "__main__":
    main()
