"""Speaker scripts: what the presenter says and asks on each slide, and the one line a figure slide shows.

The notebooks are written for reading; a slide needs a script. Each notebook has one file, ``scripts/NN.md``, with
an entry for every slide of its deck and of the session decks that show it; ``scripts/sessions.md`` holds the
slides a session deck adds (its plan, its prediction questions, its wrap-up). An entry is keyed by the id of the
slide's first cell (``python -m course.publish.scripts NN`` lists the slides that have none yet, with what they
show)::

    ## 55f05787 · 1. Attention is a soft dictionary lookup
    - say: A dict returns the value of the one key that matches; attention returns a blend of all of them.
    - ask: What should a lookup return when no key matches the query exactly?
    - expect: A mix of the values whose keys come closest, the closest counting most.
    - look: (figure slides) the one line shown above the figure: what to look at.

Cues, two or three an entry: ``say`` (the point, in a sentence or two), ``ask`` (a question to the room, always
followed by ``expect``, the answer to wait for), ``do`` (an action: run a cell live, draw on the board). A prediction
slide of a session deck has ``answer`` too, revealed as a fragment on the slide. In a session deck the speaker notes
end with the clock, from TEACHING.md's timetable. Math is written in Unicode (QKᵀ/√dₖ): the speaker view shows
notes outside MathJax.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course.publish.common import ROOT, slide_type

SCRIPT_DIR = Path("course") / "publish" / "scripts"
SESSIONS_FILE = "sessions.md"
NOTES_CUES = ("say", "ask", "expect", "do")
LABELS = {"say": "Say", "ask": "Ask", "expect": "Expect", "do": "Do"}
LOOK_TAG = "slide-look"  # the cell of a figure slide's "Look:" line
ANSWER_TAG = "slide-answer"  # a prediction's answer, a fragment on its slide
ROW = "session_row"  # cell metadata of a session deck's cells: [start, end, what] of their timetable row
CHECKS_NOTE = "Checked in the notebook:"  # the lecture cut's checks (sessions.py), kept after the cues
CUE_WORDS = 45  # at most, per cue: a script is read at a glance
# Words that belong to how the repository checks itself, not to a lecture.
MAINTENANCE = re.compile(r"\b(nbval|NBVAL|pytest|test command|CI|platform check|this repository|the repository)\b")
TEX = re.compile(r"\$|\\[A-Za-z]+|\\[()\[\]]")

_ENTRY = re.compile(r"^## (\S+)(?: · (.*))?$")
_CUE = re.compile(r"^- (say|ask|expect|do|look|answer): (.+)$")


@dataclass
class Entry:
    key: str
    label: str
    place: str  # file:line, for messages
    cues: list[tuple[str, str]] = field(default_factory=list)
    look: str = ""
    answer: str = ""

    def problems(self) -> list[str]:
        """What makes the entry no script: the rules of the module's docstring."""
        found = []
        if not 2 <= len(self.cues) <= 3:
            found.append(f"{len(self.cues)} cues (say, ask, expect, do): two or three")
        names = [name for name, _ in self.cues]
        for k, name in enumerate(names):
            if name == "ask" and (k + 1 >= len(names) or names[k + 1] != "expect"):
                found.append("an ask with no expect after it")
        texts = [text for _, text in self.cues] + [t for t in (self.look, self.answer) if t]
        for text in texts:
            if len(text.split()) > CUE_WORDS:
                found.append(f"a cue of {len(text.split())} words (at most {CUE_WORDS}): {text[:50]}...")
            if TEX.search(text):
                found.append(f"TeX in a cue (write math in Unicode): {text[:60]}")
            if m := MAINTENANCE.search(text):
                found.append(f"a remark about the repository's checks ({m.group(0)!r}): {text[:60]}")
        return found


def parse(text: str, name: str = "<script>") -> dict[str, Entry]:
    """The entries of one script file; a ValueError names a line that is neither an entry, a cue nor prose
    before the first entry, and a key given twice."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if m := _ENTRY.match(line):
            if m.group(1) in entries:
                raise ValueError(f"{name}:{number}: the slide {m.group(1)!r} has a second entry")
            current = entries[m.group(1)] = Entry(m.group(1), m.group(2) or "", f"{name}:{number}")
        elif m := _CUE.match(line):
            if current is None:
                raise ValueError(f"{name}:{number}: a cue before the first entry")
            cue, body = m.group(1), m.group(2).strip()
            if cue == "look":
                current.look = body
            elif cue == "answer":
                current.answer = body
            else:
                current.cues.append((cue, body))
        elif line.startswith("  ") and current is not None and line.strip():  # a cue's text goes on
            if current.cues or current.look or current.answer:
                raise ValueError(f"{name}:{number}: write each cue on one line")
        elif current is not None and line.strip():
            raise ValueError(f"{name}:{number}: not a cue ('- say: ...'): {line[:60]!r}")
    return entries


def read_scripts(root: Path = ROOT, errors: list[str] | None = None) -> dict[str, Entry]:
    """Every entry of every script file, by key; a ValueError for a key in two files or a file that does not parse
    (with ``errors``, a list, the messages go there and the other files are read)."""
    entries: dict[str, Entry] = {}
    for path in sorted((root / SCRIPT_DIR).glob("*.md")):
        try:
            parsed = parse(path.read_text(encoding="utf-8"), path.name)
        except ValueError as error:
            if errors is None:
                raise
            errors.append(str(error))
            continue
        for key, entry in parsed.items():
            if key in entries:
                raise ValueError(f"{entry.place}: the slide {key!r} has an entry in {entries[key].place} too")
            entries[key] = entry
    return entries


def slide_groups(cells: list) -> list[list]:
    """The cells of a deck's notebook (after slides.slides_of) by slide or sub-slide, skipped cells left out."""
    groups: list[list] = []
    for cell in cells:
        kind = slide_type(cell) or "-"
        if kind == "skip":
            continue
        if kind in ("slide", "subslide") or not groups:
            groups.append([])
        groups[-1].append(cell)
    return groups


def slide_key(group: list) -> str:
    """The id of the slide's first cell that is shown (not speaker notes)."""
    shown = [cell for cell in group if slide_type(cell) != "notes"]
    return (shown or group)[0].get("id", "")


def _row(group: list) -> tuple | None:
    for cell in group:
        if ROW in cell.get("metadata", {}):
            return tuple(cell.metadata[ROW])
    return None


def _clocks(groups: list[list]) -> list[str]:
    """Each slide's clock in a session deck: its timetable row's minutes and its place among the row's slides."""
    rows = [_row(group) for group in groups]
    clocks = []
    for k, row in enumerate(rows):
        if row is None:
            clocks.append("")
            continue
        same = [j for j, r in enumerate(rows) if r == row]
        start, end, what = row
        clocks.append(f"minutes {start}–{end} ({what}): slide {same.index(k) + 1} of {len(same)}")
    return clocks


def _markdown(source: str, kind: str, cell_id: str, tags: list[str]) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": kind}, "tags": tags})
    cell.id = cell_id
    return cell


def _markdown_text(text: str) -> str:
    """A cue as markdown that shows it as written: ``<`` and ``>`` outside code spans as entities, so that "<bos>"
    is not taken for an HTML tag (inside backticks markdown shows them as they are)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        part if k % 2 else part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for k, part in enumerate(parts)
    )


def notes_of(entry: Entry, clock: str = "", checks: list[str] = ()) -> str:
    """The speaker notes of a scripted slide: its cues, the clock, then the checks the lecture cut moved there."""
    lines = [f"**{LABELS[name]}:** {_markdown_text(text)}" for name, text in entry.cues]
    if entry.answer:
        lines.append(f"**Answer (on the slide, next key):** {_markdown_text(entry.answer)}")
    if clock:
        lines.append(f"**Clock:** {clock}")
    return "\n\n".join([*lines, *checks])


def apply_scripts(nb: nbformat.NotebookNode, scripts: dict[str, Entry]) -> nbformat.NotebookNode:
    """nb (a deck's notebook, after slides_of) with each scripted slide's speaker notes replaced by its script, its
    "Look:" line above its figure and a prediction's answer as a fragment. A slide with no entry keeps the
    notebook's text as notes (the slide test names it)."""
    groups = slide_groups(nb.cells)
    clocks = _clocks(groups)
    cells = []
    for group, clock in zip(groups, clocks, strict=True):
        entry = scripts.get(slide_key(group))
        if entry is None:
            cells += group
            continue
        notes = [c for c in group if slide_type(c) == "notes"]
        checks = [c.source for c in notes if c.source.startswith(CHECKS_NOTE)]
        shown = [c for c in group if slide_type(c) != "notes"]
        if entry.look:
            figure = next((k for k, c in enumerate(shown) if "slide-figure" in c.metadata.get("tags", [])), None)
            at = figure if figure is not None else len(shown)
            kind = slide_type(shown[at]) if at < len(shown) else "-"
            look = _markdown(
                f"**Look:** {_markdown_text(entry.look)}", kind if at == 0 else "-", f"{entry.key}-look", [LOOK_TAG]
            )
            if at == 0:
                shown[0].metadata["slideshow"] = {"slide_type": "-"}
            shown.insert(at, look)
        if entry.answer:
            shown.append(
                _markdown(
                    f"**Answer:** {_markdown_text(entry.answer)}", "fragment", f"{entry.key}-answer", [ANSWER_TAG]
                )
            )
        notes_cell = _markdown(notes_of(entry, clock, checks), "notes", f"{entry.key}-script", [])
        cells += [*shown, notes_cell]
    nb.cells = cells
    return nb


# ---- the command: which slides have no entry yet, with what they show


def _deck_groups(root: Path, only: str | None = None) -> list[tuple[str, list]]:
    """(the notebook's two digits, the slide's cells) for every slide of every deck: notebook decks, then sessions
    (``only``: "01", that notebook's deck alone, with the sessions)."""
    from course.publish.common import deck_notebooks
    from course.publish.sessions import session_notebook, sessions
    from course.publish.slides import slides_of

    out = []
    for path in deck_notebooks(root):
        if only and path.name[:2] != only:
            continue
        out += [(path.name[:2], g) for g in slide_groups(slides_of(nbformat.read(path, as_version=4)).cells)]
    if (root / "TEACHING.md").exists():
        for session in sessions(root):
            for group in slide_groups(slides_of(session_notebook(session, root)).cells):
                owner = next((c.metadata["source_notebook"] for c in group if "source_notebook" in c.metadata), None)
                out.append((owner or "sessions", group))
    return out


def all_slides(root: Path = ROOT, only: str | None = None) -> dict[str, tuple[str, list]]:
    """Every slide key of every deck: (the script file it belongs in, "01" or "sessions", the slide's cells)."""
    slides: dict[str, tuple[str, list]] = {}
    for owner, group in _deck_groups(root, only):
        slides.setdefault(slide_key(group), (owner, group))
    return slides


def is_figure_slide(group: list) -> bool:
    return any("slide-figure" in c.get("metadata", {}).get("tags", []) for c in group)


def figure_slides(slides: dict[str, tuple[str, list]]) -> list[str]:
    return [key for key, (_, group) in slides.items() if is_figure_slide(group)]


def repeated_cues(scripts: dict[str, Entry]) -> list[tuple[str, str]]:
    """(the place, the place of its first use) of every cue whose text another entry has already said."""
    seen: dict[str, str] = {}
    found = []
    for entry in scripts.values():
        for _, text in entry.cues:
            norm = " ".join(text.lower().split())
            if norm in seen:
                found.append((entry.place, seen[norm]))
            seen.setdefault(norm, entry.place)
    return found


def _shown(group: list) -> str:
    parts = []
    for cell in group:
        kind = slide_type(cell)
        text = cell.source.strip()
        if cell.cell_type == "code":
            outs = "".join(
                "".join(o.get("text", ""))
                if o.get("output_type") == "stream"
                else "".join(o.get("data", {}).get("text/plain", ""))
                for o in cell.get("outputs", [])
            )
            if "slide-figure" in cell.metadata.get("tags", []):
                text = "[FIGURE]"
            elif cell.metadata.get("transient", {}).get("remove_source"):
                text = f"[output]\n{outs}"
            else:
                text = f"[code]\n{text}" + (f"\n[output]\n{outs}" if outs.strip() else "")
        prefix = {"notes": "[notebook text, in the notes now]", "fragment": "[fragment]"}.get(kind or "", "")
        parts.append(f"{prefix}\n{text}" if prefix else text)
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", help='"01" ... or "sessions": list that file\'s slides with no entry')
    parser.add_argument("--limit", type=int, default=1200, help="characters of each slide's content shown")
    args = parser.parse_args(argv)
    errors: list[str] = []
    scripts = read_scripts(errors=errors)
    slides = all_slides(only=args.file)
    if args.file:
        scripts = {k: e for k, e in scripts.items() if e.place.startswith(f"{args.file}.md:")}
        slides = {k: v for k, v in slides.items() if v[0] == args.file}
    missing = [(key, owner, group) for key, (owner, group) in slides.items() if key not in scripts]
    bad = [(e.place, p) for e in scripts.values() for p in e.problems()]
    bad += [
        (scripts[k].place, "a figure slide with no look line")
        for k in figure_slides(slides)
        if k in scripts and not scripts[k].look
    ]
    bad += [(place, f"the same cue as {first}") for place, first in repeated_cues(scripts)]
    orphans = [e.place for key, e in scripts.items() if key not in slides]
    if args.file:
        for key, owner, group in missing:
            if owner == args.file:
                figure = is_figure_slide(group)
                print(f"## {key}{'   (figure: give it a look line)' if figure else ''}")
                print(_shown(group)[: args.limit])
                print()
    for error in errors:
        print(error)
    for place, problem in bad:
        print(f"{place}: {problem}")
    for place in orphans:
        print(f"{place}: no slide has this key any more")
    by_file: dict[str, int] = {}
    for _, owner, _ in missing:
        by_file[owner] = by_file.get(owner, 0) + 1
    print(
        f"{len(slides)} slides, {len(missing)} with no script {dict(sorted(by_file.items()))}, "
        f"{len(bad)} problems, {len(orphans)} orphans",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
