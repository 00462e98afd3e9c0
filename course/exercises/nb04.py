"""Notebook 04, causal masks: the checkers of exercises 04.x and their classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.masks import causal_mask

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks

CAUSAL_MASK_MISTAKES = [
    Mistake(
        "future instead of past",
        lambda n: torch.ones(n, n, dtype=torch.bool).triu(diagonal=1),
        "this is triu(..., diagonal=1), the mask of the *future*: passed where True means 'may attend', every "
        "query attends only to later keys. Use tril (the lower triangle, diagonal included).",
    ),
    Mistake(
        "diagonal excluded",
        lambda n: torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1),
        "the diagonal is excluded: a query must be allowed to attend to its own position (and query 0 would "
        "have no key at all).",
    ),
    Mistake(
        "upper triangle",
        lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
        "the upper triangle (keys j >= i) is allowed: rows are queries, so the allowed keys j <= i form the "
        "lower triangle.",
    ),
]

_CAUSAL_HINTS = register_hints(
    "04.1",
    "row i is a query and column j a key; query i may see the keys j <= i, never a later one (§3.2.3). Which "
    "triangle of an (n, n) boolean matrix is that, and is the diagonal in it? To see a difference, print your "
    "mask for n = 4: row 0 has one True, row 3 four.",
    "start from torch.ones(n, n, dtype=torch.bool) and keep one triangle, .tril() or .triu() (each keeps the "
    "diagonal unless told otherwise); or compare a column of query positions with a row of key positions.",
    "return torch.ones(n, n, dtype=torch.bool).tril()  # True where key j <= query i, the diagonal included",
)


@counts_attempts
def check_causal_mask(make_causal_mask: Callable) -> Verdict:
    """Exercise 04.1: ``make_causal_mask(n) -> (n, n)`` boolean, True where query i may attend to key j <= i."""
    cases = [Case("n=1", (1,)), Case("n=4", (4,)), Case("n=7", (7,))]
    return run_checks(
        "Exercise 04.1 causal mask",
        make_causal_mask,
        reference=causal_mask,
        cases=cases,
        mistakes=CAUSAL_MASK_MISTAKES,
        hints=_CAUSAL_HINTS,
        input_names=("n",),
    )
