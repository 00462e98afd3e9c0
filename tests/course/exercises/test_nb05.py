"""The checkers of notebook 05, positional encoding (``course.exercises.nb05``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import math

import torch

from course import exercises as ex
from tests.course.exercises.answers import pe_column_j_loop, pe_vectorised


def pe_reader(max_len, d_model, swap=False, use_i=False):
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / 10000 ** ((i if use_i else 2 * i) / d_model)
            pe[pos, 2 * i] = math.cos(angle) if swap else math.sin(angle)
            pe[pos, 2 * i + 1] = math.sin(angle) if swap else math.cos(angle)
    return pe


def test_positional_encoding_checker():
    assert ex.check_positional_encoding(pe_reader).passed
    swapped = ex.check_positional_encoding(lambda L, d: pe_reader(L, d, swap=True))
    assert swapped.mistake == "sin and cos swapped"
    assert (
        ex.check_positional_encoding(lambda L, d: pe_reader(L, d, use_i=True)).mistake
        == "exponent uses i instead of 2i"
    )


def pe_two_i_doubled(max_len, d_model):  # i already even (0, 2, 4, ...), and 2 * i in the exponent
    pos = torch.arange(max_len)[:, None]
    i = torch.arange(0, d_model, 2)
    angle = pos / 10000 ** (2 * i / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def pe_two_i_doubled_loop(max_len, d_model):
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / 10000 ** (2 * i / d_model))
            pe[pos, i + 1] = math.cos(pos / 10000 ** (2 * i / d_model))
    return pe


def pe_loop_right(max_len, d_model):  # right: the pair's even index 2i = j - j % 2
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for j in range(d_model):
            angle = pos / 10000 ** ((j - j % 2) / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def test_the_doubled_2_of_05_1_is_named_in_each_spelling_and_a_loop_passes():
    for answer, words in (
        (pe_two_i_doubled, "i already the even column index"),
        (pe_two_i_doubled_loop, "i already the even column index"),
        (pe_column_j_loop, "j - j % 2"),
    ):
        verdict = ex.check_positional_encoding(answer)
        assert verdict.mistake == "2 counted twice" and words in str(verdict), str(verdict)
    assert ex.check_positional_encoding(pe_loop_right).passed


def test_an_extra_axis_of_size_1_is_pointed_out():
    verdict = ex.check_positional_encoding(lambda max_len, d_model: pe_vectorised(max_len, d_model)[None])
    assert "axes of size 1" in str(verdict)


def pe_per_dimension(max_len, d_model):
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for j in range(d_model):
            angle = pos / 10000 ** (j / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def pe_from_one(max_len, d_model):
    pos = torch.arange(1, max_len + 1, dtype=torch.float32)[:, None]
    angle = pos / 10000 ** (torch.arange(0, d_model, 2) / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


def test_positional_encoding_diagnoses():
    verdict = ex.check_positional_encoding(pe_per_dimension)
    assert verdict.mistake == "exponent per dimension" and "only in the odd columns" in str(verdict)
    assert ex.check_positional_encoding(pe_from_one).mistake == "positions start at 1"
