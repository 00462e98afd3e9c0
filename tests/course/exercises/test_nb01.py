"""The checkers of notebook 01, scaled dot-product attention (``course.exercises.nb01``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from course import exercises as ex
from tests.course.exercises.answers import attention_doubled_output, attention_einsum, attention_right, stub


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


def test_hints_come_in_tiers_and_a_stub_does_not_count():
    assert ex.check_attention(stub).status == "not attempted"  # not counted
    first, second, third, fourth = (ex.check_attention(attention_doubled_output) for _ in range(4))
    assert [v.attempt for v in (first, second, third, fourth)] == [1, 2, 3, 4]
    assert "Hint: Eq. 1 (§3.2.1)" in str(first) and "Hint in code" not in str(first)
    assert 'course.exercises.solution("01.1")' in str(first) and "A solution" not in str(first)
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
    # Named failures do not climb the hint tiers (the student review: after two or three named mistakes, the first
    # unnamed one printed the whole solution). The first unexplained failure gets the conceptual hint, whatever came
    # before; the verdict still counts every attempt.
    unnamed = ex.check_attention(attention_doubled_output)
    assert "Hint: Eq. 1" in str(unnamed) and "(Failed attempt 1 at 01.1" in str(unnamed), str(unnamed)
    assert "A solution" not in str(unnamed) and unnamed.attempt == 5
    assert "Hint in code" in str(ex.check_attention(attention_doubled_output))
    assert "A solution (failed attempt 3 at 01.1)" in str(ex.check_attention(attention_doubled_output))


def test_a_solution_is_given_only_when_asked_for():
    text = ex.solution("01.1")
    assert "torch.softmax(scores, dim=-1)" in text and repr(text) == str(text)  # shown as code, not as a string
    verdict = ex.check_attention(attention_doubled_output)
    assert verdict.solution() == text and "torch.softmax(scores, dim=-1)" not in str(verdict)
    assert ex.solution("Exercise 05.1 positional encoding") == ex.solution("05.1")
    with pytest.raises(ValueError, match=r"01\.1"):
        ex.solution("99.1")


def test_graded_mode_shows_hints_but_never_the_solution(monkeypatch):
    monkeypatch.setenv("ATTENTION_GRADED", "1")
    texts = [str(ex.check_attention(attention_doubled_output)) for _ in range(4)]
    assert "Hint: Eq. 1" in texts[0] and "Hint in code: key.transpose(-2, -1)" in texts[1]
    assert all("torch.softmax(scores, dim=-1)" not in text and "A solution" not in text for text in texts), texts
    assert "(Failed attempt 4 at 01.1: graded mode is on, so no solution is shown.)" in texts[3]
    assert "switched off" in ex.solution("01.1") and "softmax" not in ex.solution("01.1")
    assert ex.check_attention(attention_doubled_output).solution() == ex.solution("01.1")
    with pytest.raises(ValueError, match=r"01\.1"):
        ex.solution("99.1")  # an unknown exercise is still an error
    monkeypatch.setenv("ATTENTION_GRADED", "0")
    assert "torch.softmax(scores, dim=-1)" in ex.solution("01.1")


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


def test_a_result_that_requires_grad_is_fine():
    scale = nn.Parameter(torch.ones(()))

    def with_grad(query, key, value):
        out, w = attention_einsum(query * scale, key, value)
        return out, w

    assert ex.check_attention(with_grad).passed


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


def test_every_listed_attention_mistake_is_named():
    from course.exercises import nb01

    for mistake in nb01.ATTENTION_MISTAKES:
        verdict = ex.check_attention(mistake.wrong)
        assert verdict.status == "failed" and verdict.mistake == mistake.key, (mistake.key, str(verdict))
