"""Check this machine's set-up before the first session: one line per check, a fix for each that fails.

    python -m course.doctor

Run it from the repository's folder with the environment's Python (the README's ``.venv/bin/python -m ...``, or
``.venv\\Scripts\\python -m ...`` on Windows). It takes seconds and needs no network. It checks the Python version,
every package pinned in ``requirements.txt`` against what is installed, torch's build (CPU, or CUDA with a tip), one exercise
checker, one figure, and notebook 12's weights by their SHA-256. It exits with 0 when every check passes, 1 when
one fails.
"""

from __future__ import annotations

import importlib.metadata
import io
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED_PYTHONS = ((3, 11), (3, 13))
"""The Pythons the README names as tested: the stored outputs were made on 3.11; CI runs the unit tests on 3.13."""

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass
class Check:
    name: str
    passed: bool
    said: str
    fix: str = ""


def _python(command: str) -> str:
    """How the README runs this environment's Python on this system."""
    return (r".venv\Scripts\python" if sys.platform == "win32" else ".venv/bin/python") + f" -m {command}"


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> Check:
    low, high = SUPPORTED_PYTHONS
    text = ".".join(map(str, version))
    if tuple(version[:2]) in SUPPORTED_PYTHONS:
        return Check("Python", True, f"{text} (tested: {low[0]}.{low[1]} and {high[0]}.{high[1]})")
    if low <= tuple(version[:2]) <= high:
        return Check("Python", True, f"{text} (untested, between the tested {low[0]}.{low[1]} and {high[0]}.{high[1]})")
    return Check(
        "Python",
        False,
        f"{text}: the series is tested on {low[0]}.{low[1]} and {high[0]}.{high[1]} only",
        "install Python 3.11 (python.org), delete the .venv folder and run the README's set-up lines again",
    )


def pins(requirements: Path = ROOT / "requirements.txt") -> dict[str, str]:
    """Every ``name==version`` line of requirements.txt (comments and ``-e .`` left out)."""
    found = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if match := re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line):
            found[match.group(1)] = match.group(2)
    return found


def check_packages(pinned: dict[str, str], installed: Callable[[str], str] = importlib.metadata.version) -> Check:
    wrong, missing = [], []
    for name, version in pinned.items():
        try:
            found = installed(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if found.split("+")[0] != version:  # torch's "2.13.0+cpu" is torch 2.13.0
            wrong.append(f"{name} {found} (pinned {version})")
    if not wrong and not missing:
        return Check("packages", True, f"all {len(pinned)} pinned packages installed at their pinned versions")
    said = "; ".join(
        ([f"not installed: {', '.join(missing)}"] if missing else [])
        + ([f"differ: {', '.join(wrong)}"] if wrong else [])
    )
    return Check("packages", False, said, _python("pip install -r requirements.txt"))


_INSTALLED = "the installed torch's"


def check_torch_build(cuda: str | None = _INSTALLED, system: str = platform.system()) -> Check:
    """A CPU build (``cuda`` None) passes; a CUDA build passes too (it runs the series on the CPU, and the tests pass
    with it), with the README's line that swaps it for the CPU build, which is 2.5 GB smaller. By default ``cuda`` is
    the installed torch's ``torch.version.cuda``."""
    if cuda is _INSTALLED:
        import torch

        cuda = torch.version.cuda
    if cuda is None:
        return Check("torch build", True, "a CPU build (the series never uses a GPU)")
    tip = ""
    if system == "Linux":
        tip = (
            f"{_python('pip uninstall -y torch')}, then {_python(f'pip install torch==2.13.0 --index-url {CPU_INDEX}')}"
        )
    return Check(
        "torch build",
        True,
        f"a CUDA {cuda} build: it runs the series on the CPU, but the CPU build is 2.5 GB smaller",
        tip,
    )


def check_checker() -> Check:
    from course.exercises import check_attention, reset_attempts
    from helpers.attention import scaled_dot_product_attention

    verdict = check_attention(scaled_dot_product_attention)
    reset_attempts("01.1")
    if verdict.passed:
        return Check("checker", True, "Exercise 01.1's checker passes the reference attention")
    return Check(
        "checker", False, f"Exercise 01.1's checker says: {verdict}", _python("pip install -r requirements.txt")
    )


def check_figure() -> Check:
    import matplotlib

    matplotlib.use("Agg")  # no window: draw into memory
    import matplotlib.pyplot as plt
    import torch

    from helpers.plotting import plot_attention

    weights = torch.softmax(torch.arange(12.0).reshape(3, 4), dim=-1)
    fig = plot_attention(weights, ["a", "b", "c"], ["w", "x", "y", "z"], title="doctor")
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    size = len(png.getvalue())
    if png.getvalue().startswith(b"\x89PNG") and size > 1000:
        return Check("figure", True, f"an attention heatmap drawn ({size // 1000} kB PNG)")
    return Check(
        "figure", False, f"matplotlib wrote {size} bytes, not a PNG", _python("pip install -r requirements.txt")
    )


def check_weights() -> Check:
    from helpers.pretrained import MINILM_SHA256, load_minilm

    try:
        load_minilm()
    except (ModuleNotFoundError, ValueError) as error:
        return Check("weights", False, f"notebook 12's weights: {error}", _python("pip install -r requirements.txt"))
    return Check("weights", True, f"notebook 12's weights loaded, SHA-256 {MINILM_SHA256[:12]}... as expected")


def guarded(check: Callable[[], Check], name: str) -> Check:
    """Run one check; an exception (a broken install can raise anything) is that check's failure, with the fix."""
    try:
        return check()
    except Exception as error:  # a broken install can raise anything: report it as this check's failure
        said = f"{type(error).__name__}: {error}".splitlines()[0]
        return Check(name, False, said, _python("pip install -r requirements.txt"))


def run(echo=print) -> bool:
    """Run every check, print one line each (and a fix under each failure); True when all pass."""
    start = time.perf_counter()
    checks = [
        (lambda: check_python(), "Python"),
        (lambda: check_packages(pins()), "packages"),
        (lambda: check_torch_build(), "torch build"),
        (check_checker, "checker"),
        (check_figure, "figure"),
        (check_weights, "weights"),
    ]
    results = []
    for check, name in checks:
        result = guarded(check, name)
        results.append(result)
        echo(f"{'ok  ' if result.passed else 'FAIL'}  {result.name:<12} {result.said}")
        if result.fix:
            echo(f"      {'':<12} {'tip' if result.passed else 'fix'}: {result.fix}")
    failed = [r.name for r in results if not r.passed]
    elapsed = time.perf_counter() - start
    if failed:
        echo(f"{len(failed)} of {len(results)} checks failed ({', '.join(failed)}) in {elapsed:.0f} s.")
    else:
        echo(f"All {len(results)} checks passed in {elapsed:.0f} s: this machine is ready for the course.")
    return not failed


def main() -> int:
    return 0 if run() else 1


if __name__ == "__main__":
    sys.exit(main())
