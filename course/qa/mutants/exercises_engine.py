"""Mutants of `course/exercises/engine.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/exercises/engine.py"
TESTS = [
    "tests/course/exercises/test_engine.py",
    "tests/course/exercises/test_nb01.py",
    "tests/course/exercises/test_nb02.py",
    "tests/course/exercises/test_nb03.py",
    "tests/course/exercises/test_nb10.py",
    "tests/course/exercises/test_nb11.py",
]

MUTANTS = [
    Mutant(
        "exercises_engine-01",
        "RTOL, ATOL = 1e-4, 1e-5",
        "RTOL, ATOL = 1e-2, 1e-5",
        "checkers' relative tolerance loosened 100x",
    ),
]
