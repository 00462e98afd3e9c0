"""What Eq. 3's warm-up does, separated from its decay, for post-norm and pre-norm: notebook 10, section 10.

Trains the small model of notebook 10, section 10 (one layer, d_model 32, 4 heads, d_ff 64, dropout 0.1, label
smoothing 0.1, 300 steps of 64 numbers below 1,000) exactly as that section does, with four learning-rate
schedules and both places of the LayerNorm, for each seed. Eq. 3 (Vaswani et al., 2017, §5.3) does two things at
once: it rises linearly for ``warmup_steps`` steps (here 50) and then decays like ``step^-0.5``. The schedules take
one or both away (``s`` counts steps from 1, W = 50, ``rate`` is Eq. 3):

- ``recipe``: ``rate(s, d, W)``, warm-up, then decay (the paper's schedule);
- ``no warm-up``: ``rate(max(s, W), d, W)``, the peak from the first step, then the same decay;
- ``no decay``: ``rate(min(s, W), d, W)``, the same warm-up, then the peak held to the end;
- ``constant peak``: ``rate(W, d, W)``, neither (what notebook 10 called "no warm-up" before).

``post-norm`` is the paper's ``LayerNorm(x + Sublayer(x))`` (§3.1); ``pre-norm`` is ``x + Sublayer(LayerNorm(x))``
with a final LayerNorm (``Transformer(..., norm_first=True)``), for which Xiong et al. (2020) argue that warm-up
matters much less. For each run it records greedy exact match on the section's 200 held-out three-digit numbers and
the held-out perplexity (exp of the mean per-token unsmoothed cross-entropy, eval mode), and the seconds it took.
Notebook 10 prints the stored table (means and spreads over seeds) and asserts its properties.

    python -m benchmarks.warmup_ablation                  # seeds 0-9: 80 runs, about 4 minutes on one idle core
    python -m benchmarks.warmup_ablation --seeds 0 1 2    # other seeds

Runs with one thread, as the notebooks do. The numbers of one run depend on the CPU's kernels as much as on the
seed (another CPU gives another trajectory), so read the table by its means and spreads. Writes
benchmarks/results/warmup_ablation.json.
"""

from __future__ import annotations

import pathlib
import time

import torch

from benchmarks.common import held_out_perplexity, section_10_start, sweep_and_save, train_section_10
from helpers.decoding import greedy_decode
from helpers.training import BOS, EOS, VOCAB, number_to_words, rate, to_tokens
from helpers.transformer import Transformer

WARMUP = 50
SCHEDULES = {
    "recipe": lambda s, d: rate(s, d, WARMUP),
    "no warm-up": lambda s, d: rate(max(s, WARMUP), d, WARMUP),
    "no decay": lambda s, d: rate(min(s, WARMUP), d, WARMUP),
    "constant peak": lambda s, d: rate(WARMUP, d, WARMUP),
}
NORMS = {"post-norm": False, "pre-norm": True}
OUT = pathlib.Path(__file__).parent / "results" / "warmup_ablation.json"


def run(seed: int, schedule: str, norm: str, steps: int = 300, d: int = 32) -> dict:
    """One training run of notebook 10's section 10 with the given schedule and norm placement."""
    start = time.perf_counter()
    V, bos_id, eos_id = len(VOCAB), VOCAB.index(BOS), VOCAB.index(EOS)
    test, test_batch, g = section_10_start(seed)
    model = Transformer(
        V, V, d_model=d, num_heads=4, num_layers=1, d_ff=64, dropout=0.1, max_len=16, norm_first=NORMS[norm]
    )
    train_section_10(model, steps, g, test, bos_id, lambda step: SCHEDULES[schedule](step, d))
    decoded = greedy_decode(model, test_batch["src"], bos_id, eos_id, 8, test_batch["src_mask"])
    exact = sum(to_tokens(ids) == number_to_words(n) for ids, n in zip(decoded, test, strict=True)) / len(test)
    return {
        "seed": seed,
        "norm": norm,
        "schedule": schedule,
        "exact": exact,
        "perplexity": held_out_perplexity(model, test_batch, bos_id),
        "seconds": round(time.perf_counter() - start, 2),
    }


def summary(runs: list[dict]) -> str:
    """Mean and spread (sample standard deviation) of exact match over seeds, one line per variant."""
    lines = [f"{'norm':10s} {'schedule':14s} {'exact match: mean ± sd (min-max)':36s} perplexity: mean"]
    for norm in NORMS:
        for schedule in SCHEDULES:
            rows = [r for r in runs if r["norm"] == norm and r["schedule"] == schedule]
            exact = torch.tensor([r["exact"] for r in rows], dtype=torch.float64)
            ppl = sum(r["perplexity"] for r in rows) / len(rows)
            spread = exact.std().item() if len(rows) > 1 else 0.0
            lines.append(
                f"{norm:10s} {schedule:14s} {exact.mean():6.1%} ± {spread:5.1%} ({exact.min():.1%}-{exact.max():.1%})"
                f"{'':10s}{ppl:.3f}"
            )
    return "\n".join(lines)


def main() -> None:
    settings = [(schedule, norm) for norm in NORMS for schedule in SCHEDULES]
    sweep_and_save(__doc__, 10, settings, run, summary, OUT, warmup_steps=WARMUP)


if __name__ == "__main__":
    main()
