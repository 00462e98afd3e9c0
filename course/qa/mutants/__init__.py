"""The mutation check's mutants, one module per mutated file (see `course/qa/mutate.py`).

Each module holds data only: `FILE` (the file it edits, relative to the repository root), `TESTS` (the unit
tests that run for it) and `MUTANTS` (a list of `Mutant`s, with ids named by module, `attention-03`).
"""

from course.qa.mutants import (
    attention,
    checks,
    decoder,
    decoding,
    efficient,
    encoder,
    exercises_engine,
    explorer_js,
    explorer_py,
    induction,
    masks,
    modern,
    nb09,
    nb10,
    nb11,
    plotting,
    pretrained,
    reference,
    tasks,
    training,
    transformer,
)

MODULES = (
    attention,
    masks,
    encoder,
    reference,
    tasks,
    efficient,
    decoder,
    transformer,
    decoding,
    training,
    modern,
    induction,
    plotting,
    pretrained,
    checks,
    exercises_engine,
    nb09,
    nb10,
    nb11,
    explorer_py,
    explorer_js,
)
