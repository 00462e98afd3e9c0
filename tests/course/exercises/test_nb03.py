"""The checkers of notebook 03, heads (``course.exercises.nb03``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course import exercises as ex
from helpers.attention import MultiHeadAttention
from tests.course.exercises.answers import EinsumMHA, MultiHead, Reader, ReaderMHA


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


def test_the_split_and_combine_references_are_the_helpers(monkeypatch):
    """CONTRIBUTING: the reference is always the helper. helpers.attention.split_heads and combine_heads pass, and
    the checkers compare with them: a helper made wrong turns a right answer into a failure."""
    from helpers import attention

    assert ex.check_split_heads(attention.split_heads).passed
    assert ex.check_combine_heads(attention.combine_heads).passed
    right_split = attention.split_heads
    right_combine = attention.combine_heads
    monkeypatch.setattr(attention, "split_heads", lambda x, h: right_split(x, h).flip(1))
    monkeypatch.setattr(attention, "combine_heads", lambda x: right_combine(x.flip(1)))
    assert not ex.check_split_heads(right_split).passed
    assert not ex.check_combine_heads(right_combine).passed


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


def test_multi_head_attention_returning_weights_first_is_named():
    class Swapped(EinsumMHA):
        def forward(self, query, key, value):
            out, w = super().forward(query, key, value)
            return w, out

    assert ex.check_multi_head_attention(Swapped).mistake == "outputs swapped"


def test_the_same_tensor_passed_twice_is_named_from_a_case_that_tells_them_apart():
    class ScalesKey(MultiHead):
        def forward(self, query, key, value):
            result = super().forward(query.clone(), key, value)
            key.mul_(2.0)  # in self-attention key is query and value too
            return result

    verdict = ex.check_multi_head_attention(ScalesKey)
    assert verdict.mistake == "key changed in place", verdict  # named from the cross-attention case
    assert "the same tensor" not in str(verdict)


@pytest.mark.parametrize(
    ("checker", "mistakes"),
    [("check_split_heads", "SPLIT_MISTAKES"), ("check_combine_heads", "COMBINE_MISTAKES")],
)
def test_every_listed_heads_mistake_is_named(checker, mistakes):
    from course.exercises import nb03

    for mistake in getattr(nb03, mistakes):
        verdict = getattr(ex, checker)(mistake.wrong)
        assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))


def test_the_reference_module_is_the_same_on_every_attempt():
    from course.exercises import nb03

    first = {name: p.clone() for name, p in nb03.mha_reference().named_parameters()}
    assert ex.check_multi_head_attention(nb03.mha_reference().__class__).passed  # helpers' own class passes
    again = dict(nb03.mha_reference().named_parameters())
    assert all(torch.equal(first[name], again[name]) for name in first)  # a check leaves the reference unchanged
