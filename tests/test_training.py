"""Tests of helpers.training: Eq. 3's learning rate (§5.3) and the digits -> number words task."""

from __future__ import annotations

import math

import pytest
import torch

from helpers.training import (
    BOS,
    EOS,
    VOCAB,
    make_translation_batch,
    number_to_words,
    rate,
    sample_numbers,
    to_ids,
    to_tokens,
)


def test_rate_is_eq3_at_known_steps():
    # lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    assert math.isclose(rate(1, 512, 4000), 512**-0.5 * 4000**-1.5)
    assert math.isclose(rate(4000, 512, 4000), (512 * 4000) ** -0.5)  # the peak, about 7.0e-4
    assert math.isclose(rate(4000, 512), 6.9877e-4, rel_tol=1e-4)
    assert math.isclose(rate(2000, 512), rate(4000, 512) / 2)  # linear warm-up
    assert math.isclose(rate(16000, 512), rate(4000, 512) / 2)  # then step^-0.5
    assert math.isclose(rate(100, 64, warmup_steps=100), 1 / 80)
    steps = range(1, 20001)
    assert max(steps, key=lambda s: rate(s, 512)) == 4000


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, None])
def test_rate_rejects_steps_below_one(bad):
    with pytest.raises(ValueError, match="step"):
        rate(bad, 512)
    with pytest.raises(ValueError, match="d_model"):
        rate(1, 0)
    with pytest.raises(ValueError, match="warmup_steps"):
        rate(1, 512, warmup_steps=0)


def test_rate_plugs_into_lambda_lr_shifted_by_one():
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([param], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: rate(s + 1, 64, 10))
    seen = []
    for _ in range(30):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate the coming update uses
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([rate(s, 64, 10) for s in range(1, 31)])


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (7, "seven"),
        (10, "ten"),
        (17, "seventeen"),
        (20, "twenty"),
        (45, "forty five"),
        (100, "one hundred"),
        (407, "four hundred seven"),
        (1000, "one thousand"),
        (12015, "twelve thousand fifteen"),
        (900090, "nine hundred thousand ninety"),
        (999999, "nine hundred ninety nine thousand nine hundred ninety nine"),
    ],
)
def test_number_to_words(n, words):
    assert number_to_words(n) == words.split()


def test_number_to_words_rejects_out_of_range():
    for bad in (-1, 1_000_000, 3.0):
        with pytest.raises(ValueError, match="n must"):
            number_to_words(bad)


def test_batch_pads_both_sides_and_ends_targets_with_eos():
    batch = make_translation_batch([407, 5, 12015])
    assert batch["src"].shape == (3, 5) and batch["tgt"].shape == (3, 4)
    assert batch["src"][1].tolist() == [*to_ids(["5"]), 0, 0, 0, 0]
    assert batch["tgt"][0].tolist() == to_ids(["four", "hundred", "seven", EOS])
    assert batch["tgt"][1].tolist() == [*to_ids(["five", EOS]), 0, 0]
    assert batch["src_mask"].shape == (3, 1, 5) and batch["src_mask"][1, 0].tolist() == [True] + [False] * 4
    assert batch["src_lengths"].tolist() == [3, 1, 5] and batch["tgt_lengths"].tolist() == [4, 2, 4]
    assert to_tokens(batch["tgt"][2]) == ["twelve", "thousand", "fifteen"]
    assert VOCAB[0] == "<pad>" and BOS in VOCAB and len(set(VOCAB)) == len(VOCAB)


def test_sample_numbers_excludes_the_held_out_set_and_covers_every_length():
    held_out = frozenset(sample_numbers(200, torch.Generator().manual_seed(1), min_digits=3))
    drawn = sample_numbers(3000, torch.Generator().manual_seed(2), exclude=held_out)
    assert not held_out & set(drawn)
    assert {len(str(n)) for n in drawn} == set(range(1, 7))
    assert min(held_out) >= 100
    assert sample_numbers(5, torch.Generator().manual_seed(3)) == sample_numbers(5, torch.Generator().manual_seed(3))
