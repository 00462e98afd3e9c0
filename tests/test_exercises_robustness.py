"""The exercise checkers never fail a right answer, never pass a wrong one, never crash or hang, and their
feedback fits the failure. Every answer here is written the way a reader might, independently of the checkers'
own lists of mistakes."""

from __future__ import annotations

import math
import re
import signal
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import exercises as ex
from helpers.attention import MultiHeadAttention

FLOAT_CHECKERS = {
    "01.1": ex.check_attention,
    "02.2": ex.check_masked_attention,
    "03.1": ex.check_split_heads,
    "03.2": ex.check_combine_heads,
    "05.1": ex.check_positional_encoding,
}


@pytest.fixture
def short_time_limit(monkeypatch):
    monkeypatch.setattr(ex, "TIME_LIMIT_S", 0.3)


# --- right answers, written another way --------------------------------------------------------


def attention_einsum(query, key, value):
    scores = torch.einsum("...nd,...md->...nm", query, key) / query.shape[-1] ** 0.5
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)  # softmax by hand
    return torch.einsum("...nm,...mv->...nv", weights, value), weights


def attention_in_place(query, key, value):
    query /= math.sqrt(query.shape[-1])  # changes the caller's tensor, otherwise right
    weights = torch.softmax(query @ key.transpose(-2, -1), dim=-1)
    return weights @ value, weights


def attention_loops(query, key, value):
    lead = query.shape[:-2]
    q, k, v = (
        query.reshape(-1, *query.shape[-2:]),
        key.reshape(-1, *key.shape[-2:]),
        value.reshape(-1, *value.shape[-2:]),
    )
    outs, ws = [], []
    for b in range(q.shape[0]):
        rows = []
        for i in range(q.shape[1]):
            s = torch.stack([q[b, i].dot(k[b, j]) for j in range(k.shape[1])]) / math.sqrt(q.shape[-1])
            rows.append(F.softmax(s, dim=0))
        w = torch.stack(rows)
        ws.append(w)
        outs.append(w @ v[b])
    return torch.stack(outs).reshape(*lead, q.shape[1], -1), torch.stack(ws).reshape(*lead, q.shape[1], -1)


def masked_where(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    scores = torch.where(mask, scores, torch.tensor(-1e9))
    weights = torch.where(mask, torch.softmax(scores, dim=-1), torch.tensor(0.0))
    return weights @ value, weights


def masked_renormalised(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    e = (scores - scores.amax(-1, keepdim=True)).exp() * mask
    weights = e / e.sum(-1, keepdim=True).clamp(min=1e-30)
    return weights @ value, weights


def masked_in_place(query, key, value, mask):
    query.div_(math.sqrt(query.shape[-1]))  # changes the caller's tensor, otherwise right
    scores = query @ key.transpose(-2, -1)
    scores.masked_fill_(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return [weights @ value, weights]  # a list is as good as a tuple


def masked_nan_to_num(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    scores.masked_fill_(~mask, float("-inf"))  # in place on its own tensor: fine
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return [weights @ value, weights]  # a list is as good as a tuple


def padding_loops(lengths, max_len):
    mask = torch.zeros(len(lengths), 1, max_len, dtype=torch.bool)
    for b, length in enumerate(lengths):
        mask[b, 0, :length] = True
    return mask


def padding_broadcast(lengths, max_len):
    return torch.arange(max_len)[None, None, :] < torch.tensor(lengths).view(-1, 1, 1)


def split_chunks(x, num_heads):
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def split_einops_style(x, num_heads):
    B, n, d = x.shape
    return x.reshape(B, n, num_heads, d // num_heads).permute(0, 2, 1, 3)


def combine_cat(x):
    return torch.cat(x.unbind(1), dim=-1)


def combine_flatten(x):
    return x.transpose(1, 2).flatten(2)


def combine_reshape(x):
    B, h, n, d_k = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, n, h * d_k)


class EinsumMHA(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.drop = nn.Dropout(dropout)  # on by default: the checker must use eval()
        self.register_buffer("calls", torch.zeros(()))  # an extra buffer must not matter

    def forward(self, query, key, value):
        B, n, d = query.shape
        q = self.w_q(query).unflatten(-1, (self.h, -1))
        k = self.w_k(key).unflatten(-1, (self.h, -1))
        v = self.w_v(value).unflatten(-1, (self.h, -1))
        w = torch.einsum("bnhd,bmhd->bhnm", q, k).div(q.shape[-1] ** 0.5).softmax(-1)
        w = self.drop(w)
        heads = torch.einsum("bhnm,bmhd->bnhd", w, v)
        return self.w_o(heads.reshape(B, n, d)), w


def causal_compare(n):
    i = torch.arange(n)
    return i[:, None] >= i[None, :]


def pe_vectorised(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).flatten(1)
    return pe  # float64 is fine: the values are what counts


def pe_numpy(max_len, d_model):
    pe = np.zeros((max_len, d_model))
    pos = np.arange(max_len)[:, None]
    angle = pos / np.power(10000, np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return torch.from_numpy(pe).float()


def post_norm_in_place(x, mask, attention, feed_forward, norm1, norm2):
    x += attention(x, mask)  # changes the caller's tensor, otherwise right
    x = norm1(x)
    return norm2(x + feed_forward(x))


def post_norm_own_copy(x, mask, attention, feed_forward, norm1, norm2):
    x = x.clone()  # its own copy: adding in place to it is fine
    x += attention(x, mask)
    x = norm1(x)
    return norm2(x + feed_forward(x))


def pre_norm_steps(x, mask, attention, feed_forward, norm1, norm2):
    a = attention(norm1(x), mask)
    y = x + a
    return y + feed_forward(norm2(y))


def reverse_where(tokens, lengths):
    lengths = torch.as_tensor(lengths)
    n = tokens.shape[1]
    i = torch.arange(n)
    source = (lengths[:, None] - 1 - i).clamp(0, n - 1)
    return torch.where(i < lengths[:, None], tokens.gather(1, source), torch.zeros_like(tokens))


def reverse_lists(tokens, lengths):
    out = tokens.clone()
    for b, length in enumerate(lengths.tolist()):
        row = tokens[b, :length].tolist()[::-1] + [0] * (tokens.shape[1] - length)
        out[b] = torch.tensor(row)
    return out


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (ex.check_attention, attention_einsum),
        (ex.check_attention, attention_loops),
        (ex.check_masked_attention, masked_where),
        (ex.check_masked_attention, masked_renormalised),
        (ex.check_masked_attention, masked_nan_to_num),
        (ex.check_padding_mask, padding_loops),
        (ex.check_padding_mask, padding_broadcast),
        (ex.check_split_heads, split_chunks),
        (ex.check_split_heads, split_einops_style),
        (ex.check_combine_heads, combine_cat),
        (ex.check_combine_heads, combine_flatten),
        (ex.check_combine_heads, combine_reshape),
        (ex.check_multi_head_attention, EinsumMHA),
        (ex.check_causal_mask, causal_compare),
        (ex.check_positional_encoding, pe_vectorised),
        (ex.check_positional_encoding, pe_numpy),
        (ex.check_encoder_block, post_norm_own_copy),
        (ex.check_reverse_targets, reverse_where),
        (ex.check_reverse_targets, reverse_lists),
    ],
)
def test_right_answers_written_another_way_pass(checker, answer):
    verdict = checker(answer)
    assert verdict.passed, verdict


def test_pre_norm_written_in_steps_passes():
    assert ex.check_encoder_block(pre_norm_steps, norm_first=True).passed


# --- the tolerance is not loosened: a right answer plus 1e-3 fails ------------------------------


def plus(answer, delta=1e-3):
    def shifted(*args):
        result = answer(*args)
        if isinstance(result, tuple):
            return tuple(r + delta for r in result)
        return result + delta

    return shifted


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (ex.check_attention, attention_einsum),
        (ex.check_masked_attention, masked_where),
        (ex.check_split_heads, split_chunks),
        (ex.check_combine_heads, combine_cat),
        (ex.check_positional_encoding, pe_vectorised),
    ],
)
def test_right_answer_plus_1e_3_fails(checker, answer):
    verdict = checker(plus(answer))
    assert verdict.status == "failed" and "largest difference 0.001" in str(verdict), verdict
    assert "outside the tolerance" in str(verdict)


def rate_eq3(steps, d_model, warmup_steps):
    return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)


def test_close_is_said_only_when_the_error_is_small_next_to_the_values():
    # rate(steps + 1): 0.00025 of the peak off at step 1, but that is twice the rate there
    verdict = ex.check_rate(lambda s, d, w: rate_eq3(s + 1, d, w))
    text = str(verdict)
    assert "close, but" not in text and "largest relative difference 100% at step 1" in text, text
    assert verdict.mistake == "steps + 1" and "one step ahead" in text, text
    assert "only at steps 1-4515" in text, text  # the first 123 sampled steps, said as a run of step numbers
    doubled_early = str(ex.check_rate(lambda s, d, w: rate_eq3(s, d, w) * torch.where(s < 40, 2.0, 1.0)))
    assert "close, but" not in doubled_early and "Hint in code:" in doubled_early, doubled_early  # attempt 2
    slightly_off = str(ex.check_rate(lambda s, d, w: rate_eq3(s, d, w) * 1.002))  # 0.2% everywhere: close
    assert "close, but outside the tolerance" in slightly_off, slightly_off
    # the same rule by hand: a relative case is close only within 1% of each entry
    y = torch.tensor([2.5e-4, 0.5, 1.0])
    wrong = torch.tensor([True, False, False])
    assert not ex._close(y * 2, y, wrong, relative=True)
    assert ex._close(y * 1.005, y, wrong, relative=True)
    # an ordinary case: within 0.01 and within 1% of the largest value
    assert ex._close(torch.tensor([1.001, 0.0]), torch.tensor([1.0, 0.0]), torch.tensor([True, False]), False)
    small = torch.full((3,), 1e-3)
    assert not ex._close(small * 2, small, torch.ones(3, dtype=torch.bool), False)


def test_runs_of_wrong_indices_are_said_as_ranges():
    flags = torch.zeros(20, dtype=torch.bool)
    flags[[0, 1, 2, 3, 7, 9, 10]] = True
    assert ex._indices(flags) == "0-3, 7, 9, 10"
    flags[[12, 15]] = True
    assert ex._indices(flags) == "0-3, 7, 9, 10, ..."


def test_module_and_block_plus_1e_3_fail():
    class Shifted(EinsumMHA):
        def forward(self, query, key, value):
            out, w = super().forward(query, key, value)
            return out + 1e-3, w

    assert ex.check_multi_head_attention(Shifted).status == "failed"
    assert ex.check_encoder_block(plus(post_norm_in_place)).status == "failed"
    assert ex.check_encoder_block(plus(pre_norm_steps), norm_first=True).status == "failed"


# --- in-place changes, fresh inputs -------------------------------------------------------------


def test_an_in_place_sort_that_is_wrong_fails():
    def sorts_lengths(lengths, max_len):
        lengths.sort()  # reorders the caller's list: the rows no longer match the batch
        return (torch.arange(max_len) < torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    verdict = ex.check_padding_mask(sorts_lengths)
    assert verdict.status == "failed" and "entries differ" in str(verdict)
    assert "Also: your function changed `lengths` in place" in str(verdict), verdict


@pytest.mark.parametrize(
    ("checker", "answer", "name"),
    [
        (ex.check_attention, attention_in_place, "query"),
        (ex.check_masked_attention, masked_in_place, "query"),
        (ex.check_encoder_block, post_norm_in_place, "x"),
    ],
)
def test_right_values_computed_in_place_on_an_input_are_told(checker, answer, name):
    verdict = checker(answer)
    assert verdict.status == "failed" and verdict.mistake == f"{name} changed in place", verdict
    assert verdict.message == f"the returned values are right, but `{name}` changed.", verdict
    assert f"your function changed `{name}` in place" in str(verdict)


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


def test_an_answer_that_changes_a_norm_in_place_cannot_change_the_reference():
    def doubles_the_gain(x, mask, attention, feed_forward, norm1, norm2):
        with torch.no_grad():
            norm1.weight.mul_(2.0)  # wrong, and in place
        x = norm1(x + attention(x, mask))
        return norm2(x + feed_forward(x))

    verdict = ex.check_encoder_block(doubles_the_gain)
    assert verdict.status == "failed" and "largest difference" in str(verdict)
    assert "Also: your function changed `norm1` in place; its parameters or buffers changed" in str(verdict)


# --- modules: eval(), lenient loading, instances, cross-attention with distinct key and value ----


class Reader(nn.Module):
    """A right multi-head attention with switches for the mistakes a reader makes."""

    value_from = "value"
    key_from = "key"
    apply_w_o = True

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v = (nn.Linear(d_model, d_model, bias=bias) for _ in range(3))
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, t):
        return t.view(t.shape[0], t.shape[1], self.h, self.d_k).transpose(1, 2)

    def forward(self, query, key, value):
        inputs = {"query": query, "key": key, "value": value}
        q = self.split(self.w_q(query))
        k = self.split(self.w_k(inputs[self.key_from]))
        v = self.split(self.w_v(inputs[self.value_from]))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        out = (w @ v).transpose(1, 2).reshape(query.shape)
        return (self.w_o(out) if self.apply_w_o else out), w


def test_a_module_with_default_dropout_and_an_extra_buffer_passes():
    assert "eval()" in ex.check_multi_head_attention.__doc__
    verdict = ex.check_multi_head_attention(EinsumMHA)
    assert verdict.passed, verdict


def test_an_unused_extra_parameter_passes():
    class Extra(Reader):
        def __init__(self, d_model, num_heads):
            super().__init__(d_model, num_heads)
            self.temperature = nn.Parameter(torch.ones(()))

    assert ex.check_multi_head_attention(Extra).passed


def test_value_and_key_projected_from_the_wrong_input_are_named():
    class ValueFromKey(Reader):
        value_from = "key"

    class KeyFromValue(Reader):
        key_from = "value"

    assert ex.check_multi_head_attention(ValueFromKey).mistake == "values projected from the keys"
    assert ex.check_multi_head_attention(KeyFromValue).mistake == "keys projected from the values"


def test_missing_w_o_is_named_whether_absent_or_unused():
    class Unused(Reader):
        apply_w_o = False

    verdict = ex.check_multi_head_attention(Unused)
    assert verdict.mistake == "no output projection" and "w_o" in str(verdict)

    class Absent(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.w_q, self.w_k, self.w_v = (nn.Linear(d_model, d_model) for _ in range(3))

    verdict = ex.check_multi_head_attention(Absent)
    text = str(verdict)
    assert verdict.mistake == "no output projection" and "Your module has no parameter named w_o" in text
    assert "w_q.weight, w_q.bias" in text  # says which names it expected
    assert "Unexpect" not in text and "Missing key" not in text


def test_parameter_problems_are_said_from_the_students_side():
    class NoBias(Reader):
        def __init__(self, d_model, num_heads):
            super().__init__(d_model, num_heads, bias=False)

    text = str(ex.check_multi_head_attention(NoBias))
    assert "Your module has no parameter named w_q.bias" in text

    class Narrow(Reader):
        def __init__(self, d_model, num_heads):
            super().__init__(d_model, num_heads)
            self.w_q = nn.Linear(d_model, d_model // num_heads)

    text = str(ex.check_multi_head_attention(Narrow))
    assert "Your w_q.weight has shape (4, 12); expected (12, 12)" in text


def test_an_instance_instead_of_the_class_is_accepted_or_explained():
    instance = Reader(12, 3)
    before = {name: p.clone() for name, p in instance.named_parameters()}
    verdict = ex.check_multi_head_attention(instance)
    assert verdict.passed, verdict
    assert all(
        torch.equal(p, before[name]) for name, p in instance.named_parameters()
    )  # the reader's copy is untouched
    assert ex.check_multi_head_attention(Reader(16, 4)).status == "failed"  # other sizes: no crash
    for wrong in (None, 42, lambda d_model, num_heads: None):
        verdict = ex.check_multi_head_attention(wrong)
        assert verdict.status == "failed" and "pass the class" in str(verdict).lower()


def test_a_class_that_is_not_a_module_gets_a_verdict():
    class Plain:
        def __init__(self, d_model, num_heads):
            pass

    verdict = ex.check_multi_head_attention(Plain)
    assert verdict.status == "failed" and "nn.Module" in str(verdict)


# --- devices and dtypes -----------------------------------------------------------------------


def test_other_float_dtypes_are_compared_by_value():
    def in_double(query, key, value):
        out, w = attention_einsum(query.double(), key.double(), value.double())
        return out, w

    assert ex.check_attention(in_double).passed

    def in_half(query, key, value):
        out, w = attention_einsum(query.half(), key.half(), value.half())
        return out, w

    verdict = ex.check_attention(in_half)
    assert verdict.status == "failed" and "torch.float16" in str(verdict)


def test_a_tensor_on_another_device_gets_a_verdict():
    def on_meta(query, key, value):
        out, w = attention_einsum(query, key, value)
        return out.to("meta"), w.to("meta")

    verdict = ex.check_attention(on_meta)
    assert verdict.status == "failed" and "device meta" in str(verdict)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_results_on_the_gpu_are_compared_on_the_cpu():
    def on_gpu(query, key, value):
        return attention_einsum(query.cuda(), key.cuda(), value.cuda())

    assert ex.check_attention(on_gpu).passed

    def padding_on_gpu(lengths, max_len):
        return padding_broadcast(lengths, max_len).cuda()

    assert ex.check_padding_mask(padding_on_gpu).passed


def test_a_result_that_requires_grad_is_fine():
    scale = nn.Parameter(torch.ones(()))

    def with_grad(query, key, value):
        out, w = attention_einsum(query * scale, key, value)
        return out, w

    assert ex.check_attention(with_grad).passed


# --- stubs, unfinished helpers, endless loops ---------------------------------------------------


def test_only_the_stub_itself_is_not_attempted():
    def my_split_heads(x, num_heads):
        raise NotImplementedError

    assert ex.check_split_heads(my_split_heads).status == "not attempted"

    def my_helper(x):
        raise NotImplementedError

    def calls_unfinished_helper(x, num_heads):
        return my_helper(x)

    verdict = ex.check_split_heads(calls_unfinished_helper)
    assert verdict.status == "failed" and verdict.mistake == "unfinished helper"
    assert "my_helper" in verdict.message

    def marked_stub(x, num_heads):
        return helper_with_marker(x)

    verdict = ex.check_split_heads(marked_stub)
    assert verdict.status == "not attempted"


def helper_with_marker(x):
    raise NotImplementedError("your code here")


def test_a_module_whose_forward_calls_an_unfinished_split_fails_with_its_name():
    def my_split(t, h):
        raise NotImplementedError

    class UsesSplit(Reader):
        def split(self, t):
            return my_split(t, self.h)

    verdict = ex.check_multi_head_attention(UsesSplit)
    assert verdict.mistake == "unfinished helper" and "my_split" in verdict.message

    class ForwardStub(Reader):
        def forward(self, query, key, value):
            raise NotImplementedError

    assert ex.check_multi_head_attention(ForwardStub).status == "not attempted"


def endless(*args):
    while True:
        pass


def endless_and_stubborn(*args):
    while True:
        try:
            while True:
                pass
        except Exception:  # a bare `except Exception` must not swallow the time limit
            pass


@pytest.mark.usefixtures("short_time_limit")
@pytest.mark.parametrize("answer", [endless, endless_and_stubborn])
def test_an_endless_loop_gets_a_verdict(answer):
    before = signal.getsignal(signal.SIGALRM)
    verdict = ex.check_attention(answer)
    assert verdict.status == "failed" and verdict.mistake == "time limit" and "endless loop" in str(verdict)
    assert signal.getsignal(signal.SIGALRM) is before  # the alarm handler is put back


@pytest.mark.usefixtures("short_time_limit")
def test_an_endless_loop_outside_the_main_thread_gets_a_verdict():
    verdicts = []
    worker = threading.Thread(target=lambda: verdicts.append(ex.check_causal_mask(endless)))
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and verdicts[0].mistake == "time limit"
    for thread in threading.enumerate():  # the checker stopped the loop it started
        if thread.name == "exercise-checker":
            thread.join(2)
            assert not thread.is_alive()


@pytest.mark.usefixtures("short_time_limit")
def test_an_endless_loop_in_a_modules_init_gets_a_verdict():
    class Hangs(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            while True:
                pass

    verdict = ex.check_multi_head_attention(Hangs)
    assert verdict.mistake == "time limit" and verdict.message.startswith("Hangs(12, 3) did not finish")


# --- return types and other hostile answers -----------------------------------------------------


def test_return_types_get_a_return_type_line():
    def as_list(query, key, value):
        return list(attention_einsum(query, key, value))

    assert ex.check_attention(as_list).passed
    cases = {
        "returned a list of 3; return a tuple (output, weights)": lambda q, k, v: [*attention_einsum(q, k, v), q],
        "returned one tensor; return a tuple (output, weights)": lambda q, k, v: attention_einsum(q, k, v)[0],
        "returned an int; return a tuple (output, weights)": lambda q, k, v: 2,
    }
    for expected, answer in cases.items():
        verdict = ex.check_attention(answer)
        assert verdict.mistake == "wrong return type" and expected in str(verdict), verdict
        assert "returned value(s)" not in str(verdict)
    verdict = ex.check_causal_mask(lambda n: (causal_compare(n), n))
    assert verdict.mistake == "wrong return type" and "return one tensor" in str(verdict)
    verdict = ex.check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool)))
    assert "torch.as_tensor" in str(verdict)
    assert ex.check_causal_mask(lambda n: (causal_compare(n),)).passed  # a 1-tuple holding the mask is unambiguous


ALL_CHECKERS = [
    ex.check_attention,
    ex.check_padding_mask,
    ex.check_masked_attention,
    ex.check_split_heads,
    ex.check_combine_heads,
    ex.check_causal_mask,
    ex.check_positional_encoding,
    ex.check_encoder_block,
    ex.check_reverse_targets,
]


def exits(*args):
    raise SystemExit(1)


@pytest.mark.parametrize("checker", ALL_CHECKERS)
def test_hostile_answers_get_a_verdict(checker):
    for answer in (
        None,
        42,
        "my_answer",
        lambda *args: "hello",
        lambda *args: None,
        lambda *args: 1 / 0,
        lambda: 0,
        exits,
    ):
        verdict = checker(answer)
        assert verdict.status == "failed" and str(verdict), answer
    assert "forget `return`" in str(checker(lambda *args: None))
    assert "Pass the function itself" in str(checker(None))


# --- feedback that fits the failure -----------------------------------------------------------


def test_float_masks_get_a_dtype_line_and_nothing_generic():
    verdict = ex.check_causal_mask(lambda n: torch.tril(torch.ones(n, n)))
    text = str(verdict)
    assert verdict.mistake == "float mask" and "a float 0/1 mask" in text and "return a boolean tensor" in text
    assert "No classic mistake" not in text and "Hint:" not in text

    def float_padding(lengths, max_len):
        return (torch.arange(max_len) < torch.as_tensor(lengths)[:, None]).unsqueeze(1).float()

    assert ex.check_padding_mask(float_padding).mistake == "float mask"
    future = ex.check_causal_mask(lambda n: torch.triu(torch.ones(n, n), diagonal=1))
    assert future.mistake == "future instead of past" and "0/1 mask" in str(future)


def test_padding_mask_compared_the_wrong_way_is_named():
    def greater(lengths, max_len):
        return (torch.arange(max_len) > torch.as_tensor(lengths)[:, None]).unsqueeze(1)

    assert ex.check_padding_mask(greater).mistake == "mask inverted"


def test_an_extra_axis_of_size_1_is_pointed_out():
    verdict = ex.check_positional_encoding(lambda max_len, d_model: pe_vectorised(max_len, d_model)[None])
    assert "axes of size 1" in str(verdict)


def test_the_list_type_error_of_02_1_gets_the_as_tensor_hint():
    def indexes_the_list(lengths, max_len):
        return (torch.arange(max_len) < lengths[:, None]).unsqueeze(1)

    verdict = ex.check_padding_mask(indexes_the_list)
    assert verdict.mistake == "lengths is a list" and "torch.as_tensor(lengths)" in str(verdict)
    assert "indexes_the_list" in str(verdict)  # where it was raised
    assert "torch.as_tensor(lengths)" in str(ex.check_padding_mask(stub))


def masked_after_softmax(query, key, value, mask):
    weights = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1]), dim=-1) * mask
    return weights @ value, weights


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


def test_value_projected_from_the_query_fails_on_cross_attention_with_a_name():
    class ValueFromQuery(Reader):
        value_from = "query"

    verdict = ex.check_multi_head_attention(ValueFromQuery)
    assert verdict.mistake == "fails on cross-attention" and "raised RuntimeError" in verdict.message
    assert "key.shape[1]" in str(verdict)


def test_multi_head_unflatten_and_flatten_without_transpose_are_named():
    assert ex.check_split_heads(lambda x, h: x.unflatten(-1, (h, -1))).mistake == "unflatten without transpose"
    assert ex.check_combine_heads(lambda x: x.flatten(2)).mistake == "flatten without transpose"
    assert ex.check_combine_heads(lambda x: x.transpose(1, 2)).mistake == "not merged"

    def merged_with_view(x):
        B, h, n, d_k = x.shape
        return x.transpose(1, 2).view(B, n, h * d_k)

    verdict = ex.check_combine_heads(merged_with_view)
    assert verdict.mistake == "view on a non-contiguous tensor" and ".reshape" in str(verdict)


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


def test_value_mismatches_say_where_the_wrong_entries_are():
    def output_doubled(query, key, value):
        out, w = attention_einsum(query, key, value)
        return 2 * out, w

    text = str(ex.check_attention(output_doubled))
    assert "weights match; output does not" in text and "shape right, all" in text

    def keeps_garbage(tokens, lengths):
        out = reverse_where(tokens, lengths)
        return out + (out == 0).long() * 3

    verdict = ex.check_reverse_targets(keeps_garbage)
    assert "only in the padded positions" in str(verdict)


WRONG_ANSWERS = [
    (ex.check_attention, lambda q, k, v: attention_einsum(q, k, v * 2)),
    (ex.check_masked_attention, masked_after_softmax),
    (ex.check_padding_mask, lambda lengths, m: padding_loops(lengths, m) & False),
    (ex.check_split_heads, lambda x, h: split_chunks(x, h).flip(-1)),
    (ex.check_combine_heads, lambda x: combine_cat(x) * 2),
    (ex.check_causal_mask, lambda n: causal_compare(n).T),
    (ex.check_positional_encoding, lambda L, d: pe_vectorised(L, d).flip(0)),
    (ex.check_encoder_block, pre_norm_steps),
    (ex.check_reverse_targets, lambda tokens, lengths: tokens),
]


@pytest.mark.parametrize(("checker", "answer"), WRONG_ANSWERS)
def test_every_failed_case_shows_a_difference_line_and_never_the_generic_line(checker, answer):
    text = str(checker(answer))
    assert "failed (" in text and ("largest difference" in text or "entries differ" in text), text
    assert "No classic mistake" not in text


def test_not_attempted_hints_are_conceptual_and_failed_attempts_get_the_code():
    code_tokens = ("@", "softmax(", "transpose(", ".view(", "gather(", "masked_fill", "tril(", "unsqueeze", "arange(")

    class Stub(nn.Module):
        def __init__(self, d_model, num_heads):
            raise NotImplementedError

    for checker in [*ALL_CHECKERS, ex.check_multi_head_attention]:
        verdict = checker(Stub if checker is ex.check_multi_head_attention else stub)
        assert verdict.status == "not attempted", verdict
        hint = str(verdict).split("Hint:", 1)[1]
        assert not any(token in hint for token in code_tokens), (checker.__name__, hint)
    combine = str(ex.check_combine_heads(stub))
    assert "flatten" in combine and "reshape" in combine
    ex.reset_attempts()
    wrong = [str(ex.check_attention(lambda q, k, v: attention_einsum(q, k, v * 2))) for _ in range(3)]
    assert "Hint: Eq. 1" in wrong[0] and "Hint in code" not in wrong[0] and "A solution" not in wrong[0]
    assert "Hint in code: key.transpose(-2, -1)" in wrong[1] and "A solution" not in wrong[1]
    assert (
        "A solution (failed attempt 3 at 01.1):" in wrong[2]
        and "    weights = torch.softmax(scores, dim=-1)" in wrong[2]
    )


def stub(*args):
    raise NotImplementedError


def test_the_hidden_cases_are_the_ones_the_notebooks_describe():
    seen = []

    def records(query, key, value):
        seen.append((tuple(query.shape), tuple(key.shape), tuple(value.shape)))
        return attention_einsum(query, key, value)

    assert ex.check_attention(records).passed
    assert seen == [
        ((3, 16), (5, 16), (5, 4)),
        ((2, 4, 2), (2, 4, 2), (2, 4, 3)),
        ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)),
    ]
    assert (ex.RTOL, ex.ATOL) == (1e-4, 1e-5)  # 05.1 says: compared with rtol 1e-4

    seen.clear()

    class Records(Reader):
        def forward(self, query, key, value):
            seen.append(torch.equal(key, value))
            return super().forward(query, key, value)

    assert ex.check_multi_head_attention(Records).passed
    assert seen == [True, False]  # cross-attention: key and value are different tensors


def test_checkers_leave_the_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    ex.check_multi_head_attention(MultiHeadAttention)
    ex.check_attention(lambda q, k, v: attention_einsum(q + torch.randn(()), k, v))
    torch.testing.assert_close(torch.rand(3), expected)


# --- second review: wrong answers that got no or the wrong diagnosis ---------------------------


def test_renormalising_after_the_softmax_is_diagnosed_as_0_over_0():
    def renormalised(query, key, value, mask):
        s = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        w = torch.softmax(s, dim=-1) * mask
        w = w / w.sum(-1, keepdim=True)  # 0 / 0 = NaN on a query with no allowed key
        return w @ value, w

    verdict = ex.check_masked_attention(renormalised)
    assert verdict.mistake == "-inf fill gives NaN"
    assert "divides 0 by 0" in str(verdict) and "-inf" in str(verdict)


def test_attention_scaled_by_the_value_width_is_named():
    def by_d_v(query, key, value):
        w = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(value.shape[-1]), dim=-1)
        return w @ value, w

    verdict = ex.check_attention(by_d_v)
    assert verdict.mistake == "scaled by sqrt(d_v)" and "query.shape[-1]" in str(verdict)


def test_transpose_1_2_on_unbatched_input_gets_the_negative_axes_hint():
    def batch_only(query, key, value):
        w = torch.softmax(query @ key.transpose(1, 2) / math.sqrt(query.shape[-1]), dim=-1)
        return w @ value, w

    verdict = ex.check_attention(batch_only)
    assert verdict.mistake == "transpose(1, 2) on unbatched input"
    assert "transpose(-2, -1)" in str(verdict)

    def softmax_dim_2(query, key, value):  # the same IndexError from another line: no transpose hint
        w = torch.softmax(query @ key.transpose(-2, -1), dim=2)
        return w @ value, w

    assert ex.check_attention(softmax_dim_2).mistake != "transpose(1, 2) on unbatched input"


def test_multi_head_attention_returning_weights_first_is_named():
    class Swapped(EinsumMHA):
        def forward(self, query, key, value):
            out, w = super().forward(query, key, value)
            return w, out

    assert ex.check_multi_head_attention(Swapped).mistake == "outputs swapped"


def test_odd_columns_are_said_only_when_every_odd_column_is_wrong():
    wrong = torch.zeros(3, 6, dtype=torch.bool)
    wrong[:, [1, 3]] = True
    assert ex._pattern(wrong, {}) == "only in columns 1, 3 (last axis)"
    wrong[:, 5] = True
    assert ex._pattern(wrong, {}) == "only in the odd columns (last axis)"
    wrong = torch.zeros(3, 6, dtype=torch.bool)
    wrong[:, [0, 4]] = True
    assert ex._pattern(wrong, {}) == "only in columns 0, 4 (last axis)"


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


def test_shape_errors_get_a_named_hint():
    def lengths_a_row(lengths, max_len):
        return (torch.arange(max_len) < torch.as_tensor(lengths)).unsqueeze(1)

    verdict = ex.check_padding_mask(lengths_a_row)
    assert verdict.mistake == "lengths not a column" and "[:, None]" in str(verdict)

    def boolean_index(query, key, value, mask):
        s = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        s[~mask] = torch.finfo(s.dtype).min  # mask (B, 1, m) against scores (B, n, m)
        w = torch.softmax(s, dim=-1)
        return w @ value, w

    verdict = ex.check_masked_attention(boolean_index)
    assert verdict.mistake == "boolean indexing with a broadcast mask" and "masked_fill" in str(verdict)

    def split_transpose_2_3(x, num_heads):
        B, n, d = x.shape
        return x.view(B, n, num_heads, d // num_heads).transpose(2, 3)

    def split_permute(x, num_heads):
        B, n, d = x.shape
        return x.view(B, n, num_heads, d // num_heads).permute(0, 2, 3, 1)

    verdict = ex.check_split_heads(split_transpose_2_3)
    assert verdict.mistake == "transposed the wrong axes" and "(B, n, d_k, h)" in str(verdict)
    verdict = ex.check_split_heads(split_permute)
    assert verdict.mistake == "permuted the wrong axes" and "(B, h, d_k, n)" in str(verdict)

    def combine_transpose_2_3(x):
        B, h, n, d_k = x.shape
        return x.transpose(2, 3).reshape(B, n, h * d_k)

    def combine_permute(x):
        return x.permute(0, 2, 3, 1).flatten(2)

    verdict = ex.check_combine_heads(combine_transpose_2_3)
    assert verdict.mistake == "transposed the wrong axes" and "(B, h, d_k, n)" in str(verdict)
    verdict = ex.check_combine_heads(combine_permute)
    assert verdict.mistake == "features interleaved" and "(B, n, d_k, h)" in str(verdict)


# --- diff summaries say only what is structural (issue 19) ---------------------------------------


def test_a_few_scattered_wrong_entries_are_listed_not_called_a_column_pattern():
    # 02.1's `<=`: one wrong entry in each of two rows, which happen to be odd columns
    wrong = torch.zeros(3, 1, 4, dtype=torch.bool)
    wrong[0, 0, 3] = wrong[1, 0, 1] = True
    assert ex._pattern(wrong, {}) == "only at indices (0, 0, 3) and (1, 0, 1)"
    verdict = ex.check_padding_mask(lambda lengths, m: (torch.arange(m) <= torch.as_tensor(lengths)[:, None])[:, None])
    assert verdict.mistake == "off by one" and "odd columns" not in str(verdict), str(verdict)
    many = torch.zeros(8, 8, dtype=torch.bool)
    many[torch.arange(8), (torch.arange(8) * 3) % 8] = True  # one per row, spread over the columns
    assert ex._pattern(many, {}) == ""


def test_a_column_or_row_is_reported_when_it_is_wrong_in_most_of_its_entries():
    wrong = torch.zeros(4, 6, dtype=torch.bool)
    wrong[1:, 2] = True  # wrong in 3 of the 4 rows
    assert ex._pattern(wrong, {}) == "only in column 2 (last axis)"
    wrong = torch.zeros(4, 6, dtype=torch.bool)
    wrong[3, 1:] = True
    assert ex._pattern(wrong, {}) == "only in row 3 (axis -2)"
    wrong = torch.zeros(2, 4, dtype=torch.bool)  # 4 columns, 2 of them odd: parity needs at least 4 columns
    wrong[:, 1::2] = True
    assert ex._pattern(wrong, {}) == "only in the odd columns (last axis)"
    assert ex._pattern(torch.zeros(2, 2, dtype=torch.bool).index_fill(1, torch.tensor([1]), True), {}) == (
        "only in column 1 (last axis)"
    )


def test_the_rate_checker_names_sampled_steps_by_their_step_number():
    def off_late(steps, d_model, warmup_steps):  # wrong only after step 20000
        rate = d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
        return rate * torch.where(steps > 20000, 1.5, 1.0)

    text = str(ex.check_rate(off_late))
    assert "only at steps 20018-29971" in text and "at step 20018" in text and "index (" not in text, text
