"""What several test modules share: a notebook's inline definitions and headings, random masks and seeded
generators, a free port, a Jupyter server's shutdown and a JavaScript engine."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import torch

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
INLINE_TAG = "inline-definition"


def inline_namespace(notebook: str) -> dict:
    """Run the cells of ``notebooks/<notebook>`` tagged ``inline-definition``, in order, in one fresh namespace."""
    nb = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and INLINE_TAG in c.get("metadata", {}).get("tags", [])]
    assert cells, f"{notebook} has no cell tagged {INLINE_TAG!r}"
    namespace: dict = {}
    for cell in cells:
        exec(compile("".join(cell["source"]), f"{notebook}:{INLINE_TAG}", "exec"), namespace)
    return namespace


def generator(seed: int = 0) -> torch.Generator:
    """A CPU generator seeded with ``seed``, so that a test's random numbers do not depend on the global seed."""
    return torch.Generator().manual_seed(seed)


def random_mask(shape, generator: torch.Generator, *, density: float, keep_one_per_row: bool) -> torch.Tensor:
    """A boolean mask of ``shape``, each entry ``True`` with probability ``density``.

    ``keep_one_per_row`` sets one random key of every row to ``True``: PyTorch's attention gives NaN on a row with
    no allowed key.
    """
    mask = torch.rand(shape, generator=generator) < density
    if keep_one_per_row:
        first = torch.randint(shape[-1], shape[:-1], generator=generator)
        mask.scatter_(-1, first.unsqueeze(-1), True)
    return mask


def notebook_headings(path: Path) -> tuple[set[str], set[str]]:
    """A notebook's numbered section headings (`## 3.` -> "3") and exercise headings ("01.3")."""
    sections, exercises = set(), set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            if match := re.match(r"^##\s+(\d+)\.\s", line):
                sections.add(match.group(1))
            if match := re.match(r"^###\s+Exercise\s+(\d\d\.\d+)\b", line):
                exercises.add(match.group(1))
    return sections, exercises


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_server(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut down the kernels through the API, then the server, then anything left of its session.

    The last step needs ``os.killpg`` (POSIX). Windows has none, nor sessions: there a kernel that outlived the
    API's shutdown ends by itself when its parent, the server, is gone (ipykernel watches its parent process).
    """
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
    if hasattr(os, "killpg"):
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # our own session: stray kernels, if any
        except (ProcessLookupError, PermissionError):
            pass


def javascript_engine() -> str | None:
    """A JavaScript engine: Playwright's own Node.js (requirements.txt installs it; ``node.exe`` on Windows), else
    one on the PATH (``shutil.which`` adds ``.exe`` on Windows)."""
    try:
        import playwright

        for name in ("node", "node.exe"):
            bundled = Path(playwright.__file__).parent / "driver" / name
            if bundled.is_file():
                return str(bundled)
    except ImportError:
        pass
    return shutil.which("node")
