"""What the seed-sweep benchmarks share: the held-out perplexity they score, and the record they store.

Each benchmark runs from the repository root as `python -m benchmarks.NAME` and imports this module as `benchmarks.common`.
A stored result names the command that made it and the machine it ran on (torch version, the CPU's kernel
level, threads): a trained number is a fact about that run only, and the notebooks assert the table's own
properties, never its digits (CONTRIBUTING, "Determinism").
"""

from __future__ import annotations

import json
import pathlib
import platform

import torch
import torch.nn.functional as F

from helpers.transformer import shift_right


def held_out_perplexity(model, batch: dict, bos_id: int) -> float:
    """exp of the mean cross-entropy per target token, teacher-forced, padding ignored (model left in eval mode)."""
    model.eval()
    with torch.no_grad():
        logits = model(batch["src"], shift_right(batch["tgt"], bos_id), batch["src_mask"])
        nll = F.cross_entropy(logits.flatten(0, 1), batch["tgt"].flatten(), ignore_index=0)
    return nll.exp().item()


def save(out: pathlib.Path, script: str, seeds: list[int], runs: list[dict], seconds: float, **fields) -> None:
    """Write ``runs`` to ``out`` as JSON, with the command and the machine that made them."""
    record = {
        "command": f"python -m benchmarks.{script} --seeds " + " ".join(map(str, seeds)),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        **fields,
        "runtime_s": round(seconds, 1),
        "runs": runs,
    }
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print("wrote", out)
