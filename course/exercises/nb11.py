"""Notebook 11, efficient attention: the checkers of exercises 11.x and their classic mistakes."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F

from helpers import efficient
from helpers.attention import scaled_dot_product_attention
from helpers.masks import causal_mask

from .engine import (
    Case,
    ErrorHint,
    Mistake,
    Verdict,
    answer_codes,
    counts_attempts,
    register_hints,
    run_checks,
    seeded_generator,
)
from .nb01 import NO_SCALING


def _zero_if_minus_inf(t: torch.Tensor) -> torch.Tensor:
    return t.masked_fill(t == -math.inf, 0.0)


def _online_variant(
    running_max, running_sum, block, *, old="rescaled", terms="new max", safe=True, returns="new max", rows=True
):
    """Exercise 11.1's update, or one classic mistake of it.

    ``old``: the old sum "rescaled" by exp(old_max - new_max), "kept" as it is, "inverted" (exp(new_max - old_max),
    or "inverted, both guarded" with -inf replaced by 0 in both maxima) or "dropped"; ``terms``: the block's entries as exp(entry - "new max"), exp(entry - "block max"), exp(entry)
    ("unshifted") or "raw"; ``safe``: a max of -inf is replaced by 0 before it is subtracted (else -inf - -inf =
    NaN); ``returns``: the "new max", the "old max" or the "stand-in max" (0 where the new max is -inf); ``rows``:
    False takes one max over the whole block, all rows together (``block.max()``)."""
    guard = _zero_if_minus_inf if safe else (lambda t: t)
    block_max = block.amax(dim=-1) if rows else block.max().expand(block.shape[:-1])
    new_max = torch.maximum(running_max, block_max)
    if old == "rescaled":
        carried = running_sum * torch.exp(running_max - guard(new_max))
    elif old == "inverted":
        carried = running_sum * torch.exp(guard(new_max) - running_max)
    elif old == "inverted, both guarded":  # the old max guarded too: no inf, no NaN, just the wrong factor
        carried = running_sum * torch.exp(guard(new_max) - guard(running_max))
    elif old == "kept":
        carried = running_sum
    else:
        carried = torch.zeros_like(running_sum)
    if terms == "new max":
        added = torch.exp(block - guard(new_max)[..., None]).sum(dim=-1)
    elif terms == "block max":
        added = torch.exp(block - guard(block_max)[..., None]).sum(dim=-1)
    elif terms == "unshifted":
        added = torch.exp(block).sum(dim=-1)
    else:
        added = block.sum(dim=-1)
    if returns == "stand-in max":
        return _zero_if_minus_inf(new_max), carried + added
    return (new_max if returns == "new max" else running_max), carried + added


def folded(update: Callable) -> Callable:
    """``update`` called once, or, when a ``block_size`` is given, folded over the row block by block from the
    given state (the way the notebook streams a long row). A result that cannot be folded further is returned as
    it is, so that the verdict names what is wrong with it."""

    def run(running_max, running_sum, block, block_size=None):
        if block_size is None:
            return update(running_max, running_sum, block)
        state = (running_max, running_sum)
        for start in range(0, block.shape[-1], block_size):
            result = update(*state, block[..., start : start + block_size])
            foldable = isinstance(result, (tuple, list)) and len(result) == 2
            if not foldable or not all(isinstance(r, torch.Tensor) and r.shape == running_max.shape for r in result):
                return result
            state = tuple(result)
        return state

    return run


def online_cases() -> list[Case]:
    g = seeded_generator(21)
    inf = math.inf

    def state_after(entries):  # the running (max, sum) after some entries, from the reference
        start = torch.full(entries.shape[:-1], -inf), torch.zeros(entries.shape[:-1])
        return efficient.online_softmax_update(*start, entries)

    earlier = torch.randn(4, 7, generator=g) * 2
    below = state_after(torch.randn(3, 5, generator=g) + 4.0)  # running max about 5 and more
    above = state_after(torch.randn(3, 5, generator=g) - 4.0)
    large_max, large_sum = state_after(torch.randn(3, 6, generator=g) * 3 + torch.tensor([[500.0], [-500.0], [480.0]]))
    masked_max, masked_sum = state_after(torch.tensor([[-inf, -inf, -inf], [0.5, -1.0, 2.0], [-inf, -inf, -inf]]))
    masked_block = torch.tensor([[-inf, -inf, -inf, -inf], [-inf, -inf, -inf, -inf], [1.0, -inf, 3.0, 0.0]])
    fresh_masked = torch.randn(3, 5, generator=g) * 2
    fresh_masked[1] = -inf
    long_row = torch.randn(3, 1000, generator=g) * 4
    long_row[2, ::3] = -inf  # a padding-like row with masked entries in every block
    return [
        Case(
            "a first block: from (-inf, 0), 3 rows of 6 entries",
            (torch.full((3,), -inf), torch.zeros(3), torch.randn(3, 6, generator=g) * 2),
        ),
        Case("4 rows, a block of 5 after 7 entries", (*state_after(earlier), torch.randn(4, 5, generator=g) * 2)),
        Case("the block's max below the running max", (*below, torch.randn(3, 4, generator=g) - 1.0)),
        Case("the block's max above the running max", (*above, torch.randn(3, 4, generator=g) + 1.0)),
        Case(
            "large entries, about +-500 (exp(500) overflows to inf)",
            (large_max, large_sum, torch.randn(3, 5, generator=g) * 3 + torch.tensor([[505.0], [-495.0], [470.0]])),
        ),
        Case(
            "masked entries: row 0 all -inf so far and in this block, row 1 an all -inf block, row 2 a first "
            "real block",
            (masked_max, masked_sum, masked_block),
            regions={"row 0, which has seen only -inf entries": torch.tensor([True, False, False])},
        ),
        Case(
            "a first block from (-inf, 0) in which row 1 is all -inf (a fully masked row of a fresh batch)",
            (torch.full((3,), -inf), torch.zeros(3), fresh_masked),
            regions={"row 1, which has seen only -inf entries": torch.tensor([False, True, False])},
        ),
        Case(
            "3 long rows of 1000 entries folded in blocks of 64 from (-inf, 0): max + log(sum) must equal "
            "torch.logsumexp of the row",
            (torch.full((3,), -inf), torch.zeros(3), long_row, 64),
        ),
    ]


_MINUS_INF_NAN = (
    "a row that has seen only -inf entries (masked) gets NaN: its max is still -inf, and subtracting -inf from -inf "
    "gives NaN. Where the new max is -inf, subtract a finite stand-in (0) instead: every term is then exp(-inf) = 0, "
    "and the row stays at (-inf, 0)."
)


def _online_mistake(key: str, diagnosis: str, guarded: bool = True, **how) -> list[Mistake]:
    """The mistake as written with the -inf guard, and as written without it (then NaN on a masked row too);
    ``guarded=False`` where the guard makes no difference."""
    first = Mistake(key, folded(functools.partial(_online_variant, **how)), diagnosis)
    if not guarded:
        return [first]
    naive = folded(functools.partial(_online_variant, safe=False, **how))
    return [first, Mistake(key, naive, f"{diagnosis} Also, {_MINUS_INF_NAN}")]


ONLINE_MISTAKES = [
    Mistake(
        "-inf - -inf gives NaN",
        folded(functools.partial(_online_variant, safe=False)),
        _MINUS_INF_NAN,
    ),
    *_online_mistake(
        "old sum not rescaled",
        "the old sum is added as it is: it was measured against the old max, so when the block brings a larger "
        "max it must first be multiplied by exp(old_max - new_max), a factor of at most 1.",
        old="kept",
    ),
    *_online_mistake(
        "rescaled the wrong way",
        "the old sum is multiplied by exp(new_max - old_max), the inverse factor (>= 1): re-expressing terms "
        "measured against the old max against the larger new max makes them smaller, exp(old_max - new_max). "
        "(On a row that starts from max -inf the inverse factor is inf, and 0 * inf gives NaN.)",
        guarded=False,
        old="inverted",
    ),
    *_online_mistake(
        "rescaled the wrong way",
        "the old sum is multiplied by exp(new_max - old_max), the inverse factor (>= 1): re-expressing terms "
        "measured against the old max against the larger new max makes them smaller, exp(old_max - new_max).",
        guarded=False,
        old="inverted, both guarded",
    ),
    *_online_mistake(
        "old sum dropped",
        "the new sum holds only the block's terms: the rows' earlier entries are lost. Carry the old sum over, "
        "rescaled by exp(old_max - new_max), and add the block's terms to it.",
        old="dropped",
    ),
    *_online_mistake(
        "block not shifted",
        "the block's terms are exp(entry), not exp(entry - new_max): the sum is then no longer measured against "
        "the max, and exp of a large entry overflows (exp(500) is inf in float32). Subtract the new max first, "
        "so every term is at most 1.",
        terms="unshifted",
    ),
    *_online_mistake(
        "shifted by the block's own max",
        "the block's terms are measured against the block's own max; the running sum is measured against the "
        "new max of the whole row so far (the larger of the old max and the block's), so both the rescaled old "
        "sum and the block's terms must use that one.",
        terms="block max",
    ),
    *_online_mistake(
        "raw entries summed",
        "the block's entries are summed as they are: the normaliser is a sum of exponentials, exp(entry - "
        "new_max), one per entry.",
        terms="raw",
    ),
    *_online_mistake(
        "raw entries summed",
        "the new sum is the plain sum of the block's entries: the normaliser is a sum of exponentials, "
        "exp(entry - new_max), over every entry so far (the old sum, rescaled, plus the block's terms).",
        guarded=False,
        old="dropped",
        terms="raw",
    ),
    *_online_mistake(
        "one max for all rows",
        "the block's max is taken over the whole block, all rows together: each row has its own running max, so "
        "take the max of each row of the block (over its last axis) and compare it with that row's running max.",
        rows=False,
    ),
    *_online_mistake(
        "returned the old max",
        "the max returned is the old one: return the new max, the one the new sum is measured against, so the "
        "next block starts from it.",
        returns="old max",
    ),
    Mistake(
        "masked row's max not -inf",
        folded(functools.partial(_online_variant, returns="stand-in max")),
        "a row that has seen only -inf entries comes back with max 0: the 0 is only a stand-in to subtract inside "
        "the update; the max you return stays -inf, so that the row reads (-inf, 0), nothing seen yet.",
    ),
]


_ONLINE_HINTS = register_hints(
    "11.1",
    "the softmax's normaliser of a row is the sum of exp(entry - max). When a block arrives, the max can only "
    "grow: it becomes the larger of the old max and the block's largest entry, row by row. The old sum was "
    "measured against the old max, so re-express it against the new one (a factor of at most 1) before adding "
    "the block's own terms, measured against the new max too. A row that has seen only -inf entries (masked) "
    "stays (-inf, 0). To see a difference, fold section 2's row of eight numbers in blocks of three and print "
    "max and sum after each block: they must match the printed 3.0 / 1.2174, 6.0 / 1.1963, 6.0 / 1.8211.",
    "the new max is torch.maximum of the running max and block.amax(dim=-1), (R,); the old sum's factor "
    "exp(running_max - new_max) and the block's terms exp(block - new_max[:, None]) (summed over the last axis) "
    "both need a finite stand-in where the new max is -inf (torch.where or masked_fill).",
    "new_max = torch.maximum(running_max, block.amax(dim=-1))  # (R,)\n"
    "shift = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)  # finite where -inf\n"
    "new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift[:, None]).sum(dim=-1)\n"
    "return new_max, new_sum",
)


@counts_attempts
def check_online_softmax_update(online_softmax_update: Callable) -> Verdict:
    """Exercise 11.1: ``online_softmax_update(running_max (R,), running_sum (R,), block (R, b)) -> (new_max, new_sum)``.

    One step of the online softmax (Milakov and Gimelshein, 2018): the running max and the running sum of
    ``exp(entry - max)`` of each row after the next ``b`` entries. Start from ``(-inf, 0)``; an all -inf block leaves
    ``(-inf, 0)`` without NaN. One hidden case folds long rows block by block."""
    fn = online_softmax_update
    return run_checks(
        "Exercise 11.1 the online softmax update",
        folded(fn) if callable(fn) else fn,
        reference=folded(efficient.online_softmax_update),
        cases=online_cases(),
        mistakes=ONLINE_MISTAKES,
        hints=_ONLINE_HINTS,
        result_names=("new_max", "new_sum"),
        answer_code=answer_codes(fn) if callable(fn) else set(),
        input_names=("running_max", "running_sum", "block", "block_size"),
    )


def _cached_variant(
    q_new,
    k_new,
    v_new,
    cache_k,
    cache_v,
    *,
    mask="lower right",
    attend_new=True,
    order="append",
    caches="new",
    scale=None,
    empty_rows="uniform",
    softmax_dim=-1,
):
    """Exercise 11.2's cached attention, or one classic mistake of it.

    ``mask``: "lower right" (query i sees keys j <= t + i), "top left" (j <= i, like is_causal=True), "own key
    excluded" (j < t + i), "inverted" (the lower-right mask's complement, nn.MultiheadAttention's convention) or None;
    ``attend_new``: the new keys take part in the attention; ``order``: new positions "append"ed or "prepend"ed;
    ``caches``: the "new" (extended) or the "old" caches returned; ``scale``: a function of (d_k, d_v);
    ``empty_rows``: a query the mask leaves no key gets "uniform" weights (scores filled with finfo.min) or a "zero"
    output (as F.scaled_dot_product_attention gives on the CPU); ``softmax_dim``: the axis the softmax runs over
    (-2: over the queries)."""
    n, t = q_new.shape[-2], cache_k.shape[-2]
    keys = torch.cat([cache_k, k_new] if order == "append" else [k_new, cache_k], dim=-2)
    values = torch.cat([cache_v, v_new] if order == "append" else [v_new, cache_v], dim=-2)
    k, v = (keys, values) if attend_new else (cache_k, cache_v)
    d_k, d_v = q_new.shape[-1], v_new.shape[-1]
    scores = q_new @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k, d_v))
    has_key = torch.ones(n, 1, dtype=torch.bool)
    if mask is not None and attend_new:
        allowed = {
            "lower right": lambda: causal_mask(n, past=t),
            "top left": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(),
            "own key excluded": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(t - 1),
            "one key ahead": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(t + 1),
            "inverted": lambda: ~causal_mask(n, past=t),
        }[mask]()
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        has_key = allowed.any(-1, keepdim=True)
    out = torch.softmax(scores, dim=softmax_dim) @ v
    if empty_rows == "zero":
        out = out.masked_fill(~has_key, 0.0)
    return (out, keys, values) if caches == "new" else (out, cache_k, cache_v)


def cached_reference(q_new, k_new, v_new, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k_new], dim=-2), torch.cat([cache_v, v_new], dim=-2)
    mask = causal_mask(q_new.shape[-2], past=cache_k.shape[-2])
    return scaled_dot_product_attention(q_new, keys, values, mask)[0], keys, values


_WRONG_AXIS = re.compile(r"Sizes of tensors must match except in dimension (\d+)")

_CAT_AXIS_ERROR = ErrorHint(
    "concatenated along the wrong axis",
    lambda error: bool((found := _WRONG_AXIS.search(str(error))) and found.group(1) != "2"),
    "the cache and the new positions were joined along another axis than the positions: keys and values are "
    "(B, h, positions, d), and the new positions go at the end of axis 2 (dim=-2); the batch, heads and feature "
    "axes keep their sizes.",
)

_STACK_ERROR = ErrorHint(
    "stacked instead of concatenated",
    lambda error: "stack expects each tensor to be equal size" in str(error),
    "torch.stack puts equal-shaped tensors side by side along a new axis; the cache and the new positions have "
    "different numbers of positions and are to be joined along the existing positions axis (a concatenation).",
)


def _square_mask_error(n: int, t: int) -> ErrorHint:
    def matches(error: BaseException) -> bool:
        text = str(error)
        return (
            f"mask of shape ({n}, {n}) does not broadcast" in text
            or f"size of tensor a ({t + n}) must match the size of tensor b ({n}) at non-singleton dimension 3" in text
            or f"size of tensor a ({n}) must match the size of tensor b ({t + n}) at non-singleton dimension 3" in text
        )

    return ErrorHint(
        "square causal mask",
        matches,
        f"the causal mask is square, ({n}, {n}), but the {n} new queries score all {t + n} keys, the {t} cached ones "
        f"and the {n} new ones: the mask is ({n}, {t + n}), with query i allowed keys j <= {t} + i.",
    )


def cached_cases() -> list[Case]:
    g = seeded_generator(22)

    def case(name, B, h, n, t, d_k, d_v):
        q, k, v = (torch.randn(B, h, n, d, generator=g) for d in (d_k, d_k, d_v))
        ck, cv = torch.randn(B, h, t, d_k, generator=g), torch.randn(B, h, t, d_v, generator=g)
        hints = (_square_mask_error(n, t),) if n > 1 and t > 0 else ()
        return Case(name, (q, k, v, ck, cv), error_hints=hints)

    return [
        case("one new position, empty caches (t=0); B=2, h=2, d_k=d_v=8", 2, 2, 1, 0, 8, 8),
        case("one new position after t=5 cached; B=2, h=3, d_k=d_v=8", 2, 3, 1, 5, 8, 8),
        case("a chunk of 3 new positions after t=4 cached; B=1, h=2, d_k=d_v=4", 1, 2, 3, 4, 4, 4),
        case("2 new positions after t=3 cached, d_k=8, d_v=5; B=2, h=2", 2, 2, 2, 3, 8, 5),
        # The prompt: the first call of a generation sees several positions and no cache, and needs the causal mask
        # as much as any later chunk (an answer that masks only when something is cached fails only here).
        case("a prompt: 4 new positions, empty caches (t=0); B=2, h=2, d_k=d_v=4", 2, 2, 4, 0, 4, 4),
    ]


_TOP_LEFT = (
    "the causal mask is aligned to the top left, as F.scaled_dot_product_attention(..., is_causal=True) (or a plain "
    "lower triangle of the (n_new, t + n_new) scores) aligns it: new query i then sees only keys 0 .. i, the oldest "
    "cached positions. The new queries are the last n_new positions of the sequence, so query i may see every "
    "cached key and the new ones up to its own position, keys j <= t + i: a triangle aligned to the bottom right "
    "(causal_mask(n_new, past=t), or torch.nn.attention.bias.causal_lower_right; one new query needs no mask)."
)


_PREPENDED = (
    "the new keys and values are put in front of the cached ones. For a single new query the output is the same "
    "(attention does not depend on the order of its keys), but the caches are out of time order, and with "
    "several new queries the causal mask then hides the wrong keys. Append them at the end of the positions axis."
)
_NEW_LEFT_OUT = (
    "the new queries attend only to the cached keys: each new position must also see the new keys up to and "
    "including its own (a first step, with empty caches, would otherwise have nothing to attend to). Extend "
    "the caches first, then attend over all of them."
)

CACHED_MISTAKES = [
    Mistake("causal mask aligned top-left", lambda *a: _cached_variant(*a, mask="top left"), _TOP_LEFT),
    Mistake(  # no mask for one new query (right), is_causal=True for a chunk (top left): wrong after a cache
        "causal mask aligned top-left",
        lambda *a: _cached_variant(*a, mask="top left" if a[0].shape[-2] > 1 else None),
        _TOP_LEFT,
    ),
    *(
        Mistake(
            "own key excluded",
            lambda *a, empty=empty: _cached_variant(*a, mask="own key excluded", empty_rows=empty),
            "each new query is kept from its own key: query i may attend to the t cached keys and the new ones "
            "up to and including its own position, keys j <= t + i (causal_mask(n_new, past=t)), not only "
            "j < t + i.",
        )
        for empty in ("uniform", "zero")
    ),
    Mistake(
        "causal mask one key ahead",
        lambda *a: _cached_variant(*a, mask="one key ahead"),
        "the causal mask is off by one the other way: each new query also sees the key after its own (j <= t + "
        "i + 1, as causal_mask(n_new, past=t + 1) or tril(diagonal=t + 1) give). Query i may see keys j <= t + i: "
        "causal_mask(n_new, past=t), with t = cache_k.shape[-2] the cached positions.",
    ),
    *(
        Mistake(
            "causal mask inverted",
            lambda *a, empty=empty: _cached_variant(*a, mask="inverted", empty_rows=empty),
            "the mask is inverted, True where a key is hidden (nn.MultiheadAttention's attn_mask convention): "
            "the series' masks, and a boolean attn_mask of F.scaled_dot_product_attention, mean True = may "
            "attend. Pass causal_mask(n_new, past=t) as it is.",
        )
        for empty in ("uniform", "zero")
    ),
    Mistake(
        "no causal mask",
        lambda *a: _cached_variant(*a, mask=None),
        "no causal mask: with several new positions at once, each new query also sees the new positions after "
        "it. Query i may see the t cached keys and the new keys up to and including its own position (keys "
        "j <= t + i); with a single new query no mask is needed.",
    ),
    Mistake(
        "no causal mask on the prompt",
        lambda *a: _cached_variant(*a, mask=None if a[3].shape[-2] == 0 else "lower right"),
        "no causal mask when the caches are empty: the prompt, the first call of a generation, brings several new "
        "positions and nothing cached, and each of them may still see only itself and the positions before it. "
        "Mask whenever there are several new positions, whatever t is (causal_mask(n_new, past=t) with t = 0 is "
        "the plain lower triangle).",
    ),
    Mistake("new keys left out", lambda *a: _cached_variant(*a, attend_new=False), _NEW_LEFT_OUT),
    Mistake("new keys left out", lambda *a: _cached_variant(*a, attend_new=False, caches="old"), _NEW_LEFT_OUT),
    Mistake("new keys prepended", lambda *a: _cached_variant(*a, order="prepend"), _PREPENDED),
    Mistake("new keys prepended", lambda *a: _cached_variant(*a, order="prepend", mask=None), _PREPENDED),
    Mistake(
        "old caches returned",
        lambda *a: _cached_variant(*a, caches="old"),
        "the output is right, but the caches returned are the ones you were given: return them extended by the "
        "new keys and values, so that the next step sees these positions too.",
    ),
    Mistake(
        "caches swapped",
        lambda *a: (lambda out, keys, values: (out, values, keys))(*_cached_variant(*a)),
        "the two caches come back in the wrong order: return (output, cache_k, cache_v), the keys first.",
    ),
    Mistake(
        "scaled by sqrt(d_v)",
        lambda *a: _cached_variant(*a, scale=lambda d_k, d_v: math.sqrt(d_v)),
        "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k, not the values' width.",
    ),
    Mistake("no scaling", lambda *a: _cached_variant(*a, scale=lambda d_k, d_v: 1.0), NO_SCALING),
    Mistake(
        "softmax over queries",
        lambda *a: _cached_variant(*a, softmax_dim=-2),
        "the softmax ran over dim=-2, the new queries, so each key's weights sum to 1 across the queries; with one "
        "new query every weight is 1 and the output is the sum of all the values. Each query's weights over the "
        "keys must sum to 1: softmax over the last axis, dim=-1.",
    ),
]


_CACHED_HINTS = register_hints(
    "11.2",
    "the n_new new positions come after the t cached ones. Extend the cached keys and values with the new "
    "ones, in time order, along the positions axis, and let each new query attend (Eq. 1, §3.2.1) to every "
    "cached key and to the new keys up to and including its own position, never to a later one. Return the "
    "output and the extended caches, which the next step starts from. To see a difference, print the mask you "
    "use for 2 new queries after 3 cached positions: row 0 allows 4 keys, row 1 all 5 (section 6's "
    "lower-right triangle).",
    "the caches grow along the positions axis, dim=-2, the cached positions first (torch.cat); the mask of n_new "
    "queries against t + n_new keys is (n_new, t + n_new) and aligned to the bottom right, causal_mask(n_new, "
    "past=t) from helpers.masks (is_causal=True aligns it to the top left).",
    "keys = torch.cat([cache_k, k_new], dim=-2)  # (B, h, t + n_new, d_k)\n"
    "values = torch.cat([cache_v, v_new], dim=-2)  # (B, h, t + n_new, d_v)\n"
    "mask = causal_mask(q_new.shape[-2], past=cache_k.shape[-2])  # (n_new, t + n_new), from helpers.masks\n"
    "output, _ = scaled_dot_product_attention(q_new, keys, values, mask)  # from helpers.attention\n"
    "return output, keys, values",
)


@counts_attempts
def check_cached_attention(cached_attention: Callable) -> Verdict:
    """Exercise 11.2: ``cached_attention(q_new, k_new, v_new, cache_k, cache_v) -> (output, cache_k, cache_v)``.

    ``q_new, k_new (B, h, n_new, d_k)``, ``v_new (B, h, n_new, d_v)``, ``cache_k (B, h, t, d_k)``, ``cache_v (B, h,
    t, d_v)`` (``t`` may be 0). The new positions come after the cached ones: each new query attends (Eq. 1) to every
    cached key and to the new keys up to its own position; the caches come back with the new keys and values
    appended along the positions axis."""
    return run_checks(
        "Exercise 11.2 attention with a KV cache",
        cached_attention,
        reference=cached_reference,
        cases=cached_cases(),
        mistakes=CACHED_MISTAKES,
        hints=_CACHED_HINTS,
        result_names=("output", "cache_k", "cache_v"),
        error_hints=(_CAT_AXIS_ERROR, _STACK_ERROR),
        input_names=("q_new", "k_new", "v_new", "cache_k", "cache_v"),
    )


def _grouped_variant(q, k, v, *, how="right", scale=None, dim=-1):
    """Exercise 11.3's grouped-query attention, or one classic mistake of it (``how`` the key/value heads are
    given to the query heads: "right" (repeat_interleave), "tiled" (.repeat), "first" (head 0 only) or "mean";
    ``dim``: the softmax's axis)."""
    group = q.shape[1] // k.shape[1]
    if how == "tiled":
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    elif how == "first":
        k, v = k[:, :1], v[:, :1]
    elif how == "mean":
        k, v = k.mean(dim=1, keepdim=True), v.mean(dim=1, keepdim=True)
    else:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    d_k, d_v = q.shape[-1], v.shape[-1]
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k, d_v))
    return torch.softmax(scores, dim=dim) @ v


def grouped_reference(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def _heads_not_matched(h: int, h_kv: int) -> ErrorHint:
    def matches(error: BaseException) -> bool:
        text = str(error)
        return (
            f"size of tensor a ({h}) must match the size of tensor b ({h_kv}) at non-singleton dimension 1" in text
            or f"size of tensor a ({h_kv}) must match the size of tensor b ({h}) at non-singleton dimension 1" in text
            or f"has size {h_kv} for operand 1 which does not broadcast with previously seen size {h}" in text
            or "leading (batch) dimensions do not broadcast" in text
        )

    return ErrorHint(
        "key/value heads not shared out",
        matches,
        f"the {h} query heads met {h_kv} key/value heads, and the two head axes (axis 1) do not broadcast: either "
        "the key/value heads were not repeated, or they were repeated along another axis (repeat_interleave(..., "
        f"dim=2) multiplies the positions, giving (B, {h_kv}, m * {h // h_kv}, d)). Repeat along the heads axis, "
        f"dim=1, so that every query head has its key/value head (here each of the {h_kv} serves {h // h_kv} "
        "consecutive query heads).",
    )


_BATCH2 = re.compile(r"batch2 tensor to be: \[(\d+), (\d+)\] but got: \[(\d+), (\d+)\]")
_MAT2 = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")


def _keys_not_transposed(d_k: int, m: int) -> ErrorHint:
    def matches(error: BaseException) -> bool:
        text = str(error)
        batch2, mat2 = _BATCH2.search(text), _MAT2.search(text)
        return bool(
            (batch2 and (int(batch2.group(2)), int(batch2.group(4))) == (d_k, m))
            or (mat2 and (int(mat2.group(2)), int(mat2.group(3))) == (d_k, m))
        )

    return ErrorHint(
        "keys not transposed",
        matches,
        f"the scores multiplied the queries (..., n, {d_k}) by the keys as they are, (..., {m}, {d_k}): the keys "
        "were not transposed (k.mT.mT, or two transposes, is k itself). The scores are q @ k.transpose(-2, -1), "
        f"(..., n, {d_k}) @ (..., {d_k}, {m}) -> (..., n, {m}).",
    )


def grouped_cases() -> list[Case]:
    g = seeded_generator(23)
    cases = []
    for h, h_kv in ((8, 1), (8, 2), (8, 4), (8, 8), (6, 3)):
        q = torch.randn(2, h, 3, 8, generator=g)
        k, v = torch.randn(2, h_kv, 5, 8, generator=g), torch.randn(2, h_kv, 5, 6, generator=g)
        kind = "multi-query" if h_kv == 1 else "ordinary multi-head" if h_kv == h else "grouped"
        name = f"h={h} query heads, h_kv={h_kv} key/value head{'s' if h_kv > 1 else ''} ({kind}); B=2, n=3, m=5, d_k=8, d_v=6"
        group = h // h_kv
        regions = {  # "only in query heads 4-7, the group of key/value head 1"
            f"query heads {j * group}-{(j + 1) * group - 1}, the group of key/value head {j}": (
                (torch.arange(h) // group == j)[:, None, None]
            )
            for j in range(h_kv)
            if 1 < h_kv < h
        }
        hints = (_heads_not_matched(h, h_kv), _keys_not_transposed(8, 5))
        cases.append(Case(name, (q, k, v), regions, error_hints=hints))
    return cases


GROUPED_MISTAKES = [
    Mistake(
        "key/value heads tiled",
        lambda *a: _grouped_variant(*a, how="tiled"),
        "the key/value heads are tiled (as .repeat does), so query head i uses key/value head i % h_kv: with "
        "h=8 and h_kv=2, query heads 0, 2, 4, 6 share key/value head 0 and 1, 3, 5, 7 share head 1. The "
        "groups are consecutive: query heads 0-3 use key/value head 0 and 4-7 head 1, i // (h // h_kv) "
        "(each key/value head repeated next to itself, as repeat_interleave does).",
    ),
    Mistake(
        "only the first key/value head",
        lambda *a: _grouped_variant(*a, how="first"),
        "every query head uses key/value head 0: query head i uses key/value head i // (h // h_kv), so "
        "each key/value head serves its own group of h // h_kv consecutive query heads.",
    ),
    Mistake(
        "key/value heads averaged",
        lambda *a: _grouped_variant(*a, how="mean"),
        "the key/value heads are averaged into one: they are not mixed, each serves its own group of "
        "h // h_kv consecutive query heads (query head i uses key/value head i // (h // h_kv)).",
    ),
    Mistake(
        "scaled by sqrt(d_v)",
        lambda *a: _grouped_variant(*a, scale=lambda d_k, d_v: math.sqrt(d_v)),
        "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k, not the values' width.",
    ),
    Mistake("no scaling", lambda *a: _grouped_variant(*a, scale=lambda d_k, d_v: 1.0), NO_SCALING),
    Mistake(
        "softmax over queries",
        lambda *a: _grouped_variant(*a, dim=-2),
        "the softmax runs over the query axis (dim=-2): each query's weights must be positive and sum to 1 "
        "over the keys, the last axis of the (n, m) scores: softmax(dim=-1).",
    ),
]


_GROUPED_HINTS = register_hints(
    "11.3",
    "grouped-query attention (Ainslie et al., 2023): the h query heads form h_kv groups of h // h_kv "
    "consecutive heads, and each group shares one key/value head, so query head i uses key/value head i // (h "
    "// h_kv). Each query head then runs Eq. 1 (§3.2.1) as usual, with its own queries. To see a difference, "
    "print, for h = 8 and h_kv = 2, the key/value head each query head reads: 0, 0, 0, 0, 1, 1, 1, 1, not 0, "
    "1, 0, 1, ... (section 8's repeat against repeat_interleave).",
    "give each query head its key/value head by repeating every key/value head h // h_kv times next to itself "
    "along the heads axis (repeat_interleave on dim=1; .repeat tiles them instead, the wrong groups), then Eq. 1 "
    "as in notebook 01.",
    "group = q.shape[1] // k.shape[1]  # h // h_kv query heads share each key/value head\n"
    "k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, m, d)\n"
    "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, h, n, m)\n"
    "return weights @ v",
)


@counts_attempts
def check_grouped_attention(grouped_attention: Callable) -> Verdict:
    """Exercise 11.3: ``grouped_attention(q (B, h, n, d_k), k (B, h_kv, m, d_k), v (B, h_kv, m, d_v)) -> (B, h, n, d_v)``.

    Grouped-query attention (Ainslie et al., 2023; h_kv = 1 is multi-query attention, Shazeer, 2019): query head
    ``i`` uses key/value head ``i // (h // h_kv)``, Eq. 1 without a mask, as
    ``F.scaled_dot_product_attention(q, k, v, enable_gqa=True)``."""
    return run_checks(
        "Exercise 11.3 grouped-query attention",
        grouped_attention,
        reference=grouped_reference,
        cases=grouped_cases(),
        mistakes=GROUPED_MISTAKES,
        hints=_GROUPED_HINTS,
        input_names=("q", "k", "v"),
    )
