"""The reveal.js slide decks (course/publish/slides.py): built from the slide metadata, complete and offline.

The decks are built once per test run, into the HTML site's slides/ folder (tests/conftest.py). Every numbered notebook must carry slide
metadata, the same way (the title and every ``## `` section start a slide, the set-up cell and the
exercise stubs are skipped); every notebook with slide metadata must get a deck of more than MIN_SLIDES
slides that loads nothing from the network and shows every figure of its shown cells. The browser tests
(marked ``browser``: they need the system's Chromium, see tests/test_browser.py) open the decks in headless
Chromium with every request that is not a file refused. One opens notebook 01's deck and checks that
reveal.js started, MathJax typeset every equation, a figure is on screen, and the speaker view (key ``s``)
opens with the notes. The other steps through every slide of every deck at 1920x1080, as a projector
shows them, and fails on a slide whose content overflows the slide, a code or output box that hides
lines (a scroll box) or is too wide (a horizontal scroll bar), content under the navigation arrows or the
slide number, a figure smaller than MIN_FIGURE_SHARE of the slide's height, printed output with no words on
its slide (no heading, text or caption), or code and text smaller on screen than MIN_CODE_PX and MIN_TEXT_PX;
it saves a screenshot of a slide with a figure and one with code per deck in build/browser/ and prints the
measured sizes. The last test builds a deck of a small notebook made
on the spot with two interactive attention views (course/explorer/__init__.py) and checks, at 1920x1080, that each fills
its slide without overflow and draws the right weights when clicked, without moving the slides.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from course.publish.sessions import PREDICT
from course.publish.sessions import sessions as session_plan

ROOT = Path(__file__).resolve().parents[3]
REPORT_DIR = ROOT / "build" / "browser"
# Every numbered notebook is presented: the course (TEACHING.md) has a deck for each.
PRESENTED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIN_SLIDES = 15  # slides and sub-slides per deck
SLIDE_TYPES = {"slide", "subslide", "fragment", "skip", "notes", "-"}
# Readable from the back of a room of 60 on a 1920x1080 projector, in screen pixels (course/publish/slides_template/
# slides.css: prose 37 px and code 29 px; the deck's script may shrink the code of a crowded slide to 3/4 of
# that, 21.6 px, and printed output, which the room reads, to 26 px, and no further), and a figure at least 40%
# of the slide's height (or 90% of its width).
MIN_CODE_PX = 21.5
MIN_TEXT_PX = 28
MIN_OUTPUT_PX = 26  # printed output: what the room reads off a slide (a verdict, a table) needs more than code
MIN_FIGURE_SHARE = 0.4
MAX_CORE_SLIDES = 50  # a core session (1-4) in 90 minutes, exercises included (issue 33)
SCREEN = {"width": 1920, "height": 1080}


def _slide_type(cell) -> str | None:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def _with_slides() -> list[Path]:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    return [p for p in paths if any(_slide_type(c) for c in nbformat.read(p, as_version=4).cells)]


def _deck(decks: Path, notebook: Path) -> Path:
    return decks / f"{notebook.stem}.slides.html"


@pytest.fixture(scope="module")
def decks(built_site: Path) -> Path:
    """The decks as course/publish/site.py builds them into the site's slides/ folder (tests/conftest.py builds the
    site once per run). They are the decks `python -m course.publish.slides` writes: only their index differs, by the
    links back to the site's pages (checked in tests/course/publish/test_site.py)."""
    return built_site / "slides"


@pytest.mark.parametrize("notebook", PRESENTED, ids=lambda p: p.name)
def test_notebook_has_consistent_slide_metadata(notebook: Path):
    cells = nbformat.read(notebook, as_version=4).cells
    types = [_slide_type(c) for c in cells]
    assert None not in types, (
        f"{notebook.name}: cells without a slide type: {[i for i, t in enumerate(types) if t is None]}; give each one "
        "(JupyterLab: property inspector, Slide Type) as course/publish/slides.py describes"
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


def test_every_numbered_notebook_has_a_deck():
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
    page = path.read_text(encoding="utf-8")
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
        for ref in re.findall(r"""url\(\s*["']?([^"')]+)""", css.read_text(encoding="utf-8")):
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
            assert _resolves(path, href, decks.parent), f"{path.name} links {href}, which is not in the site"


def _code_slides_without_words(notebook: Path) -> list[str]:
    """The sub-slides of notebook's deck that show code (not a figure alone) and no words: no heading, text or
    caption. course/publish/slides.py makes the comment line a code piece opens with into its caption."""
    from course.publish import slides as build_slides
    from course.publish.common import slide_type

    deck = build_slides.slides_of(nbformat.read(notebook, as_version=4))
    slides: list[list] = []
    for cell in deck.cells:
        kind = slide_type(cell) or "-"
        if kind in ("skip", "notes"):
            continue
        if kind in ("slide", "subslide") or not slides:
            slides.append([])
        slides[-1].append(cell)
    found = []
    for number, cells in enumerate(slides):
        words = any(c.cell_type == "markdown" and c.source.strip() for c in cells)
        code = [c for c in cells if c.cell_type == "code" and build_slides.FIGURE_TAG not in c.metadata.get("tags", [])]
        if code and not words:
            found.append(f"slide {number}: {code[0].source.strip().splitlines()[0][:70]!r}")
    return found


@pytest.mark.parametrize("notebook", PRESENTED, ids=lambda p: p.name)
def test_every_code_slide_says_what_it_is_for(notebook: Path):
    """A lecture room needs one line of prose on a code slide: open the code piece with a comment (at most
    CAPTION_CHARS characters) and the deck shows it as the slide's caption."""
    missing = _code_slides_without_words(notebook)
    assert not missing, f"{notebook.name}: code slides with no words (start the code with a comment): {missing}"


def test_index_links_every_deck(decks: Path):
    index = (decks / "index.html").read_text(encoding="utf-8")
    links = [link for link in _attributes(index, "a", "href") if link.endswith(".slides.html")]
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


def _assert_clean(what: str, network: list, errors: list, failures: list) -> None:
    """What a browser test collected: no request to the network, no JavaScript error, no problem on a slide."""
    assert not network, f"{what} asked for the network: {network}"
    assert not errors, f"JavaScript errors: {errors}"
    assert not failures, f"{len(failures)} problems at 1920x1080:\n" + "\n".join(failures)


PREDICTION_JS = """() => {
    const slide = Reveal.getSlides().find(s => s.classList.contains('prediction'));
    return slide ? Reveal.getIndices(slide) : null;
}"""


def notes_text(notes_html: str) -> str:
    return re.sub(r"<[^>]+>", " ", notes_html).replace("&amp;", "&")


@pytest.mark.browser
def test_deck_presents_offline_in_chromium(request, tmp_path: Path):
    from tests.test_browser import CHROMIUM, CHROMIUM_FLAGS, browser_env, offline_context, require_browser

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
            assert "".join(shown.inner_text().split())[:80] == "".join(notes_text(notes).split())[:80]
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


# Every slide of the deck in turn, measured as shown: returns one record per slide (see the test below).
STEP_THROUGH_JS = """([minFigureShare]) => {
    const scale = Reveal.getScale();
    const shown = el => { const s = getComputedStyle(el); return s.display !== "none" && s.visibility !== "hidden"; };
    // what reveal.js draws over the slides: the slide number and, where the arrows are shown, every arrow
    // (enabled or not: they fade in and out as one moves)
    const chrome = () => Array.from(document.querySelectorAll(".reveal > .controls button, .reveal > .slide-number"))
        .filter(el => shown(el.parentElement) && el.getBoundingClientRect().width > 0);
    const records = [];
    for (const slide of Reveal.getSlides()) {
        const {h, v} = Reveal.getIndices(slide);
        Reveal.slide(h, v);
        const problems = [];
        if (slide.scrollHeight > slide.clientHeight + 1)
            problems.push(`content ${slide.scrollHeight} px high on a ${slide.clientHeight}-px slide`);
        if (slide.scrollWidth > slide.clientWidth + 1)
            problems.push(`content ${slide.scrollWidth} px wide on a ${slide.clientWidth}-px slide`);
        const onSlide = [];
        for (const el of slide.querySelectorAll("*")) if (!el.closest("aside.notes")) onSlide.push(el);
        const boxes = onSlide.filter(el => el.matches(
            "pre, .highlight, .jp-InputArea, .jp-InputArea-editor, .jp-OutputArea, .jp-OutputArea-output, mjx-container[display='true'], table, .jp-RenderedHTMLCommon"));
        for (const box of boxes) {
            const kind = box.closest(".jp-OutputArea") ? "output" : box.closest(".jp-InputArea") ? "code"
                : box.matches("mjx-container") ? "equation" : box.matches("table") ? "table" : "text";
            if (box.scrollHeight > box.clientHeight + 1)
                problems.push(`a ${kind} box hides ${box.scrollHeight - box.clientHeight} px of its height`);
            if (box.scrollWidth > box.clientWidth + 1)
                problems.push(`a ${kind} box is ${box.scrollWidth - box.clientWidth} px too wide`);
        }
        for (const pre of onSlide.filter(el => el.matches(".jp-OutputArea-output pre"))) {
            const style = getComputedStyle(pre);  // a printed line may wrap at a space, never inside a number
            if (style.whiteSpace !== "pre" && (style.wordBreak !== "normal" || style.overflowWrap !== "normal"))
                problems.push(`an output may wrap inside a number (word-break ${style.wordBreak}, overflow-wrap ${style.overflowWrap})`);
        }
        let code = Infinity, text = Infinity, output = Infinity;
        for (const el of onSlide) {
            if (!el.matches("pre, p, li, h1, h2, h3, h4, td, th") || !el.textContent.trim()) continue;
            const size = parseFloat(getComputedStyle(el).fontSize) * scale;
            if (el.matches(".jp-OutputArea-output pre")) output = Math.min(output, size);
            else if (el.matches("pre")) code = Math.min(code, size); else text = Math.min(text, size);
        }
        for (const el of onSlide.filter(el => el.matches("pre, p, li, h1, h2, h3, h4, table, img, mjx-container"))) {
            const r = el.getBoundingClientRect();
            if (!r.width || !r.height) continue;
            for (const c of chrome().map(el => [el.className.split(" ")[0], el.getBoundingClientRect()]))
                if (r.left < c[1].right && c[1].left < r.right && r.top < c[1].bottom && c[1].top < r.bottom)
                    problems.push(`<${el.tagName.toLowerCase()}> under the ${c[0]}`);
        }
        const area = slide.getBoundingClientRect(), figures = [];
        for (const img of onSlide.filter(el => el.matches('img[src^="data:image/png"]'))) {
            const box = img.getBoundingClientRect();  // object-fit: contain: the drawn image is inside the box
            const fit = Math.min(box.width / img.naturalWidth, box.height / img.naturalHeight);
            const width = img.naturalWidth * fit, height = img.naturalHeight * fit;
            figures.push({width, height, share: width * height / (area.width * area.height)});
            if (!(height >= minFigureShare * area.height || width >= 0.9 * area.width))
                problems.push(`a figure ${Math.round(width)}x${Math.round(height)} px, ` +
                              `${Math.round(100 * height / area.height)}% of the slide's height`);
        }
        const words = onSlide.filter(el => el.matches(".jp-MarkdownCell"))
            .reduce((n, el) => n + (el.innerText.match(/\\S+/g) || []).length, 0);
        // printed output with no words on the slide (no heading, text or caption), no code and no figure: the back
        // row cannot tell what it is (course/publish/slides.py gives such a slide a caption)
        const printed = onSlide.some(el => el.matches(".jp-OutputArea-output pre") && el.textContent.trim());
        const drawn = onSlide.some(el => el.matches('img[src^="data:image/png"], .attn-x'));
        const typed = onSlide.some(el => el.matches(".jp-InputArea pre") && el.textContent.trim());
        if (printed && !words && !drawn && !typed) problems.push("printed output with no caption, heading or text");
        records.push({name: `${h + 1}.${(v || 0) + 1}`, h, v: v || 0, problems, figures, words,
                      code: code === Infinity ? null : code, text: text === Infinity ? null : text,
                      output: output === Infinity ? null : output,
                      notes: !!slide.querySelector("aside.notes"), hasCode: !!slide.querySelector(".jp-InputArea pre")});
    }
    return {scale, records};
}"""


def _projector_page(playwright, tmp_path: Path, network: list, errors: list):
    """Headless Chromium with every request off the machine refused (recorded in ``network``) and one page at the
    projector's size whose script errors go to ``errors``; returns the browser (close it) and the page."""
    from tests.test_browser import CHROMIUM, CHROMIUM_FLAGS, browser_env, offline_context

    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS, env=browser_env(tmp_path)
    )
    page = offline_context(browser, SCREEN, network).new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return browser, page


@pytest.mark.browser
def test_every_slide_is_readable_at_1920x1080(request, tmp_path: Path):
    """Step through every slide of every deck, the session decks included, at 1920x1080 (reveal.js scale 1.44), as a
    projector shows it. A core session's deck has at most MAX_CORE_SLIDES slides by reveal.js's own count; its first
    prediction slide is photographed before and after the key press that answers it."""
    from tests.test_browser import require_browser

    require_browser()
    decks: Path = request.getfixturevalue("decks")
    from playwright.sync_api import sync_playwright

    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    network, errors, failures, summary = [], [], [], []
    start = time.monotonic()
    with sync_playwright() as playwright:
        browser, page = _projector_page(playwright, tmp_path, network, errors)
        try:
            sessions = {session.name: session for session in session_plan()}
            for path in [_deck(decks, notebook) for notebook in _with_slides()] + [decks / n for n in sessions]:
                page.goto(path.as_uri(), wait_until="load")
                # the deck's script fits the first slide again once MathJax has typeset and the fonts are loaded
                page.wait_for_function(
                    "window.Reveal && Reveal.isReady() && document.documentElement.dataset.slidesFitted"
                )
                page.evaluate("Reveal.configure({transition: 'none'})")
                if path.name in sessions:  # reveal.js's own count, and a prediction before and after its reveal
                    total = page.evaluate("Reveal.getTotalSlides()")
                    if sessions[path.name].core:
                        assert total <= MAX_CORE_SLIDES, f"{path.name}: {total} slides, more than {MAX_CORE_SLIDES}"
                    at = page.evaluate(PREDICTION_JS)
                    assert at, f"{path.name}: no prediction slide"
                    page.evaluate("([h, v]) => Reveal.slide(h, v)", [at["h"], at["v"]])
                    page.screenshot(path=str(REPORT_DIR / f"{path.stem}-prediction.png"))
                    page.evaluate("Reveal.next()")
                    page.screenshot(path=str(REPORT_DIR / f"{path.stem}-prediction-answered.png"))
                    page.evaluate("Reveal.slide(0, 0)")
                    summary.append(f"{path.name}: {total} slides (Reveal.getTotalSlides()), first prediction at {at}")
                result = page.evaluate(STEP_THROUGH_JS, [MIN_FIGURE_SHARE])
                records = result["records"]
                assert abs(result["scale"] - 1.44) < 0.01, f"{path.name}: reveal.js scale {result['scale']}"
                for r in records:
                    problems = list(r["problems"])
                    if r["code"] is not None and r["code"] < MIN_CODE_PX:
                        problems.append(f"code {r['code']:.1f} px on screen")
                    if r["text"] is not None and r["text"] < MIN_TEXT_PX:
                        problems.append(f"text {r['text']:.1f} px on screen")
                    if r["output"] is not None and r["output"] < MIN_OUTPUT_PX:
                        problems.append(f"printed output {r['output']:.1f} px on screen")
                    failures += [f"{path.name}, slide {r['name']}: {p}" for p in dict.fromkeys(problems)]
                shares = [f["share"] for r in records for f in r["figures"]]
                codes = [r["code"] for r in records if r["code"]]
                texts = [r["text"] for r in records if r["text"]]
                summary.append(
                    f"{path.name}: {len(records)} slides, {sum(r['notes'] for r in records)} with notes, "
                    f"{sum(r['words'] > 100 for r in records)} with over 100 words of prose; figures "
                    f"{min(shares, default=0):.0%}-{max(shares, default=0):.0%} of the slide; smallest code "
                    f"{min(codes, default=0):.1f} px ({sum(c < 28 for c in codes)} slides under 28 px), "
                    f"smallest text {min(texts, default=0):.1f} px"
                )
                for kind, pick in (("figure", lambda r: r["figures"]), ("code", lambda r: r["hasCode"])):
                    shot = next((r for r in records if pick(r) and not r["problems"]), None)
                    if shot:
                        page.evaluate("([h, v]) => Reveal.slide(h, v)", [shot["h"], shot["v"]])
                        page.screenshot(path=str(REPORT_DIR / f"slide-{path.name.split('.')[0]}-{kind}.png"))
        finally:
            browser.close()
    print(f"{time.monotonic() - start:.1f} s in Chromium\n" + "\n".join(summary))
    _assert_clean("the decks", network, errors, failures)


# --- The interactive attention view (course/explorer/__init__.py) in a deck. The decks of 06, 07 and 10 show views (the
# readable test above steps through them); to drive a view by clicks and keys in a deck, a small notebook made here,
# independent of any trained model, holds two views (a padded self-attention stack and a cross-attention layer) and is
# built into a deck with course/publish/slides.py's own build(); each view must start, fill its slide without
# overflow (the checks of the test above) and show the right weights when clicked and driven by keys.
def _explorer_notebook(root: Path) -> Path:
    import torch

    from course.explorer import explore_attention
    from helpers.masks import padding_mask

    g = torch.Generator().manual_seed(0)
    mask = padding_mask([5, 3])  # (B, 1, m): sequence 1 has 3 real tokens
    layers = [torch.softmax(3 * torch.randn(2, 2, 5, 5, generator=g), -1).masked_fill(~mask[:, None], 0)]
    layers.append(torch.softmax(3 * torch.randn(2, 2, 5, 5, generator=g), -1).masked_fill(~mask[:, None], 0))
    layers = [w / w.sum(-1, keepdim=True) for w in layers]
    padded = explore_attention(layers, ["birds", "sing", "loudly", "<pad>", "<pad>"], mask=mask, sequence=1)
    cross = explore_attention(
        torch.softmax(torch.randn(2, 3, 4, generator=g), -1), ["le", "chat", "dort", "."], ["the", "cat", "sleeps"]
    )

    def cell(kind, source, view=None):
        meta = {"slideshow": {"slide_type": kind}}
        if view is None:
            return nbformat.v4.new_markdown_cell(source, metadata=meta)
        out = nbformat.v4.new_output("display_data", data=view._repr_mimebundle_())
        return nbformat.v4.new_code_cell(source, metadata={**meta, "tags": ["slide-hide-input"]}, outputs=[out])

    nb = nbformat.v4.new_notebook(
        cells=[
            cell("slide", "# Attention, explored\n\nTwo interactive views."),
            cell("slide", "## A padded encoder\n\nPick a layer, a head, a token."),
            cell("-", "explore_attention(layers, tokens, mask=mask, sequence=1)", padded),
            cell("slide", "## Cross-attention"),
            cell("-", "explore_attention(cross, keys, queries)", cross),
        ]
    )
    (root / "notebooks").mkdir(parents=True)
    (root / "README.md").write_text("# Explorer test\n", encoding="utf-8")
    path = root / "notebooks" / "explorer.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.browser
def test_attention_explorer_in_a_deck(tmp_path: Path):
    from tests.test_browser import EXPLORER, exercise_explorer, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    from course.explorer import read_payload
    from course.publish import slides as build_slides

    start = time.monotonic()
    notebook = _explorer_notebook(tmp_path / "repo")
    [deck] = build_slides.build(tmp_path / "slides", root=tmp_path / "repo")
    built = deck.read_text(encoding="utf-8")
    expected = read_payload(built)
    assert len(expected) == 2 and len(_attributes(built, "img", "src")) == 2  # each with its figure
    network, errors, failures, summary = [], [], [], []
    with sync_playwright() as playwright:
        browser, page = _projector_page(playwright, tmp_path, network, errors)
        try:
            page.goto(deck.as_uri(), wait_until="load")
            page.wait_for_function("window.Reveal && Reveal.isReady() && document.documentElement.dataset.slidesFitted")
            page.evaluate("Reveal.configure({transition: 'none'})")
            records = page.evaluate(STEP_THROUGH_JS, [MIN_FIGURE_SHARE])["records"]
            failures += [f"slide {r['name']}: {p}" for r in records for p in r["problems"]]
            views = page.locator(EXPLORER + "[data-live]")
            assert views.count() == 2, f"{views.count()} of 2 views started"
            for i, data in enumerate(expected):
                slide = page.evaluate(
                    "(i) => Reveal.getIndices(document.querySelectorAll('.attn-x')[i].closest('section'))", i
                )
                page.evaluate("([h, v]) => Reveal.slide(h, v)", [slide["h"], slide["v"] or 0])
                box = views.nth(i).bounding_box()
                assert box and box["height"] > 0.6 * SCREEN["height"], f"view {i} does not fill its slide: {box}"
                before = page.evaluate("Reveal.getIndices()")
                summary.append(exercise_explorer(views.nth(i), data, page))
                assert page.evaluate("Reveal.getIndices()") == before, "keys used by the view moved the slides"
                page.screenshot(path=str(REPORT_DIR / f"slide-explorer-{i}.png"))
        finally:
            browser.close()
    print(f"{time.monotonic() - start:.1f} s, {notebook.name}:\n" + "\n".join(summary))
    _assert_clean("the deck", network, errors, failures)


# --- The session decks (course/publish/sessions.py): one per session of TEACHING.md, built with the notebooks' decks.


def _leaf_sections(page: str) -> list[tuple[str, str]]:
    """(the opening <section> tag, its content less speaker notes) of every slide, in order."""
    parts = re.split(r"(<section\b[^>]*>)", page)
    leaves = []
    for k in range(1, len(parts), 2):
        body = parts[k + 1]
        if body.lstrip().startswith("<section"):
            continue
        leaves.append((parts[k], re.sub(r'<aside class="notes.*?</aside>', "", body, flags=re.DOTALL)))
    return leaves


def _visible_text(html_text: str) -> str:
    """The words a slide shows before any key press: fragments and notes left out."""
    html_text = re.sub(r'<div class="fragment[^"]*".*?</div>\s*</div>\s*</div>', "", html_text, flags=re.DOTALL)
    return " ".join(re.sub(r"<[^>]+>", " ", html_text).replace("&amp;", "&").split())


def test_every_session_has_a_deck_listed_first_in_the_index(decks: Path):
    plan = session_plan()
    assert [s.number for s in plan] == list(range(1, 10))
    index = (decks / "index.html").read_text(encoding="utf-8")
    links = [link for link in _attributes(index, "a", "href") if not link.startswith("../")]
    names = [s.name for s in plan]
    assert links[: len(names)] == names, links[:10]  # the sessions first, in order, then the notebooks' decks
    for session in plan:
        assert (decks / session.name).exists(), session.name


def test_a_core_session_fits_fifty_slides(decks: Path):
    from course.publish.slides import count_slides

    for session in session_plan():
        count = count_slides((decks / session.name).read_text(encoding="utf-8"))
        if session.core:
            assert count <= MAX_CORE_SLIDES, f"{session.name}: {count} slides, more than {MAX_CORE_SLIDES}"
        assert count >= 10, f"{session.name}: only {count} slides"


def test_every_prediction_is_a_question_slide_before_its_answer(decks: Path):
    """Each "Predict: ...?" of a session's timetable is a slide of class prediction whose heading is the question and
    which shows nothing else; the sections of its row come after it, so the answer is on a later slide."""
    for session in session_plan():
        leaves = _leaf_sections((decks / session.name).read_text(encoding="utf-8"))
        asked = [(k, tag, body) for k, (tag, body) in enumerate(leaves) if "prediction" in tag]
        questions = [q for row in session.rows for q in row.predictions]
        assert len(asked) == len(questions) >= 1, (session.name, len(asked), questions)
        for (k, _, body), question in zip(asked, questions, strict=True):
            heading = re.search(r"<h2[^>]*>(.*?)</h2>", body, flags=re.DOTALL)
            shown = _visible_text(heading.group(1)).replace("¶", "").strip() if heading else ""
            assert shown.endswith("?") and shown.rstrip("?").lower()[:40] in _visible_text(body).lower(), shown
            assert "<img" not in body and "jp-OutputArea" not in body, f"{session.name}: prediction slide shows output"
            assert k + 1 < len(leaves), f"{session.name}: nothing after the prediction {question!r}"
        positions = iter(k for k, _, _ in asked)
        for row in session.rows:
            for _ in row.predictions:
                at = next(positions)
                if row.notebook and row.sections and row.notebook != "08":  # the row's first section comes after
                    heading = _section_heading(row.notebook, row.sections[0])
                    first = next((j for j, (_, body) in enumerate(leaves) if heading in _visible_text(body)), None)
                    assert first is not None and first > at, (session.name, row.what, heading, first, at)


def _section_heading(notebook: str, number: int) -> str:
    """The first words of a section's heading as a slide shows them ("2. The padding mask")."""
    nb = nbformat.read(next((ROOT / "notebooks").glob(f"{notebook}_*.ipynb")), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (found := re.search(rf"^##\s+({number}\.\s+[^`$\n]*)", cell.source, re.M)):
            return " ".join(found.group(1).split())[:24]
    raise AssertionError(f"{notebook} has no section {number}")


def test_every_timetable_prediction_is_one_question():
    text = (ROOT / "TEACHING.md").read_text(encoding="utf-8")
    for session in session_plan():
        for row in session.rows:
            mentions = len(re.findall(r"\b[Pp]redict\b", row.how))
            assert mentions == len(row.predictions), f"session {session.number}, {row.what!r}: write Predict: ...?"
    assert len(PREDICT.findall(text)) >= 20


def test_the_lab_names_no_bug_before_its_reveal(decks: Path):
    """Session 2's debugging lab: the headings of notebook 08 and its # BUG: comments name the bugs; in the session
    deck they appear only on fragments (or in the notes)."""
    lab = next(s for s in session_plan() if any(r.notebook == "08" for r in s.rows))
    page = (decks / lab.name).read_text(encoding="utf-8")
    nb = nbformat.read(next((ROOT / "notebooks").glob("08_*.ipynb")), as_version=4)
    headings = {
        int(m.group(1)): m.group(2).strip()
        for c in nb.cells
        if c.cell_type == "markdown"
        for m in re.finditer(r"^##\s+(\d+)\.\s+(.*)$", c.source, flags=re.MULTILINE)
    }
    shown = " ".join(_visible_text(body) for _, body in _leaf_sections(page))
    sections = [n for row in lab.rows if row.notebook == "08" for n in row.sections]
    assert sections and "Find the bug" in shown
    for number in sections:
        words = re.sub(r"[`$\\{}]", "", headings[number])
        assert words[:30] not in shown, f"{lab.name}: the heading of 08 §{number} is visible: {words!r}"
        assert words[:30] in re.sub(r"[`$\\{}]", "", _visible_text(page.replace('class="fragment', 'class="x')))
    assert "BUG" not in shown


def _plain(markdown: str) -> str:
    """Markdown as the words a slide shows: links as their text, no emphasis, code or math marks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return " ".join(re.sub(r"[*`|]", " ", text).split())


def _deck_words(page: str) -> str:
    from html import unescape

    words = " ".join(
        unescape(_visible_text(body.replace('class="fragment', 'class="x'))) for _, body in _leaf_sections(page)
    )
    return " ".join(re.sub(r"[*`|]", " ", words).split())


@pytest.mark.parametrize("notebook", PRESENTED, ids=lambda p: p.name)
def test_no_table_or_exercise_statement_is_lost(decks: Path, notebook: Path):
    """Issue 33: every table of the notebook, and every exercise's statement whole, is on a slide (not only in the
    notes)."""
    shown = _deck_words((decks / f"{notebook.stem}.slides.html").read_text(encoding="utf-8"))
    missing = []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "markdown" or _slide_type(cell) in ("skip", "notes"):
            continue
        blocks = [b for b in re.split(r"\n\s*\n", cell.source) if b.strip()]
        for block in blocks:
            if block.lstrip().startswith("|"):
                rows = [
                    r
                    for r in block.splitlines()
                    if r.strip().startswith("|") and not re.match(r"^\|[-:| ]+\|$", r.strip())
                ]
                last = _plain(rows[-1])[:60]
                if last not in shown:
                    missing.append(f"table row {last!r}")
        if re.match(r"^\s*###\s+Exercise\b", cell.source):
            exercise = re.split(r"^##\s", cell.source, flags=re.MULTILINE)[0]  # up to the next section, if any
            statement = _plain([b for b in re.split(r"\n\s*\n", exercise) if b.strip()][-1])
            tail = " ".join(statement.split()[-8:])
            if tail not in shown:
                missing.append(f"exercise statement ending {tail!r}")
    assert not missing, f"{notebook.name}: on no slide: {missing}"
