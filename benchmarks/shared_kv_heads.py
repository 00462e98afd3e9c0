"""What sharing the decoder's key/value heads costs in accuracy: multi-head, grouped-query and multi-query attention.

Trains the small model of notebook 10, section 10 (one layer, d_model 32, 4 heads, d_ff 64, dropout 0.1, label
smoothing 0.1, Eq. 3 with warm-up 50, 300 steps of 64 numbers below 1,000) exactly as that section does, once for
each number of key/value heads (4: ordinary multi-head attention; 2: grouped-query; 1: multi-query) and each seed.
`Transformer(..., num_kv_heads=...)` shares keys and values in the decoder's self- and cross-attention only, as
Ainslie et al. (2023) do; the encoder stays multi-head in every run, so the runs differ only where the cache is.
For each run it records greedy exact match on the section's 200 held-out three-digit numbers, the held-out
perplexity (exp of the mean per-token unsmoothed cross-entropy, eval mode), the parameters of each stack and the
bytes of the decoder's key/value cache per target token. Exercise 11.5's solution prints the stored table (means and
spreads over seeds) and asserts its properties.

    python -m benchmarks.shared_kv_heads                 # seeds 0-19: 60 runs, 4 minutes on an idle core, 12 loaded
    python -m benchmarks.shared_kv_heads --seeds 0 1 2   # other seeds

Runs with one thread, as the notebooks do. One run's numbers depend on the CPU's kernels as much as on the seed
(another CPU gives another trajectory), so read the table by its means and spreads. Writes
benchmarks/results/shared_kv_heads.json.
"""

from __future__ import annotations

import pathlib
import time

import torch

from benchmarks.common import held_out_perplexity, section_10_start, sweep_and_save, train_section_10
from helpers.decoder import KVCache
from helpers.decoding import greedy_decode
from helpers.training import BOS, EOS, VOCAB, number_to_words, rate, to_tokens
from helpers.transformer import Transformer

KV_HEADS = [4, 2, 1]
OUT = pathlib.Path(__file__).parent / "results" / "shared_kv_heads.json"


def run(seed: int, num_kv_heads: int, steps: int = 300, d: int = 32) -> dict:
    """One training run of notebook 10's section 10 with ``num_kv_heads`` key/value heads in the decoder."""
    start = time.perf_counter()
    V, bos_id, eos_id = len(VOCAB), VOCAB.index(BOS), VOCAB.index(EOS)
    test, test_batch, g = section_10_start(seed)
    model = Transformer(
        V, V, d_model=d, num_heads=4, num_layers=1, d_ff=64, dropout=0.1, max_len=16, num_kv_heads=num_kv_heads
    )
    train_section_10(model, steps, g, test, bos_id, lambda step: rate(step, d, 50))
    decoded = greedy_decode(model, test_batch["src"], bos_id, eos_id, 8, test_batch["src_mask"], use_cache=True)
    exact = sum(to_tokens(ids) == number_to_words(n) for ids, n in zip(decoded, test, strict=True)) / len(test)
    model.eval()
    cache = KVCache()
    with torch.no_grad():
        memory, _ = model.encode(test_batch["src"][:1])
        model.decode(torch.tensor([[bos_id]]), memory, cache=cache)  # one sentence, one target token
    return {
        "seed": seed,
        "num_kv_heads": num_kv_heads,
        "exact": exact,
        "perplexity": held_out_perplexity(model, test_batch, bos_id),
        "parameters": sum(p.numel() for p in model.parameters()),
        "encoder_parameters": sum(p.numel() for p in model.encoder.parameters()),
        "decoder_parameters": sum(p.numel() for p in model.decoder.parameters()),
        "self_cache_bytes_per_token": cache.nbytes("self"),
        "seconds": round(time.perf_counter() - start, 2),
    }


def summary(runs: list[dict]) -> str:
    """Mean and spread (sample standard deviation) of exact match and perplexity over seeds, one line per h_kv."""
    lines = [f"{'num_kv_heads':>12} | {'exact match: mean ± sd (min-max)':33} | perplexity: mean ± sd | parameters"]
    for h_kv in KV_HEADS:
        rows = [r for r in runs if r["num_kv_heads"] == h_kv]
        exact = torch.tensor([r["exact"] for r in rows], dtype=torch.float64)
        ppl = torch.tensor([r["perplexity"] for r in rows], dtype=torch.float64)
        sd = (exact.std().item(), ppl.std().item()) if len(rows) > 1 else (0.0, 0.0)
        lines.append(
            f"{h_kv:12d} | {exact.mean():6.1%} ± {sd[0]:5.1%} ({exact.min():5.1%}-{exact.max():6.1%}) | "
            f"{ppl.mean():6.3f} ± {sd[1]:5.3f}       | {rows[0]['parameters']:10d}"
        )
    return "\n".join(lines)


def main() -> None:
    settings = [(h_kv,) for h_kv in KV_HEADS]
    shared_in = "decoder self- and cross-attention (the encoder stays multi-head)"
    sweep_and_save(__doc__, 20, settings, run, summary, OUT, shared_in=shared_in)


if __name__ == "__main__":
    main()
