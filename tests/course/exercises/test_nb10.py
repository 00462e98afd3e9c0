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
    assert "close, but" not in doubled_early and "Hint: Eq. 3" in doubled_early, doubled_early  # 1st unexplained
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


def test_a_python_loop_over_the_steps_fails_10_1_and_whole_tensor_answers_pass():
    """The student review: "without a Python loop" was unchecked. The checker runs a passing answer once more,
    traced, and fails it when one of its lines ran once per step (a loop, a comprehension, a generator); a loop over
    the three arguments does not count."""

    def comprehension(steps, d_model, warmup_steps):
        rates = [d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5) for s in steps.tolist()]
        return torch.tensor(rates, dtype=steps.dtype)

    def for_loop(steps, d_model, warmup_steps):
        out = torch.empty_like(steps)
        for i, s in enumerate(steps):
            out[i] = d_model**-0.5 * torch.minimum(s**-0.5, s * warmup_steps**-1.5)
        return out

    def generator(steps, d_model, warmup_steps):
        return torch.stack(tuple(rate_eq3(s, d_model, warmup_steps) for s in steps))

    def mapped(steps, d_model, warmup_steps):  # map calls a function of the answer once per step
        def one(s):
            return d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5)

        return torch.tensor(list(map(one, steps.tolist())), dtype=steps.dtype)

    for answer in (comprehension, for_loop, generator, mapped):
        verdict = ex.check_rate(answer)
        text = str(verdict)
        assert verdict.status == "failed" and verdict.mistake == "Python loop", (answer.__name__, text)
        assert "ran 811 times for 811 steps" in text or "ran 812 times" in text or "ran 813 times" in text, text

    def checks_its_arguments(steps, d_model, warmup_steps):
        for name, value in (("d_model", d_model), ("warmup_steps", warmup_steps)):
            if value <= 0:
                raise ValueError(f"{name} must be positive")
        return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)

    for answer in (rate_eq3, checks_its_arguments, lambda s, d, w: d**-0.5 * torch.clamp(s**-0.5, max=s * w**-1.5)):
        assert ex.check_rate(answer).passed, str(ex.check_rate(answer))


def test_the_student_reviews_unnamed_mistakes_are_named_in_10_1_and_10_2():
    """Three mistakes the student review met without a name: Python's min on two tensors (raised), the parentheses
    around 5 + |Y| left out, and floor division."""
    verdict = ex.check_rate(lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-1.5))
    assert verdict.mistake == "Python's min on tensors" and "torch.minimum(a, b)" in str(verdict), str(verdict)
    verdict = ex.check_length_penalty(lambda s, n, a: s / (5 + n / 6) ** a)
    assert verdict.mistake == "parentheses around 5 + |Y| missing", str(verdict)
    verdict = ex.check_length_penalty(lambda s, n, a: s / ((5 + n) // 6) ** a)
    assert verdict.mistake == "floor division" and "Divide with /" in str(verdict), str(verdict)
    for text in (str(verdict), ex.solution("10.2")):
        assert "GNMT" not in text  # the notebook says Wu et al. (2016), never GNMT
