"""Notebook 10, training and decoding: the checkers of exercises 10.x and their classic mistakes."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from helpers import training
from helpers.decoding import length_penalty

from .engine import (
    FAILED,
    Case,
    ErrorHint,
    Mistake,
    Verdict,
    answer_codes,
    busiest_line,
    counts_attempts,
    register_hints,
    run_checks,
    seeded_generator,
)


def rate_variant(steps, d_model, warmup_steps, *, how="right"):
    steps = steps.double()
    if how == "max":
        return d_model**-0.5 * torch.maximum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "no d_model":
        return torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "sqrt d_model":
        return d_model**0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "warmup exponent":
        return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-0.5)
    if how == "no warm-up":
        return d_model**-0.5 * steps**-0.5
    if how == "from 0":
        return rate_variant(steps - 1, d_model, warmup_steps).nan_to_num(posinf=0.0)
    if how == "one ahead":
        return rate_variant(steps + 1, d_model, warmup_steps)
    return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)


def in_peak_units(rate: Callable) -> Callable:
    """``rate`` divided by Eq. 3's peak ``(d_model * warmup_steps) ** -0.5``: values near 1, so the absolute part of
    the tolerance (ATOL) no longer dominates and every comparison is, in effect, relative (rates are ~1e-3)."""

    def scaled(steps, d_model, warmup_steps):
        result = rate(steps, d_model, warmup_steps)
        return result * (d_model * warmup_steps) ** 0.5 if isinstance(result, torch.Tensor) else result

    return scaled


def rate_cases() -> list[Case]:
    """Rates span more than three orders of magnitude: the cases are ``relative`` ("close" means within 1% of
    each rate)."""
    sampled, every = torch.arange(1, 30001, 37, dtype=torch.float64), torch.arange(1, 601, dtype=torch.float64)
    return [
        Case(
            "steps 1..30000, d_model=512, warmup_steps=4000",
            (sampled, 512, 4000),
            relative=True,
            labels=("step", [int(step) for step in sampled.tolist()]),
        ),
        Case(
            "steps 1..600, d_model=16, warmup_steps=50",
            (every, 16, 50),
            relative=True,
            labels=("step", [int(step) for step in every.tolist()]),
        ),
    ]


def _helper_rate(steps, d_model, warmup_steps):
    """The reference: ``helpers.training.rate`` (Eq. 3 for one step) at every step of the tensor."""
    return torch.tensor(
        [training.rate(int(step), d_model, warmup_steps) for step in steps.tolist()], dtype=torch.float64
    )


def _rate_mistake(key: str, how: str, diagnosis: str) -> Mistake:
    """A classic mistake of Eq. 3, in units of the peak rate (as the checker compares)."""
    return Mistake(key, in_peak_units(functools.partial(rate_variant, how=how)), diagnosis)


RATE_MISTAKES = [
    _rate_mistake(
        "max for min",
        "max",
        "max takes the larger of the two terms, so the rate starts at its largest and never warms up: Eq. 3 takes "
        "the smaller one, min(step^-0.5, step * warmup_steps^-1.5).",
    ),
    _rate_mistake(
        "no d_model factor",
        "no d_model",
        "the shape is right but the scale is not: Eq. 3 multiplies by d_model^-0.5.",
    ),
    _rate_mistake(
        "d_model^+0.5",
        "sqrt d_model",
        "the rate is multiplied by sqrt(d_model) instead of divided: the factor is d_model^-0.5, smaller for wider "
        "models.",
    ),
    _rate_mistake(
        "warm-up exponent",
        "warmup exponent",
        "the warm-up term uses warmup_steps^-0.5: it is step * warmup_steps^-1.5, so that both terms meet at "
        "step = warmup_steps.",
    ),
    _rate_mistake(
        "no warm-up",
        "no warm-up",
        "only the decay term is there: during the first warmup_steps steps the rate must grow linearly, "
        "step * warmup_steps^-1.5.",
    ),
    _rate_mistake(
        "steps from 0",
        "from 0",
        "the steps are shifted by one: the steps you are given count from 1 already (LambdaLR's shift is "
        "outside this function).",
    ),
    _rate_mistake(
        "steps + 1",
        "one ahead",
        "the steps are shifted by one, one step ahead: step 1 gets the rate of step 2, twice too large, and the "
        "peak comes at step warmup_steps - 1. The steps you are given are already the step numbers, counting "
        "from 1 (LambdaLR's shift from 0 is outside this function): use them as they are.",
    ),
]


_RATE_HINTS = register_hints(
    "10.1",
    "Eq. 3 (§5.3) is the smaller of two curves, a straight line that rises through the warm-up and an inverse "
    "square root that decays after it, both scaled by one factor that depends on the model's width. The steps "
    "you are given already count from 1. To see a difference, print your rate at step 1, at warmup_steps and "
    "at 4 x warmup_steps: the middle one is the peak, (d_model x warmup_steps)^-1/2, the first is "
    "warmup_steps times smaller, and the last half the peak.",
    "compute the two curves of Eq. 3 as whole tensors (steps**-0.5 and the warm-up line) and take their "
    "elementwise minimum with torch.minimum, not Python's min; check the factor in front.",
    "return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)  # Eq. 3, step by step",
)


_PYTHON_MIN = ErrorHint(
    "Python's min on tensors",
    lambda error: "Boolean value of Tensor with more than one value is ambiguous" in str(error),
    "Python's built-in min (or max, or an `if`) compares two whole tensors as one truth value, which a tensor of "
    "many steps does not have. Take the elementwise minimum of the two curves with torch.minimum(a, b).",
)


@counts_attempts
def check_rate(rate: Callable) -> Verdict:
    """Exercise 10.1: ``rate(steps (S,) float64, d_model, warmup_steps) -> learning rates (S,)``, Eq. 3 (§5.3).

    Answers are compared in units of the peak rate ``(d_model * warmup_steps) ** -0.5``, so the tolerance is
    relative (about 1e-4) at every step, late small rates included."""
    verdict = run_checks(
        "Exercise 10.1 the learning rate of Eq. 3",
        in_peak_units(rate) if callable(rate) else rate,
        reference=in_peak_units(_helper_rate),
        cases=rate_cases(),
        mistakes=RATE_MISTAKES,
        hints=_RATE_HINTS,
        answer_code=answer_codes(rate) if callable(rate) else set(),
        notes=(
            "The values above are learning rates divided by the peak (d_model * warmup_steps)^-1/2; the first case "
            "samples every 37th step, the second every step.",
        ),
        input_names=("steps", "d_model", "warmup_steps"),
        error_hints=(_PYTHON_MIN,),
    )
    if not verdict.passed:
        return verdict
    line, times = busiest_line(rate, rate_cases()[0].args)
    if times <= 100:  # the case has 811 steps: a loop over them runs its body 811 times
        return verdict
    return Verdict(
        "Exercise 10.1 the learning rate of Eq. 3",
        FAILED,
        f"the rates are right, but line {line} of your answer ran {times} times for {len(rate_cases()[0].args[0])} "
        "steps: a Python loop.",
        "Python loop",
        [
            "Likely mistake: the exercise asks for no Python loop. A loop (or a comprehension) over the steps runs "
            "Python once per step, far slower than one tensor expression over all the steps at once: compute both "
            "curves of Eq. 3 on the whole steps tensor and take their elementwise minimum (torch.minimum)."
        ],
    )


def score_variant(sum_log_p, lengths, alpha, *, how="right"):
    lengths = lengths.to(sum_log_p.dtype)
    if how == "none":
        return sum_log_p.clone()
    if how == "times":
        return sum_log_p * ((5 + lengths) / 6) ** alpha
    if how == "no eos":
        return sum_log_p / ((4 + lengths) / 6) ** alpha
    if how == "no alpha":
        return sum_log_p / ((5 + lengths) / 6)
    if how == "mean":
        return sum_log_p / lengths
    if how == "precedence":  # (5 + |Y|) / 6 ** alpha: the power binds tighter than the division
        return sum_log_p / ((5 + lengths) / 6**alpha)
    if how == "5 + |Y| / 6":  # the division binds tighter than the addition
        return sum_log_p / (5 + lengths / 6) ** alpha
    if how == "floor division":  # // rounds (5 + |Y|) / 6 down to a whole number
        return sum_log_p / ((5 + lengths) // 6) ** alpha
    if how == "length^alpha":
        return sum_log_p / lengths**alpha
    return sum_log_p / ((5 + lengths) / 6) ** alpha


def score_cases() -> list[Case]:
    g = seeded_generator(14)
    lengths = torch.tensor([1, 2, 3, 5, 8, 13])
    return [
        Case("6 hypotheses, alpha=0.6", (-(torch.rand(6, generator=g, dtype=torch.float64) * 8 + 0.1), lengths, 0.6)),
        Case(
            "6 hypotheses, alpha=1.5",
            (-(torch.rand(6, generator=g, dtype=torch.float64) * 8 + 0.1), lengths.flip(0), 1.5),
        ),
    ]


def _helper_scores(sum_log_p, lengths, alpha):
    """The reference: each sum divided by ``helpers.decoding.length_penalty`` of its length."""
    penalties = [length_penalty(int(length), alpha) for length in lengths.tolist()]
    return sum_log_p / torch.tensor(penalties, dtype=sum_log_p.dtype)


SCORE_MISTAKES = [
    Mistake(
        "no penalty",
        lambda s, n, a: score_variant(s, n, a, how="none"),
        "the scores are the plain sums of log-probabilities: divide each by lp(Y) = ((5 + |Y|) / 6) ** alpha.",
    ),
    Mistake(
        "multiplied",
        lambda s, n, a: score_variant(s, n, a, how="times"),
        "the sums are multiplied by "
        "lp(Y): divide instead, so that longer hypotheses' (more negative) sums shrink towards 0.",
    ),
    Mistake(
        "<eos> not counted",
        lambda s, n, a: score_variant(s, n, a, how="no eos"),
        "|Y| is one too small: the lengths you are given already count every generated token, <eos> included.",
    ),
    Mistake(
        "alpha ignored",
        lambda s, n, a: score_variant(s, n, a, how="no alpha"),
        "the penalty is not raised to the power alpha: lp(Y) = ((5 + |Y|) / 6) ** alpha.",
    ),
    Mistake(
        "mean log p",
        lambda s, n, a: score_variant(s, n, a, how="mean"),
        "dividing by the length gives "
        "the mean log-probability, a different normalisation: the paper uses Wu et al.'s ((5 + |Y|) / 6) ** alpha.",
    ),
    Mistake(
        "length ** alpha",
        lambda s, n, a: score_variant(s, n, a, how="length^alpha"),
        "|Y| ** alpha is a simpler penalty; Wu et al.'s (the paper's, §6.1) is ((5 + |Y|) / 6) ** alpha.",
    ),
    Mistake(
        "precedence",
        lambda s, n, a: score_variant(s, n, a, how="precedence"),
        "the power binds tighter than the division: (5 + |Y|) / 6 ** alpha divides by 6 ** alpha alone. Wu et "
        "al.'s lp(Y) is ((5 + |Y|) / 6) ** alpha, with the parentheses.",
    ),
    Mistake(
        "parentheses around 5 + |Y| missing",
        lambda s, n, a: score_variant(s, n, a, how="5 + |Y| / 6"),
        "the division binds tighter than the addition: 5 + |Y| / 6 adds 5 to |Y| / 6. The penalty is "
        "((5 + |Y|) / 6) ** alpha, which is 1 for a one-token hypothesis.",
    ),
    Mistake(
        "floor division",
        lambda s, n, a: score_variant(s, n, a, how="floor division"),
        "// is floor division: (5 + |Y|) // 6 rounds down to a whole number, 1 for every length from 1 to 6, so "
        "short hypotheses get no penalty at all and longer ones jump in steps. Divide with /.",
    ),
]


_SCORE_HINTS = register_hints(
    "10.2",
    "§6.1 ranks finished hypotheses by their total log-probability divided by a penalty that grows with the "
    "number of generated tokens, <eos> included (Wu et al., 2016): how does it use the length, the constants "
    "5 and 6, and alpha? To see a difference, print your scores for alpha = 0 (they must equal the sums) and "
    "for one token (the penalty of a one-token hypothesis is 1 for every alpha).",
    "divide each sum by lp(Y), computed elementwise from the tensor of lengths; check the constants 5 and 6 "
    "and where alpha goes in the penalty of Wu et al. (2016).",
    "lp = ((5 + lengths) / 6) ** alpha  # Wu et al.'s length penalty; |Y| counts <eos>\nreturn sum_log_p / lp",
)


@counts_attempts
def check_length_penalty(score: Callable) -> Verdict:
    """Exercise 10.2: ``score(sum_log_p (K,), lengths (K,) int, alpha) -> scores (K,)``, Wu et al.'s penalty (§6.1)."""
    return run_checks(
        "Exercise 10.2 the length penalty",
        score,
        reference=_helper_scores,
        cases=score_cases(),
        mistakes=SCORE_MISTAKES,
        hints=_SCORE_HINTS,
        input_names=("sum_log_p", "lengths", "alpha"),
    )
