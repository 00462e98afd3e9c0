"""A reader's session in a real browser: JupyterLab, Run > Run All Cells, and what ends up on the page.

nbval proves each notebook's kernel side; this test proves the reader's side. It starts JupyterLab on
127.0.0.1 with a token and its own temporary Jupyter config, data and runtime folders, opens a copy of
a notebook with its outputs cleared (the reader's files are never rewritten) in headless Chromium, runs
every cell through JupyterLab's own Run menu, waits for the kernel to go idle and then checks the page:
every code cell ran, no output shows a traceback, every figure (the attention heatmaps) and every
diagram is on the page. It does this for notebook 01 and for the notebook with the most plots, and
leaves a screenshot of each next to a short report in build/browser/.

Chromium comes from the system (Debian: ``apt-get install chromium chromium-driver``), driven by
Playwright; no browser is downloaded. Without Chromium the test skips, except under CI, where it fails.
Deselect it with ``pytest -m "not browser"``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

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
    nb = json.loads(path.read_text())
    return sum(
        "image/png" in output.get("data", {})
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
    )


def _notebooks_to_open() -> list[Path]:
    first = [p for p in NOTEBOOKS if p.name.startswith("01_")][:1]
    most_plots = [max(NOTEBOOKS, key=_png_count)] if NOTEBOOKS else []  # first of the tied ones
    return list(dict.fromkeys(first + most_plots))


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    if (ROOT / "img").is_dir():  # diagrams referenced as ../img/x.svg from the notebooks
        shutil.copytree(ROOT / "img", root / "img")
    # The kernel is this environment's Python, whatever other python3 kernels the machine has.
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    (data / "kernels" / "python3" / "kernel.json").write_text(json.dumps(kernel))
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES))

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
    port, token = _free_port(), uuid.uuid4().hex
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
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield {"base": base, "token": token, "log": log_path}
    finally:
        _stop(proc, base, token)


def _stop(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut down the kernels through the API, then the server, then anything left in its process group."""
    if proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=5) as response:
                kernels = json.load(response)
            for kernel in kernels:
                request = urllib.request.Request(f"{base}/api/kernels/{kernel['id']}?token={token}", method="DELETE")
                urllib.request.urlopen(request, timeout=10).close()
        except OSError:
            pass
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # our own session: stray kernels, if any
    except (ProcessLookupError, PermissionError):
        pass


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
    (REPORT_DIR / "report.md").write_text(header + "\n".join(entries) + "\n")


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


@pytest.mark.parametrize("notebook", _notebooks_to_open(), ids=lambda p: p.name)
def test_reader_runs_all_cells_in_jupyterlab(notebook: Path, lab, browser_context, report):
    expected_figures = _png_count(notebook)
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
            + (f"- JavaScript errors on the page: {page_errors}\n" if page_errors else "")
        )
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
