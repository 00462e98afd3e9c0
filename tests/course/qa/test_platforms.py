"""The seed shift of course/qa/platforms.py: it moves every seed written in the series' forms, and nothing else."""

import json
import re
from pathlib import Path

import pytest

from course.qa import platforms as check_platforms
from course.qa.platforms import shift_seeds

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("source", "shifted"),
    [
        ("helpers.set_seed(0)\nx = 1", "helpers.set_seed(3)\nx = 1"),
        ("_ = torch.manual_seed(12345)", "_ = torch.manual_seed(12348)"),
        ("g = torch.Generator().manual_seed(1)", "g = torch.Generator().manual_seed(4)"),
        ("rng = np.random.default_rng(7)", "rng = np.random.default_rng(10)"),
        ("train(model, seed=0, log_every=50)", "train(model, seed=3, log_every=50)"),
        ("SEED = 4\nx = 2", "SEED = 7\nx = 2"),
        ("base_seed=2, x", "base_seed=5, x"),
        ("SEEDS = range(0, 20)", "SEEDS = range(3, 23)"),
        ("for seed in range(3):\n    pass", "for seed in range(3, 6):\n    pass"),
    ],
)
def test_seeds_in_the_series_forms_are_shifted(source, shifted):
    assert shift_seeds(source, 3) == shifted


@pytest.mark.parametrize(
    "source",
    ["n_seeds = 20", "if seed == 0:\n    pass", "seed=0.5", "helpers.set_seed(num_layers)", "x = torch.randn(3, 4)"],
)
def test_other_numbers_are_left_alone(source):
    assert shift_seeds(source, 3) == source


RANDOM = re.compile(r"\btorch\.(randn|rand|randint|randperm|normal)\(|nn\.(Linear|Embedding|MultiheadAttention)\(")


@pytest.mark.parametrize("path", check_platforms.NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_that_draws_random_numbers_has_a_seed_the_check_can_move(path):
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    code = "\n".join("".join(c["source"]) for c in cells)
    if RANDOM.search(code):
        assert shift_seeds(code, 1) != code, (
            f"{path.name} draws random numbers but writes no seed in a form the check shifts"
        )


NBVAL_TAGS = {"nbval-ignore-output", "nbval-check-output", "nbval-raises-exception", "nbval-skip", "raises-exception"}


@pytest.mark.parametrize("path", check_platforms.NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_tags_the_reader_does_not_see(path):
    # A "# NBVAL_IGNORE_OUTPUT" comment is maintenance text in the learner's path: the cell tag does the same.
    # A misspelt tag would be silently ignored and the output compared after all, so every nbval-like tag must be
    # one nbval reads.
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            assert not line.strip().lstrip("#").strip().startswith("NBVAL"), (
                f"{path.name}: {line.strip()!r}: use the cell tag nbval-ignore-output instead (CONTRIBUTING.md)"
            )
        for tag in cell["metadata"].get("tags", []):
            if "nbval" in tag or "raises" in tag:
                assert tag in NBVAL_TAGS, f"{path.name}: the tag {tag!r} is not one nbval reads"


def test_a_failure_names_the_line_that_raised():
    """An assert with no message gives an empty evalue: the report names the cell's line instead (the arrow of
    IPython's traceback, its colours removed)."""
    traceback = [
        "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
        "\x1b[31mAssertionError\x1b[39m                            Traceback (most recent call last)",
        "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[31]\x1b[39m\x1b[32m, line 24\x1b[39m\n"
        "\x1b[32m     22\x1b[39m x = 1\n\x1b[32m---> \x1b[39m\x1b[32m24\x1b[39m \x1b[38;5;28;01massert\x1b[39;00m x > 2  # the claim\n",
        "\x1b[31mAssertionError\x1b[39m: ",
    ]
    assert check_platforms.failing_line(traceback) == "assert x > 2  # the claim"
    assert check_platforms.failing_line(["no arrow here"]) == ""
