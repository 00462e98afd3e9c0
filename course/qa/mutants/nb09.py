"""Mutants of `course/exercises/nb09.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/exercises/nb09.py"
TESTS = ["tests/course/exercises/test_nb09.py", "tests/course/exercises/test_engine.py"]

MUTANTS = [
    Mutant(
        "nb09-01",
        "reference=transformer.shift_right,",
        "reference=shift_right,",
        "check_shift_right compares the answer with itself",
    ),
    Mutant(
        "nb09-02",
        "if norms != (0, 1, 2)",
        "if norms != (0, 1, 1)",
        "check_decoder_block: right norm order kept as a 'norms swapped' variant, (0, 1, 1) left out",
    ),
]
