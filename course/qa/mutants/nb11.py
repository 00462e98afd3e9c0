"""Mutants of `course/exercises/nb11.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/exercises/nb11.py"
TESTS = ["tests/course/exercises/test_nb11.py", "tests/course/exercises/test_engine.py"]

MUTANTS = [
    Mutant(
        "nb11-01",
        "reference=folded(efficient.online_softmax_update),",
        "reference=folded(online_softmax_update),",
        "check_online_softmax_update compares the answer with itself",
    ),
    Mutant(
        "nb11-02",
        "2, 2, 2, 3, 8, 5),",
        "2, 2, 2, 3, 8, 8),",
        "check_cached_attention: the only d_k != d_v case made d_v = d_k",
    ),
    Mutant(
        "nb11-03",
        "k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)",
        "k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)",
        "check_grouped_attention: 'tiled' variant equals the right one",
    ),
]
