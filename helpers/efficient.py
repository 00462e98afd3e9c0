"""Attention that fits in memory: the online softmax, tiled attention, and measuring time and memory.

Eq. 1 of Vaswani et al. (2017, §3.2.1) builds the whole ``(n, m)`` matrix of scores, then of weights,
for every head: its memory grows with the square of the length (§4 and Table 1 count the
``O(n^2 d)`` work of self-attention). The softmax of a row can be computed in one streaming pass over
its entries, keeping only a running maximum and a running sum (the "online normalizer" of Milakov and
Gimelshein, 2018). Attention can then stream over blocks of keys, keeping a running output as well, so
that at most ``(..., n, block_size)`` scores exist at any time. :func:`tiled_attention` is that loop with
every query resident and the keys streamed in blocks, the algorithm Rabe and Staats (2021) write in a
high-level framework (they also split the queries into chunks, and divide by the sum once, at the end).
FlashAttention (Dao et al., 2022) tiles queries and keys so that each tile's work stays in fast on-chip
memory: its claim is about IO, fewer reads and writes of slow memory and hence time, not only the
footprint. It keeps each query's softmax statistics for the backward pass, which recomputes the weights
block by block from them (FlashAttention-2, Dao 2023, keeps one number per query, the logsumexp
``max + log(sum)``); FlashAttention-2 also divides the output once, at the end, where the first version
rescaled it at every block. PyTorch's ``F.scaled_dot_product_attention`` runs a blocked kernel of this
kind on the CPU, in C++. This module writes the idea in plain PyTorch for reading, not for speed.

Masks follow the series' convention: boolean, ``True`` = this query may attend to this key; a query
with no allowed key gets a zero output, never NaN.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch

from helpers.attention import check_mask, check_qkv
from helpers.checks import non_negative_int, positive_int, shape_text

__all__ = [
    "interleaved_timings",
    "online_softmax",
    "online_softmax_update",
    "peak_memory",
    "tiled_attention",
]


def _check_block_size(block_size) -> None:
    positive_int("block_size", block_size)


def _safe_shift(running_max: torch.Tensor) -> torch.Tensor:
    """The running max, with ``-inf`` (nothing seen yet, or every entry masked) replaced by 0.

    Subtracting ``-inf`` would give ``-inf - (-inf) = NaN``; subtracting 0 instead leaves
    ``exp(-inf - 0) = 0``, which is right: those entries contribute nothing.
    """
    return running_max.masked_fill(running_max == -math.inf, 0.0)


def online_softmax_update(
    running_max: torch.Tensor, running_sum: torch.Tensor, block: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold one block of a row into the running statistics of its softmax.

    ``running_max (...)`` is the largest entry seen so far and ``running_sum (...)`` the sum of
    ``exp(entry - running_max)`` over the entries seen so far; ``block (..., b)`` holds the next ``b``
    entries of each row. Returns the new ``(max, sum)``. The old sum was taken relative to the old max,
    so it is rescaled by ``exp(old_max - new_max) <= 1`` before the block's own terms are added:

        new_max = max(old_max, max(block))
        new_sum = old_sum * exp(old_max - new_max) + sum(exp(block - new_max))

    Start from ``max = -inf`` and ``sum = 0``. Entries equal to ``-inf`` (masked) add nothing.
    """
    for name, t in (("running_max", running_max), ("running_sum", running_sum), ("block", block)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if block.dim() < 1 or running_max.shape != block.shape[:-1] or running_sum.shape != running_max.shape:
        raise ValueError(
            f"running_max {tuple(running_max.shape)} and running_sum {tuple(running_sum.shape)} must both have "
            f"the shape of block {tuple(block.shape)} without its last dimension"
        )
    new_max = torch.maximum(running_max, block.amax(dim=-1))  # (...)
    shift = _safe_shift(new_max)
    rescale = torch.exp(running_max - shift)  # exp(old_max - new_max): the old terms, re-expressed
    new_sum = running_sum * rescale + torch.exp(block - shift[..., None]).sum(dim=-1)
    return new_max, new_sum


def online_softmax(x: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    """``softmax(x, dim=-1)`` computed by streaming over blocks of ``block_size`` entries per row.

    A first pass keeps only the running max and sum of each row (:func:`online_softmax_update`);
    a second pass writes ``exp(x - max) / sum``. A row whose entries are all ``-inf`` (fully masked)
    gives zeros, where ``torch.softmax`` gives NaN.
    """
    if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] == 0:
        got = shape_text(x, dtype=False)
        raise ValueError(f"x must be a tensor with at least one entry in its last dimension, got {got}")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    _check_block_size(block_size)
    running_max = torch.full(x.shape[:-1], -math.inf, dtype=x.dtype, device=x.device)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, x.shape[-1], block_size):
        running_max, running_sum = online_softmax_update(running_max, running_sum, x[..., start : start + block_size])
    total = running_sum.masked_fill(running_sum == 0, 1.0)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    return torch.exp(x - _safe_shift(running_max)[..., None]) / total[..., None]


def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    block_size: int = 128,
) -> torch.Tensor:
    """Eq. 1, ``softmax(Q K^T / sqrt(d_k)) V``, one block of ``block_size`` keys at a time.

    ``query (..., n, d_k)``, ``key (..., m, d_k)``, ``value (..., m, d_v)`` (leading dimensions
    broadcast) -> ``output (..., n, d_v)``; the weights are never returned, because they never exist
    whole. For each block of keys, the scores ``(..., n, block_size)`` are computed, the running max and
    sum of each query's row are updated as in :func:`online_softmax_update`, and the running output is
    rescaled by the same factor before the block's ``exp(scores - max) @ value`` is added. The output
    is divided by the running sum at the end. So at most one block of scores and weights exists at a
    time, plus the running ``(..., n, 1)`` max and sum and the ``(..., n, d_v)`` output.

    ``mask``: boolean, broadcastable to ``(..., n, m)``, ``True`` = may attend. A query with no allowed
    key gets a zero output, as ``F.scaled_dot_product_attention`` gives on the CPU in PyTorch 2.13 (older
    versions, before 2.5, and some GPU kernels gave NaN there; do not rely on it elsewhere). ``is_causal=True``
    lets query ``i`` see keys ``j <= i`` and needs ``n == m`` (with ``n != m``, PyTorch aligns the
    triangle to the top left, which is wrong for the last ``n`` queries of a longer sequence: use
    ``mask=helpers.masks.causal_mask(n, past=m - n)`` for those). Differentiable, but the backward
    pass keeps every block for the gradient, so it saves memory in the forward pass only (FlashAttention and
    Rabe and Staats instead recompute the blocks in the backward pass).
    """
    scores_shape = check_qkv(query, key, value)
    check_mask(mask, scores_shape)
    _check_block_size(block_size)
    if not isinstance(is_causal, bool):
        raise ValueError(f"is_causal must be True or False, got {is_causal!r}")
    n, m = scores_shape[-2], scores_shape[-1]
    if is_causal and mask is not None:
        raise ValueError("pass either mask or is_causal=True, not both (put the causal part in the mask)")
    if is_causal and n != m:
        raise ValueError(
            f"is_causal=True needs as many queries as keys, got n={n} queries and m={m} keys; for the last "
            f"n queries of a sequence of m, pass mask=causal_mask({n}, past={m - n}) (aligned to the lower right)"
        )

    batch = scores_shape[:-2]
    q = query * (1.0 / math.sqrt(query.shape[-1]))  # scale once, not every block
    running_max = torch.full((*batch, n, 1), -math.inf, dtype=q.dtype, device=q.device)
    running_sum = torch.zeros((*batch, n, 1), dtype=q.dtype, device=q.device)
    out = torch.zeros((*batch, n, value.shape[-1]), dtype=q.dtype, device=q.device)
    rows = torch.arange(n, device=q.device)[:, None]  # (n, 1) query positions, for is_causal
    for start in range(0, m, block_size):
        stop = min(start + block_size, m)
        scores = q @ key[..., start:stop, :].transpose(-2, -1)  # (..., n, b): one block of scores
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:stop], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, stop, device=q.device) > rows, -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))  # (..., n, 1)
        shift = _safe_shift(new_max)
        rescale = torch.exp(running_max - shift)  # <= 1: the earlier blocks, re-expressed
        weights = torch.exp(scores - shift)  # (..., n, b), unnormalised
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ value[..., start:stop, :]  # (..., n, d_v)
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)  # no allowed key: 0 / 1 = 0


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to /dev/null: the profiler's C++ side prints a timestamped line to it."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def peak_memory(fn: Callable, *args, **kwargs) -> tuple[object, int]:
    """Run ``fn(*args, **kwargs)`` and return ``(its result, peak bytes of tensor memory it allocated)``.

    Measured, not computed: PyTorch's profiler records every allocation and release of tensor memory
    on the CPU (``profile_memory=True``); the peak is the highest point of the running total of those
    made during the call, above what existed before it (so the inputs do not count, the outputs do).
    Run under ``torch.no_grad()`` to leave out what autograd keeps for a backward pass. It counts
    tensors only, not Python objects, and it is deterministic: the same call gives the same bytes.
    The same timeline is behind the profiler's ``export_memory_timeline``.

    It reads that timeline through two private PyTorch APIs, ``torch.profiler._memory_profiler.Action``
    and ``profile._memory_profile()``, which the pinned torch version protects; whoever bumps torch checks
    them (notebook 11, section 1, checks its peaks against a prediction, to the byte).
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import Action

    with (
        _quiet_stderr(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof,
    ):
        result = fn(*args, **kwargs)
    with _quiet_stderr():
        timeline = prof._memory_profile().timeline  # (time, action, (tensor, version), bytes), in order of time
    current = peak = 0
    for _, action, _, size in sorted(timeline, key=lambda event: event[0]):
        if action == Action.CREATE:
            current += size
        elif action == Action.DESTROY:
            current -= size
        peak = max(peak, current)
    return result, peak


def interleaved_timings(fns: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median wall-clock seconds of each function of no arguments, the functions run in turn.

    Each round calls every function once, in the order given; ``warmup`` rounds are run first and not
    counted. Interleaving spreads a slow moment of the machine over all functions instead of one, and
    the median ignores a single slow round. Times vary with the machine and its load: compare them
    with each other, in one run, not with numbers from elsewhere.
    """
    if not isinstance(fns, dict) or not fns or not all(callable(f) for f in fns.values()):
        raise ValueError("fns must be a non-empty dict of name -> function of no arguments")
    positive_int("repeats", repeats)
    non_negative_int("warmup", warmup)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(warmup + repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            if round_ >= warmup:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}
