"""The static HTML version of the notebooks (course/publish/site.py): complete, linked and offline.

The build runs once per test run into a temporary folder (``built_site`` in tests/conftest.py, shared with
the deck tests). The index must link every notebook under notebooks/
(solutions included) by its title; every page must load nothing from the network (MathJax is the
local copy), show every stored figure and resolve every relative link. A browser test (marked
``browser``: it needs the system's Chromium, see tests/test_browser.py) then opens every page in headless
Chromium with all network requests refused. It checks that MathJax typeset every equation and every image
decoded, drives every interactive attention view (course/explorer/__init__.py), clicking layers, heads and tokens,
checks that the page draws the weights stored in the notebook, and saves screenshots of the index, of
notebook 01's page and of each page's first view. Another browser test measures the prose at 1920x1080, a
projector's screen: about 80-100 characters a line in markdown cells, while code and diagrams may be wider
(a diagram is drawn at its own width), and the navigation reads as links. Projector mode
(course/publish/site_template/) is switched on and off on two pages of the first browser test, with the nav's button, and
from the address (#projector) on the page of the second: prose about 28 px and code about 22 px, no code or output
box that scrolls sideways, figures not shrunk, the choice remembered. Every page lists its sections and links back
to the list from each.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
REPORT_DIR = ROOT / "build" / "browser"
SCREEN = {"width": 1920, "height": 1080}  # a projector; the explorer screenshots are taken at this size


@pytest.fixture(scope="module")
def site(
    built_site: Path,
) -> Path:  # tests/conftest.py: built once per run, shared with tests/course/publish/test_slides.py
    return built_site


def _page(site: Path, notebook: Path) -> Path:
    return site / notebook.relative_to(ROOT).with_suffix(".html")


def _first_heading(notebook: Path) -> str:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            match = re.search(r"^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$", "".join(cell["source"]), re.MULTILINE)
            if match:
                return match.group(1)
    return notebook.stem


def _png_count(notebook: Path) -> int:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return sum(
        "image/png" in o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
    )


def _attributes(page: str, tag: str, attribute: str) -> list[str]:
    return re.findall(rf"<{tag}\b[^>]*?\s{attribute}=\"([^\"]*)\"", page, re.IGNORECASE)


def _is_relative(url: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//|^#", url)


def _resolves(page_path: Path, url: str, site: Path) -> bool:
    target = (page_path.parent / unquote(urlsplit(url).path)).resolve()
    return target.is_file() and target.is_relative_to(site.resolve())


def test_index_links_every_notebook_by_title(site: Path):
    index = (site / "index.html").read_text(encoding="utf-8")
    links = set(_attributes(index, "a", "href"))
    texts = {(href, html.unescape(text)) for href, text in re.findall(r'<a href="([^"]*)">(.*?)</a>', index, re.S)}
    assert NOTEBOOKS
    for notebook in NOTEBOOKS:
        href = notebook.relative_to(ROOT).with_suffix(".html").as_posix()
        assert href in links, f"index.html does not link {href}"
        assert _page(site, notebook).is_file(), f"{href} was not built"
        title = _first_heading(notebook).replace("`", "").replace("**", "")
        assert (href, title) in texts, f"index.html does not show the title {title!r} for {href}"
    for href in links:  # section links too: every link of the index resolves
        assert _resolves(site / "index.html", href, site), f"index.html links {href}, which does not exist"


def test_site_and_decks_link_each_other(site: Path):
    """The index gives each numbered notebook its one line from the README and a link to its deck; each page of a
    notebook with a deck links to it; the decks' index links back to every page it presents, and to the site."""
    from course.publish.common import deck_name, deck_notebooks
    from course.publish.site import readme_summaries

    summaries = readme_summaries(ROOT)
    numbered = [nb for nb in NOTEBOOKS if nb.parent.name == "notebooks"]
    assert sorted(summaries) == sorted(nb.relative_to(ROOT).as_posix() for nb in numbered), "README table vs notebooks"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="slides/index.html"' in index and (site / "slides" / "index.html").is_file()
    with_decks = {p.resolve() for p in deck_notebooks(ROOT)}
    assert with_decks, "no notebook has a deck"
    decks_index = (site / "slides" / "index.html").read_text(encoding="utf-8")
    assert 'href="../index.html"' in decks_index
    for notebook in numbered:
        assert f'<p class="summary">{summaries[notebook.relative_to(ROOT).as_posix()]}</p>' in index, notebook.name
        deck = f"slides/{deck_name(notebook)}"
        page = _page(site, notebook).read_text(encoding="utf-8")
        if notebook.resolve() in with_decks:
            assert f'href="{deck}"' in index and (site / deck).is_file(), f"the index does not link {deck}"
            assert f'href="../{deck}">Slides</a>' in page, f"{notebook.name}'s page does not link its deck"
            assert f'href="../notebooks/{notebook.stem}.html"' in decks_index, f"the decks' index: {notebook.name}"
        else:
            assert deck not in index and ">Slides</a>" not in page, notebook.name


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_page_is_offline_and_complete(site: Path, notebook: Path):
    path = _page(site, notebook)
    page = path.read_text(encoding="utf-8")
    scripts = _attributes(page, "script", "src")
    stylesheets = _attributes(page, "link", "href")
    remote = [u for u in scripts + stylesheets if not _is_relative(u)] + re.findall(r"import\(\s*[\"']https?:", page)
    assert not remote, f"{path.name} loads from the network: {remote}"
    assert any(u.endswith("mathjax/tex-svg-full.js") for u in scripts), f"{path.name} does not load the local MathJax"
    for url in scripts + stylesheets:
        assert _resolves(path, url, site), f"{path.name}: {url} is missing from the site"

    images = _attributes(page, "img", "src")
    figures = [u for u in images if u.startswith("data:image/png;base64,")]
    assert len(figures) == _png_count(notebook), (
        f"{path.name}: {len(figures)} figures, notebook stores {_png_count(notebook)}"
    )
    for url in images:
        assert url.startswith("data:") or _resolves(path, url, site), f"{path.name}: image {url[:80]} does not resolve"

    for href in _attributes(page, "a", "href"):
        if _is_relative(href):
            assert not urlsplit(href).path.endswith(".ipynb"), f"{path.name} links a notebook file: {href}"
            assert _resolves(path, href, site), f"{path.name} links {href}, which is not in the site"


def _ids(page: str) -> set[str]:
    return {html.unescape(i) for i in re.findall(r'\sid="([^"]*)"', page)}


def _sections(page: str) -> list[str]:
    """The ids of a built page's second-level headings (the notebook's ``## `` sections)."""
    return [html.unescape(i) for i in re.findall(r'<h2 id="([^"]+)">', page)]


def test_every_page_lists_its_sections_and_links_back(site: Path):
    """Each page with two or more sections lists every one of them, in order, after its title (site-toc), each
    section's heading links back to that list, and every link within a page resolves to an id on it. The index lists
    each notebook's own sections, not the ones every notebook ends with, and its links resolve to ids on the pages."""
    index = (site / "index.html").read_text(encoding="utf-8")
    boilerplate = re.compile(r"^(Summary|Exercises\b.*|What('s| comes) next)$")
    listed_in_index = 0
    for notebook in NOTEBOOKS:
        path = _page(site, notebook)
        page = path.read_text(encoding="utf-8")
        sections, ids = _sections(page), _ids(page)
        for href in re.findall(r'href="#([^"]*)"', page):
            assert html.unescape(href) in ids, f"{path.name} links #{href}, which is no id on the page"
        if len(sections) >= 2:
            toc = re.search(r'<nav class="site-toc" id="site-contents"[^>]*>(.*?)</nav>', page, re.S)
            assert toc, f"{path.name}: {len(sections)} sections and no contents list"
            listed = [html.unescape(h) for h in re.findall(r'<a href="#([^"]*)"', toc.group(1))]
            assert listed == sections, f"{path.name}: the contents list {listed} is not the sections {sections}"
            assert page.index("site-toc") > page.index("<h1"), f"{path.name}: the contents list is above the title"
            for section in re.findall(r"<h2 id=.*?</h2>", page, re.S):
                assert 'class="site-top" href="#site-contents"' in section, f"{path.name}: no link back in {section}"
        href = path.relative_to(site).as_posix()
        for anchor, text in re.findall(rf'<a href="{re.escape(href)}#([^"]*)">(.*?)</a>', index, re.S):
            assert html.unescape(anchor) in sections, f"the index links {href}#{anchor}, which is no section there"
            assert not boilerplate.match(re.sub(r"<[^>]+>", "", html.unescape(text)).strip()), (href, text)
            listed_in_index += 1
    assert listed_in_index > 3 * len(NOTEBOOKS), f"the index lists only {listed_in_index} sections"


# In the page: wait (at most 30 s) for MathJax 3 to finish, then count what it made. Every math item
# must have become an <mjx-container>, none may be a TeX error, and no "$...$" may be left as text.
MATHJAX_JS = """() => Promise.race([
    new Promise(resolve => setTimeout(() => resolve({loaded: true, timeout: true}), 30000)),
    !(window.MathJax && MathJax.startup && MathJax.startup.promise) ? Promise.resolve({loaded: false})
    : MathJax.startup.promise.then(() => {
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        const leftover = [];
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const inCode = node.parentElement.closest('pre, code, script, style, mjx-container');
            if (!inCode && /\\$[^$]+\\$/.test(node.textContent)) leftover.push(node.textContent.slice(0, 80));
        }
        return {
            loaded: true,
            timeout: false,
            math: Array.from(MathJax.startup.document.math).length,
            rendered: document.querySelectorAll('mjx-container').length,
            errors: Array.from(document.querySelectorAll('[data-mjx-error]')).map(e => e.getAttribute('data-mjx-error')),
            leftover: leftover,
        };
    })])"""
IMAGES_JS = """() => Array.from(document.images).map(i => ({src: i.src.slice(0, 60), width: i.naturalWidth}))"""


# In the page: what projector mode (course/publish/site_template/) changes. Font sizes of prose, code and printed output,
# every code or output box and the page itself wider than its box (a sideways scroll), figures drawn narrower than
# their natural size where the column has the room, the toggle's state and what localStorage remembers.
PROJECTOR_JS = """() => {
    const sizes = selector => Array.from(document.querySelectorAll(selector)).filter(e => e.textContent.trim())
        .map(e => parseFloat(getComputedStyle(e).fontSize));
    const range = values => [Math.min(...values), Math.max(...values)];
    const scrolling = Array.from(document.querySelectorAll(
            ".jp-InputArea-editor, .jp-InputArea pre, .jp-OutputArea-output, .jp-OutputArea-output pre"))
        .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => `${e.className}: ${e.textContent.slice(0, 60)}`);
    const small = Array.from(document.querySelectorAll(".jp-OutputArea-output img, .jp-RenderedMarkdown img"))
        .filter(i => i.getBoundingClientRect().width < Math.min(i.naturalWidth, i.parentElement.clientWidth) - 1)
        .map(i => `${i.naturalWidth} px drawn ${i.getBoundingClientRect().width} px`);
    return {on: document.documentElement.classList.contains("site-projector"),
            pressed: Array.from(document.querySelectorAll(".site-projector-toggle")).map(b => b.getAttribute("aria-pressed")),
            stored: localStorage.getItem("attention-site-projector"),
            prose: range(sizes(".jp-MarkdownCell .jp-RenderedMarkdown p")), code: range(sizes(".jp-InputArea pre")),
            output: range(sizes(".jp-OutputArea-output pre")), scrolling, small,
            pageWidth: document.documentElement.scrollWidth, screen: window.innerWidth};
}"""


def _check_projector_mode(page, name: str) -> str:
    """Switch a loaded page to projector mode with the nav's button at 1920x1080, measure it, switch back."""
    viewport = page.viewport_size
    page.set_viewport_size({"width": 1920, "height": 1080})
    try:
        before = page.evaluate(PROJECTOR_JS)
        assert not before["on"] and before["prose"][1] < 20, f"{name} did not open in reading mode: {before}"
        page.locator(".site-projector-toggle").first.click()
        on = page.evaluate(PROJECTOR_JS)
        page.locator(".site-projector-toggle").last.click()
        off = page.evaluate(PROJECTOR_JS)
    finally:
        page.set_viewport_size(viewport)
    assert on["on"] and set(on["pressed"]) == {"true"} and on["stored"] == "on", f"{name}: the toggle: {on}"
    assert 26 <= on["prose"][0] and on["prose"][1] <= 30, f"{name}: projector prose {on['prose']} px, not about 28"
    assert 20 <= min(on["code"][0], on["output"][0]) and max(on["code"][1], on["output"][1]) <= 24, (
        f"{name}: projector code {on['code']} px and output {on['output']} px, not about 22"
    )
    assert not on["scrolling"], f"{name}: code or output scrolls sideways in projector mode: {on['scrolling']}"
    assert on["pageWidth"] <= on["screen"], f"{name}: the page scrolls sideways in projector mode: {on}"
    assert not on["small"], f"{name}: figures shrunk in projector mode: {on['small']}"
    assert not off["on"] and off["stored"] == "off" and off["prose"] == before["prose"], (
        f"{name}: switching back: {off}"
    )
    return (
        f"- {name}, projector mode at 1920x1080: prose {on['prose'][0]:.0f} px, code {on['code'][0]:.0f} px, "
        f"output {on['output'][0]:.0f} px (reading mode: {before['prose'][0]:.0f}, {before['code'][0]:.0f}, "
        f"{before['output'][0]:.0f}); no sideways scroll"
    )


# The pages on which the Chromium test below switches projector mode on and off: at 200% browser zoom their code
# scrolled sideways most (16 and 14 cells).
PROJECTED = ("07_", "10_")


def _stored_views(notebook: Path) -> list[dict]:
    """The attention views (course.explorer) stored in a notebook's outputs, decoded."""
    from course.explorer import read_payload

    stored = json.loads(notebook.read_text(encoding="utf-8"))
    return read_payload(
        "".join(
            "".join(o.get("data", {}).get("text/html", ""))
            for c in stored["cells"]
            if c["cell_type"] == "code"
            for o in c.get("outputs", [])
        )
    )


@pytest.mark.browser
def test_site_renders_offline_in_chromium(request, tmp_path: Path):
    """Every page in headless Chromium, with the network refused: MathJax typesets every equation and every image
    shows. On the pages of notebooks with course.explorer's attention views, every view starts (its script replaces
    its static figure), and clicking a layer, a head and tokens, or using the keys, draws the weights stored in the
    notebook. (One test, so each page is loaded and typeset once: about 1 s a page on 2 cores.)"""
    from tests.test_browser import (
        CHROMIUM,
        CHROMIUM_FLAGS,
        EXPLORER,
        browser_env,
        exercise_explorer,
        offline_context,
        require_browser,
    )

    require_browser()  # before building the site, so a skip is quick
    site: Path = request.getfixturevalue("site")
    from playwright.sync_api import sync_playwright

    pages = {site / "index.html": None} | {_page(site, nb): nb for nb in NOTEBOOKS}
    network, failed, errors, summary, explored = [], [], [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS, env=browser_env(tmp_path)
        )
        try:
            context = offline_context(browser, {"width": 1400, "height": 1000}, network)
            for path, notebook in pages.items():
                page = context.new_page()
                page.set_default_timeout(60_000)
                page.on("requestfailed", lambda request: failed.append(request.url))
                page.on("pageerror", lambda error, name=path.name: errors.append(f"{name}: {error}"))
                page.goto(path.as_uri(), wait_until="load", timeout=60_000)
                math = page.evaluate(MATHJAX_JS)
                images = page.evaluate(IMAGES_JS)
                assert math["loaded"], f"{path.name}: MathJax did not load"
                assert not math["timeout"], f"{path.name}: MathJax did not finish within 30 s"
                assert math["rendered"] == math["math"], f"{path.name}: {math['rendered']} of {math['math']} typeset"
                assert not math["errors"], f"{path.name}: TeX errors: {math['errors']}"
                assert not math["leftover"], f"{path.name}: math left as text: {math['leftover']}"
                broken = [i["src"] for i in images if i["width"] == 0]
                assert not broken, f"{path.name}: images not shown: {broken}"
                summary.append(f"- {path.relative_to(site)}: {math['math']} equations typeset, {len(images)} images")
                if path.parent == site or (path.parent.name == "notebooks" and path.stem.startswith("01_")):
                    REPORT_DIR.mkdir(parents=True, exist_ok=True)
                    shots = [REPORT_DIR / f"site-{path.stem}.png"]
                    page.screenshot(path=str(shots[0]))
                    figures = page.locator("img[src^='data:image/png']")
                    if figures.count():  # and the first figure, scrolled to
                        figures.first.scroll_into_view_if_needed()
                        shots.append(REPORT_DIR / f"site-{path.stem}-figure.png")
                        page.screenshot(path=str(shots[1]))
                    summary.append(f"  screenshots: {', '.join(shot.name for shot in shots)}")
                expected = _stored_views(notebook) if notebook else []
                views = page.locator(EXPLORER + "[data-live]")
                assert views.count() == len(expected), f"{path.name}: {views.count()} of {len(expected)} views started"
                assert not page.locator(".attn-x-fallback").count(), f"{path.name}: a live view shows its static figure"
                for i, data in enumerate(expected):
                    views.nth(i).scroll_into_view_if_needed()
                    explored.append(f"- {path.name}, view {i}: " + exercise_explorer(views.nth(i), data, page))
                if expected:
                    REPORT_DIR.mkdir(parents=True, exist_ok=True)
                    page.set_viewport_size(SCREEN)  # the screenshot as a projector shows it
                    views.first.scroll_into_view_if_needed()
                    page.screenshot(path=str(REPORT_DIR / f"site-{path.stem}-explorer.png"))
                    page.set_viewport_size({"width": 1400, "height": 1000})
                if notebook and notebook.parent.name == "notebooks" and notebook.name.startswith(PROJECTED):
                    summary.append(_check_projector_mode(page, path.name))
                page.close()
        finally:
            browser.close()
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "site-report.md").write_text(
        "# Static site in headless Chromium, network refused\n\n" + "\n".join(summary + explored) + "\n",
        encoding="utf-8",
    )
    assert explored, "no page shows an attention view (course.explorer)"
    assert not network, f"pages asked for the network: {network}"
    assert not failed, f"requests failed: {failed}"
    assert not errors, f"JavaScript errors: {errors}"


# In the page: the line length, in characters, of the longest paragraphs of markdown cells (their width
# over the average width of a character of their own text, in their own font), and the width of the
# widest code cell.
MEASURE_JS = """() => {
    const paragraphs = Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown p'))
        .filter(p => p.textContent.length > 300);
    const measures = paragraphs.map(p => {
        const text = p.textContent;
        const probe = document.createElement('span');
        probe.style.cssText = 'white-space: nowrap; position: absolute; visibility: hidden';
        probe.textContent = text;
        p.appendChild(probe);
        const perCharacter = probe.getBoundingClientRect().width / text.length;
        probe.remove();
        return {characters: p.getBoundingClientRect().width / perCharacter, text: text.slice(0, 60)};
    });
    const code = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputArea-editor'))
        .map(e => e.getBoundingClientRect().width);
    const prose = Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown p'))
        .filter(p => p.textContent.trim())  // not a diagram's paragraph (an image alone)
        .map(p => p.getBoundingClientRect().width);
    const diagrams = Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown img')).map(i => ({
        src: i.getAttribute('src'), shown: i.getBoundingClientRect().width, natural: i.naturalWidth}));
    const nav = Array.from(document.querySelectorAll('.site-nav a')).map(a => {
        const style = getComputedStyle(a);
        return {color: style.color, size: parseFloat(style.fontSize), underline: style.textDecorationLine};
    });
    return {measures: measures, code: Math.max(0, ...code), prose: Math.max(0, ...prose), diagrams: diagrams,
            nav: nav, body: document.body.getBoundingClientRect().width,
            navWidth: document.querySelector('.site-nav').getBoundingClientRect().width};
}"""


@pytest.mark.browser
def test_prose_has_a_readable_measure_on_a_projector(request, tmp_path: Path):
    from tests.test_browser import CHROMIUM, CHROMIUM_FLAGS, browser_env, offline_context, require_browser

    require_browser()
    site: Path = request.getfixturevalue("site")
    from playwright.sync_api import sync_playwright

    notebook = next(nb for nb in NOTEBOOKS if nb.name.startswith("02_"))
    network: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS, env=browser_env(tmp_path)
        )
        try:
            page = offline_context(browser, {"width": 1920, "height": 1080}, network).new_page()
            page.goto(_page(site, notebook).as_uri(), wait_until="load", timeout=60_000)
            page.evaluate(MATHJAX_JS)  # line lengths after the equations are typeset
            found = page.evaluate(MEASURE_JS)
            REPORT_DIR.mkdir(parents=True, exist_ok=True)
            page.locator(".jp-MarkdownCell .jp-RenderedMarkdown p").nth(3).scroll_into_view_if_needed()
            page.screenshot(path=str(REPORT_DIR / f"site-{notebook.stem}-1920x1080.png"))
            # projector mode from the address (#projector), on the same page: no reload
            page.evaluate("location.hash = 'projector'")
            page.wait_for_function("document.documentElement.classList.contains('site-projector')")
            projected = page.evaluate(MEASURE_JS) | page.evaluate(PROJECTOR_JS)
            page.locator(".jp-MarkdownCell .jp-RenderedMarkdown img").first.scroll_into_view_if_needed()
            page.screenshot(path=str(REPORT_DIR / f"site-{notebook.stem}-projector-1920x1080.png"))
        finally:
            browser.close()
    assert len(found["measures"]) >= 3, f"{notebook.name}: too few long paragraphs to measure: {found}"
    for measure in found["measures"]:
        assert 60 <= measure["characters"] <= 100, (
            f"{notebook.name} at 1920x1080: {measure['characters']:.0f} characters a line in {measure['text']!r}; "
            "prose reads best at about 80-100"
        )
    assert found["code"] > 1.5 * found["prose"], f"code cells should be free to be wider than prose: {found}"
    # a diagram is drawn at its own width (masks.svg is 1120 px), not shrunk to the prose column
    assert found["diagrams"], f"{notebook.name} shows no diagram"
    for diagram in found["diagrams"]:
        assert diagram["shown"] >= min(diagram["natural"], found["code"]) - 1, f"diagram shrunk: {diagram}"
    assert max(d["shown"] for d in found["diagrams"]) > found["prose"] + 100, found["diagrams"]
    # the nav reads as links (coloured, underlined, 16 px) and lines up with the page
    assert found["nav"] and all(
        a["size"] >= 16 and "underline" in a["underline"] and a["color"] not in ("rgb(0, 0, 0)", "rgba(0, 0, 0, 0.87)")
        for a in found["nav"]
    ), found["nav"]
    assert abs(found["navWidth"] - min(found["body"], 1500)) < 40, (found["navWidth"], found["body"])
    # projector mode (#projector): prose about 28 px at the same measure, code about 22 px, nothing scrolls sideways,
    # diagrams at least their natural size, and the choice remembered
    assert projected["stored"] == "on" and set(projected["pressed"]) == {"true"}, projected
    assert 26 <= projected["prose"][0] and projected["prose"][1] <= 30, projected["prose"]
    assert 20 <= projected["code"][0] and projected["code"][1] <= 24, projected["code"]
    assert all(50 <= m["characters"] <= 100 for m in projected["measures"]), projected["measures"]
    assert not projected["scrolling"] and projected["pageWidth"] <= 1920, projected
    for diagram in projected["diagrams"]:
        assert diagram["shown"] >= diagram["natural"] - 1, f"diagram shrunk in projector mode: {diagram}"
    assert not network, f"the page asked for the network: {network}"
