"""Mutants of `course/explorer/__init__.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/explorer/__init__.py"
TESTS = ["tests/course/explorer/test_explorer.py"]

MUTANTS = [
    Mutant(
        "explorer_py-01",
        "if sequence is None and batch > 1:",
        "if sequence is None and batch > 2:",
        "explorer: a batch of 2 without sequence= shows sequence 0",
    ),
    Mutant(
        "explorer_py-02",
        "mk = lead[index]",
        "mk = lead[0]",
        "explorer: sequence 0's mask drawn over the sequence shown",
    ),
    Mutant(
        "explorer_py-03",
        "TOLERANCE = 1e-5",
        "TOLERANCE = 1e-3",
        "explorer: tolerance outside [0, 1] and on masked keys loosened 100x",
    ),
    Mutant(
        "explorer_py-04",
        "top = round(float(vmax) * SCALE)",
        "top = int(float(vmax) * SCALE)",
        "vmax truncated, not rounded: 0.29 becomes 0.28",
    ),
]
