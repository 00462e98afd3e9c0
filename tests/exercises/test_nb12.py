"""The checker of notebook 12, a real trained encoder (``helpers.exercises.nb12``): right answers pass, the classic
mistakes of mean pooling are named."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from answers import stub

from helpers import exercises as ex


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


def test_right_answers_pass():
    assert ex.check_mean_pooling(pooled).passed
    assert ex.check_mean_pooling(pooled_another_way).passed, ex.check_mean_pooling(pooled_another_way)


def test_the_stub_is_not_attempted_with_a_conceptual_hint():
    verdict = ex.check_mean_pooling(stub)
    assert verdict.status == "not attempted" and "padded positions" in str(verdict)
    assert "torch." not in str(verdict)  # the first tier names no code


def test_every_listed_mistake_is_named():
    from helpers.exercises import nb12

    for mistake in nb12.POOLING_MISTAKES:
        verdict = ex.check_mean_pooling(mistake.wrong)
        assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))


def test_realistic_wrong_answers_are_named():
    def plain_mean(hidden, attention_mask):  # padding averaged in, written with .mean
        return F.normalize(hidden.mean(dim=1), dim=-1)

    def divides_by_zero(hidden, attention_mask):
        m = attention_mask.float().unsqueeze(-1)
        mean = (hidden * m).sum(1) / m.sum(1)
        return mean / mean.norm(dim=-1, keepdim=True)

    def unnormalised(hidden, attention_mask):
        m = attention_mask.float().unsqueeze(-1)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)

    assert ex.check_mean_pooling(plain_mean).mistake == "padding averaged in"
    assert ex.check_mean_pooling(divides_by_zero).mistake == "NaN on an empty row"
    assert ex.check_mean_pooling(unnormalised).mistake == "not normalised"
    wrong_axis = ex.check_mean_pooling(lambda h, m: F.normalize((h * m[..., None]).sum(2), dim=-1))
    assert wrong_axis.status == "failed"
