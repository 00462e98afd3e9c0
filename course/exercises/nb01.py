"""Notebook 01, scaled dot-product attention: the checkers of exercises 01.x and their classic mistakes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch

from helpers.attention import scaled_dot_product_attention

from .engine import (
    Case,
    ErrorHint,
    Mistake,
    Verdict,
    counts_attempts,
    own_source,
    raising_line,
    random_qkv,
    register_hints,
    run_checks,
)


def attention_variant(query, key, value, *, dim=-1, scale=None, softmax=True, scale_after=False):
    d_k = query.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale(d_k)
    scores = query @ key.transpose(-2, -1)
    if scale_after:
        weights = torch.softmax(scores, dim=dim) / scale
    else:
        weights = torch.softmax(scores / scale, dim=dim) if softmax else scores / scale
    return weights @ value, weights


SOFTMAX_AXIS = (
    "softmax over the wrong axis (dim=1 or dim=-2) instead of the key axis (dim=-1): on (batch, n, m) scores "
    "the columns of your weights sum to 1, the rows must. dim=-1 is right for any number of leading axes."
)
NO_SCALING = "the scores are not divided by sqrt(d_k) (§3.2.1, Eq. 1)."

ATTENTION_MISTAKES = [
    Mistake("softmax over queries", lambda q, k, v: attention_variant(q, k, v, dim=-2), SOFTMAX_AXIS),
    Mistake("softmax over queries", lambda q, k, v: attention_variant(q, k, v, dim=1), SOFTMAX_AXIS),
    Mistake(
        "outputs swapped",
        lambda q, k, v: attention_variant(q, k, v)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    Mistake("no scaling", lambda q, k, v: attention_variant(q, k, v, scale=lambda d_k: 1.0), NO_SCALING),
    Mistake(
        "scaled by d_k",
        lambda q, k, v: attention_variant(q, k, v, scale=lambda d_k: d_k),
        "the scores are divided by d_k instead of sqrt(d_k).",
    ),
    Mistake(
        "scaled by sqrt(d_v)",
        lambda q, k, v: attention_variant(q, k, v, scale=lambda d_k: math.sqrt(v.shape[-1])),
        "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k = query.shape[-1], not the "
        "values' width.",
    ),
    Mistake(
        "no softmax",
        lambda q, k, v: attention_variant(q, k, v, softmax=False),
        "the weights are the scaled scores themselves: apply torch.softmax(scores, dim=-1) so each query's weights "
        "are positive and sum to 1 over the keys.",
    ),
    Mistake(
        "scaled after the softmax",
        lambda q, k, v: attention_variant(q, k, v, scale_after=True),
        "the weights are divided by sqrt(d_k) after the softmax, so rows no longer sum to 1: divide the scores "
        "before the softmax, softmax(QK^T / sqrt(d_k)).",
    ),
    Mistake(
        "softmax over dim=0",
        lambda q, k, v: attention_variant(q, k, v, dim=0),
        "softmax(dim=0) normalises over the first axis: on unbatched (n, m) scores that is the query axis, and "
        "with a batch (or heads) in front it mixes different sequences. Each query's weights must sum to 1 over "
        "the keys, the last axis: dim=-1, right for any number of leading axes.",
    ),
]


_TRANSPOSE_1_2_ERROR = ErrorHint(
    "transpose(1, 2) on unbatched input",
    lambda error: (
        isinstance(error, IndexError)
        and "Dimension out of range" in str(error)
        and "transpose(1,2)" in raising_line(error)
    ),
    "transpose(1, 2) assumes a batch axis in front, and the first case has none (query and key are (n, d_k)): "
    "transpose(-2, -1) swaps the last two axes for any number of leading axes.",
)


DOT_T_ERROR = ErrorHint(
    ".T on batched input",
    lambda error: isinstance(error, RuntimeError) and bool(re.search(r"\.T\b", own_source(error))),
    "`.T` reverses all the axes of a tensor: it is the transpose only of a 2-D one. On a batched key "
    "(B, m, d_k) it gives (d_k, m, B), not (B, d_k, m), so the product fails from the first batched case on "
    "(PyTorch also warns that .T on other than 2 dimensions is deprecated). Swap only the last two axes, "
    "key.transpose(-2, -1) (or key.mT), which works for any number of leading axes.",
)

_ATTENTION_HINTS = register_hints(
    "01.1",
    "Eq. 1 (§3.2.1): score every query against every key with a dot product, divide by sqrt(d_k), turn each "
    "query's scores into weights with a softmax over the keys (the last axis), and return the weighted average "
    "of the values together with the weights. Use only the last two axes, so any leading axes ride along. To see "
    "a difference, print weights.sum(-1): each query's weights sum to 1, over the keys.",
    "key.transpose(-2, -1) swaps the last two axes whatever comes before them (key.T reverses every axis of a "
    "batched key), so query @ key.transpose(-2, -1) is (..., n, m); torch.softmax(..., dim=-1) normalises each "
    "query's row; weights @ value is (..., n, d_v).",
    "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., n, m)\n"
    "weights = torch.softmax(scores, dim=-1)  # each query's weights sum to 1 over the keys\n"
    "return weights @ value, weights  # (..., n, d_v), (..., n, m)",
)


@counts_attempts
def check_attention(attention: Callable) -> Verdict:
    """Exercise 01.1: ``attention(query, key, value) -> (output, weights)``, Eq. 1 without a mask."""
    cases = [
        Case("3 queries, 5 keys, d_k=16", random_qkv(1, (), 3, 5, 16, 4)),
        Case("batch of 2, 4 queries, 4 keys, d_k=2", random_qkv(0, (2,), 4, 4, 2, 3)),
        Case("batch of 2 x 3 heads, 4 queries, 6 keys, d_k=8", random_qkv(2, (2, 3), 4, 6, 8, 5)),
    ]
    return run_checks(
        "Exercise 01.1 attention",
        attention,
        reference=scaled_dot_product_attention,
        cases=cases,
        mistakes=ATTENTION_MISTAKES,
        hints=_ATTENTION_HINTS,
        result_names=("output", "weights"),
        error_hints=(_TRANSPOSE_1_2_ERROR, DOT_T_ERROR),
        input_names=("query", "key", "value"),
    )
