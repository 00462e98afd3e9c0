"""What sharing key/value heads costs in accuracy: multi-head, grouped-query and multi-query attention, seeds 0-5.

Trains the small model of notebook 10, section 10 (one layer, d_model 32, 4 heads, d_ff 64, dropout 0.1, label
smoothing 0.1, Eq. 3 with warm-up 50, 300 steps of 64 numbers below 1,000) exactly as that section does, once for
each number of key/value heads (4: ordinary multi-head attention; 2: grouped-query; 1: multi-query, with
`Transformer(..., num_kv_heads=...)`) and each seed. For each run it records greedy exact match on the section's 200
held-out three-digit numbers, the parameter count and the bytes of the decoder's key/value cache per target token.
The solutions of notebook 11 (exercise 11.5) print the stored table and re-run seed 0 to check it.

    python benchmarks/shared_kv_heads.py   # about 45 s on one core

Runs with one thread (as the notebooks do), so the stored exact matches are reproducible. Writes
benchmarks/results/shared_kv_heads.json.
"""

from __future__ import annotations

import json
import pathlib
import time

import torch
import torch.nn.functional as F

from helpers.decoder import KVCache
from helpers.decoding import greedy_decode
from helpers.training import BOS, EOS, VOCAB, make_translation_batch, number_to_words, rate, sample_numbers, to_tokens
from helpers.transformer import Transformer, shift_right

SEEDS = range(6)
KV_HEADS = [4, 2, 1]
OUT = pathlib.Path(__file__).parent / "results" / "shared_kv_heads.json"


def run(seed: int, num_kv_heads: int, steps: int = 300, d: int = 32) -> dict:
    V, bos_id, eos_id = len(VOCAB), VOCAB.index(BOS), VOCAB.index(EOS)
    test = sample_numbers(200, torch.Generator().manual_seed(999), min_digits=3, max_digits=3)
    test_batch = make_translation_batch(test)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    model = Transformer(
        V, V, d_model=d, num_heads=4, num_layers=1, d_ff=64, dropout=0.1, max_len=16, num_kv_heads=num_kv_heads
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: rate(s + 1, d, 50))
    for _ in range(steps):
        batch = make_translation_batch(sample_numbers(64, g, exclude=frozenset(test), max_digits=3))
        model.train()
        logits = model(batch["src"], shift_right(batch["tgt"], bos_id), batch["src_mask"])
        loss = F.cross_entropy(logits.flatten(0, 1), batch["tgt"].flatten(), ignore_index=0, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    decoded = greedy_decode(model, test_batch["src"], bos_id, eos_id, 8, test_batch["src_mask"], use_cache=True)
    exact = sum(to_tokens(ids) == number_to_words(n) for ids, n in zip(decoded, test, strict=True)) / len(test)
    cache = KVCache()
    model.eval()
    with torch.no_grad():
        memory, _ = model.encode(test_batch["src"][:1])
        model.decode(torch.tensor([[bos_id]]), memory, cache=cache)  # one sentence, one target token
    return {
        "seed": seed,
        "num_kv_heads": num_kv_heads,
        "exact": exact,
        "parameters": sum(p.numel() for p in model.parameters()),
        "self_cache_bytes_per_token": cache.nbytes("self"),
    }


def main() -> None:
    torch.set_num_threads(1)
    start = time.perf_counter()
    runs = []
    for seed in SEEDS:
        for h_kv in KV_HEADS:
            runs.append(run(seed, h_kv))
            print(runs[-1], flush=True)
    print(
        f"\n{'num_kv_heads':>12} | exact match, seeds {SEEDS.start}-{SEEDS.stop - 1} | mean   | parameters | cache B/token"
    )
    for h_kv in KV_HEADS:
        mine = [r for r in runs if r["num_kv_heads"] == h_kv]
        exact = [r["exact"] for r in mine]
        print(
            f"{h_kv:12d} | {' '.join(f'{e:5.1%}' for e in exact)} | {sum(exact) / len(exact):5.1%} | "
            f"{mine[0]['parameters']:10d} | {mine[0]['self_cache_bytes_per_token']:6d}"
        )
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/shared_kv_heads.py",
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "runtime_s": round(time.perf_counter() - start, 1),
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )
    print("wrote", OUT)


if __name__ == "__main__":
    main()
