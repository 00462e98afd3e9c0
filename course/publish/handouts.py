"""Printable handouts, made offline with headless Chromium's print: every deck as a PDF, with and without speaker
notes, the one-page cheat sheet and a prediction worksheet per session.

    python -m course.publish.handouts                      # -> build/handouts/
    python -m course.publish.handouts --only session-1     # one deck (and the sheets)

It builds the decks first (``python -m course.publish.slides``, into a temporary folder), then prints each one with
reveal.js's print view (``?print-pdf``), once as the room sees it and once with the notes on a page after each slide
(``showNotes=separate-page``). It needs the system's Chromium (Debian/Ubuntu: ``apt-get install chromium``), never a
downloaded one, and about two minutes for every deck; nothing is fetched from the network. The test command does not
run it: ``pytest -m browser`` prints one session deck and both sheets.

Written into the output folder:
- ``NAME.pdf`` and ``NAME-notes.pdf`` for every deck (``session-1``, ``01_scaled_dot_product_attention``, ...);
- ``cheatsheet.pdf``: CHEATSHEET.md on one A4 page (names and shapes, the mask conventions, the debugging checklist);
- ``worksheet-N.pdf``: session N's prediction questions (TEACHING.md), each with room for the answer.
"""

from __future__ import annotations

import argparse
import html
import shutil
import tempfile
import time
from pathlib import Path

from course.publish.common import ROOT, series_title

DEFAULT_OUT = ROOT / "build" / "handouts"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
READY_JS = "() => window.Reveal && Reveal.isReady() && document.documentElement.dataset.slidesFitted"

SHEET_STYLE = """
@page { size: A4; margin: 14mm; }
body { font-family: "Source Sans Pro", system-ui, sans-serif; font-size: 10pt; line-height: 1.3; color: #111; }
h1 { font-size: 15pt; margin: 0 0 6pt; } h2 { font-size: 11.5pt; margin: 9pt 0 3pt; }
table { border-collapse: collapse; width: 100%; margin: 3pt 0; } td, th { border: 0.5pt solid #999; padding: 2pt 4pt;
text-align: left; vertical-align: top; } code { font-family: "DejaVu Sans Mono", monospace; font-size: 9pt; }
p, ul, ol { margin: 3pt 0; } li { margin: 1pt 0; }
.question { margin: 0 0 6pt; font-size: 12pt; } .lines { border-bottom: 0.5pt solid #777; height: 22pt; }
.answer { margin-bottom: 14pt; }
"""


def chromium() -> Path:
    """The system's Chromium (or Chrome), for Playwright's ``executable_path``."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return Path(found)
    raise SystemExit(
        "course.publish.handouts prints with the system's Chromium, and none was found: install it "
        "(Debian/Ubuntu: sudo apt-get install chromium); no browser is downloaded"
    )


def markdown_page(title: str, body_markdown: str) -> str:
    """A printable HTML page of markdown (tables included), with the sheets' style."""
    import mistune

    body = mistune.create_markdown(plugins=["table"])(body_markdown)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{SHEET_STYLE}</style></head><body>{body}</body></html>"
    )


def worksheet_page(session) -> str:
    """Session ``session``'s prediction questions, numbered, each with lines for the answer."""
    questions = [q for row in session.rows for q in row.predictions]
    items = "\n".join(
        f'<div class="answer"><p class="question">{k}. {html.escape(q)}</p>'
        '<div class="lines"></div><div class="lines"></div></div>'
        for k, q in enumerate(questions, start=1)
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(session.title)}</title>'
        f"<style>{SHEET_STYLE}</style></head><body><h1>{html.escape(session.title)}: predictions</h1>"
        "<p>Name: ______________________ &nbsp; Write your answer before the slide after the question.</p>"
        f"{items}</body></html>"
    )


def _print_decks(browser, decks: Path, out: Path, names: list[str], echo) -> list[Path]:
    written = []
    for name in names:
        deck = decks / (f"{name}.html" if name.startswith("session-") else f"{name}.slides.html")
        if not deck.exists():
            raise SystemExit(f"no deck {deck.name} in {decks}")
        for suffix, query in (("", "?print-pdf"), ("-notes", "?print-pdf&showNotes=separate-page")):
            start = time.monotonic()
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(deck.as_uri() + query, wait_until="load")
            page.wait_for_function(READY_JS, timeout=120_000)
            page.evaluate("() => MathJax.startup.promise")
            target = out / f"{name}{suffix}.pdf"
            page.pdf(path=str(target), prefer_css_page_size=True, print_background=True)
            page.close()
            written.append(target)
            echo(f"{target.name}: {target.stat().st_size // 1000} kB ({time.monotonic() - start:.0f} s)")
    return written


def _print_sheet(browser, page_html: str, target: Path, folder: Path) -> Path:
    source = folder / f"{target.stem}.html"
    source.write_text(page_html, encoding="utf-8")
    page = browser.new_page()
    page.goto(source.as_uri(), wait_until="load")
    page.pdf(path=str(target), format="A4", print_background=True)
    page.close()
    return target


def build(out: Path = DEFAULT_OUT, root: Path = ROOT, only: list[str] | None = None, echo=print) -> list[Path]:
    """Write the handouts into ``out``; ``only``: the deck names to print (default: every deck). Returns the files."""
    from playwright.sync_api import sync_playwright

    from course.publish import slides
    from course.publish.common import deck_name, deck_notebooks
    from course.publish.sessions import sessions

    executable = chromium()
    plan = sessions(root)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="handouts-") as folder:
        decks = Path(folder) / "slides"
        slides.build(decks, root)
        names = only or [s.name.removesuffix(".html") for s in plan] + [
            deck_name(p).removesuffix(".slides.html") for p in deck_notebooks(root)
        ]
        written = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(executable), headless=True)
            try:
                written += _print_decks(browser, decks, out, names, echo)
                cheat = root / "CHEATSHEET.md"
                if cheat.exists():
                    page = markdown_page(series_title(root), cheat.read_text(encoding="utf-8"))
                    written.append(_print_sheet(browser, page, out / "cheatsheet.pdf", Path(folder)))
                for session in plan:
                    target = out / f"worksheet-{session.number}.pdf"
                    written.append(_print_sheet(browser, worksheet_page(session), target, Path(folder)))
            finally:
                browser.close()
    echo(f"{len(written)} handouts in {out}")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course.publish.handouts", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument(
        "--only", nargs="*", help="deck names to print, as session-1 or 01_scaled_dot_product_attention"
    )
    args = parser.parse_args(argv)
    build(args.out, ROOT, args.only or None)


if __name__ == "__main__":
    main()
