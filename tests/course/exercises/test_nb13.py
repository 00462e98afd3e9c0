"""The checkers of notebook 13, induction heads (``course.exercises.nb13``): right answers pass, the classic mistakes
of the induction score and of the accuracy on the predictable positions are named."""

from __future__ import annotations

import torch

from course import exercises as ex


def pooled(weights, periods):
    n = weights.shape[-1]
    queries = torch.arange(n)
    valid = (queries[None, :] >= periods[:, None]).float()
    keys = (queries[None, :] - periods[:, None] + 1).clamp(min=0)
    picked = torch.take_along_dim(weights, keys[:, None, :, None], dim=-1)[..., 0]
    return (picked * valid[:, None]).sum(dim=(0, 2)) / valid.sum()


def loops(weights, periods):  # plain loops over rows and queries, the sum and the count kept apart
    B, h, n, _ = weights.shape
    total, count = torch.zeros(h), 0
    for b in range(B):
        p = int(periods[b])
        for i in range(p, n):
            total += weights[b, :, i, i - p + 1]
            count += 1
    return total / count


def fancy_indexing(weights, periods):  # index arrays of the valid (row, query) pairs only
    n = weights.shape[-1]
    rows, queries = (torch.arange(n)[None, :] >= periods[:, None]).nonzero(as_tuple=True)
    keys = queries - periods[rows] + 1
    return weights[rows, :, queries, keys].mean(dim=0)  # (pairs, h) -> (h,)


RIGHT_ANSWERS = {
    "gather and a mask": pooled,
    "loops": loops,
    "fancy indexing": fancy_indexing,
    "float64": lambda w, p: pooled(w.double(), p),
    "a diagonal per row": lambda w, p: torch.cat(
        [torch.diagonal(w[b], offset=-(int(p[b]) - 1), dim1=-2, dim2=-1)[:, 1:] for b in range(len(p))], dim=1
    ).mean(dim=1),
}


def _loop(weights, periods, back=1, start=None, per_row=False, divisor=None, first_period=False, late=0):
    B, h, n, _ = weights.shape
    total, count, rows = torch.zeros(h), 0, []
    for b in range(B):
        p = int(periods[0] if first_period else periods[b])
        row, row_count = torch.zeros(h), 0
        for i in range((p if start is None else start) + late, n):
            row += weights[b, :, i, max(min(i - p + back, n - 1), 0)]
            row_count += 1
        total, count = total + row, count + row_count
        rows.append(row / max(row_count, 1))
    if per_row:
        return torch.stack(rows).mean(dim=0)
    return total / (divisor if divisor is not None else count)


WRONG_ANSWERS = {  # written the ways students write them, not as the checker's own variants
    "the earlier copy itself": lambda w, p: _loop(w, p, back=0),
    "one too far": lambda w, p: _loop(w, p, back=2),
    "first repeat left out": lambda w, p: _loop(w, p, late=1),  # queries i > period
    "query and key swapped": lambda w, p: _loop(w.transpose(-2, -1), p),  # weights[b, :, i - p + 1, i]
    "every query counted": lambda w, p: _loop(w, p, start=0),
    "divided by every query": lambda w, p: _loop(w, p, divisor=w.shape[0] * w.shape[-1]),
    "rows averaged first": lambda w, p: _loop(w, p, per_row=True),
    "one period for the batch": lambda w, p: _loop(w, p, first_period=True),
}


def test_other_wrong_answers_fail_without_a_false_diagnosis():
    from course.exercises import reset_attempts

    for wrong in (
        lambda w, p: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2)),  # the previous-token score instead
        lambda w, p: pooled(w, p).sum().expand(w.shape[1]),  # every head gets the total
    ):
        reset_attempts()
        verdict = ex.check_induction_scores(wrong)
        assert verdict.status == "failed" and verdict.mistake is None, str(verdict)


# Exercise 13.2 --------------------------------------------------------------------------------------------------------


def accuracy_loops(logits, tokens, periods):
    B, n = tokens.shape
    right = total = 0
    for b in range(B):
        for i in range(int(periods[b]), n - 1):
            right += int(logits[b, i].argmax() == tokens[b, i + 1])
            total += 1
    return torch.tensor(right / total)


ACCURACY_RIGHT = {
    "slices and a mask": lambda lo, t, p: (
        (lo[:, :-1].argmax(-1) == t[:, 1:])[torch.arange(t.shape[1] - 1)[None, :] >= p[:, None]].float().mean()
    ),
    "loops": accuracy_loops,
    "a weighted sum": lambda lo, t, p: (lambda correct, w: (correct * w).sum() / w.sum())(
        (lo.argmax(-1)[:, :-1] == t[:, 1:]).double(), (torch.arange(t.shape[1] - 1) >= p[:, None]).double()
    ),
    "torch.where over every query": lambda lo, t, p: torch.where(
        torch.arange(t.shape[1] - 1) >= p[:, None], (lo[:, :-1].argmax(-1) == t[:, 1:]).float(), torch.nan
    ).nanmean(),
}


def _accuracy_loop(logits, tokens, periods, shift=1, start=0, per_row=False, first_period=False):
    B, n = tokens.shape
    rows, right, total = [], 0, 0
    for b in range(B):
        p = int(periods[0] if first_period else periods[b])
        row_right = row_total = 0
        for i in range(0 if start is None else p + start, n - 1 if shift else n):
            row_right += int(logits[b, i].argmax() == tokens[b, i + shift])
            row_total += 1
        rows.append(row_right / max(row_total, 1))
        right, total = right + row_right, total + row_total
    return torch.tensor(sum(rows) / len(rows) if per_row else right / total)


ACCURACY_WRONG = {  # written the ways students write them
    "compared with the current token": lambda lo, t, p: _accuracy_loop(lo, t, p, shift=0),
    "one query early": lambda lo, t, p: _accuracy_loop(lo, t, p, start=-1),
    "first repeat left out": lambda lo, t, p: _accuracy_loop(lo, t, p, start=1),
    "every query counted": lambda lo, t, p: _accuracy_loop(lo, t, p, start=None),
    "rows averaged first": lambda lo, t, p: _accuracy_loop(lo, t, p, per_row=True),
    "targets rolled round": lambda lo, t, p: (
        (lo.argmax(-1) == torch.roll(t, -1, dims=1))[torch.arange(t.shape[1]) >= p[:, None]].float().mean()
    ),
    "one period for the batch": lambda lo, t, p: _accuracy_loop(lo, t, p, first_period=True),
}
