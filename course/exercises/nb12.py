"""Notebook 12, a real trained encoder: the checker of exercise 12.1 and its classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.pretrained import mean_pooled_embedding

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator


def _pooling_variant(
    hidden, attention_mask, *, masked=True, clamp=True, normalise=True, tokens_first=False, axis=1, by_n=False
):
    """The reference with one step changed: padding averaged in, the count unclamped or replaced by n, no final
    normalisation, each token's vector normalised before pooling, or the sum taken over another axis."""
    weights = attention_mask.to(hidden.dtype)[..., None] if masked else torch.ones_like(hidden[..., :1])
    if tokens_first:  # every token's vector scaled to length 1 before the mean
        hidden = torch.nn.functional.normalize(hidden, dim=-1)
    if axis != 1:  # the sum over the features: one number per token, (B, n); a per-row count cannot fix that
        return torch.nn.functional.normalize((hidden * weights).sum(dim=axis), dim=-1)
    counts = torch.full_like(weights.sum(dim=1), hidden.shape[1]) if by_n else weights.sum(dim=1)
    mean = (hidden * weights).sum(dim=1) / (counts.clamp(min=1e-9) if clamp else counts)
    return torch.nn.functional.normalize(mean, dim=-1) if normalise else mean


_BEFORE = (
    "each token's vector is scaled to length 1 before the mean, so every token counts alike however long its vector "
    "is, and the result points elsewhere. The model card scales once, at the end: the mean of the raw vectors of the "
    "real tokens first, then that one vector to length 1."
)

POOLING_MISTAKES = [
    Mistake(
        "padding averaged in",
        lambda h, m: _pooling_variant(h, m, masked=False),
        "every position is averaged, the padded ones too: a padded sentence's vector then depends on how long the "
        "other sentences of its batch are. Multiply by the mask before the sum and divide by the number of real "
        "tokens.",
    ),
    Mistake(
        "padding averaged in, not normalised",
        lambda h, m: _pooling_variant(h, m, masked=False, normalise=False),
        "every position is averaged, the padded ones too, and the mean is not scaled to length 1. Multiply by the "
        "mask before the sum, divide by the number of real tokens, then scale each sentence's vector to length 1.",
    ),
    Mistake(
        "NaN on an empty row",
        lambda h, m: _pooling_variant(h, m, clamp=False),
        "a row with no real token gives NaN: its count is 0 and its sum a zero vector, and 0 / 0 is NaN, whether in "
        "the mean (dividing by the count) or in the scaling to length 1 (dividing by the zero vector's length). Clamp "
        "both divisors above 0 (for example .clamp(min=1e-9); torch.nn.functional.normalize clamps the length "
        "itself), so that such a row gives a zero vector.",
    ),
    Mistake(
        "not normalised",
        lambda h, m: _pooling_variant(h, m, normalise=False),
        "the mean of the real tokens is right, but it is not scaled to length 1: the model card's sentence "
        "embedding is L2-normalised, so that a dot product is a cosine similarity.",
    ),
    Mistake(
        "divided by n, not normalised",
        lambda h, m: _pooling_variant(h, m, by_n=True, normalise=False),
        "the padded positions are left out of the sum, but the sum is divided by n, every position, instead of the "
        "number of real tokens, and the result is not scaled to length 1. (Once it is scaled to length 1, the divisor "
        "no longer matters: any positive number per sentence gives the same unit vector.)",
    ),
    Mistake("normalised before pooling", lambda h, m: _pooling_variant(h, m, tokens_first=True), _BEFORE),
    Mistake(
        "normalised before pooling, not after",
        lambda h, m: _pooling_variant(h, m, tokens_first=True, normalise=False),
        f"{_BEFORE} (Here the mean is not scaled to length 1 either.)",
    ),
    Mistake(
        "normalised over the batch",
        lambda h, m: torch.nn.functional.normalize(_pooling_variant(h, m, normalise=False), dim=0),
        "the mean of the real tokens is right, but normalize(..., dim=0) scaled each *feature* to length 1 across the "
        "sentences of the batch, so one sentence's embedding depends on the others. Each sentence's vector is scaled "
        "on its own, over its features: normalize(..., dim=-1).",
    ),
    Mistake(
        "pooled over the features",
        lambda h, m: _pooling_variant(h, m, axis=2),
        "the sum runs over the last axis, the d_model features of each token, so you get one number per token, "
        "(B, n), instead of one vector per sentence, (B, d_model). Average over the token axis, dim=1, the axis that "
        "the mask runs along.",
    ),
]


def _pooling_cases() -> list[Case]:
    g = seeded_generator(12)
    hidden = torch.randn(3, 6, 8, generator=g)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1] * 6, [1, 1, 0, 0, 0, 0]]).bool()
    changed = hidden.clone()
    changed[~mask] = 100.0  # other vectors at the padded positions only: a right answer does not change
    empty = mask.clone()
    empty[2] = False  # a row with no real token
    return [
        Case("a padded batch of 3, d_model=8", (hidden, mask)),
        Case("the same batch, padded positions set to 100", (changed, mask)),
        Case("a row with no real token", (hidden, empty)),
        Case("no padding, d_model=384", (torch.randn(2, 5, 384, generator=g), torch.ones(2, 5, dtype=torch.bool))),
    ]


_POOLING_HINTS = register_hints(
    "12.1",
    "A sentence embedding is the average of the real tokens' final vectors over the token axis (the axis the mask "
    "runs along), padding left out, then that one vector scaled to length 1 (the model card's mean pooling and "
    "normalisation): one vector of d_model numbers per sentence. To see a difference, change the vectors at the "
    "padded positions and print your result again: a right answer does not move.",
    "attention_mask.to(hidden.dtype)[..., None] is (B, n, 1): multiply hidden by it, sum over the token axis "
    "(dim=1), divide by the number of real tokens (the mask's sum, clamped above 0), then "
    "torch.nn.functional.normalize(..., dim=-1).",
    "weights = attention_mask.to(hidden.dtype)[..., None]  # (B, n, 1): 1 at real tokens, 0 at padding\n"
    "mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)  # (B, d_model)\n"
    "return torch.nn.functional.normalize(mean, dim=-1)  # length 1; a row with no real token stays 0",
)


@counts_attempts
def check_mean_pooling(mean_pooling: Callable) -> Verdict:
    """Exercise 12.1: ``mean_pooling(hidden, attention_mask) -> (B, d_model)``, the model card's sentence
    embedding (helpers.pretrained.mean_pooled_embedding)."""
    return run_checks(
        "Exercise 12.1 mean pooling",
        mean_pooling,
        reference=mean_pooled_embedding,
        cases=_pooling_cases(),
        mistakes=POOLING_MISTAKES,
        hints=_POOLING_HINTS,
        input_names=("hidden", "attention_mask"),
    )
