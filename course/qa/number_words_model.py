"""Save the model that notebook 10 trains, for notebook 11 to decode without training it again.

Notebook 10 trains a 2-layer Transformer on digits -> number words in about 45 s and averages its last
five checkpoints (§6.1). Notebook 11 times decoding with and without a key/value cache on that same
model, and has 30 s in all, so it loads the weights from `notebooks/data/number_words_model.pt`.

This script makes that file by running notebook 10 itself, top to bottom, in a fresh kernel with one
thread (as `course/qa/execute.py` and nbval do), then one more cell that saves the averaged
model's weights with the settings it was built with and its exact match on the held-out numbers. The
notebook on disk is not changed. Run it from the repository root after changing notebook 10 or the
helpers it trains with (about a minute):

    python -m course.qa.number_words_model

The positional-encoding table is a non-persistent buffer, so it is not in the file: the weights load
into the same architecture with any `max_len`, which notebook 11 uses to decode past 32 positions.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "10_training_and_decoding.ipynb"
OUT = ROOT / "notebooks" / "data" / "number_words_model.pt"


def code_digest(notebook: Path) -> str:
    """SHA-256 of the notebook's code cells, in order, without their comment-only lines (a comment changes no
    weight): stored in the file, so a test can tell when notebook 10's code has changed since the weights were
    saved (then run this script again)."""
    nb = nbformat.read(notebook, as_version=4)
    cells = (cell.source for cell in nb.cells if cell.cell_type == "code")
    code = "\n\n".join(
        "\n".join(line for line in source.split("\n") if not line.strip().startswith("#")) for source in cells
    )
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


SAVE_CELL = f"""
config = dict(src_vocab_size=V, tgt_vocab_size=V, d_model=d_model, num_heads=4, num_layers=2, d_ff=128, dropout=0.1)
assert sum(p.numel() for p in averaged.parameters()) == 170_176
torch.save(
    {{
        "config": config,
        "state_dict": averaged.state_dict(),
        "exact_match": avg_exact,
        "made_by": "python -m course.qa.number_words_model: notebook 10, averaged last 5 checkpoints",
        "notebook_10_code_sha256": {code_digest(NOTEBOOK)!r},
    }},
    {str(OUT)!r},
)
print("saved", {str(OUT)!r}, "exact match", avg_exact)
"""


def main() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(SAVE_CELL))
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    print("".join(output.get("text", "") for output in nb.cells[-1].outputs))


if __name__ == "__main__":
    main()
