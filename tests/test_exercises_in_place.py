"""Every checker tells an answer that changes one of its inputs in place, and names that argument.

Each answer below is a right answer, written the way a reader might, that also changes one input in place (the
caller's tensor, list or module would change with it). The checkers compare every input with a saved copy after
the call, so each of these fails, with the argument named, although the values it returns are right.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import exercises as ex
from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.efficient import online_softmax_update
from helpers.masks import causal_mask
from helpers.tasks import PAD

# --- one in-place answer per checker -------------------------------------------------------------------------


def attention(query, key, value):
    query /= math.sqrt(query.shape[-1])
    weights = torch.softmax(query @ key.transpose(-2, -1), dim=-1)
    return weights @ value, weights


def padding_mask(lengths, max_len):
    for i, length in enumerate(lengths):  # the last real position of each sequence, written into the list
        lengths[i] = length - 1
    return (torch.arange(max_len) <= torch.as_tensor(lengths)[:, None]).unsqueeze(1)


def masked_attention(query, key, value, mask):
    mask.logical_not_()  # True where masked, for masked_fill
    scores = (query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])).masked_fill(mask, -math.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ value, weights


def split_heads(x, num_heads):
    B, n, d_model = x.shape
    x.resize_(B, n, num_heads, d_model // num_heads)  # the same storage, a new shape: the caller's x too
    return x.transpose(1, 2)


def combine_heads(x):
    B, h, n, d_k = x.shape
    x.transpose_(1, 2)
    return x.reshape(B, n, h * d_k)


class MultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value):
        B, n, d_model = query.shape
        q = self.w_q(query).unflatten(-1, (self.h, -1)).transpose(1, 2)
        k = self.w_k(key).unflatten(-1, (self.h, -1)).transpose(1, 2)
        v = self.w_v(value).unflatten(-1, (self.h, -1)).transpose(1, 2)
        out, weights = scaled_dot_product_attention(q, k, v)
        query.copy_(self.w_o(out.transpose(1, 2).reshape(B, n, d_model)))  # the output, into the input's memory
        return query.clone(), weights


def post_norm_block(x, mask, attention, feed_forward, norm1, norm2):
    x += attention(x, mask)
    x = norm1(x)
    return norm2(x + feed_forward(x))


def pre_norm_block(x, mask, attention, feed_forward, norm1, norm2):
    x += attention(norm1(x), mask)
    return x + feed_forward(norm2(x))


def reverse_targets(tokens, lengths):  # each row reversed where it stands
    for b, length in enumerate(torch.as_tensor(lengths).tolist()):
        tokens[b, :length] = tokens[b, :length].flip(0).clone()
        tokens[b, length:] = PAD
    return tokens


def shift_right(targets, bos_id):
    targets[:, 1:] = targets[:, :-1].clone()
    targets[:, 0] = bos_id
    return targets


def decoder_block(x, memory, self_mask, memory_mask, self_attention, cross_attention, feed_forward, n1, n2, n3):
    x += self_attention(x, self_mask)
    x = n1(x)
    x = n2(x + cross_attention(x, memory, memory_mask))
    return n3(x + feed_forward(x))


def rate(steps, d_model, warmup_steps):
    warm = steps * warmup_steps**-1.5
    return d_model**-0.5 * torch.minimum(steps.pow_(-0.5), warm)


def length_penalty(sum_log_p, lengths, alpha):
    sum_log_p /= ((5 + lengths) / 6) ** alpha
    return sum_log_p


def online_update(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    shift = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)
    running_sum.mul_(torch.exp(running_max - shift)).add_(torch.exp(block - shift[:, None]).sum(dim=-1))
    return new_max, running_sum


def cached_attention(q_new, k_new, v_new, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k_new], dim=-2), torch.cat([cache_v, v_new], dim=-2)
    q_new *= q_new.shape[-1] ** -0.5  # the scale folded into the queries
    scores = (q_new @ keys.transpose(-2, -1)).masked_fill(
        ~causal_mask(q_new.shape[-2], past=cache_k.shape[-2]), -math.inf
    )
    return torch.softmax(scores, dim=-1) @ values, keys, values


def grouped_attention(q, k, v):
    q.mul_(q.shape[-1] ** -0.5)
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


IN_PLACE = [
    (ex.check_attention, attention, "query"),
    (ex.check_padding_mask, padding_mask, "lengths"),
    (ex.check_masked_attention, masked_attention, "mask"),
    (ex.check_split_heads, split_heads, "x"),
    (ex.check_combine_heads, combine_heads, "x"),
    (ex.check_multi_head_attention, MultiHead, "query"),
    (ex.check_encoder_block, post_norm_block, "x"),
    (lambda answer: ex.check_encoder_block(answer, norm_first=True), pre_norm_block, "x"),
    (ex.check_reverse_targets, reverse_targets, "tokens"),
    (ex.check_shift_right, shift_right, "targets"),
    (ex.check_decoder_block, decoder_block, "x"),
    (ex.check_rate, rate, "steps"),
    (ex.check_length_penalty, length_penalty, "sum_log_p"),
    (ex.check_online_softmax_update, online_update, "running_sum"),
    (ex.check_cached_attention, cached_attention, "q_new"),
    (ex.check_grouped_attention, grouped_attention, "q"),
]


def _own_copy(answer):
    """The same answer on its own copies of the inputs: right, and nothing of the caller's changes."""
    if isinstance(answer, type):

        class OwnCopy(answer):
            def forward(self, *args):
                return super().forward(*(a.clone() for a in args))

        return OwnCopy

    def run(*args):
        copies = [list(a) if isinstance(a, list) else a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        return answer(*copies)

    return run


@pytest.mark.parametrize(("checker", "answer", "name"), IN_PLACE, ids=[row[1].__name__ for row in IN_PLACE])
def test_every_checker_tells_an_input_changed_in_place_and_names_it(checker, answer, name):
    assert checker(_own_copy(answer)).passed, checker(_own_copy(answer))  # right values: only the change is wrong
    verdict = checker(answer)
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == f"{name} changed in place", text
    assert verdict.message == f"the returned values are right, but `{name}` changed.", text
    assert f"Likely mistake: your function changed `{name}` in place;" in text, text


def test_every_checker_is_covered():
    covered = {row[0].__name__ for row in IN_PLACE if hasattr(row[0], "__name__") and row[0].__name__ != "<lambda>"}
    without_tensors = {"check_causal_mask", "check_positional_encoding"}  # their inputs are ints: nothing to change
    assert covered | without_tensors == {name for name in ex.__all__ if name.startswith("check_")}
    assert ex.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril()).passed


def test_the_reasons_fit_the_kind_of_input():
    text = str(ex.check_rate(rate))
    assert "`steps.pow(...)` rather than `steps.pow_(...)`" in text and "`steps += ...`" in text, text
    text = str(ex.check_padding_mask(padding_mask))
    assert "the caller's list changes with it" in text and "list(lengths)" in text, text
    text = str(ex.check_shift_right(shift_right))  # 09.1 keeps its own words
    assert "the loss would then compare predictions with shifted tokens. Build a new tensor (e.g. torch.cat)." in text

    def scales_norm3(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        y = n1(x + sa(x, sm))
        y = n2(y + ca(y, memory, mm))
        out = n3(y + ff(y))
        with torch.no_grad():
            n3.bias.zero_()  # a module changed after use: the values are right, the caller's norm3 is not
        return out

    verdict = ex.check_decoder_block(scales_norm3)
    assert verdict.mistake == "norm3 changed in place" and "its parameters or buffers changed" in str(verdict)


def test_a_wrong_answer_that_also_changes_an_input_gets_both():
    def left_and_in_place(targets, bos_id):
        targets[:, :-1] = targets[:, 1:].clone()
        targets[:, -1] = 0
        return targets

    verdict = ex.check_shift_right(left_and_in_place)
    assert verdict.mistake == "shifted left", verdict
    assert "Also: your function changed `targets` in place" in str(verdict)

    def raises_later(steps, d_model, warmup_steps):  # changes steps on the first case, raises on the second
        if warmup_steps == 50:
            raise RuntimeError("boom")
        return rate(steps, d_model, warmup_steps)

    verdict = ex.check_rate(raises_later)
    assert "raised RuntimeError: boom" in verdict.message and "Also: your function changed `steps`" in str(verdict)


def test_the_same_tensor_passed_twice_is_named_from_a_case_that_tells_them_apart():
    class ScalesKey(MultiHead):
        def forward(self, query, key, value):
            result = super().forward(query.clone(), key, value)
            key.mul_(2.0)  # in self-attention key is query and value too
            return result

    verdict = ex.check_multi_head_attention(ScalesKey)
    assert verdict.mistake == "key changed in place", verdict  # named from the cross-attention case
    assert "the same tensor" not in str(verdict)


def test_in_place_work_on_the_answers_own_tensors_is_fine():
    def own_scores(query, key, value):
        scores = query @ key.transpose(-2, -1)
        scores /= math.sqrt(query.shape[-1])  # its own tensor
        weights = scores.softmax(-1)
        out = weights @ value
        out.add_(0.0)
        return out, weights

    assert ex.check_attention(own_scores).passed

    def returns_an_input(sum_log_p, lengths, alpha):  # alpha 0 would make this right; unchanged inputs: no note
        return sum_log_p

    verdict = ex.check_length_penalty(returns_an_input)
    assert verdict.mistake == "no penalty" and "in place" not in str(verdict), verdict
    assert ex.check_online_softmax_update(online_softmax_update).passed  # -inf in the inputs: no false change
    assert ex.check_grouped_attention(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)).passed


def test_changed_inputs_are_compared_with_nan_and_shape_in_mind():
    nan = torch.tensor([1.0, math.nan])
    assert not ex._differs(nan.clone(), nan)  # NaN where NaN was is no change
    assert ex._differs(torch.tensor([1.0, 2.0]), nan)
    assert ex._differs(torch.zeros(2, 3), torch.zeros(3, 2))
    assert ex._differs(torch.zeros(2, dtype=torch.int32), torch.zeros(2, dtype=torch.int64))
    assert ex._differs([3, 1], [1, 3]) and not ex._differs([1, 3], [1, 3])
    norm = nn.LayerNorm(4)
    changed = nn.LayerNorm(4)
    with torch.no_grad():
        changed.weight.mul_(2.0)
    assert ex._differs(changed, norm) and not ex._differs(nn.LayerNorm(4), norm)
    attention = MultiHeadAttention(4, 2)
    assert not ex._differs(ex._fresh(attention), attention)
