"""Re-execute notebooks in place, top to bottom, the way nbval will check them.

Run from the repository root after changing a helper:

    python -m course.qa.execute              # every notebook
    python -m course.qa.execute notebooks/02_masking.ipynb

Each notebook runs in a fresh kernel (this environment's Python) with the
working directory set to its folder and one thread, as under `pytest`; stored
outputs are replaced and metadata is reduced to what the notebook needs. Then
look at `git diff --stat notebooks/` and run `pytest`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info")
# language_info as the kernel reports it, less what depends on the machine that ran it: "version"
# (the Python patch release) would change every notebook's JSON, and the HTML built from it, whenever
# someone with another Python re-executes.
KEEP_LANGUAGE_INFO = ("codemirror_mode", "file_extension", "mimetype", "name", "nbconvert_exporter", "pygments_lexer")


def clean(nb: nbformat.NotebookNode) -> None:
    """Reduce the notebook's and every cell's metadata to what does not depend on who ran it."""
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_NOTEBOOK_METADATA}
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    language = nb.metadata.get("language_info", {})
    nb.metadata["language_info"] = {k: v for k, v in language.items() if k in KEEP_LANGUAGE_INFO}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags", "slideshow")}
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)


def merge_streams(outputs: list) -> list:
    """Join consecutive stdout (or stderr) outputs into one.

    How printed text is cut into outputs depends on when the kernel flushed it, that is on the machine's
    speed: a table printed line by line may be stored as one output today and three tomorrow. nbval
    compares the joined text either way, but the JSON would churn and the HTML and slides would show a
    gap in the table; joined, the stored notebook is the same whoever executes it.
    """
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] = "".join(previous["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    clean(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> None:
    # Same settings as conftest.py, so stored outputs match what nbval recomputes.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook paths (default: every notebook)")
    paths = [Path(a).resolve() for a in parser.parse_args(argv).notebooks] or sorted(
        p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
    )
    for path in paths:
        elapsed = execute(path)
        size = path.stat().st_size / 1e3
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{name}: {elapsed:.1f} s, {size:.0f} kB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
