"""course/publish/common.py, what the site and the decks share, and the one-way imports it allows: site.py imports
slides.py and common.py, slides.py only common.py (no import cycle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course.publish import common

ROOT = Path(__file__).resolve().parents[3]


def _modules_after_import(module: str) -> set[str]:
    """The course.publish modules that importing ``module`` loads, in a fresh interpreter."""
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('course.publish')))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


@pytest.mark.parametrize(
    ("module", "loads", "not_loaded"),
    [
        ("course.publish.common", set(), {"course.publish.site", "course.publish.slides"}),
        ("course.publish.slides", {"course.publish.common"}, {"course.publish.site"}),
        ("course.publish.site", {"course.publish.common", "course.publish.slides"}, set()),
    ],
)
def test_imports_run_one_way(module: str, loads: set[str], not_loaded: set[str]):
    modules = _modules_after_import(module)
    assert module in modules and loads <= modules, modules
    assert not modules & not_loaded, f"importing {module} loads {sorted(modules & not_loaded)}"


def test_linked_file_resolves_only_relative_links(tmp_path: Path):
    notebook = tmp_path / "notebooks" / "01_x.ipynb"
    assert common.linked_file(notebook, "../img/a%20b.svg") == (tmp_path / "img" / "a b.svg").resolve()
    assert common.linked_file(notebook, "02_y.ipynb#section") == (tmp_path / "notebooks" / "02_y.ipynb").resolve()
    for url in ("https://arxiv.org/abs/1706.03762", "mailto:a@b.c", "data:image/png;base64,AA", "/etc/x", "#top"):
        assert common.linked_file(notebook, url) is None, url


def test_titles_and_deck_names(tmp_path: Path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("# not a heading"), nbformat.v4.new_markdown_cell("text\n\n# The `**x**`")]
    )
    assert common.notebook_title(nb, "fallback") == "The x"
    assert common.notebook_title(nbformat.v4.new_notebook(), "fallback") == "fallback"
    assert common.series_title(tmp_path) == "Notebooks"  # no README
    (tmp_path / "README.md").write_text("intro\n# The series\n", encoding="utf-8")
    assert common.series_title(tmp_path) == "The series"
    assert common.deck_name(Path("notebooks/01_x.ipynb")) == "01_x.slides.html"


def test_notebook_and_deck_lists(tmp_path: Path):
    """Every notebook gets a page (solutions included); only those directly under notebooks/ with a slide type
    on some cell get a deck."""
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Plain")])
    presented = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Shown", metadata={"slideshow": {"slide_type": "slide"}})]
    )
    (tmp_path / "notebooks" / "solutions").mkdir(parents=True)
    for name, nb in [("01_a", presented), ("02_b", plain), ("solutions/01_a", presented)]:
        nbformat.write(nb, tmp_path / "notebooks" / f"{name}.ipynb")
    pages = [p.relative_to(tmp_path).as_posix() for p in common.notebook_paths(tmp_path)]
    assert pages == ["notebooks/01_a.ipynb", "notebooks/02_b.ipynb", "notebooks/solutions/01_a.ipynb"]
    assert common.deck_notebooks(tmp_path) == [tmp_path / "notebooks" / "01_a.ipynb"]


def test_mathjax_head_and_copy(tmp_path: Path):
    head = common.mathjax_head("../")
    assert '<script src="../mathjax/tex-svg-full.js"></script>' in head and "{prefix}" not in head
    common.copy_mathjax(tmp_path)
    assert (tmp_path / "mathjax" / "tex-svg-full.js").is_file() and (tmp_path / "mathjax" / "LICENSE").is_file()


def test_run_command_reports_what_it_built(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    def build(out: Path) -> list[Path]:
        assert out == (tmp_path / "out").resolve()
        return [out / "a.html", out / "b.html"]

    common.run_command(build, "pages", tmp_path / "default", "Build things.\n\nMore.", ["--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert printed.startswith(f"2 pages and index.html in {tmp_path / 'out'} (")
    assert f"open {(tmp_path / 'out' / 'index.html').as_uri()}" in printed
