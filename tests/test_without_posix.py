"""No POSIX-only call on a reader's or a maintainer's path (issue 35): each path below runs on Linux with the calls
Windows lacks made unavailable (``os.fork``, ``os.killpg``, ``signal.SIGALRM``, ...), or with a
Windows file name.

The checkers' time limit, the other such path, is tested with and without ``SIGALRM`` in
``tests/course/exercises/test_engine.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from course.qa import mutate, platforms
from tests.support import free_port, javascript_engine, stop_server

# signal.SIGKILL stays: on Linux, subprocess itself kills with it (on Windows it calls TerminateProcess instead).
WINDOWS_LACKS = [(os, "fork"), (os, "killpg"), (os, "setsid"), (signal, "SIGALRM"), (signal, "setitimer")]


@pytest.fixture
def like_windows(monkeypatch):
    """The os and signal modules without the calls Windows does not have."""
    for module, name in WINDOWS_LACKS:
        monkeypatch.delattr(module, name, raising=False)


@pytest.mark.usefixtures("like_windows")
def test_the_browser_tests_teardown_stops_the_server_without_killpg():
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # Nothing answers on this port, so the API step finds no kernels; then the server is terminated.
        stop_server(server, f"http://127.0.0.1:{free_port()}", "token")
        assert server.poll() is not None
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_playwrights_node_is_found_by_its_windows_name(monkeypatch, tmp_path: Path):
    playwright = pytest.importorskip("playwright")
    driver = tmp_path / "playwright" / "driver"
    driver.mkdir(parents=True)
    (driver / "node.exe").write_bytes(b"")  # Playwright's driver on Windows holds node.exe, not node
    monkeypatch.setattr(playwright, "__file__", str(driver.parent / "__init__.py"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no node on the PATH either
    assert javascript_engine() == str(driver / "node.exe")


def test_the_javascript_tests_find_an_engine_where_playwright_is_installed():
    # requirements.txt installs Playwright, whose driver ships Node.js: the JavaScript tests must not skip silently.
    pytest.importorskip("playwright")
    assert javascript_engine() is not None


@pytest.mark.usefixtures("like_windows")
def test_the_mutation_check_runs_its_tests_without_fork_or_signals(tmp_path: Path):
    assert not mutate.forking()  # without os.fork, each run is a fresh Python
    tests = {
        "test_right.py": "def test_right():\n    assert '√d_k' == '√d_k'\n",
        "test_wrong.py": "def test_wrong():\n    assert '√d_k' == 'd_k'\n",
        "test_endless.py": "import time\n\n\ndef test_endless():\n    time.sleep(120)\n",
    }
    for name, text in tests.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    fork = mutate.forking()
    assert mutate.run_tests(tmp_path, ["test_right.py"], 120, fork)[0] == "pass"
    status, _, summary = mutate.run_tests(tmp_path, ["test_wrong.py"], 120, fork)
    assert status == "fail" and "test_wrong" in summary, summary
    status, seconds, _ = mutate.run_tests(tmp_path, ["test_endless.py"], 5, fork)
    assert status == "timeout" and seconds < 60  # stopped by subprocess at the timeout, with no signal of ours


def test_the_platform_checks_children_write_utf8_whatever_the_console(monkeypatch):
    # A Windows console's encoding, inherited by every child: a child printing "√" into our pipe would fail.
    monkeypatch.setenv("PYTHONIOENCODING", "cp1252")
    child = subprocess.run(
        # The "√" is escaped in the child's source: a Latin-1 locale could not pass it in argv.
        [sys.executable, "-c", "print('cell 3 (scores / \\u221ad_k): ZeroDivisionError')"],
        env=platforms.kernel_env(1),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "cell 3 (scores / √d_k): ZeroDivisionError"
