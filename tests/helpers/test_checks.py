"""helpers.checks: one behaviour for bad counts, lengths and indices in every public function."""

from __future__ import annotations

import pytest
import torch

from helpers.checks import is_int, non_negative_int, positive_int, shape_text
from helpers.decoding import beam_search, length_penalty
from helpers.efficient import interleaved_timings, tiled_attention
from helpers.encoder import Encoder, PositionalEncoding, positional_encoding
from helpers.masks import causal_mask
from helpers.training import number_to_words, sample_numbers
from helpers.transformer import Transformer, shift_right


def test_is_int_refuses_bools_and_floats():
    assert is_int(3) and is_int(0) and is_int(-2)
    assert not any(is_int(v) for v in (True, False, 3.0, "3", None, torch.tensor(3)))


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "2", None])
def test_positive_int_names_the_argument_and_the_value(value):
    with pytest.raises(ValueError, match=rf"^heads must be a positive integer \(query heads\), got {value!r}$"):
        positive_int("heads", value, "query heads")


def test_positive_and_non_negative_return_the_value():
    assert positive_int("n", 5) == 5 and non_negative_int("t", 0) == 0
    with pytest.raises(ValueError, match=r"t must be a non-negative integer, got -1"):
        non_negative_int("t", -1)


def test_shape_text():
    assert shape_text(torch.zeros(2, 3, dtype=torch.long)) == "torch.int64 of shape (2, 3)"
    assert shape_text([1, 2]) == "list"
    assert shape_text(torch.zeros(2, 1, 5), dtype=False) == "(2, 1, 5)"  # the form notebook 08's stored error shows
    assert shape_text(torch.zeros(4), dtype=False) == "(4,)"
    assert shape_text(None, dtype=False) == "NoneType"


# Every public function that takes a count refuses True the same way (True == 1 would otherwise slip through).
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: causal_mask(True), "n"),
        (lambda: causal_mask(3, past=True), "past"),
        (lambda: positional_encoding(True, 8), "max_len"),
        (lambda: PositionalEncoding(8, 4)(torch.zeros(1, 2, 8), start=True), "start"),
        (lambda: Encoder(True, 8, 2, 16), "num_layers"),
        (lambda: Transformer(10, 10, d_model=8, num_heads=2, num_layers=True, d_ff=16), "num_layers"),
        (lambda: shift_right(torch.ones(1, 3, dtype=torch.long), True), "bos_id"),
        (lambda: tiled_attention(*torch.zeros(3, 1, 4, 2), block_size=True), "block_size"),
        (lambda: interleaved_timings({"f": lambda: None}, repeats=True), "repeats"),
        (lambda: length_penalty(True, 0.6), "length"),
        (lambda: number_to_words(True), "n"),
        (lambda: sample_numbers(True, torch.Generator()), "count"),
    ],
)
def test_true_is_not_a_count(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b.*True"):
        call()


def test_beam_size_true_is_refused():
    model = Transformer(10, 10, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    src = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"beam_size must be a positive integer, got True"):
        beam_search(model, src, 1, 2, 4, beam_size=True)
