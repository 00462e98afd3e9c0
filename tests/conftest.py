"""Each test starts with no attempts counted: the checkers' hints depend on how many attempts at an exercise failed
before (``helpers.exercises`` counts them per kernel, or here per test process)."""

import pytest


@pytest.fixture(autouse=True)
def _no_attempts_counted():
    from helpers import exercises

    exercises.reset_attempts()
    yield
