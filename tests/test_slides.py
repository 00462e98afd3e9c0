"""The reveal.js slide decks (scripts/build_slides.py): built from the slide metadata, complete and offline.

The build runs once into a temporary folder. Notebooks 01-04 must carry slide metadata, the same way
(the title and every ``## `` section start a slide, the set-up cell and the exercise stubs are
skipped); every notebook with slide metadata must get a deck of more than MIN_SLIDES slides that loads
nothing from the network and shows every figure of its shown cells. The last test opens notebook 01's
deck in headless Chromium with every request that is not a file refused, and checks that reveal.js
started, MathJax typeset every equation, a figure is on screen, and the speaker view (key ``s``)
opens with the notes; it saves a screenshot in build/browser/ (marked ``browser``: it needs the
system's Chromium, see tests/test_browser.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "build_slides.py"
REPORT_DIR = ROOT / "build" / "browser"
PRESENTED = sorted((ROOT / "notebooks").glob("0[1-4]_*.ipynb"))  # the notebooks of the first course session
MIN_SLIDES = 15  # slides and sub-slides per deck
SLIDE_TYPES = {"slide", "subslide", "fragment", "skip", "notes", "-"}


def _slide_type(cell) -> str | None:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def _with_slides() -> list[Path]:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    return [p for p in paths if any(_slide_type(c) for c in nbformat.read(p, as_version=4).cells)]


def _deck(decks: Path, notebook: Path) -> Path:
    return decks / f"{notebook.stem}.slides.html"


@pytest.fixture(scope="module")
def decks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slides")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not result.stderr.strip(), result.stderr  # no warnings (a missing diagram, a deprecation)
    print(f"decks built in {time.monotonic() - start:.1f} s:\n{result.stdout.strip()}")
    return out


@pytest.mark.parametrize("notebook", PRESENTED, ids=lambda p: p.name)
def test_notebook_has_consistent_slide_metadata(notebook: Path):
    cells = nbformat.read(notebook, as_version=4).cells
    types = [_slide_type(c) for c in cells]
    assert None not in types, (
        f"{notebook.name}: cells without a slide type: {[i for i, t in enumerate(types) if t is None]}; give each one "
        "(JupyterLab: property inspector, Slide Type) as scripts/build_slides.py describes"
    )
    assert set(types) <= SLIDE_TYPES, f"{notebook.name}: unknown slide types {set(types) - SLIDE_TYPES}"
    assert types[0] == "slide", f"{notebook.name}: the title cell must start the deck"
    first_code = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    assert types[first_code] == "skip", f"{notebook.name}: the set-up cell (cell {first_code}) must be skipped"
    in_exercises = False
    for i, cell in enumerate(cells):
        source = cell.source.lstrip()
        if cell.cell_type == "markdown" and source.startswith("## "):
            in_exercises = source.startswith("## Exercises")
            expected = "skip" if re.match(r"## (\d+\. )?Set-up\b", source) else "slide"
            assert types[i] == expected, f"{notebook.name}, cell {i} ({source.splitlines()[0]!r}) must be {expected!r}"
        if in_exercises and cell.cell_type == "code":
            assert types[i] == "skip", f"{notebook.name}, cell {i}: exercise stubs and checkers are skipped"


def test_notebooks_of_the_session_have_decks():
    assert PRESENTED and set(PRESENTED) <= set(_with_slides())


def _attributes(page: str, tag: str, attribute: str) -> list[str]:
    return re.findall(rf"<{tag}\b[^>]*?\s{attribute}=\"([^\"]*)\"", page, re.IGNORECASE)


def _resolves(base: Path, url: str, root: Path) -> bool:
    target = (base.parent / unquote(urlsplit(url).path)).resolve()
    return target.is_file() and target.is_relative_to(root.resolve())


def _shown_png_count(notebook: Path) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in nbformat.read(notebook, as_version=4).cells
        if cell.cell_type == "code" and _slide_type(cell) != "skip"
        for output in cell.outputs
    )


@pytest.mark.parametrize("notebook", _with_slides(), ids=lambda p: p.name)
def test_deck_is_offline_and_complete(decks: Path, notebook: Path):
    path = _deck(decks, notebook)
    assert path.is_file(), f"no deck for {notebook.name}"
    page = path.read_text()
    slides = len(re.findall(r"<section\b", page))
    assert slides > MIN_SLIDES, f"{path.name}: {slides} <section> elements"

    scripts, stylesheets = _attributes(page, "script", "src"), _attributes(page, "link", "href")
    remote = [u for u in scripts + stylesheets if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", u)]
    remote += re.findall(r"""(?:import\(|require\(|url\()\s*["']?https?:""", page)
    assert not remote, f"{path.name} loads from the network: {remote}"
    for name in ("reveal/dist/reveal.js", "reveal/plugin/notes/notes.js", "mathjax/tex-svg-full.js"):
        assert name in scripts, f"{path.name} does not load the local {name}"
    for url in scripts + stylesheets:
        assert _resolves(path, url, decks), f"{path.name}: {url} is missing next to the deck"
    for url in stylesheets:  # and what those style sheets import (the theme's fonts)
        css = (path.parent / url).resolve()
        for ref in re.findall(r"""url\(\s*["']?([^"')]+)""", css.read_text()):
            if ref.startswith("data:"):
                continue
            assert not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", ref), f"{url} loads {ref} from the network"
            assert _resolves(css, ref, decks), f"{url}: {ref} is missing"

    images = _attributes(page, "img", "src")
    assert all(u.startswith("data:image/") for u in images), [u[:60] for u in images if not u.startswith("data:")]
    figures = [u for u in images if u.startswith("data:image/png;base64,")]
    assert len(figures) == _shown_png_count(notebook), f"{path.name}: {len(figures)} figures"
    for href in _attributes(page, "a", "href"):
        if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^#", href):
            assert _resolves(path, href, decks), f"{path.name} links {href}, which is not next to the deck"


def test_index_links_every_deck(decks: Path):
    index = (decks / "index.html").read_text()
    links = _attributes(index, "a", "href")
    assert sorted(links) == sorted(_deck(decks, nb).name for nb in _with_slides())


# Wait (at most 30 s) for MathJax 3, then count: every math item became an <mjx-container>, no TeX error.
MATHJAX_JS = """() => Promise.race([
    new Promise(resolve => setTimeout(() => resolve({timeout: true}), 30000)),
    MathJax.startup.promise.then(() => ({
        timeout: false,
        math: Array.from(MathJax.startup.document.math).length,
        rendered: document.querySelectorAll('mjx-container').length,
        errors: Array.from(document.querySelectorAll('[data-mjx-error]')).map(e => e.getAttribute('data-mjx-error')),
    }))])"""
# The first slide that shows a stored figure: its indices, to go there with Reveal.slide(h, v).
FIGURE_SLIDE_JS = """() => {
    const slide = Reveal.getSlides().find(s => s.querySelector(':scope > .jp-Cell img[src^="data:image/png"]'));
    return slide ? Reveal.getIndices(slide) : null;
}"""
NOTES_SLIDE_JS = """() => {
    const slide = Reveal.getSlides().find(s => s.querySelector('aside.notes'));
    return slide ? Reveal.getIndices(slide) : null;
}"""
VISIBLE_FIGURE_JS = """() => {
    const img = Reveal.getCurrentSlide().querySelector('img[src^="data:image/png"]');
    if (!img) return null;
    const box = img.getBoundingClientRect();
    return {width: img.naturalWidth, shown: box.width, top: box.top, bottom: box.bottom,
            visible: getComputedStyle(img).visibility, height: window.innerHeight};
}"""


def notes_text(notes_html: str) -> str:
    return re.sub(r"<[^>]+>", " ", notes_html).replace("&amp;", "&")


@pytest.mark.browser
def test_deck_presents_offline_in_chromium(request, tmp_path: Path):
    from test_browser import CHROMIUM, CHROMIUM_FLAGS, browser_env, offline_context, require_browser

    require_browser()  # before building the decks, so a skip is quick
    decks: Path = request.getfixturevalue("decks")
    from playwright.sync_api import sync_playwright

    notebook = next(p for p in PRESENTED if p.name.startswith("01_"))
    path = _deck(decks, notebook)
    network, failed, errors = [], [], []
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    screenshot = REPORT_DIR / f"slides-{notebook.stem}.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS, env=browser_env(tmp_path)
        )
        try:
            context = offline_context(browser, {"width": 1280, "height": 720}, network)
            context.on("page", lambda p: p.on("requestfailed", lambda r: failed.append(r.url)))
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("window.Reveal && Reveal.isReady() && document.querySelector('.reveal.ready')")
            assert page.evaluate("Reveal.getTotalSlides()") > MIN_SLIDES

            math = page.evaluate(MATHJAX_JS)
            assert not math["timeout"], "MathJax did not finish within 30 s"
            assert math["math"] > 0 and math["rendered"] == math["math"], math
            assert not math["errors"], f"TeX errors: {math['errors']}"

            page.evaluate("Reveal.configure({transition: 'none'})")
            indices = page.evaluate(FIGURE_SLIDE_JS)
            assert indices, "no slide shows a figure"
            page.evaluate("([h, v]) => Reveal.slide(h, v)", [indices["h"], indices["v"] or 0])
            page.wait_for_timeout(500)
            figure = page.evaluate(VISIBLE_FIGURE_JS)
            assert figure and figure["width"] > 0 and figure["shown"] > 100, figure
            assert figure["visible"] == "visible" and 0 <= figure["top"] < figure["bottom"] <= figure["height"], figure
            page.screenshot(path=str(screenshot))

            # Key s: the speaker view opens in a second window, from the local notes plugin, with the notes.
            indices = page.evaluate(NOTES_SLIDE_JS)
            assert indices, "no slide has speaker notes"
            page.evaluate("([h, v]) => Reveal.slide(h, v)", [indices["h"], indices["v"] or 0])
            notes = page.evaluate("Reveal.getSlideNotes()")
            with context.expect_page() as popup_info:
                page.keyboard.press("s")
            speaker = popup_info.value
            speaker.wait_for_function("document.title.includes('Speaker View')")
            shown = speaker.locator(".speaker-controls-notes .value")
            shown.wait_for()
            assert " ".join(shown.inner_text().split())[:80] == " ".join(notes_text(notes).split())[:80]
            deadline = time.monotonic() + 30  # its two previews are the deck itself, in frames
            while len(speaker.frames) < 3 or not all(
                f.evaluate("!!(window.Reveal && Reveal.isReady())") for f in speaker.frames[1:]
            ):
                assert time.monotonic() < deadline, "the speaker view's slide previews did not start"
                speaker.wait_for_timeout(250)
            speaker.close()
        finally:
            browser.close()
    assert not network, f"the deck asked for the network: {network}"
    assert not failed, f"requests failed: {failed}"
    assert not errors, f"JavaScript errors: {errors}"
    print(f"screenshot: {screenshot}")
