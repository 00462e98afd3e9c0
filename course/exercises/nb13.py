"""Notebook 13, induction heads: the checkers of exercises 13.1 and 13.2 and their classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.induction import induction_scores, next_token_accuracy

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator


def _score_variant(
    weights,
    periods,
    *,
    back=1,
    valid_only=True,
    late=0,
    swapped=False,
    per_row=False,
    divide_by_n=False,
    one_period=False,
):
    """The reference with one step changed: the key ``i - period + back`` (``back=0``: the earlier copy itself), the
    queries before the first repeat counted too, the queries counted from ``period + late``, the weight read with
    query and key swapped (``weights[b, :, key, query]``), each row averaged on its own, the sum divided by every
    query, or the first row's period used for every row."""
    B, h, n, _ = weights.shape
    if one_period:
        periods = periods[:1].expand(B)
    if swapped:
        weights = weights.transpose(-2, -1)
    queries = torch.arange(n)
    valid = queries[None, :] >= periods[:, None] + late if valid_only else torch.ones(B, n, dtype=torch.bool)
    keys = (queries[None, :] - periods[:, None] + back).clamp(0, n - 1)  # (B, n)
    picked = weights.gather(-1, keys[:, None, :, None].expand(B, h, n, 1)).squeeze(-1)  # (B, h, n)
    v = valid[:, None, :].to(picked.dtype)
    if per_row:  # each row's mean first, then the mean of the rows
        return ((picked * v).sum(-1) / v.sum(-1).clamp(min=1)).mean(0)
    if divide_by_n:
        return (picked * v).sum(dim=(0, 2)) / (B * n)
    return (picked * v).sum(dim=(0, 2)) / v.sum(dim=(0, 2)).clamp(min=1)


INDUCTION_MISTAKES = [
    Mistake(
        "the earlier copy itself",
        lambda w, p: _score_variant(w, p, back=0),
        "you read the key i - period, the earlier copy of the current token. An induction head attends one step "
        "further on, to i - period + 1: the token that followed the earlier copy, which is the answer it copies.",
    ),
    Mistake(
        "first repeat left out",
        lambda w, p: _score_variant(w, p, late=1),
        "you counted the queries i > period, leaving out i = period, the first token of the first repeat. It counts: "
        "token period equals token 0, and the token that followed that earlier copy, key i - period + 1 = 1, is "
        "already in view. Keep the queries i >= period.",
    ),
    Mistake(
        "query and key swapped",
        lambda w, p: _score_variant(w, p, swapped=True),
        "you read weights[b, :, i - period + 1, i], the row of query i - period + 1 at key i: query and key swapped. "
        "Under the causal mask a query never sees a later key, so every such weight is 0. The weight that query i "
        "puts on key i - period + 1 is weights[b, :, i, i - period + 1] (queries on the third axis, keys on the last).",
    ),
    Mistake(
        "one too far",
        lambda w, p: _score_variant(w, p, back=2),
        "you read the key i - period + 2, one step past the token that followed the earlier copy: the induction "
        "key is i - period + 1.",
    ),
    Mistake(
        "every query counted",
        lambda w, p: _score_variant(w, p, valid_only=False),
        "you averaged over every query, the ones before the first repeat (i < period) too. There the current token "
        "has not occurred before, so there is nothing to look up: keep only the queries i >= period of each row.",
    ),
    Mistake(
        "divided by every query",
        lambda w, p: _score_variant(w, p, divide_by_n=True),
        "the sum is right, but it is divided by B * n, every query, instead of the number of queries that count "
        "(i >= period in each row). A perfect induction head must score 1.",
    ),
    Mistake(
        "rows averaged first",
        lambda w, p: _score_variant(w, p, per_row=True),
        "you averaged each row on its own and then the rows. The score is one mean over every pair (row, query) with "
        "query >= the row's period, so a row with a short period, which has more such queries, counts for more.",
    ),
    Mistake(
        "one period for the batch",
        lambda w, p: _score_variant(w, p, one_period=True),
        "every row used the first row's period. Each row has its own, periods[b]: index with periods[:, None] "
        "against a row of positions, so that each row's keys move by its own period.",
    ),
]


def _causal_weights(g, B, h, n):
    scores = torch.randn(B, h, n, n, generator=g) * 2
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1)


def _induction_cases() -> list[Case]:
    g = seeded_generator(13)
    n = 12
    planted = _causal_weights(g, 3, 2, n)
    periods = torch.tensor([3, 5, 4])
    for b, p in enumerate(periods.tolist()):  # head 0 of each row: all weight on i - p + 1 from i = p on
        for i in range(p, n):
            planted[b, 0, i] = 0
            planted[b, 0, i, i - p + 1] = 1
    return [
        Case("random causal weights, one period 4", (_causal_weights(g, 2, 3, 10), torch.tensor([4, 4]))),
        Case("periods 3, 5 and 4; head 0 a perfect induction head", (planted, periods)),
        Case("periods 2 to 9, 4 heads", (_causal_weights(g, 5, 4, n), torch.tensor([2, 9, 6, 3, 7]))),
    ]


_INDUCTION_HINTS = register_hints(
    "13.1",
    "An induction head at query i looks back to where the current token occurred before, i - period, and attends to "
    "the token after it, i - period + 1. Only queries i >= period have an earlier copy. The score of a head is its "
    "mean weight on that key, over every (row, query) pair that counts: 1 for a perfect induction head. To see a "
    "difference, build weights that put all of head 0's weight on i - period + 1 and check that you get 1.",
    "torch.arange(n) gives the queries; queries[None, :] - periods[:, None] + 1 is each row's key, (B, n) (clamp it "
    "at 0 so that gather accepts it); weights.gather(-1, keys[:, None, :, None].expand(B, h, n, 1)) picks those "
    "weights, (B, h, n, 1); multiply by the mask queries >= period and divide the sum over rows and queries by the "
    "mask's count.",
    "B, h, n, _ = weights.shape\n"
    "queries = torch.arange(n)\n"
    "valid = (queries[None, :] >= periods[:, None]).float()  # (B, n): the current token occurred before\n"
    "keys = (queries[None, :] - periods[:, None] + 1).clamp(min=0)  # (B, n): the token after the earlier copy\n"
    "picked = weights.gather(-1, keys[:, None, :, None].expand(B, h, n, 1)).squeeze(-1)  # (B, h, n)\n"
    "return (picked * valid[:, None]).sum(dim=(0, 2)) / valid.sum()",
)


@counts_attempts
def check_induction_scores(scores: Callable) -> Verdict:
    """Exercise 13.1: ``induction_scores(weights (B, h, n, n), periods (B,)) -> (h,)``, each head's mean weight from
    a query ``i >= period`` on the key ``i - period + 1`` (helpers.induction.induction_scores)."""
    return run_checks(
        "Exercise 13.1 induction scores",
        scores,
        reference=induction_scores,
        cases=_induction_cases(),
        mistakes=INDUCTION_MISTAKES,
        hints=_INDUCTION_HINTS,
        input_names=("weights", "periods"),
    )


def _accuracy_variant(logits, tokens, periods, *, shift=1, start=0, per_row=False, wrap=False, one_period=False):
    """The reference with one step changed: the logits compared with the current token (``shift=0``), the queries
    counted from ``period + start`` (``start=-1``: one early; ``None``: every query), each row averaged on its own,
    the targets rolled round so that the last query is compared with token 0, or the first row's period for all."""
    B, n, _ = logits.shape
    if one_period:
        periods = periods[:1].expand(B)
    guesses = logits.argmax(-1)  # (B, n)
    if wrap:
        correct, queries = guesses == torch.roll(tokens, -1, dims=1), torch.arange(n)
    elif shift == 0:
        correct, queries = guesses == tokens, torch.arange(n)
    else:
        correct, queries = guesses[:, :-1] == tokens[:, 1:], torch.arange(n - 1)
    counted = torch.ones_like(correct) if start is None else queries[None, :] >= periods[:, None] + start
    if per_row:
        return torch.stack([correct[b][counted[b]].float().mean() for b in range(B)]).mean()
    return correct[counted].float().mean()


ACCURACY_MISTAKES = [
    Mistake(
        "compared with the current token",
        lambda lo, t, p: _accuracy_variant(lo, t, p, shift=0),
        "the logits at position i were compared with token i, the current one. They predict the *next* token: "
        "compare logits[:, :-1].argmax(-1) with tokens[:, 1:], so that query i meets token i + 1.",
    ),
    Mistake(
        "one query early",
        lambda lo, t, p: _accuracy_variant(lo, t, p, start=-1),
        "you counted the queries from i = period - 1 on, where the *target* i + 1 is the first repeated token. But at "
        "query period - 1 the current token has not occurred before, so nothing in the context says that the block "
        "ends there: count the queries i >= period.",
    ),
    Mistake(
        "first repeat left out",
        lambda lo, t, p: _accuracy_variant(lo, t, p, start=1),
        "you counted the queries i > period, leaving out i = period. Query period is the first token of the first "
        "repeat: it equals token 0, so the context already says that token 1 comes next. Count the queries "
        "i >= period.",
    ),
    Mistake(
        "every query counted",
        lambda lo, t, p: _accuracy_variant(lo, t, p, start=None),
        "you scored every query, the ones before the first repeat too, where nothing in the context tells the next "
        "token and no model can beat chance. Keep only the queries i >= period of each row.",
    ),
    Mistake(
        "rows averaged first",
        lambda lo, t, p: _accuracy_variant(lo, t, p, per_row=True),
        "you took each row's accuracy and then the mean of the rows. The accuracy is one mean over every predictable "
        "(row, query) pair, so a row with a short period, which has more of them, counts for more.",
    ),
    Mistake(
        "targets rolled round",
        lambda lo, t, p: _accuracy_variant(lo, t, p, wrap=True),
        "the targets were made with torch.roll, so the last query is compared with token 0, which it does not "
        "predict. Drop the last query instead: logits[:, :-1] against tokens[:, 1:].",
    ),
    Mistake(
        "one period for the batch",
        lambda lo, t, p: _accuracy_variant(lo, t, p, one_period=True),
        "every row used the first row's period. Each row has its own, periods[b]: compare a row of query positions "
        "with periods[:, None].",
    ),
]


def _accuracy_cases() -> list[Case]:
    g = seeded_generator(131)
    B, n, V = 5, 12, 7
    tokens = torch.randint(0, V, (B, n), generator=g)
    periods = torch.tensor([3, 5, 4, 2, 7])
    random_logits = torch.randn(B, n, V, generator=g)
    # Right where a query predicts its next token from an earlier copy, wrong at every other query.
    planted = torch.full((B, n, V), -1.0)
    for b, p in enumerate(periods.tolist()):
        for i in range(n):
            target = int(tokens[b, i + 1]) if i + 1 < n else 0
            planted[b, i, target if i >= p else (target + 1) % V] = 1.0
    return [
        Case("random logits, periods 3, 5, 4, 2 and 7", (random_logits, tokens, periods)),
        Case("logits right exactly at the predictable queries", (planted, tokens, periods)),
        Case(
            "one period 6 for every row",
            (torch.randn(3, 10, 5, generator=g), torch.randint(0, 5, (3, 10), generator=g), torch.tensor([6, 6, 6])),
        ),
    ]


_ACCURACY_HINTS = register_hints(
    "13.2",
    "The logits at query i predict token i + 1. Only the queries whose current token occurred before count, i >= "
    "period in each row, and the accuracy is one mean over all of them, pooled over the rows: 1 for a model that "
    "is right exactly there. To see a difference, build logits that are right at those queries and wrong "
    "elsewhere, and check that you get 1.",
    "logits[:, :-1].argmax(-1) == tokens[:, 1:] is (B, n - 1), query i against token i + 1; torch.arange(n - 1)[None, "
    ":] >= periods[:, None] is the (B, n - 1) mask of the queries that count; index the first with the second and "
    "take the mean of the floats.",
    "B, n = tokens.shape\n"
    "correct = logits[:, :-1].argmax(-1) == tokens[:, 1:]  # (B, n - 1): query i against token i + 1\n"
    "counted = torch.arange(n - 1)[None, :] >= periods[:, None]  # (B, n - 1): the current token occurred before\n"
    "return correct[counted].float().mean()",
)


@counts_attempts
def check_predictable_accuracy(accuracy: Callable) -> Verdict:
    """Exercise 13.2: ``predictable_accuracy(logits (B, n, V), tokens (B, n), periods (B,)) -> 0-dim tensor``, the
    next-token accuracy at the queries ``i >= period`` (helpers.induction.next_token_accuracy)."""
    return run_checks(
        "Exercise 13.2 predictable accuracy",
        accuracy,
        reference=next_token_accuracy,
        cases=_accuracy_cases(),
        mistakes=ACCURACY_MISTAKES,
        hints=_ACCURACY_HINTS,
        input_names=("logits", "tokens", "periods"),
    )
