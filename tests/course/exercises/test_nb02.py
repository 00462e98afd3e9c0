"""The checkers of notebook 02, masks (``course.exercises.nb02``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course import exercises as ex
from course.exercises import engine
from tests.course.exercises.answers import masked, masked_after_softmax, masked_where, stub


def test_padding_mask_checker():
    def right(lengths, max_len):
        return (torch.arange(max_len) < torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    assert ex.check_padding_mask(right).passed
    assert ex.check_padding_mask(lambda lengths, m: ~right(lengths, m)).mistake == "mask inverted"
    assert ex.check_padding_mask(lambda lengths, m: right(lengths, m)[:, 0]).mistake == "no query axis"

    def off_by_one(lengths, max_len):
        return (torch.arange(max_len) <= torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    assert ex.check_padding_mask(off_by_one).mistake == "off by one"
    assert "j < length" in str(ex.check_padding_mask(off_by_one))


def test_masked_attention_checker():
    fmin = torch.finfo(torch.float32).min
    assert ex.check_masked_attention(lambda q, k, v, mask: masked(q, k, v, mask, fmin, True)).passed
    inverted = ex.check_masked_attention(lambda q, k, v, mask: masked(q, k, v, ~mask, fmin, True))
    assert inverted.mistake == "mask inverted"
    with_inf = ex.check_masked_attention(lambda q, k, v, mask: masked(q, k, v, mask, -math.inf, False))
    assert with_inf.mistake == "-inf fill gives NaN" and "NaN" in str(with_inf)
    for fill in (-1e9, fmin):
        uniform = ex.check_masked_attention(lambda q, k, v, mask, fill=fill: masked(q, k, v, mask, fill, False))
        assert uniform.mistake == "uniform weights on a fully masked row", fill
        assert 'case "a sequence of length 0' in uniform.message


def test_an_in_place_sort_that_is_wrong_fails():
    def sorts_lengths(lengths, max_len):
        lengths.sort()  # reorders the caller's list: the rows no longer match the batch
        return (torch.arange(max_len) < torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    verdict = ex.check_padding_mask(sorts_lengths)
    assert verdict.status == "failed" and "entries differ" in str(verdict)
    assert "Also: your function changed `lengths` in place" in str(verdict), verdict


def test_an_in_place_change_of_the_mask_does_not_reach_the_reference():
    def inverts_mask_in_place(query, key, value, mask):
        mask.logical_not_()  # changes the caller's mask ...
        return masked_where(query, key, value, ~mask)  # ... and undoes it here: right on the original mask

    verdict = ex.check_masked_attention(inverts_mask_in_place)
    assert "the returned values are right" in verdict.message  # the reference never saw the inverted mask ...
    assert verdict.mistake == "mask changed in place", verdict  # ... and the change is told

    def fills_and_keeps_it(query, key, value, mask):
        mask.fill_(True)  # forgets the mask, in place
        return masked_where(query, key, value, mask)

    assert ex.check_masked_attention(fills_and_keeps_it).status == "failed"


def test_padding_mask_compared_the_wrong_way_is_named():
    def greater(lengths, max_len):
        return (torch.arange(max_len) > torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    assert ex.check_padding_mask(greater).mistake == "mask inverted"


def test_the_list_type_error_of_02_1_gets_the_as_tensor_hint():
    def indexes_the_list(lengths, max_len):
        return (torch.arange(max_len) < lengths[:, None]).unsqueeze(1)

    verdict = ex.check_padding_mask(indexes_the_list)
    assert verdict.mistake == "lengths is a list" and "torch.as_tensor(lengths)" in str(verdict)
    assert "indexes_the_list" in str(verdict)  # where it was raised
    assert "make it a tensor" in str(ex.check_padding_mask(stub))  # the stub's hint says what, not how


def masked_unscaled(query, key, value, mask):
    scores = (query @ key.transpose(-2, -1)).masked_fill(~mask, -1e9)
    weights = scores.softmax(-1).masked_fill(~mask, 0.0)
    return weights @ value, weights


def padded_attention_08(q, k, v, pad_mask):
    # notebook 08, exercise 1, wrapped to return the weights too: the mask is used the wrong way round
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
    scores = scores.masked_fill(pad_mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


def test_masked_attention_diagnoses():
    assert ex.check_masked_attention(masked_after_softmax).mistake == "mask applied after the softmax"
    assert ex.check_masked_attention(masked_unscaled).mistake == "no scaling"
    verdict = ex.check_masked_attention(padded_attention_08)
    assert verdict.mistake == "mask inverted" and "~mask" in str(verdict)

    def not_zeroed(q, k, v, mask):  # the one fix of 08's snippet: right except on a fully masked row
        return padded_attention_08(q, k, v, ~mask)

    verdict = ex.check_masked_attention(not_zeroed)
    assert verdict.mistake == "uniform weights on a fully masked row"
    assert "only in the rows of queries with no allowed key" in str(verdict)


def test_masked_fill_result_dropped_is_named():
    def drops_the_fill(query, key, value, mask):
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        scores.masked_fill(~mask, -1e9)  # result not kept
        weights = scores.softmax(-1)
        return weights @ value, weights

    verdict = ex.check_masked_attention(drops_the_fill)
    assert verdict.mistake == "mask ignored" and "assigned" in str(verdict)


def test_renormalising_after_the_softmax_is_diagnosed_as_0_over_0():
    def renormalised(query, key, value, mask):
        s = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        w = torch.softmax(s, dim=-1) * mask
        w = w / w.sum(-1, keepdim=True)  # 0 / 0 = NaN on a query with no allowed key
        return w @ value, w

    verdict = ex.check_masked_attention(renormalised)
    assert verdict.mistake == "-inf fill gives NaN"
    assert "divides 0 by 0" in str(verdict) and "-inf" in str(verdict)


def test_a_few_scattered_wrong_entries_are_listed_not_called_a_column_pattern():
    # 02.1's `<=`: one wrong entry in each of two rows, which happen to be odd columns
    wrong = torch.zeros(3, 1, 4, dtype=torch.bool)
    wrong[0, 0, 3] = wrong[1, 0, 1] = True
    assert engine.wrong_pattern(wrong, {}) == "only at indices (0, 0, 3) and (1, 0, 1)"
    verdict = ex.check_padding_mask(lambda lengths, m: (torch.arange(m) <= torch.as_tensor(lengths)[:, None])[:, None])
    assert verdict.mistake == "off by one" and "odd columns" not in str(verdict), str(verdict)
    many = torch.zeros(8, 8, dtype=torch.bool)
    many[torch.arange(8), (torch.arange(8) * 3) % 8] = True  # one per row, spread over the columns
    assert engine.wrong_pattern(many, {}) == ""


def test_every_listed_padding_mistake_is_named():
    from course.exercises import nb02

    for mistake in nb02.PADDING_MASK_MISTAKES:
        verdict = ex.check_padding_mask(mistake.wrong)
        assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))
