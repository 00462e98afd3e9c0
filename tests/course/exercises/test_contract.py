"""What every checker of notebooks 12-15 promises, tested from one table: right answers written other ways pass;
every listed mistake, and every wrong answer written by hand as a student would, is named; the untouched stub is
"not attempted" and gets the conceptual hint, which shows no code. The answers live in each notebook's test file."""

from __future__ import annotations

import pytest

from course import exercises as ex
from course.exercises import nb12, nb13, nb14, nb15
from tests.course.exercises import test_nb12, test_nb13, test_nb14, test_nb15
from tests.course.exercises.answers import stub

# exercise: (checker, right answers, listed mistakes, wrong answers by hand, words of the stub's conceptual hint)
CHECKERS = {
    "12.1": (
        ex.check_mean_pooling,
        test_nb12.RIGHT_ANSWERS,
        nb12.POOLING_MISTAKES,
        test_nb12.WRONG_ANSWERS,
        "padded positions",
    ),
    "13.1": (
        ex.check_induction_scores,
        test_nb13.RIGHT_ANSWERS,
        nb13.INDUCTION_MISTAKES,
        test_nb13.WRONG_ANSWERS,
        "i - period + 1",
    ),
    "13.2": (
        ex.check_predictable_accuracy,
        test_nb13.ACCURACY_RIGHT,
        nb13.ACCURACY_MISTAKES,
        test_nb13.ACCURACY_WRONG,
        "i + 1",
    ),
    "14.1": (
        ex.check_rms_norm,
        test_nb14.RMS_RIGHT,
        nb14.RMS_MISTAKES,
        test_nb14.RMS_WRONG_BY_HAND,
        "root mean square",
    ),
    "14.2": (
        ex.check_rotary,
        test_nb14.ROTARY_RIGHT,
        nb14.ROTARY_MISTAKES,
        test_nb14.ROTARY_WRONG_BY_HAND,
        "(2i, 2i + 1)",
    ),
    "14.3": (
        ex.check_alibi_slopes,
        test_nb14.SLOPES_RIGHT,
        nb14.SLOPE_MISTAKES,
        test_nb14.SLOPES_WRONG_BY_HAND,
        "power of 2",
    ),
    "15.1": (
        ex.check_top_p,
        test_nb15.RIGHT_ANSWERS,
        nb15.TOP_P_MISTAKES,
        test_nb15.WRONG_ANSWERS,
        "walk along them",
    ),
}
RIGHT = [(exercise, name) for exercise, row in CHECKERS.items() for name in row[1]]
LISTED = [(exercise, mistake) for exercise, row in CHECKERS.items() for mistake in row[2]]
BY_HAND = [(exercise, name) for exercise, row in CHECKERS.items() for name in row[3]]


@pytest.mark.parametrize(("exercise", "name"), RIGHT, ids=[f"{e} {n}" for e, n in RIGHT])
def test_right_answers_pass(exercise, name):
    check, right, *_ = CHECKERS[exercise]
    verdict = check(right[name])
    assert verdict.passed, (name, str(verdict))


@pytest.mark.parametrize(("exercise", "mistake"), LISTED, ids=[f"{e} {m.key}" for e, m in LISTED])
def test_every_listed_mistake_is_named(exercise, mistake):
    verdict = CHECKERS[exercise][0](mistake.wrong)
    assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))


@pytest.mark.parametrize(("exercise", "name"), BY_HAND, ids=[f"{e} {n}" for e, n in BY_HAND])
def test_wrong_answers_written_by_hand_are_named(exercise, name):
    check, _, _, wrong, _ = CHECKERS[exercise]
    verdict = check(wrong[name])
    # a key may carry a note in brackets after the mistake's name: "not normalised (a zero row)"
    assert verdict.status == "failed" and verdict.mistake == name.split(" (")[0], (name, str(verdict))


@pytest.mark.parametrize("exercise", CHECKERS)
def test_the_stub_is_not_attempted_and_gets_the_conceptual_hint(exercise):
    check, *_, words = CHECKERS[exercise]
    verdict = check(stub)
    assert verdict.status == "not attempted" and words in str(verdict), str(verdict)
    assert "torch." not in str(verdict)  # the first tier names no code
