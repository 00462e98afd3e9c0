"""Mutants of `helpers/training.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/training.py"
TESTS = ["tests/helpers/test_training.py"]

MUTANTS = [
    Mutant(
        "training-01",
        "step * warmup_steps**-1.5",
        "step * warmup_steps**-0.5",
        "Eq. 3: warm-up term uses warmup_steps^-0.5",
    ),
    Mutant("training-02", '"fourteen"', '"forteen"', "'fourteen' misspelt"),
    Mutant(
        "training-03",
        "low = 0 if digits == 1 else 10 ** (digits - 1)",
        "low = 10 ** (digits - 1)",
        "sample_numbers never draws 0",
    ),
    Mutant(
        "training-04",
        "if VOCAB[i] == EOS:\n            break",
        "if VOCAB[i] == EOS:\n            continue",
        "to_tokens skips <eos> instead of stopping",
    ),
    Mutant(
        "training-05",
        "VOCAB: list[str] = [PAD, BOS, EOS,",
        "VOCAB: list[str] = [PAD, EOS, BOS,",
        "VOCAB: <bos> and <eos> swapped (the saved model's ids)",
    ),
]
