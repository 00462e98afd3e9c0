"""A reader's session in a real browser: JupyterLab, Run > Run All Cells, and what ends up on the page.

nbval proves each notebook's kernel side; this test proves the reader's side. It starts JupyterLab on
127.0.0.1 with a token and its own temporary Jupyter config, data and runtime folders, opens a copy of
a notebook with its outputs cleared (the reader's files are never rewritten) in headless Chromium, runs
every cell through JupyterLab's own Run menu, waits for the kernel to go idle and then checks the page:
every code cell ran, no output shows a traceback, every figure (the attention heatmaps) and every
diagram is on the page. It does this for the first notebook with an attention view, 03
(``_notebooks_to_open`` says why one notebook, and why not the one with the most plots), and leaves a
screenshot next to a short report in build/browser/.

Where that notebook shows interactive attention views (course/explorer/__init__.py), each must have started, and
``exercise_explorer`` clicks a layer, a head, a query, "all heads" and a key and uses the keys in each, reading
back from the page that the lines and the heatmap show the weights the view holds (tests/course/publish/test_site.py and
tests/course/publish/test_slides.py use it for the site and a deck). A second test opens the smallest stored notebook with a view
as it is, untrusted: JupyterLab strips the scripts and each view must show its static figure. The browser may
reach only the local server.

Chromium comes from the system (Debian: ``apt-get install chromium chromium-driver``), driven by
Playwright; no browser is downloaded. Without Chromium the test skips, except under CI, where it fails.
Deselect it with ``pytest -m "not browser"``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

from course.explorer import decode_payload
from tests.support import free_port, stop_server

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
REPORT_DIR = ROOT / "build" / "browser"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-crash-reporter",
    "--disable-breakpad",
]
# JupyterLab settings for an offline, quiet, fully rendered notebook: no news or update checks (no
# network requests), and every cell attached to the page (the default windowing leaves cells out of
# the DOM until scrolled to).
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}
SERVER_START_S = 90
NOTEBOOK_OPEN_S = 90
RUN_ALL_S = 240


def _png_count(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(
        "image/png" in output.get("data", {})
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
    )


def _explorer_count(path: Path) -> int:
    """Outputs of course.explorer's attention view (text/html with its marker) in a stored notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(
        "data-attention-explorer" in "".join(output.get("data", {}).get("text/html", ""))
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
    )


def _explorer_notebooks() -> list[Path]:
    """The notebooks that show an attention view, smallest file first."""
    return sorted((p for p in NOTEBOOKS if _explorer_count(p)), key=lambda p: p.stat().st_size)


def _notebooks_to_open() -> list[Path]:
    """The first notebook with an attention view (03): Run All there shows figures, a diagram and a live view,
    driven inside JupyterLab (its keys and clicks must not reach JupyterLab's own shortcuts).

    One notebook proves the reader's side: JupyterLab starts, the kernel is this environment's, figures, diagrams
    and views render. Every notebook's kernel side is proven by nbval, and tests/course/publish/test_site.py draws every stored
    figure and drives every view in Chromium. Each further notebook run here costs 12 s (01) to 30 s (07, which
    trains) of the test command's three minutes on two cores."""
    numbered = [p for p in NOTEBOOKS if p.parent.name == "notebooks"]
    return [p for p in numbered if _explorer_count(p)][:1]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_browser() -> None:
    missing = []
    if not CHROMIUM.is_file():
        missing.append(f"Chromium at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright")
    if not missing:
        return
    message = (
        f"browser test needs {' and '.join(missing)}. Enable it with `sudo apt-get install chromium chromium-driver` "
        "(Debian/Ubuntu; or set CHROMIUM=/path/to/chromium) and `pip install -r requirements.txt`; "
        "never `playwright install`. Deselect it with `pytest -m 'not browser'`."
    )
    if _in_ci():
        pytest.fail(f"CI is set, so the browser test must run, but it would skip: {message}")
    pytest.skip(message)


def browser_env(folder: Path) -> dict[str, str]:
    """Chromium's environment: its config and cache folders (crash reports included) in a temporary folder."""
    return {**os.environ, "XDG_CONFIG_HOME": str(folder / "config"), "XDG_CACHE_HOME": str(folder / "cache")}


def offline_context(browser, viewport: dict, refused: list[str]):
    """A browser context that loads only file: URLs; every other request is refused and recorded in ``refused``."""
    context = browser.new_context(offline=True, viewport=viewport)

    def only_files(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    return context


def _reader_copy(src: Path, dest: Path) -> None:
    """The notebook as a reader first opens it: no outputs, no execution counts, no empty code cells."""
    nb = nbformat.read(src, as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.source.strip()]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.write(nb, dest)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server of our own, on a free port with a token, killed afterwards whatever happens."""
    require_browser()
    tmp = tmp_path_factory.mktemp("lab")
    root, config, data, runtime, settings = (tmp / d for d in ("root", "config", "data", "runtime", "settings"))
    for d in (root / "notebooks", config, data / "kernels" / "python3", runtime, settings):
        d.mkdir(parents=True)
    for path in _notebooks_to_open():
        _reader_copy(path, root / "notebooks" / path.name)
    stored = _explorer_notebooks()[:1]  # the smallest notebook with an attention view, outputs and all
    for path in stored:
        (root / "stored").mkdir(exist_ok=True)
        shutil.copyfile(path, root / "stored" / path.name)
    if (ROOT / "img").is_dir():  # diagrams referenced as ../img/x.svg from the notebooks
        shutil.copytree(ROOT / "img", root / "img")
    # The kernel is this environment's Python, whatever other python3 kernels the machine has.
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    (data / "kernels" / "python3" / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES), encoding="utf-8")

    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(data),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTERLAB_SETTINGS_DIR=str(config / "lab" / "user-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(config / "lab" / "workspaces"),
        IPYTHONDIR=str(tmp / "ipython"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    port, token = free_port(), uuid.uuid4().hex
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={settings}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = tmp / "lab.log"
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text(encoding='utf-8', errors='replace')[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not answer within {SERVER_START_S} s:\n{log_path.read_text(encoding='utf-8', errors='replace')[-3000:]}"
                )
            time.sleep(0.5)
        yield {"base": base, "token": token, "log": log_path, "stored": [p.name for p in stored], "refused": []}
    finally:
        stop_server(proc, base, token)


@pytest.fixture(scope="module")
def browser_context(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    home = tmp_path_factory.mktemp("chromium")
    profile = home / "profile"  # an empty --user-data-dir
    profile.mkdir()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            env=browser_env(home),
            viewport={"width": 1400, "height": 1000},
        )

        def only_lab(route):  # nothing may leave the local server (the attention views load nothing either)
            if route.request.url.startswith((lab["base"] + "/", "data:", "blob:")):
                route.continue_()
            else:
                lab["refused"].append(route.request.url)
                route.abort()

        context.route("**/*", only_lab)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def report():
    entries: list[str] = []
    yield entries
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    header = "# JupyterLab in headless Chromium: Run > Run All Cells\n\n"
    (REPORT_DIR / "report.md").write_text(header + "\n".join(entries) + "\n", encoding="utf-8")


# The kernel status in the status bar, e.g. "Python 3 (ipykernel) | Idle".
STATUS_JS = """() => Array.from(document.querySelectorAll('#jp-main-statusbar .jp-StatusBar-TextItem'))
    .map(e => e.textContent).join(' / ')"""
PROMPTS_JS = """() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')).map(e => e.textContent.trim())"""
OUTPUTS_JS = """() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')).map(c => {
        const out = c.querySelector('.jp-OutputArea');
        return out ? out.innerText : '';
    })"""
IMAGES_JS = """(selector) => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) ' + selector)).map(i => ({
        src: i.getAttribute('src').slice(0, 40), width: i.naturalWidth, height: i.naturalHeight,
        complete: i.complete}))"""


# What IPython prints for an uncaught exception (a SyntaxError has no "Traceback" line, only "Cell In[...]").
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*Cell In\[\d+\], line \d+", re.MULTILINE)


def _wait_until(predicate, timeout_s: float, what: str, page, interval_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}; status bar: {_status(page)!r}")
        page.wait_for_timeout(interval_s * 1000)


def _status(page) -> str:
    try:
        return page.evaluate(STATUS_JS)
    except Exception as error:  # page gone
        return f"<{error}>"


def _idle(page) -> bool:
    return bool(re.search(r"\|\s*Idle\b", _status(page)))


def _run_all_from_menu(page) -> None:
    """Run > Run All Cells, clicked like a reader; retried until the first prompt changes (an early click is dropped)."""
    for _attempt in range(10):
        page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        item = page.locator('.lm-Menu-item[data-command="runmenu:run-all"]')
        item.wait_for(state="visible", timeout=10_000)
        item.click()
        try:
            _wait_until(lambda: (page.evaluate(PROMPTS_JS) or ["[ ]:"])[0] not in ("[ ]:", ""), 5, "", page)
            return
        except AssertionError:
            page.keyboard.press("Escape")
    raise AssertionError("Run > Run All Cells never started the first cell")


# --- The interactive attention view (course/explorer/__init__.py), driven like a reader: used here (JupyterLab), in
# tests/course/publish/test_site.py (the HTML site) and tests/course/publish/test_slides.py (a deck). What is drawn is read back from the DOM:
# every line and heatmap cell carries data-query, data-key, data-head and data-weight (two decimals).
EXPLORER = ".attn-x"
DRAWN_JS = """(view) => {
    const read = el => ({query: +el.dataset.query, key: +el.dataset.key, head: el.dataset.head === undefined ? null
        : +el.dataset.head, weight: el.dataset.weight});
    return {layer: view.dataset.layer, head: view.dataset.head, token: view.dataset.token,
            lines: Array.from(view.querySelectorAll('.attn-x-link')).map(read),
            cells: Array.from(view.querySelectorAll('.attn-x-cell')).map(read),
            readout: view.querySelector('.attn-x-readout').textContent,
            focus: document.activeElement && view.contains(document.activeElement)
                ? (document.activeElement.dataset.side || '') + (document.activeElement.dataset.index
                   || document.activeElement.dataset.value || '') : null,
            ring: (() => { const r = view.querySelector('.attn-x-tok:focus .attn-x-ring');
                           return r ? getComputedStyle(r).stroke : null; })()};
}"""


# The hovered heatmap cell's outline: which cell ("query,key") and whether it shows.
HOVERED_JS = """(view) => { const g = view.querySelector('.attn-x-hovered');
    return {cell: view.dataset.cell || null, visible: !!g && g.getAttribute('visibility') === 'visible'}; }"""


# JupyterLab's active cell (its index), or null outside JupyterLab.
ACTIVE_CELL_JS = """() => { const cell = document.querySelector('.jp-Notebook .jp-Cell.jp-mod-active');
    const notebook = cell && cell.closest('.jp-Notebook');
    return cell ? [Array.from(cell.parentElement.children).indexOf(cell),
                   notebook.classList.contains('jp-mod-editMode') ? 'edit' : 'command'] : null; }"""


def _expected_lines(data: dict, layer: int, heads: list[int], side: str, index: int) -> dict:
    """{(query, key, head): "0.xx"} for the lines a view must draw: every allowed pair of the chosen token."""
    weights, mask = data["weights"], data["mask"]
    n, m = weights.shape[2:]
    pairs = [(index, k) for k in range(m)] if side == "q" else [(q, index) for q in range(n)]
    return {(q, k, h): f"{weights[layer, h, q, k]:.2f}" for h in heads for q, k in pairs if mask is None or mask[q, k]}


def _brief(drawn: dict) -> dict:
    return {key: value for key, value in drawn.items() if key not in ("lines", "cells")}


def _drawn_lines(drawn: dict) -> dict:
    return {(d["query"], d["key"], d["head"]): d["weight"] for d in drawn["lines"]}


def exercise_explorer(view, data: dict, page) -> str:
    """Click a layer, a head, a query, "all heads" and a key, toggle heads by their colour squares, and use the
    keyboard, in one live view (a playwright locator); after each step the lines and the heatmap must show the right
    weights of ``data`` (decoded by course.explorer.decode_payload). Returns a one-line summary.

    Views stored before the colour squares toggled heads (issue 19: E6, E8) have no ``[data-toggle]`` buttons: for
    them the toggling, the per-head readout and the hovered cell's outline are not asked for."""
    layers, heads, n, m = data["weights"].shape
    layer, head, query, key = layers - 1, heads - 1, n - 1, 0
    toggles = view.locator("[data-toggle]").count() > 0  # a view made since the colour squares toggle heads
    assert toggles or "vmax" not in data, "a view with a colour range runs a script that toggles heads"
    # The view opens on the layer and head given to explore_attention (layer=, head=; views made before those
    # arguments existed carry no "start" and open on layer 0, head 0); head -1 is "all heads".
    start = data.get("start") or {"layer": 0, "head": 0}
    first_heads = list(range(heads)) if start["head"] < 0 else [start["head"]]
    page.mouse.move(0, 0)
    drawn = view.evaluate(DRAWN_JS)
    first = (str(start["layer"]), "all" if start["head"] < 0 else str(start["head"]), "q0")
    assert (drawn["layer"], drawn["head"], drawn["token"]) == first, _brief(drawn)
    assert _drawn_lines(drawn) == _expected_lines(data, start["layer"], first_heads, "q", 0), (
        "not its first layer, head"
    )
    if "start" in data and layers == 1:  # one layer: nothing to pick, no "Layer" group
        assert view.locator('[aria-label="Layer"]').count() == 0, "a one-layer view shows a Layer group"

    if layers > 1:
        view.locator(f'[aria-label="Layer"] [data-value="{layer}"]').click()
    view.locator(f'[aria-label^="Head"] [data-value="{head}"]').click()
    view.locator(f'[data-side="q"][data-index="{query}"]').click()
    drawn = view.evaluate(DRAWN_JS)
    assert (drawn["layer"], drawn["head"], drawn["token"]) == (str(layer), str(head), f"q{query}"), _brief(drawn)
    assert _drawn_lines(drawn) == _expected_lines(data, layer, [head], "q", query)
    # After a mouse click the arrow keys move the view's selection, from the clicked token, and nothing else: in
    # JupyterLab a click used to leave the focus on the cell, and the arrows moved the notebook's active cell.
    clicked = page.evaluate(ACTIVE_CELL_JS)
    page.keyboard.press("ArrowDown")
    after = view.evaluate(DRAWN_JS)
    assert (after["token"], after["focus"]) == (f"q{(query + 1) % n}",) * 2, f"ArrowDown after a click: {_brief(after)}"
    page.keyboard.press("ArrowUp")
    after = view.evaluate(DRAWN_JS)
    assert (after["token"], after["focus"]) == (f"q{query}",) * 2, f"ArrowUp after a click: {_brief(after)}"
    assert page.evaluate(ACTIVE_CELL_JS) == clicked, "arrow keys after a click in the view moved JupyterLab's cells"
    cells = {(c["query"], c["key"]): c["weight"] for c in drawn["cells"]}
    for q in range(n):  # the heatmap is this head's whole (n, m) matrix, masked cells marked
        for k in range(m):
            masked = data["mask"] is not None and not data["mask"][q, k]
            assert cells[q, k] == ("masked" if masked else f"{data['weights'][layer, head, q, k]:.2f}"), (q, k)
    row = data["weights"][layer, head, query]
    allowed = [k for k in range(m) if data["mask"] is None or data["mask"][query, k]]
    best = max(allowed, key=lambda k: row[k]) if allowed else None
    if best is not None:
        assert f"largest weight {row[best]:.2f}" in drawn["readout"], drawn["readout"]

    cell = view.locator(f'.attn-x-cell[data-query="{query}"][data-key="{allowed[-1] if allowed else 0}"]').first
    cell.hover()  # numbers on hover, in the readout
    hovered = view.evaluate(DRAWN_JS)["readout"]
    if allowed:
        assert f"weight {row[allowed[-1]]:.2f}" in hovered, hovered
        if toggles:  # the hovered cell is outlined
            outlined = view.evaluate(HOVERED_JS)
            assert outlined == {"cell": f"{query},{allowed[-1]}", "visible": True}, outlined

    view.locator('[aria-label^="Head"] [data-value="-1"]').click()  # all heads overlaid
    view.locator(f'[data-side="k"][data-index="{key}"]').click()  # a key: lines from every query
    drawn = view.evaluate(DRAWN_JS)
    assert (drawn["head"], drawn["token"]) == ("all", f"k{key}"), _brief(drawn)
    assert _drawn_lines(drawn) == _expected_lines(data, layer, list(range(heads)), "k", key)
    stripes = [c for c in drawn["cells"] if c["weight"] != "masked"]
    assert all(f"{data['weights'][layer, c['head'], c['query'], c['key']]:.2f}" == c["weight"] for c in stripes)
    toggled = ""
    if toggles:  # the readout: one short entry per head, not a run-on sentence
        assert view.locator(".attn-x-readout .attn-x-entry").count() == heads, drawn["readout"]
    if toggles and heads > 1:
        # Any set of heads: one head, then another added by its colour square, then the first removed by its own.
        view.locator(f'[aria-label^="Head"] [data-value="{head}"]').click()
        view.locator('[data-toggle="0"]').click()
        drawn = view.evaluate(DRAWN_JS)
        pair = [0, head]
        assert drawn["head"] == ("all" if heads == 2 else f"0,{head}"), _brief(drawn)
        assert _drawn_lines(drawn) == _expected_lines(data, layer, pair, "k", key)
        assert {c["head"] for c in drawn["cells"] if c["weight"] != "masked"} <= set(pair)
        assert view.locator(".attn-x-readout .attn-x-entry").count() == 2, drawn["readout"]
        pressed = view.locator('[data-toggle][aria-pressed="true"]').evaluate_all("b => b.map(x => +x.dataset.toggle)")
        assert pressed == pair, pressed
        view.locator(f'[data-toggle="{head}"]').click()  # head 0 alone: its Head button is checked again
        view.locator('[data-toggle="0"]').click()  # the last head shown stays
        drawn = view.evaluate(DRAWN_JS)
        assert drawn["head"] == "0", _brief(drawn)
        assert view.locator('[aria-label^="Head"] [aria-checked="true"]').get_attribute("data-value") == "0"
        assert _drawn_lines(drawn) == _expected_lines(data, layer, [0], "k", key)
        toggled = f", heads 0 and {head} toggled"

    # The keyboard: Tab reaches the controls, the arrow keys change the layer and move along the tokens (and
    # stay in the view: in JupyterLab they must not move the active cell).
    active = page.evaluate(ACTIVE_CELL_JS)
    if layers > 1:
        view.locator('[aria-label="Layer"] [aria-checked="true"]').focus()
        page.keyboard.press("Home")
    view.locator('[aria-label^="Head"] [data-value="-1"]').focus()
    page.keyboard.press("Enter")  # a button pressed with Enter, then with Space (JupyterLab: edit mode; reveal: next)
    view.locator('[aria-label^="Head"] [data-value="0"]').focus()
    page.keyboard.press(" ")
    assert view.evaluate(DRAWN_JS)["head"] == "0"
    view.locator(f'[data-side="k"][data-index="{key}"]').focus()
    page.keyboard.press("ArrowLeft")  # to the queries
    page.keyboard.press("ArrowDown")
    drawn = view.evaluate(DRAWN_JS)
    moved = f"q{1 if n > 1 else 0}"  # key 0 -> query 0 -> query 1
    assert (drawn["layer"], drawn["token"], drawn["focus"]) == ("0", moved, moved), _brief(drawn)
    assert drawn["ring"] not in (None, "none", "transparent", "rgba(0, 0, 0, 0)"), f"no visible focus: {_brief(drawn)}"
    token = int(drawn["token"][1:])
    assert _drawn_lines(drawn) == _expected_lines(data, 0, [0], "q", token)
    page.keyboard.press("Escape")
    assert page.evaluate(ACTIVE_CELL_JS) == active, "keys pressed in the view moved JupyterLab's active cell"
    return f"layer {layer}, head {head}, query {query}, all heads, key {key}{toggled}, keys: the weights stored"


@pytest.mark.parametrize("notebook", _notebooks_to_open(), ids=lambda p: p.name)
def test_reader_runs_all_cells_in_jupyterlab(notebook: Path, lab, browser_context, report):
    views_expected = _explorer_count(notebook)  # each live view replaces its PNG fallback
    expected_figures = _png_count(notebook) - views_expected
    code_cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code" and c.source.strip()]
    expected_cells = len(code_cells)
    # A cell tagged raises-exception shows its traceback on purpose (and Run All goes on past it).
    meant_to_raise = {i for i, c in enumerate(code_cells) if "raises-exception" in c.metadata.get("tags", [])}
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    screenshot = REPORT_DIR / f"{notebook.stem}.png"
    page = browser_context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    start = time.monotonic()
    outcome = "failed"
    try:
        workspace = f"browser-test-{uuid.uuid4().hex[:12]}"  # fresh layout: no tabs from an earlier session
        page.goto(
            f"{lab['base']}/lab/workspaces/{workspace}/tree/notebooks/{notebook.name}?reset&token={lab['token']}",
            timeout=NOTEBOOK_OPEN_S * 1000,
        )
        page.locator(".jp-NotebookPanel .jp-CodeCell").first.wait_for(timeout=NOTEBOOK_OPEN_S * 1000)
        _wait_until(lambda: _idle(page), NOTEBOOK_OPEN_S, "the kernel to start (status bar 'Idle')", page)
        opened = time.monotonic() - start
        _run_all_from_menu(page)

        def finished():
            prompts = page.evaluate(PROMPTS_JS)
            return _idle(page) and len(prompts) == expected_cells and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts)

        _wait_until(finished, RUN_ALL_S, "every cell to run and the kernel to go idle", page, interval_s=0.5)
        elapsed = time.monotonic() - start

        prompts = page.evaluate(PROMPTS_JS)
        assert [int(p[1:-2]) for p in prompts] == list(range(1, expected_cells + 1)), prompts
        outputs = page.evaluate(OUTPUTS_JS)
        tracebacks = [i for i, text in enumerate(outputs) if TRACEBACK.search(text) and i not in meant_to_raise]
        assert not tracebacks, f"traceback in code cell(s) {tracebacks}: {outputs[tracebacks[0]][:1500]}"

        def decoded(selector):
            images = page.evaluate(IMAGES_JS, selector)
            return all(i["complete"] and i["width"] > 0 for i in images)

        for selector in (".jp-OutputArea-output img", ".jp-MarkdownCell img"):  # give images time to decode
            try:
                _wait_until(lambda s=selector: decoded(s), 15, "", page)
            except AssertionError:
                pass  # the assertions below say which image
        views = page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output {EXPLORER}")
        explored = []
        if views_expected:  # run in this session, the outputs are trusted: every view's script ran
            assert views.count() == views_expected, f"{views.count()} attention views, {views_expected} stored"
            live = page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) {EXPLORER}[data-live]")
            assert live.count() == views_expected, f"{live.count()} of {views_expected} attention views started"
            for i in range(views_expected):  # each is independent: the others' clicks left it as it started
                view = live.nth(i)
                view.scroll_into_view_if_needed()
                data = decode_payload(view.locator("script.attn-x-data").text_content())
                clicked = time.monotonic()
                explored.append(f"{exercise_explorer(view, data, page)} ({time.monotonic() - clicked:.1f} s)")
            page.set_viewport_size({"width": 1920, "height": 1080})  # the screenshot as a projector shows it
            live.first.scroll_into_view_if_needed()
            page.screenshot(path=str(REPORT_DIR / f"{notebook.stem}-explorer.png"))
            page.set_viewport_size({"width": 1400, "height": 1000})
        figures = page.evaluate(IMAGES_JS, ".jp-OutputArea-output img")
        assert len(figures) == expected_figures >= 1, (
            f"{len(figures)} figures on the page, stored notebook has {expected_figures}"
        )
        assert all(f["src"].startswith("data:image/png") and f["complete"] and f["width"] > 0 for f in figures), figures
        diagrams = page.evaluate(IMAGES_JS, ".jp-MarkdownCell img")
        assert all(d["complete"] and d["width"] > 0 for d in diagrams), f"a markdown image did not load: {diagrams}"

        # The screenshot shows the first figure (in notebook 01, the attention heatmap), scrolled to.
        page.locator(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output img"
        ).first.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        outcome = "passed"
        report.append(
            f"## {notebook.name}: {outcome}\n\n"
            f"- {len(prompts)} code cells run with Run > Run All Cells, prompts [1] to [{len(prompts)}], no traceback\n"
            f"- {len(figures)} figures (PNG) and {len(diagrams)} diagrams shown\n"
            f"- notebook open with an idle kernel after {opened:.1f} s; all cells run and idle again after {elapsed:.1f} s\n"
            f"- screenshot: {screenshot.name} (scrolled to the first figure)\n"
            + "".join(f"- attention view {i}: {line}\n" for i, line in enumerate(explored))
            + (f"- JavaScript errors on the page: {page_errors}\n" if page_errors else "")
        )
        assert not lab["refused"], f"requests left the local server: {lab['refused']}"
    finally:
        try:  # whatever happened, show it
            page.screenshot(path=str(screenshot))
        except Exception as error:
            page_errors.append(f"no screenshot: {error}")
        if outcome != "passed":
            report.append(
                f"## {notebook.name}: {outcome}\n\n- status bar: {_status(page)!r}\n- screenshot: {screenshot.name}\n"
                f"- JavaScript errors on the page: {page_errors}\n"
            )
        page.close()


UNTRUSTED_JS = """(selector) => Array.from(document.querySelectorAll(selector)).map(v => {
    const img = v.querySelector('img');
    const box = img ? img.getBoundingClientRect() : null;
    return {live: v.hasAttribute('data-live'), controls: v.querySelectorAll('button, svg').length,
            scripts: v.querySelectorAll('script').length, img: !!img,
            decoded: !!img && img.complete && img.naturalWidth > 0, src: img ? img.getAttribute('src').slice(0, 22) : '',
            shown: box ? [Math.round(box.width), Math.round(box.height)] : null, text: v.innerText.trim().slice(0, 200),
            warning: !!v.closest('.jp-OutputArea-output').innerText.match(/contains inline scripts/)};
})"""


def test_stored_attention_view_shows_its_figure_when_untrusted(lab, browser_context, report):
    """A notebook opened as stored, never run or trusted here: JupyterLab strips the views' scripts, and each view
    must then show its static figure (the PNG inside its HTML) and say how to get the interactive view."""
    if not lab["stored"]:
        pytest.skip("no notebook shows an attention view (course.explorer)")
    name = lab["stored"][0]
    expected = _explorer_count(ROOT / "notebooks" / name)
    page = browser_context.new_page()
    shot = REPORT_DIR / f"untrusted-{Path(name).stem}.png"
    try:
        workspace = f"browser-test-{uuid.uuid4().hex[:12]}"
        page.goto(
            f"{lab['base']}/lab/workspaces/{workspace}/tree/stored/{name}?reset&token={lab['token']}",
            timeout=NOTEBOOK_OPEN_S * 1000,
        )
        selector = f".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output {EXPLORER}"
        _wait_until(
            lambda: sum(v["decoded"] for v in page.evaluate(UNTRUSTED_JS, selector)) == expected,
            NOTEBOOK_OPEN_S,
            f"{expected} attention views with their figure",
            page,
        )
        views = page.evaluate(UNTRUSTED_JS, selector)
        for v in views:
            assert not v["live"] and not v["controls"] and not v["scripts"], f"a script ran or survived: {v}"
            assert v["src"] == "data:image/png;base64," and v["shown"][0] > 300 and v["shown"][1] > 200, v
            assert "trust the notebook" in v["text"] and not v["warning"], v
            assert "{" not in v["text"], f"the view's style or data shows as text: {v}"
        page.locator(selector).first.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        page.screenshot(path=str(shot))
        report.append(
            f"## {name}, stored and untrusted: passed\n\n- {len(views)} attention views shown as their static figure "
            f"({views[0]['shown'][0]}x{views[0]['shown'][1]} px), no script run, the note to trust or run shown\n"
            f"- screenshot: {shot.name}\n"
        )
    finally:
        page.close()
    assert not lab["refused"], f"requests left the local server: {lab['refused']}"
