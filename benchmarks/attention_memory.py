"""Time and peak memory of one attention layer's forward pass: naive Eq. 1, tiled, and F.sdpa.

For each length n, self-attention of B sequences with h heads of size d_k (defaults B=1, h=8, d_k=64, float32, CPU,
forward only under torch.no_grad()) is computed three ways:

- naive: helpers.attention.scaled_dot_product_attention, Eq. 1 of Vaswani et al. (2017, §3.2.1) with the whole
  (B, h, n, n) score and weight matrices;
- tiled: helpers.efficient.tiled_attention, one block of keys at a time (block 128) with a running max, sum and output;
- sdpa: PyTorch's F.scaled_dot_product_attention, whose CPU kernel runs the same blocked idea in C++.

Time: the three run in turn in each round (helpers.efficient.interleaved_timings, one warm-up round), the table gives
the medians. Peak memory: helpers.efficient.peak_memory (torch.profiler's memory timeline; tensor bytes allocated
during one call above the inputs, the output included), one call each. Next to the naive peak the table prints the
predicted bytes of the scores and weights, 2 * B * h * n^2 * 4. Naive is skipped at a length whose predicted bytes
exceed --max-naive-gib. The tiled output is checked against F.sdpa's (max abs difference <= 1e-4, else an error).

Times depend on the machine, its load and the thread count (printed in the header and stored; by default torch's,
which follows OMP_NUM_THREADS; --threads sets it). Peak memory does not depend on the load, and that of naive and
tiled attention not on the thread count either; F.scaled_dot_product_attention's working buffers grow with it.

Run from the repository root:
    OMP_NUM_THREADS=1 python -m benchmarks.attention_memory   # n = 512 ... 8192: about 3 minutes on one core
    python -m benchmarks.attention_memory --lengths 512 1024 --rounds 3 --no-save

Writes benchmarks/results/attention_memory.json (settings, torch version, thread count, rows) unless --no-save.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

from benchmarks.common import parse_timing_args, record_header, write
from helpers.attention import scaled_dot_product_attention
from helpers.efficient import interleaved_timings, peak_memory, tiled_attention

OUT = pathlib.Path(__file__).parent / "results" / "attention_memory.json"
MIB = 2**20


def predicted_naive_bytes(B: int, h: int, n: int, itemsize: int = 4) -> int:
    """Bytes of the (B, h, n, n) scores plus the weights of the same shape (float32: 4 bytes each)."""
    return 2 * B * h * n * n * itemsize


def bench(n: int, args) -> dict:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(args.batch, args.heads, n, args.d_k, generator=g) for _ in range(3))
    predicted = predicted_naive_bytes(args.batch, args.heads, n)
    run_naive = predicted <= args.max_naive_gib * 2**30

    methods = {
        "naive": lambda: scaled_dot_product_attention(q, k, v)[0],
        "tiled": lambda: tiled_attention(q, k, v, block_size=args.block_size),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    if not run_naive:
        del methods["naive"]

    with torch.no_grad():
        peaks, outputs = {}, {}
        for name, fn in methods.items():
            outputs[name], peaks[name] = peak_memory(fn)
        err = (outputs["tiled"] - outputs["sdpa"]).abs().max().item()
        if err > 1e-4:
            raise RuntimeError(f"n={n}: tiled_attention differs from F.scaled_dot_product_attention by {err:.2e}")
        del outputs
        times = interleaved_timings(methods, repeats=args.rounds, warmup=1)

    row = {
        "n": n,
        "predicted_naive_mib": predicted / MIB,
        "naive_ms": times["naive"] * 1e3 if run_naive else None,
        "tiled_ms": times["tiled"] * 1e3,
        "sdpa_ms": times["sdpa"] * 1e3,
        "naive_mib": peaks["naive"] / MIB if run_naive else None,
        "tiled_mib": peaks["tiled"] / MIB,
        "sdpa_mib": peaks["sdpa"] / MIB,
        "tiled_max_abs_diff_vs_sdpa": err,
    }
    row["tiled_over_naive_memory"] = peaks["tiled"] / peaks["naive"] if run_naive else None
    row["tiled_over_sdpa_time"] = times["tiled"] / times["sdpa"]
    return row


def fmt(x, spec: str, width: int) -> str:
    return f"{'skipped' if x is None else format(x, spec):>{width}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    parser.add_argument("--batch", type=int, default=1, help="B (default 1)")
    parser.add_argument("--heads", type=int, default=8, help="h (default 8)")
    parser.add_argument("--d-k", type=int, default=64, help="d_k = d_v (default 64)")
    parser.add_argument("--block-size", type=int, default=128, help="tiled attention's block of keys (default 128)")
    parser.add_argument("--rounds", type=int, default=5, help="timed interleaved rounds (default 5)")
    parser.add_argument(
        "--max-naive-gib",
        type=float,
        default=12.0,
        help="skip naive where the predicted scores + weights exceed this (default 12 GiB)",
    )
    args, threads = parse_timing_args(parser, OUT)

    print(
        f"torch {torch.__version__}, {threads} thread(s), float32 CPU forward (no_grad), B={args.batch}, "
        f"h={args.heads}, d_k={args.d_k}, block {args.block_size}, time: median of {args.rounds} interleaved rounds, "
        f"memory: peak tensor bytes above the inputs"
    )
    header = (
        f"{'n':>5} | {'naive ms':>9} | {'tiled ms':>9} | {'sdpa ms':>9} | {'naive MiB':>9} | {'tiled MiB':>9} | "
        f"{'sdpa MiB':>9} | {'tiled/naive memory':>18} | {'tiled/sdpa time':>15} | {'predicted S+W MiB':>17}"
    )
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    rows = []
    for n in args.lengths:
        r = bench(n, args)
        rows.append(r)
        print(
            f"{n:>5} | {fmt(r['naive_ms'], '.1f', 9)} | {r['tiled_ms']:>9.1f} | {r['sdpa_ms']:>9.1f} | "
            f"{fmt(r['naive_mib'], '.1f', 9)} | {r['tiled_mib']:>9.1f} | {r['sdpa_mib']:>9.1f} | "
            f"{fmt(r['tiled_over_naive_memory'], '.4f', 18)} | {r['tiled_over_sdpa_time']:>15.2f} | "
            f"{r['predicted_naive_mib']:>17.1f}",
            flush=True,
        )
    runtime = time.perf_counter() - start
    print(f"total {runtime:.0f} s")

    if not args.no_save:
        result = record_header("attention_memory", sys.argv[1:], threads) | {
            "settings": {
                "batch": args.batch,
                "heads": args.heads,
                "d_k": args.d_k,
                "block_size": args.block_size,
                "rounds": args.rounds,
                "max_naive_gib": args.max_naive_gib,
                "dtype": "float32",
                "device": "cpu",
                "pass": "forward, no_grad",
            },
            "runtime_s": round(runtime, 1),
            "rows": rows,
        }
        write(args.out, result)


if __name__ == "__main__":
    main()
