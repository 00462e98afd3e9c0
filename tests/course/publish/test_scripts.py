"""The speaker scripts (course/publish/scripts.py): their format, the rules a script keeps, how a deck uses them,
and that every slide of every deck has one."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course.publish import scripts as sc

GOOD = """# Speaker script · 99 Example

Prose before the first entry is the file's own introduction.

## aaa · 1. A heading
- say: Attention is a weighted average of the values.
- ask: Which key wins?
- expect: The one closest to the query, "cat".
- look: The bright diagonal: each token attends to itself.

## bbb
- do: Run the cell live.
- say: The weights sum to 1 along each row.
"""


def test_a_script_file_parses_into_entries_and_cues():
    entries = sc.parse(GOOD, "99.md")
    assert list(entries) == ["aaa", "bbb"]
    first = entries["aaa"]
    assert first.label == "1. A heading" and first.place == "99.md:5"
    assert [name for name, _ in first.cues] == ["say", "ask", "expect"]
    assert first.look.startswith("The bright diagonal") and not first.answer
    assert [name for name, _ in entries["bbb"].cues] == ["do", "say"]
    assert all(not e.problems() for e in entries.values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("## a\n- say: one\n\n## a\n- say: two\n", "second entry"),
        ("- say: before any entry\n", "before the first entry"),
        ("## a\n- say: one\nstray words\n", "not a cue"),
        ("## a\n- say: one\n  that goes on\n", "one line"),
        ("## a\n- tell: one\n", "not a cue"),
    ],
)
def test_a_malformed_script_is_a_clear_error(text: str, message: str):
    with pytest.raises(ValueError, match=message):
        sc.parse(text, "x.md")


@pytest.mark.parametrize(
    ("cues", "problem"),
    [
        ("- say: only one cue\n", "1 cues"),
        ("- say: a\n- do: b\n- say: c\n- do: d\n", "4 cues"),
        ("- ask: a question?\n- say: no answer given\n", "ask with no expect"),
        ("- say: the scale $\\sqrt{d_k}$ matters\n- do: b\n", "TeX"),
        ("- say: the scale \\sqrt{d_k} matters\n- do: b\n", "TeX"),
        ("- say: nbval compares this output\n- do: b\n", "repository's checks"),
        ("- say: " + "word " * 50 + "\n- do: b\n", "words"),
    ],
)
def test_a_script_that_breaks_a_rule_is_named(cues: str, problem: str):
    entry = sc.parse("## k\n" + cues, "x.md")["k"]
    assert any(problem in p for p in entry.problems()), entry.problems()


def _cell(kind: str, slide: str, cid: str, source: str = "", tags: tuple = (), figure: bool = False):
    if kind == "code":
        cell = nbformat.v4.new_code_cell(source)
        if figure:
            cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "fig"})]
    else:
        cell = nbformat.v4.new_markdown_cell(source)
    cell.id = cid
    cell.metadata = {"slideshow": {"slide_type": slide}, "tags": list(tags)}
    return cell


def test_a_cue_shows_as_written():
    """ "<bos>" is a token, not an HTML tag: the notes and the slide show it (code spans keep theirs as they are)."""
    entry = sc.parse("## k\n- say: Start from <bos> & stop at `<eos>`.\n- do: b\n- answer: <bos> a b\n")["k"]
    notes = sc.notes_of(entry)
    assert "Start from &lt;bos&gt; &amp; stop at `<eos>`." in notes and "&lt;bos&gt; a b" in notes


def test_a_deck_shows_the_script_and_the_look_line():
    nb = nbformat.v4.new_notebook(
        cells=[
            _cell("markdown", "slide", "h", "## 1. A heading"),
            _cell("markdown", "notes", "h-notes", "The notebook's whole paragraph, $d_k$ and all."),
            _cell("code", "subslide", "f-fig0", "", ("slide-figure",), figure=True),
            _cell("markdown", "notes", "f-notes", "The same paragraph again."),
            _cell("markdown", "notes", "c-cut", sc.CHECKS_NOTE + "\n\n```python\nassert x\n```"),
            _cell("markdown", "slide", "s1-predict-0-0", "## Which key wins?"),
            _cell("markdown", "slide", "unscripted", "## 2. No script yet"),
            _cell("markdown", "notes", "u-notes", "Kept as it is."),
        ]
    )
    for cell in nb.cells[:5]:
        cell.metadata[sc.ROW] = [0, 10, "Attention"]
    scripts = sc.parse(
        "## h\n- say: The point.\n- do: Draw it.\n"
        "## f-fig0\n- say: The figure's point.\n- ask: Why?\n- expect: Because.\n- look: The diagonal.\n"
        "## s1-predict-0-0\n- do: A minute to write.\n- say: Take three answers.\n- answer: Cat, 0.57.\n"
    )
    out = sc.apply_scripts(nb, scripts)
    groups = sc.slide_groups(out.cells)
    assert [sc.slide_key(g) for g in groups] == ["h", "f-fig0-look", "s1-predict-0-0", "unscripted"]
    first_notes = [c.source for c in groups[0] if c.metadata["slideshow"]["slide_type"] == "notes"]
    assert first_notes == [
        "**Say:** The point.\n\n**Do:** Draw it.\n\n**Clock:** minutes 0–10 (Attention): slide 1 of 2"
    ]
    look, figure, notes = groups[1]
    assert look.source == "**Look:** The diagonal." and sc.LOOK_TAG in look.metadata["tags"]
    assert look.metadata["slideshow"]["slide_type"] == "subslide" and figure.metadata["slideshow"]["slide_type"] == "-"
    assert notes.source.startswith("**Say:** The figure's point.") and "slide 2 of 2" in notes.source
    assert notes.source.endswith("assert x\n```") and "same paragraph" not in notes.source  # checks kept, text gone
    answer = [c for c in groups[2] if sc.ANSWER_TAG in c.metadata.get("tags", [])]
    assert len(answer) == 1 and answer[0].metadata["slideshow"]["slide_type"] == "fragment"
    assert [c.source for c in groups[3]] == ["## 2. No script yet", "Kept as it is."]


# --- the scripts in the repository


@pytest.fixture(scope="module")
def repository():
    return sc.read_scripts(), sc.all_slides()


def test_every_slide_of_every_deck_has_a_script(repository):
    scripts, slides = repository
    missing = sorted(f"{owner}: {key}" for key, (owner, _) in slides.items() if key not in scripts)
    assert not missing, (
        f"{len(missing)} slides have no speaker script (python -m course.publish.scripts NN lists them): {missing[:8]}"
    )
    orphans = sorted(e.place for key, e in scripts.items() if key not in slides)
    assert not orphans, f"entries for slides that no deck has any more: {orphans}"


def test_every_script_keeps_the_rules(repository):
    scripts, slides = repository
    problems = [f"{e.place}: {p}" for e in scripts.values() for p in e.problems()]
    problems += [f"{e.place}: the same cue as {first}" for e, first in _repeats(scripts)]
    for key, (_owner, group) in slides.items():
        entry = scripts.get(key)
        if entry is None:
            continue
        if sc.is_figure_slide(group) and not entry.look:
            problems.append(f"{entry.place}: a figure slide with no look line")
        prediction = re.fullmatch(r"s\d+-predict-\d+-\d+", key) is not None
        if prediction != bool(entry.answer):
            problems.append(f"{entry.place}: an answer line belongs to a prediction slide, and every one has one")
    assert not problems, "\n".join(problems[:20])


def _repeats(scripts):
    by_place = {e.place: e for e in scripts.values()}
    return [(by_place[place], first) for place, first in sc.repeated_cues(scripts)]


@pytest.fixture(scope="module")
def decks(built_site: Path) -> Path:
    """The decks, as the site builds them (tests/conftest.py, once per run)."""
    return built_site / "slides"


def _leaves(page: str) -> list[str]:
    parts = re.split(r"(<section\b[^>]*>)", page)
    bodies = [parts[k + 1] for k in range(1, len(parts), 2)]
    return [body for body in bodies if body.strip() and not body.lstrip().startswith("<section")]


CUE_LABEL = re.compile(r"<strong>(Say|Ask|Expect|Do|Clock|Answer \(on the slide, next key\)):</strong>")


def test_the_speaker_view_reads_as_a_script(decks: Path):
    """In every deck, each slide's notes: two to four cues (three or four in a session deck, the clock included), no
    TeX (the speaker view shows notes without MathJax), no note twice; a figure slide says what to look at."""
    pages = sorted(decks.glob("session-*.html")) + sorted(decks.glob("*.slides.html"))
    assert len(pages) >= 20
    for path in pages:
        session = path.name.startswith("session-")
        seen: dict[str, int] = {}
        for number, body in enumerate(_leaves(path.read_text(encoding="utf-8"))):
            notes = re.findall(r'<aside class="notes[^"]*">(.*?)</aside>', body, flags=re.DOTALL)
            where = f"{path.name}, slide {number}"
            assert len(notes) == 1, f"{where}: {len(notes)} notes"
            cues = [c for c in CUE_LABEL.findall(notes[0]) if not c.startswith("Answer")]
            least = 3 if session else 2  # a session deck's slides have the clock too
            assert least <= len(cues) <= 4, f"{where}: cues {cues}"
            text = re.sub(r"<pre.*?</pre>", "", notes[0], flags=re.DOTALL)  # the checks' code, after the cues
            assert "$" not in text and not re.search(r"\\[a-zA-Z(\[]", text), f"{where}: TeX in the notes"
            said = " ".join(re.sub(r"<[^>]+>", " ", text).split())
            assert said not in seen, f"{where}: the same notes as slide {seen[said]}"
            seen[said] = number
            if "celltag_slide-figure" in body:
                assert "celltag_slide-look" in body and "Look:" in body, f"{where}: a figure with no look line"
