"""The checkers of notebook 10, training and decoding (``course.exercises.nb10``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import torch

from course import exercises as ex
from course.exercises import engine


def test_length_penalty_precedence_is_named():
    verdict = ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6**a))
    assert verdict.mistake == "precedence" and "with the parentheses" in str(verdict), verdict


def test_the_length_penalty_precedence_is_named_and_log_space_passes():
    verdict = ex.check_length_penalty(lambda s, n, a: s / (5 + n) / 6**a)
    assert verdict.status == "failed"
    verdict = ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6**a))
    assert verdict.mistake == "precedence" and "((5 + |Y|) / 6) ** alpha" in str(verdict), str(verdict)
    log_space = lambda s, n, a: s / torch.exp(a * torch.log((5 + n.double()) / 6))  # noqa: E731
    assert ex.check_length_penalty(log_space).passed


def rate_eq3(steps, d_model, warmup_steps):
    return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)


def test_close_is_said_only_when_the_error_is_small_next_to_the_values():
    # rate(steps + 1): 0.00025 of the peak off at step 1, but that is twice the rate there
    verdict = ex.check_rate(lambda s, d, w: rate_eq3(s + 1, d, w))
    text = str(verdict)
    assert "close, but" not in text and "largest relative difference 100% at step 1" in text, text
    assert verdict.mistake == "steps + 1" and "one step ahead" in text, text
    assert "only at steps 1-4515" in text, text  # the first 123 sampled steps, said as a run of step numbers
    doubled_early = str(ex.check_rate(lambda s, d, w: rate_eq3(s, d, w) * torch.where(s < 40, 2.0, 1.0)))
    assert "close, but" not in doubled_early and "Hint in code:" in doubled_early, doubled_early  # attempt 2
    slightly_off = str(ex.check_rate(lambda s, d, w: rate_eq3(s, d, w) * 1.002))  # 0.2% everywhere: close
    assert "close, but outside the tolerance" in slightly_off, slightly_off
    # the same rule by hand: a relative case is close only within 1% of each entry
    y = torch.tensor([2.5e-4, 0.5, 1.0])
    wrong = torch.tensor([True, False, False])
    assert not engine.near_miss(y * 2, y, wrong, relative=True)
    assert engine.near_miss(y * 1.005, y, wrong, relative=True)
    # an ordinary case: within 0.01 and within 1% of the largest value
    assert engine.near_miss(torch.tensor([1.001, 0.0]), torch.tensor([1.0, 0.0]), torch.tensor([True, False]), False)
    small = torch.full((3,), 1e-3)
    assert not engine.near_miss(small * 2, small, torch.ones(3, dtype=torch.bool), False)


def test_the_rate_checker_names_sampled_steps_by_their_step_number():
    def off_late(steps, d_model, warmup_steps):  # wrong only after step 20000
        rate = d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
        return rate * torch.where(steps > 20000, 1.5, 1.0)

    text = str(ex.check_rate(off_late))
    assert "only at steps 20018-29971" in text and "at step 20018" in text and "index (" not in text, text
