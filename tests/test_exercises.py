"""Every exercise checker accepts a correct answer and names each classic mistake, built here independently."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from helpers import exercises as ex
from helpers.attention import MultiHeadAttention

# --- answers written the way a reader would, right and wrong -----------------------------------


def attention_right(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


def attention_dim1(q, k, v):
    # The tutorial bug, written for (batch, n, m) scores: softmax(dim=1). It happens to be right for 2-D input.
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=1)
    return w @ v, w


def attention_dim_minus2(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2)
    return w @ v, w


def attention_unscaled(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return w @ v, w


def attention_by_d_k(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1], dim=-1)
    return w @ v, w


def stub(*args):
    raise NotImplementedError


def returns_none(*args):
    return None


@pytest.mark.parametrize("checker", [ex.check_attention, ex.check_masked_attention, ex.check_causal_mask])
def test_stubs_are_not_attempted_with_a_hint(checker):
    verdict = checker(stub)
    assert verdict.status == "not attempted" and "Hint:" in str(verdict)
    verdict = checker(returns_none)  # an attempt that forgot `return`
    assert verdict.status == "failed" and verdict.mistake == "no return" and "forget `return`" in str(verdict)


def test_attention_checker():
    assert ex.check_attention(attention_right).passed
    assert ex.check_attention(attention_unscaled).mistake == "no scaling"
    assert ex.check_attention(attention_by_d_k).mistake == "scaled by d_k"
    for wrong_axis in (attention_dim1, attention_dim_minus2):
        verdict = ex.check_attention(wrong_axis)
        assert verdict.mistake == "softmax over queries"
        assert "dim=-1" in str(verdict)


def test_attention_checker_reports_shapes_and_errors():
    def output_only(q, k, v):
        return attention_right(q, k, v)[0]

    assert ex.check_attention(lambda q, k, v: attention_right(q, k, v)[::-1]).mistake == "outputs swapped"
    verdict = ex.check_attention(output_only)
    assert verdict.mistake == "wrong return type" and "return a tuple (output, weights)" in str(verdict)

    def crashes(q, k, v):
        return q @ k  # forgot the transpose

    verdict = ex.check_attention(crashes)
    assert verdict.status == "failed" and "RuntimeError" in verdict.message

    def no_value_product(q, k, v):
        w = attention_right(q, k, v)[1]
        return w, w

    verdict = ex.check_attention(no_value_product)
    assert verdict.mistake is None and "expected shape (3, 4), got (3, 5)" in str(verdict)


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


def masked(q, k, v, mask, fill, zero):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = torch.softmax(scores.masked_fill(~mask, fill), dim=-1)
    if zero:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


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


def split_right(x, h):
    B, n, d = x.shape
    return x.view(B, n, h, d // h).transpose(1, 2)


def test_split_heads_checker():
    assert ex.check_split_heads(split_right).passed

    def no_transpose(x, h):
        B, n, d = x.shape
        return x.view(B, h, n, d // h)

    verdict = ex.check_split_heads(no_transpose)
    assert verdict.mistake == "view without transpose" and ".transpose(1, 2)" in str(verdict)

    def interleaved(x, h):
        B, n, d = x.shape
        return x.view(B, n, d // h, h).permute(0, 3, 1, 2)

    assert ex.check_split_heads(interleaved).mistake == "features interleaved"


def test_combine_heads_checker():
    def right(x):
        B, h, n, d_k = x.shape
        return x.transpose(1, 2).reshape(B, n, h * d_k)

    assert ex.check_combine_heads(right).passed
    assert ex.check_combine_heads(lambda x: right(torch.flip(x, dims=[1]))).mistake == "heads in the wrong order"

    def no_transpose(x):
        B, h, n, d_k = x.shape
        return x.reshape(B, n, h * d_k)

    assert ex.check_combine_heads(no_transpose).mistake == "view without transpose"

    def cat_reversed(x):
        return torch.cat([x[:, i] for i in reversed(range(x.shape[1]))], dim=-1)

    assert ex.check_combine_heads(cat_reversed).mistake == "heads in the wrong order"


class ReaderMHA(nn.Module):
    """A reader's multi-head attention, with switches for two classic mistakes."""

    scale_by_d_model = False
    transpose = True

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x):
        B, n, _ = x.shape
        if self.transpose:
            return x.view(B, n, self.h, self.d_k).transpose(1, 2)
        return x.view(B * self.h, -1, self.d_k).view(B, self.h, n, self.d_k)

    def forward(self, query, key, value):
        B, n, d_model = query.shape
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        scale = math.sqrt(d_model if self.scale_by_d_model else self.d_k)
        w = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
        heads = w @ v
        out = heads.transpose(1, 2).reshape(B, n, d_model) if self.transpose else heads.reshape(B, n, d_model)
        return self.w_o(out), w


def test_multi_head_attention_checker():
    assert ex.check_multi_head_attention(ReaderMHA).passed
    assert ex.check_multi_head_attention(MultiHeadAttention).passed

    class ScaledByDModel(ReaderMHA):
        scale_by_d_model = True

    class NoTranspose(ReaderMHA):
        transpose = False

    verdict = ex.check_multi_head_attention(ScaledByDModel)
    assert verdict.mistake == "scaled by sqrt(d_model)" and "too flat" in str(verdict)
    assert ex.check_multi_head_attention(NoTranspose).mistake == "view without transpose"

    class WrongNames(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.query = nn.Linear(d_model, d_model)

    verdict = ex.check_multi_head_attention(WrongNames)
    assert verdict.status == "failed" and "Your module has no parameter named w_q" in str(verdict)

    class Misspelled(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

        def forwad(self, query, key, value):  # the typo: nn.Module's own forward raises NotImplementedError
            return self.w_o(query), None

    verdict = ex.check_multi_head_attention(Misspelled)
    assert verdict.status == "failed" and verdict.mistake == "forward misspelled"

    class Stub(nn.Module):
        def __init__(self, d_model, num_heads):
            raise NotImplementedError

    assert ex.check_multi_head_attention(Stub).status == "not attempted"


def test_causal_mask_checker():
    assert ex.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril()).passed
    future = ex.check_causal_mask(lambda n: torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1))
    assert future.mistake == "future instead of past" and "triu" in str(future)
    assert ex.check_causal_mask(lambda n: torch.ones(n, n).tril().bool().tril(-1)).mistake == "diagonal excluded"
    assert ex.check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).triu()).mistake == "upper triangle"
    verdict = ex.check_causal_mask(lambda n: torch.ones(n, n).tril())
    assert verdict.status == "failed" and "boolean" in str(verdict)


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


def post_norm(x, mask, attention, ff, norm1, norm2):
    x = norm1(x + attention(x, mask))
    return norm2(x + ff(x))


def pre_norm(x, mask, attention, ff, norm1, norm2):
    x = x + attention(norm1(x), mask)
    return x + ff(norm2(x))


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


def test_checkers_leave_the_readers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ex.check_multi_head_attention(ReaderMHA)
    ex.check_encoder_block(post_norm)
    torch.testing.assert_close(torch.rand(3), expected)


def test_verdict_displays_as_text():
    verdict = ex.check_causal_mask(stub)
    assert repr(verdict) == str(verdict)
    assert str(verdict).startswith("Exercise 04.1 causal mask: not attempted yet.")


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


# --- notebook 09 ---------------------------------------------------------------------------------


def test_shift_right_checker():
    def right(targets, bos_id):
        out = torch.empty_like(targets)
        out[:, 0] = bos_id
        out[:, 1:] = targets[:, :-1]
        return out

    assert ex.check_shift_right(right).passed
    assert ex.check_shift_right(stub).status == "not attempted"
    bos_first = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    wrong = {
        "shifted left": lambda t, b: torch.cat([t[:, 1:], torch.zeros_like(t[:, :1])], dim=1),
        "rolled": lambda t, b: torch.roll(t, shifts=1, dims=1),
        "first token overwritten": lambda t, b: torch.cat([bos_first(t, b), t[:, 1:]], dim=1),
        "last position kept": lambda t, b: torch.cat([bos_first(t, b), t], dim=1),
        "no <bos>": lambda t, b: torch.cat([torch.zeros_like(t[:, :1]), t[:, :-1]], dim=1),
        "bos hard-coded": lambda t, b: torch.cat([torch.ones_like(t[:, :1]), t[:, :-1]], dim=1),
        "result equals the targets": lambda t, b: torch.cat([bos_first(t, b), t], dim=1)[:, 1:],
        "<eos> replaced by <pad>": lambda t, b: torch.cat([bos_first(t, b), torch.where(t == 2, 0, t)[:, :-1]], 1),
    }
    for mistake, answer in wrong.items():
        verdict = ex.check_shift_right(answer)
        assert verdict.mistake == mistake, (mistake, str(verdict))

    def in_place(targets, bos_id):  # right values, but the caller's targets are shifted too
        targets[:, 1:] = targets[:, :-1].clone()
        targets[:, 0] = bos_id
        return targets

    verdict = ex.check_shift_right(in_place)
    assert verdict.status == "failed" and verdict.mistake == "targets changed in place", str(verdict)
    assert "changed `targets` in place" in str(verdict)

    def in_place_and_left(targets, bos_id):  # wrong values and in place: both named
        targets[:, :-1] = targets[:, 1:].clone()
        targets[:, -1] = 0
        return targets

    verdict = ex.check_shift_right(in_place_and_left)
    assert verdict.mistake == "shifted left" and "changed `targets` in place" in str(verdict), str(verdict)
    assert ex.check_shift_right(lambda t, b: right(t, b).float()).status == "failed"  # token ids stay integers


def test_shift_right_checker_names_every_spelling_of_the_left_shift():
    bos = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    for answer in (
        lambda t, b: torch.cat([t[:, 1:], bos(t, b)], dim=1),  # <bos> appended at the end
        lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([t.shape[1] - 1]), b),
        lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([0]), b),
    ):
        verdict = ex.check_shift_right(answer)
        assert verdict.mistake == "shifted left" and "Shift right" in str(verdict), str(verdict)


def test_shift_right_checker_wants_the_targets_dtype():
    def right(targets, bos_id):
        return torch.cat([torch.full_like(targets[:, :1], bos_id), targets[:, :-1]], dim=1)

    verdict = ex.check_shift_right(lambda t, b: right(t, b).int())  # the right ids, as int32
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == "wrong dtype", text
    assert "dtype torch.int32, expected torch.int64, the dtype of `targets`" in text and "Hint:" not in text, text

    def bos_from_a_list(targets, bos_id):  # torch.tensor of Python ints is int64 here: right
        bos = torch.tensor([[bos_id]] * targets.shape[0])
        return torch.cat([bos, targets[:, :-1]], dim=1)

    assert ex.check_shift_right(bos_from_a_list).passed
    verdict = ex.check_shift_right(lambda t, b: torch.cat([t[:, 1:], torch.zeros_like(t[:, :1])], 1).int())
    assert verdict.mistake == "shifted left" and "the dtype of `targets`" in str(verdict), str(verdict)


def decoder_right(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
    x = n1(x + sa(x, self_mask))
    x = n2(x + ca(x, memory, memory_mask))
    return n3(x + ff(x))


def test_decoder_block_checker():
    assert ex.check_decoder_block(decoder_right).passed
    assert ex.check_decoder_block(stub).status == "not attempted"

    def cross_first(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + ca(x, memory, mm))
        x = n2(x + sa(x, sm))
        return n3(x + ff(x))

    def queries_from_memory(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(memory, x, mm))
        return n3(x + ff(x))

    def masks_swapped(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, mm))
        x = n2(x + ca(x, memory, sm))
        return n3(x + ff(x))

    def keys_from_x(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, x, mm))
        return n3(x + ff(x))

    def no_causal(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, None, mm, sa, ca, ff, n1, n2, n3)

    def no_memory_mask(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm, None, sa, ca, ff, n1, n2, n3)

    def stale_queries(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        y = n1(x + sa(x, sm))
        y = n2(y + ca(x, memory, mm))
        return n3(y + ff(y))

    def pre_norm(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = x + sa(n1(x), sm)
        x = x + ca(n2(x), memory, mm)
        return x + ff(n3(x))

    def no_residual(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return n3(ff(n2(ca(n1(sa(x, sm)), memory, mm))))

    def norms_swapped(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm, mm, sa, ca, ff, n1, n3, n2)

    def pytorch_masks(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, ~sm, ~mm, sa, ca, ff, n1, n2, n3)

    def no_norm3(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return x + ff(x)

    def residual_after_norm(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(sa(x, sm)) + x
        x = n2(ca(x, memory, mm)) + x
        return n3(ff(x)) + x

    def residuals_from_input(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        h = n1(x + sa(x, sm))
        h = n2(x + ca(h, memory, mm))
        return n3(x + ff(h))

    def causal_transposed(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm.T, mm, sa, ca, ff, n1, n2, n3)

    def no_masks(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, None, None, sa, ca, ff, n1, n2, n3)

    def norm2_twice(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return n2(x + ff(x))  # norm2 again instead of norm3

    def norm2_first(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n2(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return n3(x + ff(x))

    expected = {
        cross_first: "cross-attention first",
        queries_from_memory: "queries from memory",
        masks_swapped: "masks swapped or keys from x",
        keys_from_x: "masks swapped or keys from x",
        no_causal: "causal mask ignored",
        no_memory_mask: "memory mask ignored",
        stale_queries: "cross-attention reads the block's input",
        pre_norm: "pre-norm",
        no_residual: "no residual",
        norms_swapped: "norms swapped",
        pytorch_masks: "masks inverted",
        no_norm3: "no norm3",
        residual_after_norm: "residual added after the norm",
        residuals_from_input: "residuals from the block's input",
        causal_transposed: "causal mask transposed",
        no_masks: "both masks ignored",
        norm2_twice: "norms swapped",
        norm2_first: "norms swapped",
    }
    for answer, mistake in expected.items():
        verdict = ex.check_decoder_block(answer)
        assert verdict.status == "failed" and verdict.mistake == mistake, (answer.__name__, str(verdict))
    text = str(ex.check_decoder_block(norm2_twice))
    assert "yours has norm2 after the feed-forward network (norm2 used more than once" in text, text
    text = str(ex.check_decoder_block(norm2_first))
    assert "norm2 after the self-attention (norm2 used more than once" in text, text
    text = str(ex.check_decoder_block(norms_swapped))
    assert "norm3 after the cross-attention and norm2 after the feed-forward network." in text, text


def test_decoder_block_checker_does_not_change_the_readers_random_state():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    ex.check_decoder_block(decoder_right)
    torch.testing.assert_close(torch.rand(3), expected)


def test_length_penalty_precedence_is_named():
    verdict = ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6**a))
    assert verdict.mistake == "precedence" and "with the parentheses" in str(verdict), verdict


def test_softmax_over_dim_0_and_the_doubled_2_of_the_encoding_are_named():
    def attention_dim0(q, k, v):  # "down the rows" on (n, m) scores; across the batch with one in front
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=0)
        return w @ v, w

    verdict = ex.check_attention(attention_dim0)
    assert verdict.mistake == "softmax over dim=0" and "dim=-1" in str(verdict), verdict

    verdict = ex.check_positional_encoding(pe_column_j_loop)  # j the column index, and 2j in the exponent
    assert verdict.mistake == "2 counted twice" and "j - j % 2" in str(verdict), verdict


# --- hints in tiers (issue 19): the concept, then code, then a solution ------------------------------


def attention_doubled_output(q, k, v):  # a mistake no variant names
    out, w = attention_right(q, k, v)
    return 2 * out, w


def test_hints_come_in_tiers_and_a_stub_does_not_count():
    assert ex.check_attention(stub).status == "not attempted"  # not counted
    first, second, third, fourth = (ex.check_attention(attention_doubled_output) for _ in range(4))
    assert [v.attempt for v in (first, second, third, fourth)] == [1, 2, 3, 4]
    assert "Hint: Eq. 1 (§3.2.1)" in str(first) and "Hint in code" not in str(first)
    assert 'helpers.exercises.solution("01.1")' in str(first) and "A solution" not in str(first)
    assert "Hint in code: key.transpose(-2, -1)" in str(second) and "A solution" not in str(second)
    assert "torch.softmax(scores, dim=-1)" not in str(second)  # a nudge, not the answer
    for verdict in (third, fourth):
        assert "A solution (failed attempt" in str(verdict) and "    weights = torch.softmax(scores, dim=-1)" in str(
            verdict
        )
    passed = ex.check_attention(attention_right)
    assert passed.passed and passed.attempt == 5 and passed.message == "all 3 cases passed (attempt 5)."
    again = ex.check_attention(attention_doubled_output)  # a pass resets nothing
    assert "A solution (failed attempt 5 at 01.1)" in str(again)
    assert str(again) == str(ex.check_attention(attention_doubled_output)).replace("attempt 6", "attempt 5")


def test_a_named_mistake_keeps_its_diagnosis_on_every_attempt():
    texts = [str(ex.check_attention(attention_unscaled)) for _ in range(4)]
    for text in texts:
        assert "Likely mistake: the scores are not divided by sqrt(d_k)" in text and "Hint" not in text, text
        assert "A solution" not in text
    assert len(set(texts)) == 1  # the same words every time
    # the failures still count: the next unnamed failure is the fifth, and shows a solution
    assert "A solution (failed attempt 5 at 01.1)" in str(ex.check_attention(attention_doubled_output))


def test_attempts_are_counted_per_exercise_and_can_be_reset():
    ex.check_attention(attention_doubled_output)
    ex.check_attention(attention_doubled_output)
    assert "Hint: key j of sequence b" in str(ex.check_padding_mask(lambda lengths, m: torch.zeros(3, 1, m).bool()))
    ex.reset_attempts("01.1")
    assert ex.check_attention(attention_doubled_output).attempt == 1
    assert ex.check_padding_mask(lambda lengths, m: torch.zeros(3, 1, m).bool()).attempt == 2
    ex.check_encoder_block(lambda x, mask, *parts: x)  # 06.1 and 06.2 are counted apart
    assert ex.check_encoder_block(lambda x, mask, *parts: x, norm_first=True).attempt == 1
    ex.reset_attempts()
    assert ex.check_padding_mask(lambda lengths, m: torch.zeros(3, 1, m).bool()).attempt == 1


def test_a_solution_is_given_only_when_asked_for():
    text = ex.solution("01.1")
    assert "torch.softmax(scores, dim=-1)" in text and repr(text) == str(text)  # shown as code, not as a string
    verdict = ex.check_attention(attention_doubled_output)
    assert verdict.solution() == text and "torch.softmax(scores, dim=-1)" not in str(verdict)
    assert ex.solution("Exercise 05.1 positional encoding") == ex.solution("05.1")
    with pytest.raises(ValueError, match=r"01\.1"):
        ex.solution("12.1")


def _answer_from_solution(exercise_id, signature):
    """The reader's function (or class) made of the solution's lines, in a notebook's namespace."""
    from helpers.attention import scaled_dot_product_attention
    from helpers.masks import causal_mask

    namespace = {
        "math": math,
        "torch": torch,
        "nn": nn,
        "scaled_dot_product_attention": scaled_dot_product_attention,
        "causal_mask": causal_mask,
    }
    code = ex.solution(exercise_id)
    if signature is None:  # a class
        exec(code, namespace)
        return namespace["MyMultiHeadAttention"]
    body = "".join(f"    {line}\n" for line in code.splitlines())
    exec(f"def answer({signature}):\n{body}", namespace)
    return namespace["answer"]


SOLUTIONS = {
    "01.1": (ex.check_attention, "query, key, value"),
    "02.1": (ex.check_padding_mask, "lengths, max_len"),
    "02.2": (ex.check_masked_attention, "query, key, value, mask"),
    "03.1": (ex.check_split_heads, "x, num_heads"),
    "03.2": (ex.check_combine_heads, "x"),
    "03.3": (ex.check_multi_head_attention, None),
    "04.1": (ex.check_causal_mask, "n"),
    "05.1": (ex.check_positional_encoding, "max_len, d_model"),
    "06.1": (ex.check_encoder_block, "x, mask, attention, feed_forward, norm1, norm2"),
    "06.2": (
        lambda answer: ex.check_encoder_block(answer, norm_first=True),
        "x, mask, attention, feed_forward, norm1, norm2",
    ),
    "07.1": (ex.check_reverse_targets, "tokens, lengths"),
    "09.1": (ex.check_shift_right, "targets, bos_id"),
    "09.2": (
        ex.check_decoder_block,
        "x, memory, self_mask, memory_mask, self_attention, cross_attention, feed_forward, norm1, norm2, norm3",
    ),
    "10.1": (ex.check_rate, "steps, d_model, warmup_steps"),
    "10.2": (ex.check_length_penalty, "sum_log_p, lengths, alpha"),
    "11.1": (ex.check_online_softmax_update, "running_max, running_sum, block"),
    "11.2": (ex.check_cached_attention, "q_new, k_new, v_new, cache_k, cache_v"),
    "11.3": (ex.check_grouped_attention, "q, k, v"),
}


def test_every_checked_exercise_has_hints_in_three_tiers():
    assert sorted(ex._HINTS) == sorted(SOLUTIONS)
    for exercise_id, hints in ex._HINTS.items():
        assert hints.concept and hints.code and hints.solution, exercise_id
        assert hints.code not in hints.solution and hints.solution.splitlines()[-1] not in hints.code, exercise_id


@pytest.mark.parametrize("exercise_id", SOLUTIONS)
def test_every_solution_passes_its_checker(exercise_id):
    checker, signature = SOLUTIONS[exercise_id]
    verdict = checker(_answer_from_solution(exercise_id, signature))
    assert verdict.passed, str(verdict)


# --- near misses (issue 19): each spelling a reader writes is named; a right answer written another way passes ---


def attention_dot_t(query, key, value):  # the 2-D habit of notebook 01 §3, on batched input
    scores = query @ key.T / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights


def attention_dot_t_earlier(query, key, value):  # the same, transposed on a line of its own
    keys_t = key.T
    weights = torch.softmax(query @ keys_t / math.sqrt(query.shape[-1]), dim=-1)
    return weights @ value, weights


def attention_mt(query, key, value):  # right: .mT swaps the last two axes only
    weights = torch.softmax(query @ key.mT / math.sqrt(query.shape[-1]), dim=-1)
    return weights @ value, weights


def attention_softmax_dim0(query, key, value):
    weights = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1]), dim=0)
    return weights @ value, weights


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
def test_dot_t_and_softmax_dim_0_are_named_in_01_1_and_dot_mt_passes():
    for answer in (attention_dot_t, attention_dot_t_earlier):
        verdict = ex.check_attention(answer)
        text = str(verdict)
        assert verdict.mistake == ".T on batched input", text
        assert "reverses all the axes" in text and "transpose(-2, -1)" in text and "Hint" not in text, text
    verdict = ex.check_attention(attention_softmax_dim0)
    assert verdict.mistake == "softmax over dim=0" and "dim=-1" in str(verdict), str(verdict)
    assert ex.check_attention(attention_mt).passed


def test_a_runtime_error_without_dot_t_is_not_called_dot_t():
    def wrong_product(query, key, value):  # a RuntimeError from another mistake
        weights = torch.softmax(query @ value.transpose(-2, -1), dim=-1)
        return weights @ value, weights

    assert ex.check_attention(wrong_product).mistake != ".T on batched input"


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


def pe_column_j_loop(max_len, d_model):  # the student review's loop: j the column index, 2j in the exponent
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for j in range(d_model):
            angle = pos / 10000 ** (2 * j / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
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


def test_every_spelling_of_a_wrong_shift_in_09_1_is_named_and_roll_with_bos_passes():
    bos = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    named = {
        "shifted left": (
            lambda t, b: torch.cat([t[:, 1:], bos(t, b)], dim=1),  # a left shift with <bos> appended
            lambda t, b: torch.roll(t, -1, dims=1),  # rolled left, nothing fixed up
            lambda t, b: torch.roll(t, -1),  # rolled left without dims
            lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([0]), b),  # <bos> first
            lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([t.shape[1] - 1]), b),  # <bos> last
        ),
        "rolled": (
            lambda t, b: torch.roll(t, 1, dims=1),  # <eos> wraps round to the front
            lambda t, b: torch.roll(t, 1),  # without dims: the flattened tensor rolls
        ),
    }
    for key, answers in named.items():
        for answer in answers:
            verdict = ex.check_shift_right(answer)
            assert verdict.mistake == key, (key, str(verdict))
    assert "without dims rolls the flattened tensor" in str(ex.check_shift_right(lambda t, b: torch.roll(t, 1)))
    for right in (
        lambda t, b: torch.roll(t, 1, dims=1).index_fill(1, torch.tensor([0]), b),
        lambda t, b: torch.roll(t, 1).index_fill(1, torch.tensor([0]), b),  # flattened, but position 0 fixed up
    ):
        assert ex.check_shift_right(right).passed


def test_the_length_penalty_precedence_is_named_and_log_space_passes():
    verdict = ex.check_length_penalty(lambda s, n, a: s / (5 + n) / 6**a)
    assert verdict.status == "failed"
    verdict = ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6**a))
    assert verdict.mistake == "precedence" and "((5 + |Y|) / 6) ** alpha" in str(verdict), str(verdict)
    log_space = lambda s, n, a: s / torch.exp(a * torch.log((5 + n.double()) / 6))  # noqa: E731
    assert ex.check_length_penalty(log_space).passed


def test_a_transposed_causal_mask_and_both_masks_dropped_are_named_in_09_2():
    def transposed(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, self_mask.transpose(-2, -1), memory_mask, sa, ca, ff, n1, n2, n3)

    def no_masks(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, None))
        x = n2(x + ca(x, memory, None))
        return n3(x + ff(x))

    def with_keywords(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):  # right, another way
        for sub, norm in ((lambda y: sa(y, mask=self_mask), n1), (lambda y: ca(y, memory, mask=memory_mask), n2)):
            x = norm(x + sub(x))
        return n3(x + ff(x))

    assert ex.check_decoder_block(transposed).mistake == "causal mask transposed"
    verdict = ex.check_decoder_block(no_masks)
    assert verdict.mistake == "both masks ignored" and "neither mask" in str(verdict), str(verdict)
    assert ex.check_decoder_block(with_keywords).passed
