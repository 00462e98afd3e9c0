"""Fixtures of the checker tests. (The autouse fixture that resets the attempt counts is in ``tests/conftest.py``,
since ``tests/helpers/test_training.py`` and ``tests/helpers/test_decoding.py`` run checkers too.)"""

from __future__ import annotations

import pytest

from course import exercises as ex


@pytest.fixture
def short_time_limit():
    previous = ex.set_time_limit(0.3)
    yield
    ex.set_time_limit(previous)
