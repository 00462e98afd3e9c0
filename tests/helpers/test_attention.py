"""Unit and property tests of helpers.attention against PyTorch's own attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from helpers.attention import MultiHeadAttention, combine_heads, scaled_dot_product_attention, split_heads
from helpers.masks import causal_mask, padding_mask
from helpers.reference import torch_multihead_attention
from tests.support import random_mask

ATOL = 1e-5


# --- scaled_dot_product_attention -----------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    n=st.integers(1, 7),
    m=st.integers(1, 7),
    d_k=st.integers(1, 9),
    d_v=st.integers(1, 9),
    use_mask=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sdpa_equals_pytorch(batch, n, m, d_k, d_v, use_mask, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, n, d_k, generator=g)
    k = torch.randn(*batch, m, d_k, generator=g)
    v = torch.randn(*batch, m, d_v, generator=g)
    mask = random_mask((*batch, n, m), g, density=0.6, keep_one_per_row=True) if use_mask else None

    out, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    assert out.shape == (*batch, n, d_v)
    assert weights.shape == (*batch, n, m)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*batch, n))
    if mask is not None:
        assert (weights[~mask] == 0).all(), "masked weights must be exactly zero"


def test_sdpa_step_by_step_matches_eq1():
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 6, generator=g)
    manual = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(4), dim=-1) @ v
    out, _ = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, manual)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_sdpa_never_nan_for_any_mask(n, m, seed):
    """Any mask at all, including rows with no allowed key: no NaN, masked rows are zero."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, n, 4, generator=g, requires_grad=True)
    k = torch.randn(2, m, 4, generator=g, requires_grad=True)
    v = torch.randn(2, m, 3, generator=g, requires_grad=True)
    mask = random_mask((2, n, m), g, density=0.6, keep_one_per_row=False)

    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (weights[~mask] == 0).all()
    empty = ~mask.any(-1)  # (2, n) queries with nothing to attend to
    assert (weights[empty] == 0).all() and (out[empty] == 0).all()
    torch.testing.assert_close(weights.sum(-1)[~empty], torch.ones(int((~empty).sum())))

    (out.sum() + weights.pow(2).sum()).backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_fully_masked_row_is_zero_with_finite_gradients():
    q = torch.randn(1, 2, 4, requires_grad=True)
    k = torch.randn(1, 3, 4, requires_grad=True)
    v = torch.randn(1, 3, 4, requires_grad=True)
    mask = torch.tensor([[[True, False, True], [False, False, False]]])
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert weights[0, 1].tolist() == [0.0, 0.0, 0.0]
    assert out[0, 1].tolist() == [0.0] * 4
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all() and torch.isfinite(v.grad).all()
    assert q.grad[0, 1].abs().sum() == 0, "a query that attends to nothing gets no gradient"


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_fully_masked_row_makes_no_nan_even_inside_autograd():
    """The fill is finfo.min, not -inf: no NaN appears even in intermediate results.

    With -inf a fully masked row's softmax is 0/0 = NaN; zeroing it afterwards hides the NaN in the
    output and (through masked_fill's backward) in the gradients, but anomaly detection still
    reports it, and so would any code that reads the softmax before the zeroing.
    """
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 3, 4, generator=g, requires_grad=True)
    k = torch.randn(2, 5, 4, generator=g, requires_grad=True)
    v = torch.randn(2, 5, 4, generator=g, requires_grad=True)
    mask = random_mask((2, 3, 5), g, density=0.6, keep_one_per_row=True)
    mask[1, 2] = False
    with torch.autograd.detect_anomaly(check_nan=True):
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        (out.sum() + weights.pow(2).sum()).backward()
    assert (out[1, 2] == 0).all() and all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_sdpa_gradcheck_float64():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 5, 2, dtype=torch.float64, generator=g, requires_grad=True)
    mask = torch.tensor([True, True, False, True, False]).expand(3, 5).clone()
    mask[2] = False  # one fully masked query row
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v), (q, k, v))


def test_sdpa_broadcasts_mask_and_batch():
    g = torch.Generator().manual_seed(4)
    q = torch.randn(2, 3, 5, 4, generator=g)
    k = torch.randn(2, 3, 6, 4, generator=g)
    v = torch.randn(2, 3, 6, 4, generator=g)
    mask = padding_mask([4, 6]).unsqueeze(1)  # (2, 1, 1, 6)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert (weights[0, :, :, 4:] == 0).all()


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "mask", "message"),
    [
        ((2, 3, 4), (2, 5, 8), (2, 5, 4), None, r"same last dimension d_k.*\(2, 3, 4\).*\(2, 5, 8\)"),
        ((2, 3, 4), (2, 5, 4), (2, 6, 4), None, r"same number of positions m.*\(2, 5, 4\).*\(2, 6, 4\)"),
        ((2, 3, 4), (3, 5, 4), (3, 5, 4), None, r"batch.*do not broadcast"),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4), torch.ones(4, 5, dtype=torch.bool), r"mask of shape \(4, 5\).*\(2, 3, 5\)"),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4), torch.ones(3, 5), r"dtype torch.bool.*torch.float32"),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4), torch.ones(2, 3, 5, dtype=torch.long), r"dtype torch.bool.*torch.int64"),
        ((4,), (5, 4), (5, 4), None, r"at least 2 dimensions.*\(4,\)"),
    ],
)
def test_sdpa_bad_input(q_shape, k_shape, v_shape, mask, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(torch.randn(q_shape), torch.randn(k_shape), torch.randn(v_shape), mask)


def test_mask_broadcasting_to_bigger_shape_is_rejected():
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 4)
    with pytest.raises(ValueError, match=r"\(2, 3, 5\) does not broadcast.*\(3, 5\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(2, 3, 5, dtype=torch.bool))


# --- MultiHeadAttention ---------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3),
    n=st.integers(1, 6),
    m=st.integers(1, 6),
    heads_and_dk=st.sampled_from([(1, 4), (2, 3), (4, 2), (2, 8)]),
    self_attention=st.booleans(),
    mask_kind=st.sampled_from(["none", "padding", "causal", "random"]),
    bias=st.booleans(),
    need_weights=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_mha_equals_torch_with_gradients(B, n, m, heads_and_dk, self_attention, mask_kind, bias, need_weights, seed):
    h, d_k = heads_and_dk
    d_model = h * d_k
    if self_attention:
        m = n
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, h, bias=bias)
    ref = torch_multihead_attention(ours)

    x_q = torch.randn(B, n, d_model, requires_grad=True)
    x_kv = x_q if self_attention else torch.randn(B, m, d_model, requires_grad=True)
    g = torch.Generator().manual_seed(seed)
    if mask_kind == "padding":
        lengths = torch.randint(1, m + 1, (B,), generator=g)
        mask = padding_mask(lengths, m)  # (B, 1, m)
        ref_kwargs = {"key_padding_mask": ~mask[:, 0, :]}  # PyTorch: True = ignore
    elif mask_kind == "causal" and self_attention:
        mask = causal_mask(n)
        ref_kwargs = {"attn_mask": ~mask}
    elif mask_kind == "random":
        mask = random_mask((B, n, m), g, density=0.6, keep_one_per_row=True)
        ref_kwargs = {"attn_mask": (~mask).repeat_interleave(h, dim=0)}  # PyTorch wants (B*h, n, m)
    else:
        mask, ref_kwargs = None, {}

    out, weights = ours(x_q, x_kv, x_kv, mask=mask, need_weights=need_weights)
    ref_out, ref_weights = ref(x_q, x_kv, x_kv, need_weights=True, average_attn_weights=False, **ref_kwargs)

    assert out.shape == (B, n, d_model)
    torch.testing.assert_close(out, ref_out, atol=ATOL, rtol=1e-4)
    if need_weights:
        assert weights.shape == (B, h, n, m)
        torch.testing.assert_close(weights, ref_weights, atol=ATOL, rtol=1e-4)
    else:
        assert weights is None

    # Gradients of the same scalar loss through both modules.
    upstream = torch.randn(B, n, d_model, generator=g)
    ours_inputs = [x_q] if self_attention else [x_q, x_kv]
    grads = torch.autograd.grad((out * upstream).sum(), [*ours_inputs, *ours.parameters()])
    ref_grads = torch.autograd.grad((ref_out * upstream).sum(), [*ours_inputs, *ref.parameters()])
    for ours_grad, ref_grad in zip(grads[: len(ours_inputs)], ref_grads[: len(ours_inputs)], strict=True):
        torch.testing.assert_close(ours_grad, ref_grad, atol=1e-4, rtol=1e-4)
    ref_params = dict(ref.named_parameters())
    ref_param_grads = dict(zip(ref_params, ref_grads[len(ours_inputs) :], strict=True))
    d = d_model
    named_ours = dict(zip(dict(ours.named_parameters()), grads[len(ours_inputs) :], strict=True))
    expected = {
        "w_q.weight": ref_param_grads["in_proj_weight"][:d],
        "w_k.weight": ref_param_grads["in_proj_weight"][d : 2 * d],
        "w_v.weight": ref_param_grads["in_proj_weight"][2 * d :],
        "w_o.weight": ref_param_grads["out_proj.weight"],
    }
    if bias:
        expected |= {
            "w_q.bias": ref_param_grads["in_proj_bias"][:d],
            "w_k.bias": ref_param_grads["in_proj_bias"][d : 2 * d],
            "w_v.bias": ref_param_grads["in_proj_bias"][2 * d :],
            "w_o.bias": ref_param_grads["out_proj.bias"],
        }
    assert set(named_ours) == set(expected)
    for name, grad in named_ours.items():
        torch.testing.assert_close(grad, expected[name], atol=1e-4, rtol=1e-4, msg=lambda s, name=name: f"{name}: {s}")


def test_mha_cross_attention_issue_shapes():
    """The issue's example: batch 16, 10 queries, 20 keys, d_model 32."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4)
    ref = torch_multihead_attention(mha)
    q, kv = torch.randn(16, 10, 32), torch.randn(16, 20, 32)
    out, weights = mha(q, kv, kv)
    ref_out, ref_weights = ref(q, kv, kv, average_attn_weights=False)
    assert out.shape == (16, 10, 32) and weights.shape == (16, 4, 10, 20)
    torch.testing.assert_close(out, ref_out, atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(weights, ref_weights, atol=ATOL, rtol=1e-4)


def test_mha_fast_and_weights_paths_agree_and_never_nan():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(3, 5, 16, requires_grad=True)
    mask = padding_mask([5, 2, 0], 5)  # the last sequence is all padding
    slow, _ = mha(x, x, x, mask)
    fast, none = mha(x, x, x, mask, need_weights=False)
    assert none is None
    torch.testing.assert_close(slow, fast, atol=ATOL, rtol=1e-4)
    assert torch.isfinite(fast).all()
    fast.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_mha_per_head_mask():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    mask = torch.ones(1, 2, 3, 3, dtype=torch.bool)
    mask[0, 1] = causal_mask(3)  # head 1 is causal, head 0 is not
    _, weights = mha(x, x, x, mask)
    future = ~causal_mask(3)
    assert (weights[0, 1][future] == 0).all()
    assert (weights[0, 0][future] > 0).all()


def test_mha_gradcheck_float64():
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 2).double()
    x = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 4, 6, dtype=torch.float64, requires_grad=True)
    mask = padding_mask([4, 2], 4)
    assert torch.autograd.gradcheck(lambda x, y: mha(x, y, y, mask)[0], (x, y))
    assert torch.autograd.gradcheck(lambda x, y: mha(x, y, y, mask, need_weights=False)[0], (x, y))


def test_mha_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 4, 8)
    mha.eval()
    a, _ = mha(x, x, x)
    b, _ = mha(x, x, x, need_weights=False)
    torch.testing.assert_close(a, b, atol=ATOL, rtol=1e-4)
    mha.train()
    c, _ = mha(x, x, x)
    assert not torch.allclose(a, c), "dropout must change the output in training mode"


def test_mha_layer_names_and_parameter_count():
    mha = MultiHeadAttention(512, 8)
    names = {name for name, _ in mha.named_children()}
    assert names == {"w_q", "w_k", "w_v", "w_o"}
    assert all(isinstance(getattr(mha, name), nn.Linear) for name in names)
    assert sum(p.numel() for p in mha.parameters()) == 4 * (512 * 512 + 512)
    assert sum(p.numel() for p in MultiHeadAttention(512, 8, bias=False).parameters()) == 4 * 512 * 512


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 10, "num_heads": 3}, r"d_model=10 is not divisible by num_heads=3"),
        ({"d_model": 8, "num_heads": 0}, r"num_heads must be a positive integer, got 0"),
        ({"d_model": 8, "num_heads": True}, r"num_heads must be a positive integer, got True"),
        ({"d_model": 8.0, "num_heads": 2}, r"d_model must be a positive integer, got 8.0"),
        ({"d_model": 8, "num_heads": 2, "d_k": True}, r"d_k must be a positive integer \(or None"),
        ({"d_model": 8, "num_heads": 2, "dropout": 1.5}, r"dropout.*1.5"),
    ],
)
def test_mha_bad_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)


@pytest.mark.parametrize(
    ("q_shape", "kv_shapes", "mask", "message"),
    [
        (
            (2, 3, 7),
            ((2, 4, 8), (2, 4, 8)),
            None,
            r"query must have shape \(B, positions, d_model=8\), got \(2, 3, 7\)",
        ),
        ((2, 3, 8), ((2, 4, 8), (2, 5, 8)), None, r"same number of positions m.*\(2, 4, 8\).*\(2, 5, 8\)"),
        ((2, 3, 8), ((3, 4, 8), (3, 4, 8)), None, r"same batch size"),
        ((3, 8), ((4, 8), (4, 8)), None, r"query must have shape .*got \(3, 8\)"),
        (
            (2, 3, 8),
            ((2, 4, 8), (2, 4, 8)),
            torch.ones(2, 3, 3, dtype=torch.bool),
            r"\(2, 3, 3\) does not broadcast.*\(2, 3, 4\)",
        ),
        ((2, 3, 8), ((2, 4, 8), (2, 4, 8)), torch.ones(2, 3, 4), r"dtype torch.bool"),
        (
            (2, 3, 8),
            ((2, 4, 8), (2, 4, 8)),
            torch.ones(2, 3, 3, 4, dtype=torch.bool),
            r"\(2, 3, 3, 4\).*\(2, 2, 3, 4\)",
        ),
    ],
)
def test_mha_bad_input(q_shape, kv_shapes, mask, message):
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=message):
        mha(torch.randn(q_shape), torch.randn(kv_shapes[0]), torch.randn(kv_shapes[1]), mask)


# --- tests that each catch one specific plausible bug ----------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sdpa_low_precision_with_a_fully_masked_row(dtype):
    """Filling with finfo(dtype).min, not a fixed -1e9 (which overflows float16), works in low precision."""
    g = torch.Generator().manual_seed(5)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    mask = random_mask((2, 3, 5), g, density=0.6, keep_one_per_row=True)
    mask[0, 1] = False  # one query with no allowed key
    expected_out, expected_weights = scaled_dot_product_attention(q, k, v, mask)
    q_low, k_low, v_low = (t.to(dtype).requires_grad_() for t in (q, k, v))
    out, weights = scaled_dot_product_attention(q_low, k_low, v_low, mask)
    assert out.dtype == weights.dtype == dtype
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (out[0, 1] == 0).all() and (weights[0, 1] == 0).all()
    tol = 1e-2 if dtype == torch.float16 else 5e-2
    torch.testing.assert_close(out.float(), expected_out, atol=tol, rtol=tol)
    torch.testing.assert_close(weights.float(), expected_weights, atol=tol, rtol=tol)
    out.float().sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q_low, k_low, v_low))


def _attention_with_minus_inf(query, key, value, attn_mask=None, dropout_p=0.0, **kwargs):
    """A stand-in for the fused kernel that fills masked scores with -inf: NaN for a query with no allowed key."""
    assert dropout_p == 0.0 and not kwargs
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ value


@pytest.mark.parametrize("per_head", [False, True])
def test_fused_path_guard_for_queries_with_no_allowed_key(monkeypatch, per_head):
    """The fast path must not rely on the kernel's behaviour for empty rows (torch 2.13's CPU kernel gives 0)."""
    calls = []

    def stand_in(*args, **kwargs):
        calls.append(1)
        return _attention_with_minus_inf(*args, **kwargs)

    # The stand-in really does produce NaN for an empty row, so this test can fail.
    nan_row = _attention_with_minus_inf(
        torch.randn(1, 2), torch.randn(3, 2), torch.randn(3, 2), torch.zeros(1, 3).bool()
    )
    assert torch.isnan(nan_row).all()

    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, bias=False)
    x = torch.randn(3, 4, 8, requires_grad=True)
    mask = padding_mask([4, 2, 0], 4).expand(3, 4, 4).clone()  # sequence 2 is all padding
    mask[0, 1] = False  # and query 1 of sequence 0 may attend to nothing
    if per_head:
        mask = mask[:, None].repeat(1, 2, 1, 1)
        mask[1, 0, 3] = False  # query 3 of sequence 1 has no key in head 0 only
    expected, _ = mha(x, x, x, mask)  # the weights path, already tested against PyTorch
    monkeypatch.setattr(F, "scaled_dot_product_attention", stand_in)
    out, _ = mha(x, x, x, mask, need_weights=False)
    assert calls, "the fast path no longer calls F.scaled_dot_product_attention; update this test"
    assert torch.isfinite(out).all()
    assert (out[2] == 0).all() and (out[0, 1] == 0).all()
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=1e-4)
    grads = torch.autograd.grad(out.pow(2).sum() + out.sum(), [x, *mha.parameters()])
    assert all(torch.isfinite(grad).all() for grad in grads)
    assert (grads[0][2] == 0).all(), "an all-padding sequence gets no gradient"


@pytest.mark.parametrize("need_weights", [True, False])
def test_self_attention_shortcut_only_when_query_key_and_value_are_one_tensor(need_weights):
    """mha(x, x, y) and friends must equal the same call with equal but distinct tensors."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x, y = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    for q, k, v in [(x, x, y), (x, y, x), (y, x, x), (x, x, x)]:
        out, weights = mha(q, k, v, need_weights=need_weights)
        ref_out, ref_weights = mha(q.clone(), k.clone(), v.clone(), need_weights=need_weights)
        torch.testing.assert_close(out, ref_out, atol=ATOL, rtol=1e-4)
        if need_weights:
            torch.testing.assert_close(weights, ref_weights, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("self_attention", [True, False])
@pytest.mark.parametrize("use_mask", [False, True])
def test_mha_training_dropout_returns_the_weights_it_uses(self_attention, use_mask):
    """In training with dropout, the returned weights are the post-dropout ones, as nn.MultiheadAttention's.

    Both modules draw one dropout mask of the same shape in the same order, so under one seed
    their outputs and returned weights agree to float rounding.
    """
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.4).train()
    ref = torch_multihead_attention(mha)
    x = torch.randn(3, 5, 8)
    kv = x if self_attention else torch.randn(3, 6, 8)
    m = kv.shape[1]
    mask = padding_mask([m, 3, 0], m) if use_mask else None
    ref_kwargs = {"key_padding_mask": ~mask[:, 0, :]} if use_mask else {}
    torch.manual_seed(1)
    out, weights = mha(x, kv, kv, mask)
    torch.manual_seed(1)
    ref_out, ref_weights = ref(x, kv, kv, average_attn_weights=False, **ref_kwargs)
    # The formula, under the same seed: dropout on the eval-mode (softmax) weights.
    mha.eval()
    _, clean = mha(x, kv, kv, mask)
    torch.manual_seed(1)
    torch.testing.assert_close(weights, F.dropout(clean, 0.4))
    # In eval mode nothing is dropped and each row sums to 1; in training some entries are
    # dropped and the kept ones scaled by 1 / (1 - p), so rows no longer sum to 1.
    assert torch.allclose(clean[:2].sum(-1), torch.ones(()))
    assert (weights[:2] == 0).sum() > (clean[:2] == 0).sum()
    assert not torch.allclose(weights[:2].sum(-1), torch.ones(()))
    if use_mask:  # PyTorch gives NaN for the all-padding sequence; we give zeros
        assert (weights[2] == 0).all() and torch.isfinite(out).all()
        out, ref_out, weights, ref_weights = out[:2], ref_out[:2], weights[:2], ref_weights[:2]
    torch.testing.assert_close(out, ref_out, atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(weights, ref_weights, atol=ATOL, rtol=1e-4)


def test_mha_fast_and_weights_paths_agree_in_training_under_one_seed():
    """Both paths drop attention weights, not outputs: under one seed they agree in training too.

    (This relies on PyTorch's CPU kernel drawing its dropout mask over the (B, h, n, m) weights as
    F.dropout does, which holds for the pinned torch.)
    """
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.3).train()
    x = torch.randn(2, 5, 8)
    torch.manual_seed(3)
    slow, _ = mha(x, x, x)
    torch.manual_seed(3)
    fast, _ = mha(x, x, x, need_weights=False)
    torch.testing.assert_close(slow, fast, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("bias", [True, False])
def test_reference_module_copies_training_mode_and_bias(bias):
    mha = MultiHeadAttention(8, 2, dropout=0.1, bias=bias)
    for training in (True, False, True):
        mha.train(training)
        ref = torch_multihead_attention(mha)
        assert all(module.training == training for module in ref.modules())
        assert ref.dropout == 0.1 and ref.batch_first
    assert (ref.in_proj_bias is not None) == bias and (ref.out_proj.bias is not None) == bias


# --- split_heads and combine_heads ------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 3), n=st.integers(1, 6), h=st.integers(1, 4), d_k=st.integers(1, 5))
def test_split_heads_gives_head_i_its_block_of_features_and_combine_undoes_it(B, n, h, d_k):
    x = torch.randn(B, n, h * d_k)
    heads = split_heads(x, h)
    assert heads.shape == (B, h, n, d_k)
    for i in range(h):  # head i: features i * d_k .. (i + 1) * d_k - 1 of every position, positions in order
        assert torch.equal(heads[:, i], x[..., i * d_k : (i + 1) * d_k])
    assert torch.equal(combine_heads(heads), x)
    y = torch.randn(B, h, n, d_k)
    assert torch.equal(split_heads(combine_heads(y), h), y)  # and the other way round
    assert torch.equal(combine_heads(y), torch.cat([y[:, i] for i in range(h)], dim=-1))  # the paper's Concat


def test_split_and_combine_keep_the_gradient_and_the_module_uses_them(monkeypatch):
    x = torch.randn(2, 3, 8, requires_grad=True)
    g = torch.randn(2, 3, 8)
    (combine_heads(split_heads(x, 4)) * g).sum().backward()
    assert torch.equal(x.grad, g)
    import helpers.attention as attention

    calls = []
    for name in ("split_heads", "combine_heads"):
        original = getattr(attention, name)
        monkeypatch.setattr(attention, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    attention.MultiHeadAttention(8, 2)(x, torch.randn(2, 5, 8), torch.randn(2, 5, 8))
    assert calls == ["split_heads", "split_heads", "split_heads", "combine_heads"]  # k, v, q; then Concat


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: split_heads(torch.randn(2, 3, 10), 4), r"x of shape \(2, 3, 10\) does not split into num_heads=4"),
        (lambda: split_heads(torch.randn(3, 8), 2), r"x must have shape \(B, n, d_model\) .*got \(3, 8\)"),
        (lambda: split_heads(torch.randn(1, 2, 3, 8), 2), r"\(B, n, d_model\) .*got \(1, 2, 3, 8\)"),
        (lambda: split_heads(torch.randn(1, 2, 8), 0), "num_heads must be a positive integer, got 0"),
        (lambda: split_heads(torch.randn(1, 2, 8), True), "num_heads must be a positive integer, got True"),
        (lambda: split_heads([[1.0]], 1), r"\(B, n, d_model\) .*got list"),
        (lambda: combine_heads(torch.randn(2, 3, 8)), r"x must have shape \(B, h, n, d_k\) .*got \(2, 3, 8\)"),
        (lambda: combine_heads("heads"), r"\(B, h, n, d_k\) .*got str"),
    ],
    ids=["indivisible", "rank-2", "rank-4", "zero-heads", "true-heads", "list", "combine-rank-3", "combine-str"],
)
def test_split_and_combine_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
