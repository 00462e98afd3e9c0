"""Notebook 05, positional encoding: the checkers of exercises 05.x and their classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.encoder import positional_encoding

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks


def _pe_variant(max_len, d_model, *, swap=False, exponent_dim=False, per_dimension=0, start=0, doubled=False):
    position = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    if per_dimension:  # every dimension j its own exponent j / d_model (or 2j / d_model, per_dimension=2)
        angle = position / 10000.0 ** (per_dimension * torch.arange(d_model, dtype=torch.float64) / d_model)
        pe = torch.empty(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])
        return pe.float()
    dims = torch.arange(0, d_model, 2, dtype=torch.float64)
    exponent = (dims / 2) / d_model if exponent_dim else (2 * dims if doubled else dims) / d_model
    angle = position / 10000.0**exponent
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(angle) if swap else torch.sin(angle)
    pe[:, 1::2] = torch.sin(angle) if swap else torch.cos(angle)
    return pe.float()


POSITIONAL_ENCODING_MISTAKES = [
    Mistake(
        "sin and cos swapped",
        lambda max_len, d_model: _pe_variant(max_len, d_model, swap=True),
        "sin and cos are swapped: even dimensions 2i take the sine, odd dimensions 2i+1 the cosine (§3.5).",
    ),
    Mistake(
        "exponent uses i instead of 2i",
        lambda max_len, d_model: _pe_variant(max_len, d_model, exponent_dim=True),
        "the exponent is i / d_model; the paper's is 2i / d_model, where 2i is the even dimension index.",
    ),
    Mistake(
        "exponent per dimension",
        lambda max_len, d_model: _pe_variant(max_len, d_model, per_dimension=1),
        "each dimension j got its own exponent j / d_model, so the cosine in dimension 2i + 1 has a different "
        "frequency from the sine in 2i. The pair shares one frequency, 1 / 10000^(2i / d_model): use the even "
        "index 2i for both.",
    ),
    Mistake(
        "2 counted twice",
        lambda max_len, d_model: _pe_variant(max_len, d_model, per_dimension=2),
        "the exponent is 2j / d_model with j the column index, so the 2 is counted twice: in the paper's "
        "2i / d_model, 2i already is the (even) column index. Column 2i and column 2i + 1 share the frequency "
        "1 / 10000^(2i / d_model): with j the column, that is j - j % 2, not 2j.",
    ),
    Mistake(
        "2 counted twice",
        lambda max_len, d_model: _pe_variant(max_len, d_model, doubled=True),
        "the exponent is 2i / d_model with i already the even column index (0, 2, 4, ...), so the 2 is counted "
        "twice: torch.arange(0, d_model, 2), or a loop over range(0, d_model, 2), already gives the paper's 2i. "
        "Use it as it is, 10000^(2i / d_model) with 2i = 0, 2, 4, ...",
    ),
    Mistake(
        "positions start at 1",
        lambda max_len, d_model: _pe_variant(max_len, d_model, start=1),
        "the positions run 1 .. max_len; they start at 0 (row 0 is sin 0 = 0, cos 0 = 1): torch.arange(max_len).",
    ),
    Mistake(
        "sines and cosines in halves",
        lambda max_len, d_model: torch.cat(
            [_pe_variant(max_len, d_model)[:, 0::2], _pe_variant(max_len, d_model)[:, 1::2]], dim=-1
        ),
        "all sines come first and all cosines after (torch.cat); the paper interleaves them: sine in dimension "
        "2i, cosine of the same frequency in dimension 2i + 1 (pe[:, 0::2] and pe[:, 1::2]).",
    ),
]

_PE_HINTS = register_hints(
    "05.1",
    "§3.5: the dimensions come in pairs (2i, 2i + 1) that share one frequency, 1 / 10000^(2i / d_model); the even "
    "one holds the sine of position × frequency, the odd one the cosine. Positions are 0 .. max_len - 1. To see "
    "a difference, print your first two rows: row 0 is 0, 1, 0, 1, ..., and in row 1 the columns 2i and 2i + 1 "
    "are the sine and the cosine of one angle (their squares sum to 1).",
    "broadcasting builds the table: a column of positions (max_len, 1) against a row of the even column indices "
    "(d_model / 2,), torch.arange(0, d_model, 2), which already are the paper's 2i; the sines go into pe[:, 0::2], "
    "the cosines of the same angles into pe[:, 1::2].",
    "position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)\n"
    "two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # the even columns, 2i = 0, 2, 4, ...\n"
    "angle = position / 10000 ** (two_i / d_model)  # (max_len, d_model / 2)\n"
    "pe = torch.zeros(max_len, d_model)\n"
    "pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)\n"
    "return pe",
)


@counts_attempts
def check_positional_encoding(make_positional_encoding: Callable) -> Verdict:
    """Exercise 05.1: ``make_positional_encoding(max_len, d_model) -> (max_len, d_model)``, §3.5.

    Compared with ``rtol=1e-4, atol=1e-5``; any floating dtype is accepted."""
    cases = [Case("max_len=6, d_model=4", (6, 4)), Case("max_len=50, d_model=16", (50, 16))]
    return run_checks(
        "Exercise 05.1 positional encoding",
        make_positional_encoding,
        reference=positional_encoding,
        cases=cases,
        mistakes=POSITIONAL_ENCODING_MISTAKES,
        hints=_PE_HINTS,
        input_names=("max_len", "d_model"),
    )
