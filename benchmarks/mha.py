"""Training-path speed: helpers.MultiHeadAttention vs torch.nn.MultiheadAttention.

Forward plus backward of self-attention, both modules with need_weights=False
and the same weights, timed side by side in one process with interleaved runs;
the table shows median times and the median of the per-round ratios. A third
column times the bare fused kernel F.scaled_dot_product_attention on the
already-projected heads (no projections), as a floor. The last row times our
need_weights=True path (the one used for plots), which materialises the weights.

Run from the repository root:
    python -m benchmarks.mha                  # the issue's setting: B=8, n=512, d_model=512, 8 heads
    python -m benchmarks.mha --lengths 128 256 512 1024 --rounds 15
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from helpers.attention import MultiHeadAttention
from helpers.reference import torch_multihead_attention


def time_once(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def bench(B: int, n: int, d_model: int, heads: int, rounds: int) -> dict[str, float]:
    torch.manual_seed(0)
    ours = MultiHeadAttention(d_model, heads).train()
    ref = torch_multihead_attention(ours).train()
    x = torch.randn(B, n, d_model, requires_grad=True)
    d_k = d_model // heads
    q, k, v = (torch.randn(B, heads, n, d_k, requires_grad=True) for _ in range(3))

    def step_ours():
        out, _ = ours(x, x, x, need_weights=False)
        out.sum().backward()

    def step_ours_weights():
        out, _ = ours(x, x, x, need_weights=True)
        out.sum().backward()

    def step_torch():
        out, _ = ref(x, x, x, need_weights=False)
        out.sum().backward()

    def step_kernel():
        F.scaled_dot_product_attention(q, k, v).sum().backward()

    steps = {"ours": step_ours, "torch": step_torch, "kernel": step_kernel, "ours_weights": step_ours_weights}
    for step in steps.values():  # warm-up
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(rounds):
        # Alternate the order each round so neither module always runs first.
        order = ["ours", "torch"] if r % 2 == 0 else ["torch", "ours"]
        for name in [*order, "kernel", "ours_weights"]:
            times[name].append(time_once(steps[name]))
    ratio = statistics.median(a / b for a, b in zip(times["ours"], times["torch"], strict=True))
    ratio_w = statistics.median(a / b for a, b in zip(times["ours_weights"], times["torch"], strict=True))
    return {name: statistics.median(t) * 1e3 for name, t in times.items()} | {"ratio": ratio, "ratio_w": ratio_w}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, B={args.batch}, "
        f"d_model={args.d_model}, h={args.heads}, forward+backward, median of {args.rounds} interleaved rounds"
    )
    header = (
        f"{'n':>6} | {'ours (ms)':>10} | {'nn.MHA (ms)':>11} | {'ours/nn.MHA':>11} | "
        f"{'F.sdpa only (ms)':>16} | {'ours, weights (ms)':>18} | {'weights/nn.MHA':>14}"
    )
    print(header)
    print("-" * len(header))
    for n in args.lengths:
        r = bench(args.batch, n, args.d_model, args.heads, args.rounds)
        print(
            f"{n:>6} | {r['ours']:>10.1f} | {r['torch']:>11.1f} | {r['ratio']:>11.3f} | "
            f"{r['kernel']:>16.1f} | {r['ours_weights']:>18.1f} | {r['ratio_w']:>14.2f}"
        )


if __name__ == "__main__":
    main()
