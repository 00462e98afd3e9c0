"""The warm-up benchmark trains exactly what notebook 10, section 10, trains live.

Notebook 10 prints the stored table of `benchmarks/warmup_ablation.py` next to its own `toy_run`, and says the
benchmark runs the same training over more seeds. This runs both for a few steps, from the same seed, and requires
the same numbers, so that neither can drift from the other unnoticed.
"""

import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from helpers.decoding import greedy_decode
from helpers.training import BOS, EOS, VOCAB, make_translation_batch, number_to_words, rate, sample_numbers, to_tokens
from helpers.transformer import Transformer, shift_right

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import warmup_ablation  # noqa: E402


def _notebook_toy_run():
    cells = json.loads((ROOT / "notebooks" / "10_training_and_decoding.ipynb").read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if "def toy_run" in "".join(c["source"]))
    source = source[: source.index("\nlive = ")]  # the definitions, not the two full live runs
    namespace = {
        "torch": torch,
        "F": F,
        "Transformer": Transformer,
        "rate": rate,
        "sample_numbers": sample_numbers,
        "make_translation_batch": make_translation_batch,
        "number_to_words": number_to_words,
        "shift_right": shift_right,
        "greedy_decode": greedy_decode,
        "to_tokens": to_tokens,
        "V": len(VOCAB),
        "bos_id": VOCAB.index(BOS),
        "eos_id": VOCAB.index(EOS),
    }
    exec(source, namespace)
    return namespace["toy_run"]


@pytest.mark.parametrize(("schedule", "norm"), [("no warm-up", "post-norm"), ("no decay", "pre-norm")])
def test_the_benchmark_trains_what_the_notebook_trains(schedule, norm):
    toy_run = _notebook_toy_run()
    exact, perplexity = toy_run(seed=3, schedule=schedule, norm_first=warmup_ablation.NORMS[norm], steps=8)
    stored = warmup_ablation.run(3, schedule, norm, steps=8)
    assert (exact, perplexity) == (stored["exact"], stored["perplexity"])
    assert set(warmup_ablation.SCHEDULES) == {"recipe", "no warm-up", "no decay", "constant peak"}
