"""Mutants of `course/exercises/nb10.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/exercises/nb10.py"
TESTS = [
    "tests/course/exercises/test_nb10.py",
    "tests/course/exercises/test_engine.py",
    "tests/helpers/test_decoding.py",
    "tests/helpers/test_training.py",
]

MUTANTS = [
    Mutant(
        "nb10-01",
        "torch.arange(1, 30001, 37,",
        "torch.arange(1, 3001, 37,",
        "check_rate: first case stops before the warm-up ends",
    ),
    Mutant(
        "nb10-02",
        "(4 + lengths) / 6",
        "(6 + lengths) / 6",
        "check_length_penalty: '<eos> not counted' variant never matches",
    ),
]
