"""Notebook 15, a language model of our own: the checker of exercise 15.1 (nucleus filtering) and its classic
mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.lm import filter_logits

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator


def _reference(logits, p):
    return filter_logits(logits, top_p=p)


def _top_p_variant(
    logits, p, *, including_self=None, order="descending", axis=-1, fill=float("-inf"), probs=False, back="scatter"
):
    """The reference with one step changed: the token's own probability counted in the mass that decides whether it
    stays (``including_self=">"`` or ``">="``), the tokens taken in vocabulary order or ascending, the sort and sum
    along another axis, the decision put back with ``gather`` instead of ``scatter``, the dropped tokens filled with
    0, or probabilities returned instead of logits."""
    if order == "vocabulary":
        ordered, index = logits, torch.arange(logits.shape[axis]).expand_as(logits)
    else:
        ordered, index = logits.sort(dim=axis, descending=order == "descending")
    p_sorted = ordered.softmax(dim=axis)
    mass = p_sorted.cumsum(dim=axis)
    if including_self is None:
        drop_sorted = (mass - p_sorted) >= p
    elif including_self == "before >":
        drop_sorted = (mass - p_sorted) > p
    else:
        drop_sorted = mass > p if including_self == ">" else mass >= p
    drop = drop_sorted.scatter(axis, index, drop_sorted) if back == "scatter" else drop_sorted.gather(axis, index)
    out = logits.masked_fill(drop, fill)
    return out.softmax(dim=-1) if probs else out


_CROSSES = (
    "a token was dropped when the mass up to and including it reached p, so the token that carries the sum past p "
    "is cut, and the kept tokens add up to less than p (none at all when the best token alone exceeds p). Keep a "
    "token while the mass of the tokens ranked *above* it is below p: cumsum minus its own probability."
)

TOP_P_MISTAKES = [
    Mistake("the token that crosses p dropped", lambda x, p: _top_p_variant(x, p, including_self=">"), _CROSSES),
    Mistake("the token that reaches p dropped", lambda x, p: _top_p_variant(x, p, including_self=">="), _CROSSES),
    Mistake(
        "one token past the nucleus kept",
        lambda x, p: _top_p_variant(x, p, including_self="before >"),
        "a token was kept while the mass ranked above it was at most p, so when that mass is exactly p one token more "
        "stays than the nucleus needs. Keep a token only while the mass before it is *below* p: drop it once that mass "
        "is >= p.",
    ),
    Mistake(
        "dropped tokens set to -1e9",
        lambda x, p: _top_p_variant(x, p, fill=-1e9),
        "the dropped tokens' logits were set to -1e9, a very negative number but not an impossible one: the exercise "
        "asks for float('-inf'), which no temperature and no later addition can bring back.",
    ),
    Mistake(
        "put back with gather",
        lambda x, p: _top_p_variant(x, p, back="gather"),
        "the decision made in sorted order was put back with gather(-1, order), which reads it in the sorted order a "
        "second time. The sorted position k belongs to the token order[k]: write it there with scatter(-1, order, "
        "drop), the inverse of the sort.",
    ),
    Mistake(
        "not sorted",
        lambda x, p: _top_p_variant(x, p, order="vocabulary"),
        "the probabilities were summed in vocabulary order, so the kept tokens are the first ones by id, not the most "
        "likely. Sort by probability, descending (logits.sort(dim=-1, descending=True)), sum in that order, then "
        "scatter the decision back to the tokens' own places.",
    ),
    Mistake(
        "sorted ascending",
        lambda x, p: _top_p_variant(x, p, order="ascending"),
        "the tokens were sorted from the least likely up, so the nucleus holds the tail of the distribution. Sort with "
        "descending=True.",
    ),
    Mistake(
        "filtered along the first axis",
        lambda x, p: _top_p_variant(x, p, axis=0),
        "the sort and the running sum ran along the first axis, across the rows of the batch, instead of along the "
        "vocabulary, the last axis (dim=-1).",
    ),
    Mistake(
        "dropped tokens set to 0",
        lambda x, p: _top_p_variant(x, p, fill=0.0),
        "the dropped tokens' logits were set to 0, which is a perfectly likely logit, not an impossible one: after the "
        "softmax they keep their share. Fill them with float('-inf').",
    ),
    Mistake(
        "probabilities returned",
        lambda x, p: _top_p_variant(x, p, probs=True),
        "the answer returns the filtered probabilities; the exercise asks for the logits with -inf outside the "
        "nucleus, which generate() then divides by a temperature and softmaxes itself.",
    ),
]


def _cases() -> list[Case]:
    g = seeded_generator(151)
    three = torch.tensor([0.5, 0.3, 0.2]).log()  # p = 0.6: the second token carries the sum past p and stays
    exact = torch.tensor([0.25, 0.5, 0.125, 0.125]).log()  # exact in float32: after 0.5 the mass before is exactly 0.5
    return [
        Case("one row of 10 logits, p = 0.9", (torch.randn(10, generator=g) * 2, 0.9)),
        Case("a batch (3, 50), p = 0.5", (torch.randn(3, 50, generator=g) * 3, 0.5)),
        Case("probabilities 0.5, 0.3, 0.2 in scrambled order, p = 0.6", (three[[2, 0, 1]].clone(), 0.6)),
        Case(
            "a flat batch (4, 100): the nucleus holds dozens of tokens, p = 0.9",
            (torch.randn(4, 100, generator=g) * 0.5, 0.9),
        ),
        Case("probabilities 0.5, 0.25, 0.125, 0.125, p = 0.5 (the mass before the second is exactly p)", (exact, 0.5)),
        Case("a batch (2, 4, 16), p = 1 (every token stays)", (torch.randn(2, 4, 16, generator=g), 1.0)),
        Case("a batch (4, 8), p = 0.001 (only the best token)", (torch.randn(4, 8, generator=g) * 2, 1e-3)),
    ]


_HINTS = register_hints(
    "15.1",
    "Nucleus (top-p) sampling (Holtzman et al., 2020) keeps the smallest set of most likely tokens whose probabilities "
    "add up to p or more. Sort the probabilities from the largest down and walk along them: a token stays while the "
    "mass of the tokens *before* it is still under p. So the best token always stays, and so does the one that "
    "carries the sum past p. Print, for a small row, the sorted probabilities and their running sum to see it.",
    "ordered, order = logits.sort(dim=-1, descending=True); probs = ordered.softmax(-1); before = probs.cumsum(-1) - "
    "probs; drop = before >= p (in sorted order); drop.scatter(-1, order, drop) puts the decision back in vocabulary "
    "order; logits.masked_fill(..., float('-inf')).",
    "ordered, order = logits.sort(dim=-1, descending=True)\n"
    "probs = ordered.softmax(dim=-1)\n"
    "drop = (probs.cumsum(dim=-1) - probs) >= p  # the mass ranked above each token is already p\n"
    "return logits.masked_fill(drop.scatter(-1, order, drop), float('-inf'))",
)


@counts_attempts
def check_top_p(top_p: Callable) -> Verdict:
    """Exercise 15.1: ``top_p(logits (..., V), p) -> (..., V)``, the logits with -inf outside the nucleus
    (``helpers.lm.filter_logits(logits, top_p=p)``)."""
    return run_checks(
        "Exercise 15.1 nucleus filtering",
        top_p,
        reference=_reference,
        cases=_cases(),
        mistakes=TOP_P_MISTAKES,
        hints=_HINTS,
        input_names=("logits", "p"),
    )
