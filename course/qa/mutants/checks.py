"""Mutants of `helpers/checks.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/checks.py"
TESTS = ["tests/helpers/test_checks.py", "tests/helpers/test_induction.py"]

MUTANTS = [
    Mutant(
        "checks-01",
        "return isinstance(value, int) and not isinstance(value, bool)",
        "return isinstance(value, int)",
        "True accepted as the integer 1",
    ),
    Mutant(
        "checks-02",
        "if not is_int(value) or value < 1:",
        "if not is_int(value) or value < 0:",
        "positive_int accepts 0",
    ),
    Mutant(
        "checks-03",
        "if not is_int(value) or value < 0:",
        "if not is_int(value) or value < 1:",
        "non_negative_int refuses 0",
    ),
]
