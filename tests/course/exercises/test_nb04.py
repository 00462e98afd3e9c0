"""The checkers of notebook 04, causal masks (``course.exercises.nb04``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import torch

from course import exercises as ex
from tests.course.exercises.answers import stub


def test_causal_mask_checker():
    assert ex.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril()).passed
    future = ex.check_causal_mask(lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1))
    assert future.mistake == "future instead of past" and "triu" in str(future)
    assert ex.check_causal_mask(lambda n: torch.ones(n, n).tril().bool().tril(-1)).mistake == "diagonal excluded"
    assert ex.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).triu()).mistake == "upper triangle"
    verdict = ex.check_causal_mask(lambda n: torch.ones(n, n).tril())
    assert verdict.status == "failed" and "boolean" in str(verdict)


def test_verdict_displays_as_text():
    verdict = ex.check_causal_mask(stub)
    assert repr(verdict) == str(verdict)
    assert str(verdict).startswith("Exercise 04.1 causal mask: not attempted yet.")


def test_every_listed_mistake_is_named():
    from course.exercises import nb04

    for mistake in nb04.CAUSAL_MASK_MISTAKES:
        verdict = ex.check_causal_mask(mistake.wrong)
        assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))
