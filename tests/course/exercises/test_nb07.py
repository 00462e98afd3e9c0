"""The checkers of notebook 07, task targets (``course.exercises.nb07``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import re

import torch

from course import exercises as ex
from tests.course.exercises.answers import stub


def test_reverse_targets_checker():
    def right(tokens, lengths):
        out = torch.zeros_like(tokens)
        for b, length in enumerate(torch.as_tensor(lengths).tolist()):
            out[b, :length] = tokens[b, :length].flip(0)
        return out

    assert ex.check_reverse_targets(right).passed
    assert ex.check_reverse_targets(lambda t, lengths: t.flip(1)).mistake == "whole row flipped"

    def keeps_garbage(tokens, lengths):
        out = right(tokens, lengths)
        n = tokens.shape[1]
        lengths = torch.as_tensor(lengths)
        source = (lengths[:, None] - 1 - torch.arange(n)).clamp(min=0)
        garbage = tokens.gather(1, source)
        return torch.where(torch.arange(n) < lengths[:, None], out, garbage)

    assert ex.check_reverse_targets(keeps_garbage).mistake == "padding not PAD"
    assert ex.check_reverse_targets(stub).status == "not attempted"


def reverse_len_minus_i(tokens, lengths):
    out = torch.zeros_like(tokens)
    for b in range(tokens.shape[0]):
        length = int(lengths[b])
        for i in range(length):
            out[b, i] = tokens[b, length - i]  # one past the end for i = 0
    return out


def reverse_len_minus_i_clamped(tokens, lengths):
    n = tokens.shape[1]
    i = torch.arange(n)
    source = (lengths[:, None] - i).clamp(0, n - 1)
    return tokens.gather(1, source).masked_fill(i >= lengths[:, None], 0)


def test_reverse_targets_messages():
    for answer in (reverse_len_minus_i, reverse_len_minus_i_clamped):
        verdict = ex.check_reverse_targets(answer)
        assert verdict.mistake == "off by one" and "len - 1 - i" in str(verdict), verdict
    flipped = str(ex.check_reverse_targets(lambda tokens, lengths: tokens.flip(1)))
    assert "n - len places too far right" in flipped and "len - n" not in flipped
    assert re.search(r"expected \d+, got \d+\)", flipped) and ".0000" not in flipped


def reverse_negative_indices_masked(tokens, lengths):  # right formula, but gather gets -1 at the padding
    idx = lengths[:, None] - 1 - torch.arange(tokens.shape[1])
    return tokens.gather(1, idx).masked_fill(idx < 0, 0)


def reverse_len_minus_2_gathered(tokens, lengths):  # a real off-by-one that also reads index -1
    idx = lengths[:, None] - 2 - torch.arange(tokens.shape[1])
    return tokens.gather(1, idx).masked_fill(idx < 0, 0)


def reverse_python_indexing(tokens, lengths):  # negative indices wrap round, into the padding: right
    out = torch.zeros_like(tokens)
    for b in range(tokens.shape[0]):
        for i in range(tokens.shape[1]):
            out[b, i] = tokens[b, int(lengths[b]) - 1 - i]
    return out


def test_reverse_targets_negative_indices_at_the_padding_are_not_called_an_off_by_one():
    verdict = ex.check_reverse_targets(reverse_negative_indices_masked)
    text = str(verdict)
    assert verdict.mistake == "negative indices at the padding", text
    assert "not an off-by-one" in text and "below 0" in text and ".clamp(min=0)" in text, text
    assert "ran past the end" not in text and 'case "lengths [6, 4, 1, 3], right-padded with 0"' in text
    verdict = ex.check_reverse_targets(reverse_len_minus_2_gathered)  # raises on the case without padding
    assert verdict.mistake == "off by one" and "len - 1 - i" in str(verdict), verdict
    assert ex.check_reverse_targets(reverse_python_indexing).passed
