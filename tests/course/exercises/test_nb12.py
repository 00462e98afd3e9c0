"""The checker of notebook 12, a real trained encoder (``course.exercises.nb12``): right answers pass, the classic
mistakes of mean pooling are named."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course import exercises as ex


def pooled(hidden, attention_mask):
    weights = attention_mask.to(hidden.dtype)[..., None]
    mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
    return F.normalize(mean, dim=-1)


def pooled_another_way(hidden, attention_mask):  # a loop over the sentences, a zero row kept as it is
    rows = []
    for h, m in zip(hidden, attention_mask.bool(), strict=True):
        mean = h[m].mean(dim=0) if m.any() else torch.zeros(h.shape[-1])
        rows.append(mean / mean.norm() if m.any() else mean)
    return torch.stack(rows)


RIGHT_ANSWERS = {
    "masked sum over a clamped count": pooled,
    "a loop over the sentences": pooled_another_way,
    "einsum": lambda h, m: F.normalize(
        torch.einsum("bnd,bn->bd", h, m.to(h.dtype)) / m.sum(dim=1, keepdim=True).clamp(min=1), dim=-1
    ),
    "torch.where and a manual, clamped norm": lambda h, m: (
        lambda mean: mean / mean.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    )(torch.where(m[..., None], h, 0).sum(dim=1) / m.sum(dim=1, keepdim=True).clamp(min=1)),
    "in float64, returned as float64": lambda h, m: pooled(h.double(), m),
    "masked_fill, F.normalize's default dim": lambda h, m: F.normalize(
        h.masked_fill(~m[..., None], 0).sum(dim=1) / m.sum(dim=-1).clamp(min=1).unsqueeze(-1)
    ),
    # once scaled to length 1, the divisor does not matter: n, or no division at all, is as right as the count
    "divided by n, then normalised": lambda h, m: F.normalize((h * m[..., None]).sum(dim=1) / h.shape[1], dim=-1),
    "a masked sum, normalised": lambda h, m: F.normalize((h * m[..., None]).sum(dim=1), dim=-1),
}


def _masked_mean(h, m):
    m = m.float().unsqueeze(-1)
    return (h * m).sum(1) / m.sum(1).clamp(min=1)


def _manual_norm(x):  # no clamp: a zero vector gives 0 / 0
    return x / x.norm(dim=-1, keepdim=True)


WRONG_ANSWERS = {  # written the ways students write them, not as the checker's own variants
    "normalised over the batch": lambda h, m: F.normalize(_masked_mean(h, m), dim=0),
    "padding averaged in": lambda h, m: F.normalize(h.mean(dim=1), dim=-1),
    "padding averaged in, not normalised": lambda h, m: h.mean(dim=1),
    "NaN on an empty row": lambda h, m: _manual_norm((h * m.float().unsqueeze(-1)).sum(1) / m.float().sum(1, True)),
    # the count clamped, the norm not: the NaN comes from the scaling, and the diagnosis must say so
    "NaN on an empty row (in the norm)": lambda h, m: _manual_norm(_masked_mean(h, m)),
    "not normalised": _masked_mean,
    "divided by n, not normalised": lambda h, m: (h * m[..., None]).sum(dim=1) / h.shape[1],
    "normalised before pooling": lambda h, m: F.normalize(_masked_mean(F.normalize(h, dim=-1), m), dim=-1),
    "normalised before pooling, not after": lambda h, m: _masked_mean(h / h.norm(dim=-1, keepdim=True), m),
    "pooled over the features": lambda h, m: F.normalize(
        (h * m[..., None]).sum(2) / m.sum(1, keepdim=True).clamp(min=1), dim=-1
    ),
}


def test_other_wrong_answers_fail_with_the_axis_in_the_hint():
    for wrong in (
        lambda h, m: F.normalize(h.mean(dim=-1), dim=-1),  # the features averaged: (B, n)
        lambda h, m: F.normalize(h[:, 0], dim=-1),  # the first token ([CLS]) instead of the mean
        lambda h, m: F.normalize(_masked_mean(h, ~m), dim=-1),  # the mask read the wrong way round
    ):
        from course.exercises import reset_attempts

        reset_attempts()
        verdict = ex.check_mean_pooling(wrong)
        assert verdict.status == "failed" and verdict.mistake is None, str(verdict)
        assert "token axis" in str(verdict), str(verdict)  # the first tier: which axis, in words


@pytest.mark.parametrize("name", [name for name in WRONG_ANSWERS if "in the norm" in name])
def test_a_zero_norm_is_explained_by_the_vectors_length(name):
    verdict = ex.check_mean_pooling(WRONG_ANSWERS[name])
    assert verdict.status == "failed" and "length" in str(verdict), str(verdict)
