"""Mutants of `helpers/masks.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/masks.py"
TESTS = ["tests/helpers/test_masks_plotting.py", "tests/helpers/test_attention.py", "tests/helpers/test_efficient.py"]

MUTANTS = [
    Mutant("masks-01", ".tril(diagonal=past)", ".triu(diagonal=past)", "causal mask of the future"),
    Mutant("masks-02", ".tril(diagonal=past)", ".tril(diagonal=past - 1)", "causal mask without the diagonal"),
    Mutant("masks-03", ".tril(diagonal=past)", ".tril(diagonal=past + 1)", "causal mask showing one future key"),
    Mutant("masks-04", "positions < lengths[:, None]", "positions <= lengths[:, None]", "padding mask < vs <="),
    Mutant("masks-05", ".unsqueeze(1)  #", ".unsqueeze(-1)  #", "padding mask over queries instead of keys"),
    Mutant(
        "masks-06",
        "max_len = int(lengths.max())\n",
        "max_len = int(lengths.max()) + 1\n",
        "default max_len one too long",
    ),
    Mutant("masks-07", "int(lengths.min()) < 0", "int(lengths.min()) < 1", "length 0 rejected"),
    Mutant(
        "masks-08",
        "if int(lengths.min()) < 0 or int(lengths.max()) > max_len:",
        "if int(lengths.min()) < 0:",
        "lengths above max_len accepted",
    ),
    Mutant("masks-09", ".tril(diagonal=past)", ".tril()", "causal mask with past aligned top-left"),
]
