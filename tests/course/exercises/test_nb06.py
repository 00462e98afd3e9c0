"""The checkers of notebook 06, the encoder block (``course.exercises.nb06``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import torch
from torch import nn

from course import exercises as ex
from tests.course.exercises.answers import post_norm, pre_norm, pre_norm_steps, stub


def test_encoder_block_checkers():
    assert ex.check_encoder_block(post_norm).passed
    assert ex.check_encoder_block(pre_norm, norm_first=True).passed
    assert ex.check_encoder_block(pre_norm).mistake == "post-norm and pre-norm swapped"
    assert ex.check_encoder_block(post_norm, norm_first=True).mistake == "post-norm and pre-norm swapped"

    def no_residual(x, mask, attention, ff, norm1, norm2):
        return norm2(ff(norm1(attention(x, mask))))

    assert ex.check_encoder_block(no_residual).mistake == "no residual"

    def no_mask(x, mask, attention, ff, norm1, norm2):
        return post_norm(x, None, attention, ff, norm1, norm2)

    assert ex.check_encoder_block(no_mask).mistake == "mask ignored"

    def same_norm(x, mask, attention, ff, norm1, norm2):
        return post_norm(x, mask, attention, ff, norm1, norm1)

    assert ex.check_encoder_block(same_norm).status == "failed"

    def norms_swapped(x, mask, attention, ff, norm1, norm2):
        return post_norm(x, mask, attention, ff, norm2, norm1)

    assert ex.check_encoder_block(norms_swapped).mistake == "norm1 and norm2 swapped"
    assert ex.check_encoder_block(stub).status == "not attempted"


def test_pre_norm_written_in_steps_passes():
    assert ex.check_encoder_block(pre_norm_steps, norm_first=True).passed


def test_an_answer_that_changes_a_norm_in_place_cannot_change_the_reference():
    def doubles_the_gain(x, mask, attention, feed_forward, norm1, norm2):
        with torch.no_grad():
            norm1.weight.mul_(2.0)  # wrong, and in place
        x = norm1(x + attention(x, mask))
        return norm2(x + feed_forward(x))

    verdict = ex.check_encoder_block(doubles_the_gain)
    assert verdict.status == "failed" and "largest difference" in str(verdict)
    assert "Also: your function changed `norm1` in place; its parameters or buffers changed" in str(verdict)


def pre_norm_residual_normalised(x, mask, attention, feed_forward, norm1, norm2):
    x = norm1(x)
    x = x + attention(x, mask)
    x = norm2(x)
    return x + feed_forward(x)


def post_norm_on_the_branch(x, mask, attention, feed_forward, norm1, norm2):
    x = x + norm1(attention(x, mask))
    return x + norm2(feed_forward(x))


def pre_norm_with_final_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = x + attention(norm1(x), mask)
    x = x + feed_forward(norm2(x))
    return nn.LayerNorm(x.shape[-1])(x)


def post_norm_same_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = norm2(x + attention(x, mask))
    return norm2(x + feed_forward(x))


def post_norm_ffn_first(x, mask, attention, feed_forward, norm1, norm2):
    x = norm1(x + feed_forward(x))
    return norm2(x + attention(x, mask))


def test_encoder_block_diagnoses():
    assert ex.check_encoder_block(post_norm_ffn_first).mistake == "sub-layers in the wrong order"
    assert (
        ex.check_encoder_block(pre_norm_residual_normalised, norm_first=True).mistake
        == "residual from the normalised x"
    )
    assert ex.check_encoder_block(post_norm_on_the_branch).mistake == "norm inside the residual"
    assert ex.check_encoder_block(pre_norm_with_final_norm, norm_first=True).mistake == "final LayerNorm in the block"
    assert ex.check_encoder_block(post_norm_same_norm).mistake == "same norm twice"


def test_second_sub_layer_reading_the_blocks_input_is_named():
    def post_norm_old_residual(x, mask, attention, feed_forward, norm1, norm2):
        y = norm1(x + attention(x, mask))
        return norm2(x + feed_forward(y))  # adds the block's input, not y

    def pre_norm_ffn_on_input(x, mask, attention, feed_forward, norm1, norm2):
        y = x + attention(norm1(x), mask)
        return y + feed_forward(norm2(x))  # normalises the block's input, not y

    for answer, norm_first in ((post_norm_old_residual, False), (pre_norm_ffn_on_input, True)):
        verdict = ex.check_encoder_block(answer, norm_first=norm_first)
        assert verdict.mistake == "second sub-layer reads the block's input"
        assert "instead of the first sub-layer's result" in str(verdict)
