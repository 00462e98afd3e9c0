"""Notebook 02, masks: the checkers of exercises 02.x and their classic mistakes."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from helpers.attention import scaled_dot_product_attention
from helpers.masks import causal_mask, padding_mask

from .engine import Case, ErrorHint, Mistake, Verdict, counts_attempts, random_qkv, register_hints, run_checks
from .nb01 import DOT_T_ERROR, NO_SCALING, SOFTMAX_AXIS, attention_variant


def _padding_variant(lengths, max_len, *, invert=False, off_by_one=False, flat=False, last=False, greater=False):
    positions = torch.arange(max_len)
    lengths = torch.as_tensor(lengths)
    mask = positions <= lengths[:, None] if off_by_one else positions < lengths[:, None]
    if greater:  # positions > lengths: True at the padding except at j == length
        mask = positions > lengths[:, None]
    if invert:
        mask = ~mask
    if flat:
        return mask
    return mask.unsqueeze(-1) if last else mask.unsqueeze(1)


PADDING_MASK_MISTAKES = [
    Mistake(
        "mask inverted",
        lambda lengths, m: _padding_variant(lengths, m, invert=True),
        "the mask is True at the padding: in this series True means 'may attend' (that inverted meaning is "
        "nn.MultiheadAttention's key_padding_mask).",
    ),
    Mistake(
        "mask inverted",
        lambda lengths, m: _padding_variant(lengths, m, greater=True),
        "the comparison points the wrong way, j > length: the mask is True at the padding (and misses j = "
        "length). Key j is real, True = may attend, when j < length.",
    ),
    Mistake(
        "off by one",
        lambda lengths, m: _padding_variant(lengths, m, off_by_one=True),
        "position j is real when j < length, not j <= length (positions start at 0).",
    ),
    Mistake(
        "no query axis",
        lambda lengths, m: _padding_variant(lengths, m, flat=True),
        "the values are right but the shape is (B, m); add the query axis with .unsqueeze(1) so the mask "
        "broadcasts against scores of shape (B, n, m).",
    ),
    Mistake(
        "query axis last",
        lambda lengths, m: _padding_variant(lengths, m, last=True),
        "the values are right but the new axis is last, (B, m, 1): it must be in the middle, (B, 1, m), so the "
        "mask is the same for every query and varies over the keys. Use .unsqueeze(1).",
    ),
]


_LIST_ERROR = ErrorHint(
    "lengths is a list",
    lambda error: isinstance(error, (TypeError, AttributeError)) and "list" in str(error),
    "`lengths` is a Python list, which has no tensor indexing (`lengths[:, None]`) and no tensor methods: "
    "convert it first, `lengths = torch.as_tensor(lengths)`.",
)


_LENGTHS_ROW_ERROR = ErrorHint(
    "lengths not a column",
    lambda error: isinstance(error, RuntimeError) and "must match the size of tensor" in str(error),
    "the B lengths and the max_len positions were compared as two rows, which do not broadcast: lengths must be "
    "a column, torch.as_tensor(lengths)[:, None] of shape (B, 1), so that comparing it with the row "
    "torch.arange(max_len) gives (B, max_len).",
)


_PADDING_MASK_HINTS = register_hints(
    "02.1",
    "key j of sequence b is real when j < lengths[b] (positions start at 0). Compare a row of positions "
    "0 .. max_len - 1 with a column of lengths: broadcasting gives (B, max_len); then add the query axis in the "
    "middle. `lengths` is a Python list: make it a tensor before you compare it with the positions. To see a "
    "difference, print your mask for lengths [2, 0] and max_len 3: row 0 is True, True, False and row 1 all False.",
    "the pieces: torch.arange(max_len), a row (max_len,); torch.as_tensor(lengths)[:, None], a column (B, 1); a "
    "comparison of the two broadcasts to (B, max_len) (which comparison is the exercise); .unsqueeze(1) then "
    "gives (B, 1, max_len).",
    "positions = torch.arange(max_len)  # (max_len,)\n"
    "column = torch.as_tensor(lengths)[:, None]  # (B, 1)\n"
    "return (positions < column).unsqueeze(1)  # (B, max_len) -> (B, 1, max_len), True at the real keys",
)


@counts_attempts
def check_padding_mask(make_padding_mask: Callable) -> Verdict:
    """Exercise 02.1: ``make_padding_mask(lengths, max_len) -> (B, 1, max_len)`` boolean, True at real keys.

    ``lengths`` is a Python list of ``B`` ints."""
    cases = [
        Case("lengths [3, 1, 4], max_len 4", ([3, 1, 4], 4)),
        Case("lengths [2, 5, 0], max_len 6", ([2, 5, 0], 6)),
    ]
    return run_checks(
        "Exercise 02.1 padding mask",
        make_padding_mask,
        reference=padding_mask,
        cases=cases,
        mistakes=PADDING_MASK_MISTAKES,
        hints=_PADDING_MASK_HINTS,
        error_hints=(_LIST_ERROR, _LENGTHS_ROW_ERROR),
        input_names=("lengths", "max_len"),
    )


def _masked_variant(
    query, key, value, mask, *, fill=None, invert=False, zero_empty=True, after=False, scale=True, dim=-1
):
    if invert:
        mask = ~mask
    scores = query @ key.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(query.shape[-1])
    if after:  # softmax over every key, then masked weights set to 0 (no renormalisation)
        weights = torch.softmax(scores, dim=dim) * mask
        return weights @ value, weights
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min if fill is None else fill)
    weights = torch.softmax(scores, dim=dim)
    if zero_empty:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ value, weights


def _no_key_rows(query, key, mask) -> torch.Tensor:
    """(..., n, 1): True for the queries that may attend to no key."""
    shape = torch.broadcast_shapes((*query.shape[:-1], key.shape[-2]), mask.shape)
    return ~torch.broadcast_to(mask, shape).any(-1, keepdim=True)


def _masked_case(name, q, k, v, mask):
    regions = {"the rows of queries with no allowed key (fully masked)": _no_key_rows(q, k, mask)}
    return Case(name, (q, k, v, mask), regions)


def _masked_cases():
    q, k, v = random_qkv(3, (3,), 4, 5, 8, 6)
    q2, k2, v2 = random_qkv(4, (2,), 5, 5, 4, 4)
    return [
        _masked_case("padding mask, lengths [5, 3, 2]", q, k, v, padding_mask([5, 3, 2], 5)),
        _masked_case("causal mask", q2, k2, v2, causal_mask(5)),
        _masked_case("a sequence of length 0 (every key masked)", q, k, v, padding_mask([4, 0, 5], 5)),
    ]


MASK_INVERTED = (
    "the mask's meaning is inverted: True means 'may attend', so fill the scores where the mask is False "
    "(masked_fill(~mask, ...)), not where it is True."
)

MASKED_ATTENTION_MISTAKES = [
    Mistake(
        "outputs swapped",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    Mistake("mask inverted", lambda q, k, v, mask: _masked_variant(q, k, v, mask, invert=True), MASK_INVERTED),
    *(  # inverted and, as in notebook 08's padded_attention, the masked weights not zeroed
        Mistake(
            "mask inverted",
            lambda q, k, v, mask, fill=fill: _masked_variant(q, k, v, mask, invert=True, fill=fill, zero_empty=False),
            MASK_INVERTED + " (Then also zero the masked weights after the softmax, so a query with no allowed key "
            "gets zeros.)",
        )
        for fill in (None, -1e9, -math.inf)
    ),
    Mistake(
        "-inf fill gives NaN",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-math.inf, zero_empty=False),
        "a query with no allowed key gets NaN: either a softmax over scores that are all -inf, or a "
        "renormalisation of masked weights that divides 0 by 0 (w / w.sum(-1, keepdim=True)). Fill the masked "
        "scores with torch.finfo(scores.dtype).min before the softmax, then zero the masked weights after it.",
    ),
    Mistake(
        "uniform weights on a fully masked row",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-1e9, zero_empty=False),
        "masked scores filled with -1e9 (or finfo.min) and the masked weights not zeroed: a query with no allowed "
        "key gets uniform weights over the padding. Set the weights where ~mask to 0.0 after the softmax.",
    ),
    Mistake(
        "mask applied after the softmax",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, after=True),
        "the softmax ran over every key and the masked weights were set to 0 afterwards (softmax(...) * mask), so "
        "the remaining weights no longer sum to 1: the masked keys still took their share. Fill the masked scores "
        "with torch.finfo(scores.dtype).min before the softmax, then zero the masked weights after it.",
    ),
    *(
        Mistake(
            "masked scores filled with 0",
            lambda q, k, v, mask, zero=zero: _masked_variant(q, k, v, mask, fill=0.0, zero_empty=zero),
            "the masked scores were set to 0, an ordinary score (exp(0) = 1), so masked keys still take weight "
            "from the softmax. Fill with a very negative number, torch.finfo(scores.dtype).min.",
        )
        for zero in (True, False)
    ),
    Mistake(
        "mask ignored",
        lambda q, k, v, mask: attention_variant(q, k, v),
        "the mask has no effect: your results equal attention without a mask. Is the result of masked_fill "
        "assigned, scores = scores.masked_fill(~mask, ...)? masked_fill returns a new tensor (masked_fill_ is the "
        "in-place one).",
    ),
    Mistake("no scaling", lambda q, k, v, mask: _masked_variant(q, k, v, mask, scale=False), NO_SCALING),
    Mistake("softmax over queries", lambda q, k, v, mask: _masked_variant(q, k, v, mask, dim=-2), SOFTMAX_AXIS),
]


_BOOLEAN_INDEX_ERROR = ErrorHint(
    "boolean indexing with a broadcast mask",
    lambda error: isinstance(error, IndexError) and "shape of the mask" in str(error),
    "boolean indexing (scores[~mask] = ...) does not broadcast: the mask must have exactly the scores' shape, and "
    "a padding mask is (B, 1, m) against scores of (B, n, m). Use scores.masked_fill(~mask, value), which "
    "broadcasts the mask.",
)


_MASKED_ATTENTION_HINTS = register_hints(
    "02.2",
    "Eq. 1 with a mask (§3.2.3): before the softmax, make every score where the mask is False so negative that "
    "its weight comes out 0, and still finite; after the softmax, make sure a query with no allowed key ends "
    "with all-zero weights (so a zero output), neither NaN nor uniform weights over the padding. To see a "
    "difference, print weights.sum(-1): 1 for a query with an allowed key, 0 for a query with none.",
    "the tools: scores.masked_fill(~mask, value) broadcasts a (B, 1, m) or (n, m) mask over the scores; "
    "torch.finfo(scores.dtype).min is the most negative finite float (no NaN, unlike -inf, on a row with no "
    "allowed key); the same masked_fill with 0.0 on the weights zeroes what the softmax still gave the masked keys.",
    "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., n, m)\n"
    "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # finite: no NaN on a fully masked row\n"
    "weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)  # no allowed key: all zeros\n"
    "return weights @ value, weights",
)


@counts_attempts
def check_masked_attention(masked_attention: Callable) -> Verdict:
    """Exercise 02.2: ``masked_attention(query, key, value, mask) -> (output, weights)``, True = may attend."""
    return run_checks(
        "Exercise 02.2 masked attention",
        masked_attention,
        reference=scaled_dot_product_attention,
        cases=_masked_cases(),
        mistakes=MASKED_ATTENTION_MISTAKES,
        hints=_MASKED_ATTENTION_HINTS,
        result_names=("output", "weights"),
        error_hints=(_BOOLEAN_INDEX_ERROR, DOT_T_ERROR),
        input_names=("query", "key", "value", "mask"),
    )
