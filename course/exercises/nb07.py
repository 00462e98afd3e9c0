"""Notebook 07, task targets: the checkers of exercises 07.x and their classic mistakes."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from helpers import tasks

from .engine import Case, ErrorHint, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator


def _reverse_variant(tokens, lengths, *, shift=0, pad=True):
    """Reverse targets reading token len - 1 - i + shift (clamped into the row), PAD written or not."""
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(tokens.shape[1])
    source = (lengths[:, None] - 1 - positions + shift).clamp(0, tokens.shape[1] - 1)
    targets = tokens.gather(1, source)
    return targets.masked_fill(positions >= lengths[:, None], tasks.PAD_ID) if pad else targets


OFF_BY_ONE_REVERSE = (
    "position i takes token len - 1 - i (for i = 0 that is len - 1, the last real token; positions start at 0), "
    "not len - i or len - 2 - i."
)

_NEGATIVE_INDEX = re.compile(r"index -\d+ is out of bounds|id=-\d+")


def _out_of_row(error: BaseException) -> bool:
    text = str(error)
    return isinstance(error, IndexError) or "out of bounds" in text or "out of range" in text


REVERSE_TARGETS_MISTAKES = [
    Mistake(
        "whole row flipped",
        lambda t, lengths: t.flip(1),
        "the whole padded row is flipped, so the padding moves to the front and every real token lands "
        "n - len places too far right. Reverse each sequence within its own length: position i takes "
        "token len - 1 - i.",
    ),
    Mistake(
        "padding not PAD",
        lambda t, lengths: _reverse_variant(t, lengths, pad=False),
        "the real positions are right, but the padded positions must hold PAD (0) so the loss can ignore them.",
    ),
    *(
        Mistake(
            "off by one",
            lambda t, lengths, s=s: _reverse_variant(t, lengths, shift=s),
            "an off-by-one in the source index: " + OFF_BY_ONE_REVERSE,
        )
        for s in (1, -1)
    ),
]

_REVERSE_HINTS = register_hints(
    "07.1",
    "each sequence is reversed within its own length, not the whole padded row: in a row with len real tokens, "
    "position i takes the token at position len - 1 - i, and the padded positions (i >= len) hold the padding id 0 "
    "so that the loss can skip them. To see a difference, print your targets under the tokens for a padded row: "
    "tokens 3 5 7 0 0 (len 3) must give 7 5 3 0 0, not 0 0 7 5 3.",
    "position i of row b reads token len_b - 1 - i: a (B, n) tensor of indices from a column of lengths and a "
    "row of positions; tokens.gather(1, indices) reads them once the negative indices at the padding are clamped "
    "to 0; masked_fill then writes PAD where i >= len_b.",
    "positions = torch.arange(tokens.shape[1])  # (n,)\n"
    "source = (lengths[:, None] - 1 - positions).clamp(min=0)  # (B, n): len - 1 - i, 0 at the padding\n"
    "targets = tokens.gather(1, source)\n"
    "return targets.masked_fill(positions >= lengths[:, None], 0)  # PAD = 0 at the padded positions",
)


@counts_attempts
def check_reverse_targets(reverse_targets: Callable) -> Verdict:
    """Exercise 07.1: ``reverse_targets(tokens (B, n), lengths (B,)) -> targets (B, n)``.

    Each sequence is reversed within its own length; padded positions get ``PAD`` (0).
    """
    g = seeded_generator(12)
    tokens = torch.randint(1, 9, (4, 6), generator=g)
    lengths = torch.tensor([6, 4, 1, 3])
    padded_positions = torch.arange(6) >= lengths[:, None]
    padded = tokens.masked_fill(padded_positions, 0)
    regions = {"the padded positions": padded_positions, "the real positions (not the padding)": ~padded_positions}
    off_by_one = ErrorHint(
        "off by one", _out_of_row, "an index ran past the end of a row, an off-by-one: " + OFF_BY_ONE_REVERSE
    )
    # The first case has no padding, so len - 1 - i stays in 0 .. n - 1 there: an answer that gets through it and
    # then reads index -1 on the padded case has the right formula, and only the padded positions are out of range.
    negative_at_the_padding = ErrorHint(
        "negative indices at the padding",
        lambda error: _out_of_row(error) and bool(_NEGATIVE_INDEX.search(str(error))),
        "not an off-by-one: len - 1 - i is right at the real positions, but at the padded ones (i >= len) it is "
        "below 0, and gather accepts no negative index (plain indexing, tokens[b, -1], would wrap it round to the "
        "end of the row instead). Clamp the indices into the row before gather, (lengths[:, None] - 1 - "
        "i).clamp(min=0), since the padded positions are overwritten with PAD afterwards anyway; or gather only "
        "the real positions.",
    )
    cases = [
        Case(
            "4 sequences of length 6",
            (torch.randint(1, 9, (4, 6), generator=g), torch.full((4,), 6)),
            error_hints=(off_by_one,),
        ),
        Case(
            "lengths [6, 4, 1, 3], right-padded with 0",
            (padded, lengths),
            regions,
            error_hints=(negative_at_the_padding, off_by_one),
        ),
    ]
    return run_checks(
        "Exercise 07.1 reverse targets",
        reverse_targets,
        reference=tasks.reverse_targets,
        cases=cases,
        mistakes=REVERSE_TARGETS_MISTAKES,
        hints=_REVERSE_HINTS,
        input_names=("tokens", "lengths"),
    )
