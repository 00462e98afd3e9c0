"""Fixtures of the checker tests. (The autouse fixture that resets the attempt counts is in ``tests/conftest.py``,
since ``tests/test_training.py`` and ``tests/test_decoding.py`` run checkers too.)"""

from __future__ import annotations

import pytest

from helpers import exercises as ex


@pytest.fixture
def short_time_limit(monkeypatch):
    monkeypatch.setattr(ex, "TIME_LIMIT_S", 0.3)
