"""The handouts (course/publish/handouts.py): the worksheets and the cheat sheet as pages, and, with the system's
Chromium (pytest -m browser), one session deck printed with and without notes and both sheets on paper size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course.publish import handouts
from course.publish.sessions import sessions

ROOT = Path(__file__).resolve().parents[3]


def _pages(pdf: Path) -> int:
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-"), pdf.name
    return len(re.findall(rb"/Type\s*/Page[^s]", data))


def test_a_worksheet_asks_every_prediction_of_its_session_in_order():
    for session in sessions(ROOT):
        page = handouts.worksheet_page(session)
        asked = re.findall(r'<p class="question">\d+\. (.*?)</p>', page)
        expected = [q for row in session.rows for q in row.predictions]
        assert [a.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&") for a in asked] == expected
        assert len(asked) >= 1 and page.count('class="lines"') == 2 * len(asked)


def test_the_cheat_sheet_becomes_a_page_with_its_tables():
    text = (ROOT / "CHEATSHEET.md").read_text(encoding="utf-8")
    page = handouts.markdown_page("cheat sheet", text)
    assert page.count("<table>") == text.count("\n|---") + text.count("\n| ---") >= 1
    assert "@page { size: A4" in page


@pytest.mark.browser
def test_a_session_deck_and_the_sheets_print_offline(tmp_path: Path):
    from tests.test_browser import require_browser

    require_browser()
    written = handouts.build(tmp_path / "handouts", ROOT, only=["session-1"], echo=lambda *_: None)
    names = sorted(p.name for p in written)
    assert names == sorted(
        ["session-1.pdf", "session-1-notes.pdf", "cheatsheet.pdf"] + [f"worksheet-{s.number}.pdf" for s in sessions()]
    )
    out = tmp_path / "handouts"
    deck_pages, notes_pages = _pages(out / "session-1.pdf"), _pages(out / "session-1-notes.pdf")
    assert 30 <= deck_pages <= 60, deck_pages  # one page a slide (a core session has at most 50)
    assert notes_pages > deck_pages  # the notes on pages of their own
    assert _pages(out / "cheatsheet.pdf") == 1
    assert _pages(out / "worksheet-1.pdf") >= 1
