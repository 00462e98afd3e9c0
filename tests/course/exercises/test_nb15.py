"""The checker of notebook 15, a language model of our own (``course.exercises.nb15``): right answers written other
ways pass, and the classic mistakes of nucleus (top-p) filtering, listed and written by hand, are named."""

from __future__ import annotations

import torch

from course import exercises as ex


def nucleus(logits, p):
    ordered, order = logits.sort(dim=-1, descending=True)
    probs = ordered.softmax(dim=-1)
    drop = (probs.cumsum(dim=-1) - probs) >= p
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def nucleus_by_shifting(logits, p):  # "cumsum >= p", shifted right by one so that the token reaching p stays
    ordered, order = logits.sort(dim=-1, descending=True)
    over = ordered.softmax(dim=-1).cumsum(dim=-1) >= p
    over = torch.cat([torch.zeros_like(over[..., :1]), over[..., :-1]], dim=-1)
    keep = torch.zeros_like(over).scatter(-1, order, ~over)
    return torch.where(keep, logits, torch.tensor(float("-inf")))


def nucleus_in_a_loop(logits, p):  # row by row, token by token, in Python
    flat = logits.reshape(-1, logits.shape[-1])
    out = torch.full_like(flat, float("-inf"))
    for r in range(flat.shape[0]):
        probs = flat[r].softmax(-1)
        total = 0.0
        for t in probs.argsort(descending=True).tolist():
            if total >= p:
                break
            out[r, t] = flat[r, t]
            total += probs[t].item()
    return out.reshape(logits.shape)


def nucleus_by_threshold(logits, p):  # the smallest kept probability as a threshold, applied in vocabulary order
    probs = logits.softmax(dim=-1)
    ordered = probs.sort(dim=-1, descending=True).values
    count = ((ordered.cumsum(dim=-1) - ordered) < p).sum(dim=-1, keepdim=True)  # how many stay
    threshold = ordered.gather(-1, count - 1)
    return logits.masked_fill(probs < threshold, float("-inf"))


RIGHT_ANSWERS = {
    "sort, cumsum minus self, scatter back": nucleus,
    "cumsum >= p shifted right by one": nucleus_by_shifting,
    "a Python loop": nucleus_in_a_loop,
    "the last kept probability as a threshold": nucleus_by_threshold,
    "in float64": lambda x, p: nucleus(x.double(), p),
}


def crossing_dropped(logits, p):  # the mass including the token itself decides
    ordered, order = logits.sort(dim=-1, descending=True)
    drop = ordered.softmax(dim=-1).cumsum(dim=-1) > p
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def gathered_back(logits, p):  # the sorted decision read back with gather, a second sort instead of its inverse
    ordered, order = logits.sort(dim=-1, descending=True)
    probs = ordered.softmax(dim=-1)
    drop = (probs.cumsum(dim=-1) - probs) >= p
    return logits.masked_fill(drop.gather(-1, order), float("-inf"))


def zero_filled(logits, p):
    out = nucleus(logits, p)
    return torch.where(out.isinf(), torch.zeros_like(out), out)


def probabilities(logits, p):
    return nucleus(logits, p).softmax(dim=-1)


WRONG_ANSWERS = {
    "the token that crosses p dropped": crossing_dropped,
    "put back with gather": gathered_back,
    "not sorted (cumsum in vocabulary order)": lambda x, p: x.masked_fill(
        x.softmax(-1).cumsum(-1) - x.softmax(-1) >= p, float("-inf")
    ),
    "dropped tokens set to 0": zero_filled,
    "probabilities returned": probabilities,
}


def test_a_right_answer_passes_and_a_wrong_one_is_named():
    assert ex.check_top_p(nucleus).passed
    verdict = ex.check_top_p(crossing_dropped)
    assert verdict.status == "failed" and "reached p" in str(verdict)
