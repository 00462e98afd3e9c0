"""Mutants of `helpers/induction.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/induction.py"
TESTS = ["tests/helpers/test_induction.py"]

MUTANTS = [
    Mutant(
        "induction-01",
        'for which in ("head_mask", f"{name}_head_mask"):',
        'for which in (f"{name}_head_mask",):',
        "head_mask ignored: the ablated heads still write to the residual stream",
    ),
    Mutant(
        "induction-02",
        'projections[path](reads.get(path, reads["stream"]))',
        'projections[path](reads["stream"])',
        "path masks ignored: keys, queries and values all read the full stream",
    ),
    Mutant(
        "induction-03",
        "weights.diagonal(offset=-1, dim1=-2, dim2=-1)",
        "weights.diagonal(offset=-2, dim1=-2, dim2=-1)",
        "previous-token score reads two steps back",
    ),
    Mutant(
        "induction-04",
        "keys = (queries[None, :] - periods[:, None] + 1).clamp(min=0)",
        "keys = (queries[None, :] - periods[:, None]).clamp(min=0)",
        "induction score on the earlier copy of the current token, not the token after it",
    ),
    Mutant(
        "induction-05",
        "source = positions[None, :] % periods[:, None]",
        "source = positions[None, :] % max_period",
        "the task: every row repeats with max_period, whatever period it reports",
    ),
    Mutant(
        "induction-06",
        "valid = queries[None, :] >= periods[:, None]  # (B, n)",
        "valid = queries[None, :] > periods[:, None]  # (B, n)",
        "induction score leaves out the first predictable query",
    ),
    Mutant(
        "induction-07",
        "blocks = weight.T.reshape(self.num_heads, d_k, self.d_model)",
        "blocks = weight.reshape(self.num_heads, d_k, self.d_model)",
        "head_outputs splits W^O without transposing it",
    ),
    Mutant(
        "induction-08",
        "first, second = qk1[b], ov0[a].T",
        "first, second = qk1[b], ov0[a]",
        "K-composition with W_OV not transposed",
    ),
    Mutant(
        "induction-09",
        'for which in ("head_mask", f"{name}_head_mask"):',
        'for which in ("head_mask", f"{name}_head_mask") if name == "stream" else (f"{name}_head_mask",):',
        "head_mask combined with a path mask: the ablated head still feeds later keys, queries and values",
    ),
]
