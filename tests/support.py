"""What several test modules share: a notebook's inline definitions and headings, random masks and seeded
generators."""

from __future__ import annotations

import json
import re
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
