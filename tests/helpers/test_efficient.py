"""Tests of notebook 11's helpers: the online softmax, tiled attention, grouped-query attention and the KV cache.

helpers.efficient against torch.softmax and F.scaled_dot_product_attention; MultiHeadAttention(num_kv_heads=...)
against F.scaled_dot_product_attention(enable_gqa=True); cached decoding (Transformer.decode with a KVCache,
greedy_decode / beam_search with use_cache=True) against the same calls without the cache.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.decoder import KVCache
from helpers.decoding import beam_search, greedy_decode
from helpers.efficient import (
    interleaved_timings,
    online_softmax,
    online_softmax_update,
    peak_memory,
    tiled_attention,
)
from helpers.encoder import PositionalEncoding
from helpers.masks import causal_mask, padding_mask
from helpers.transformer import Transformer
from tests.support import random_mask

ATOL = 1e-5
BOS, EOS = 1, 2
INF = math.inf


# --- the online softmax ----------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    length=st.integers(1, 40),
    block=st.one_of(st.integers(1, 8), st.integers(9, 50)),
    scale=st.sampled_from([1.0, 30.0, 1e4]),
    float64=st.booleans(),
    masked_share=st.sampled_from([0.0, 0.3]),
    seed=st.integers(0, 2**16),
)
def test_online_softmax_equals_torch_softmax(batch, length, block, scale, float64, masked_share, seed):
    """Any block size (1, not dividing the length, longer than it); entries of size 1e4, where exp overflows."""
    g = torch.Generator().manual_seed(seed)
    dtype = torch.float64 if float64 else torch.float32
    x = (torch.randn(*batch, length, generator=g, dtype=torch.float64) * scale).to(dtype)
    masked = torch.rand(x.shape, generator=g) < masked_share
    # one finite entry per row, so that torch.softmax has no NaN to compare with
    masked[..., int(torch.randint(length, (), generator=g))] = False
    x = x.masked_fill(masked, -INF)
    expected = torch.softmax(x, dim=-1)

    got = online_softmax(x, block_size=block)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got, expected, atol=1e-6 if dtype == torch.float32 else 1e-12, rtol=1e-5)
    assert (got[masked] == 0).all()

    # the same statistics, folded in by hand one block at a time
    running_max = torch.full(x.shape[:-1], -INF, dtype=dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=dtype)
    for start in range(0, length, block):
        running_max, running_sum = online_softmax_update(running_max, running_sum, x[..., start : start + block])
    true_max = x.amax(dim=-1)
    assert torch.equal(running_max, true_max)
    torch.testing.assert_close(running_sum, torch.exp(x - true_max[..., None]).sum(-1), rtol=1e-5, atol=0)
    torch.testing.assert_close(torch.exp(x - running_max[..., None]) / running_sum[..., None], expected)


def test_online_softmax_survives_large_entries():
    """exp(1e4) overflows to inf in float32 and float64; subtracting the running max keeps every term <= 1."""
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor([[1e4, 1e4 - 1.0, -1e4, 1e4 - 2.0, 9e3]], dtype=dtype)
        assert torch.isinf(torch.exp(x)).any()
        for block in (1, 2, 3, 5, 8):
            got = online_softmax(x, block_size=block)
            assert torch.isfinite(got).all()
            torch.testing.assert_close(got, torch.softmax(x, dim=-1))
            torch.testing.assert_close(got.sum(-1), torch.ones(1, dtype=dtype))


@pytest.mark.parametrize("block", [1, 2, 3, 7])
def test_online_softmax_fully_masked_row_gives_zeros(block):
    x = torch.tensor([[-INF] * 5, [0.5, -INF, 2.0, -INF, -1.0], [-INF, -INF, -INF, -INF, 3.0]])
    got = online_softmax(x, block_size=block)
    assert not torch.isnan(got).any()
    assert torch.equal(got[0], torch.zeros(5))
    torch.testing.assert_close(got[1:], torch.softmax(x[1:], dim=-1))
    assert torch.isnan(torch.softmax(x, dim=-1)[0]).all()  # why it matters: PyTorch's softmax gives NaN there


def test_online_softmax_update_ignores_fully_masked_blocks():
    """From (max=-inf, sum=0), an all -inf block leaves (-inf, 0), without NaN; the next real block starts afresh."""
    running_max, running_sum = torch.full((2,), -INF), torch.zeros(2)
    running_max, running_sum = online_softmax_update(running_max, running_sum, torch.full((2, 3), -INF))
    assert torch.equal(running_max, torch.full((2,), -INF))
    assert torch.equal(running_sum, torch.zeros(2))
    block = torch.tensor([[1.0, -INF], [-INF, -INF]])
    running_max, running_sum = online_softmax_update(running_max, running_sum, block)
    assert torch.equal(running_max, torch.tensor([1.0, -INF]))
    assert torch.equal(running_sum, torch.tensor([1.0, 0.0]))
    # a larger max later rescales the old sum by exp(old_max - new_max)
    running_max, running_sum = online_softmax_update(running_max, running_sum, torch.tensor([[3.0], [0.0]]))
    torch.testing.assert_close(running_max, torch.tensor([3.0, 0.0]))
    torch.testing.assert_close(running_sum, torch.tensor([math.exp(-2.0) + 1.0, 1.0]))


# --- tiled attention -------------------------------------------------------------------------------------------


def _broadcast_shapes(draw, batch):
    """Leading dims of query, key and value: the batch, with some entries set to 1 (broadcast) in each."""
    shapes = []
    for _ in range(3):
        ones = draw(st.lists(st.booleans(), min_size=len(batch), max_size=len(batch)))
        shapes.append([1 if one else size for size, one in zip(batch, ones, strict=True)])
    return shapes


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    n=st.integers(1, 9),
    m=st.integers(1, 12),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 6),
    block=st.integers(1, 14),
    mask_kind=st.sampled_from(["none", "(n, m)", "(B, 1, m)", "(B, h, n, m)"]),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_equals_pytorch(data, batch, n, m, d_k, d_v, block, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q_batch, k_batch, v_batch = _broadcast_shapes(data.draw, batch)
    q = torch.randn(*q_batch, n, d_k, generator=g)
    k = torch.randn(*k_batch, m, d_k, generator=g)
    v = torch.randn(*v_batch, m, d_v, generator=g)
    batch = list(torch.broadcast_shapes(q_batch, k_batch, v_batch))  # some sizes may have become 1 everywhere
    mask = {
        "none": lambda: None,
        "(n, m)": lambda: random_mask((n, m), g, density=0.5, keep_one_per_row=True),
        "(B, 1, m)": lambda: random_mask((*batch, 1, m), g, density=0.5, keep_one_per_row=True),
        "(B, h, n, m)": lambda: random_mask((*batch, n, m), g, density=0.5, keep_one_per_row=True),
    }[mask_kind]()

    out = tiled_attention(q, k, v, mask=mask, block_size=block)
    expanded = [t.expand(*batch, *t.shape[-2:]) for t in (q, k, v)]  # F.sdpa broadcasts only some shapes
    expected = F.scaled_dot_product_attention(*expanded, attn_mask=mask)
    assert out.shape == (*batch, n, d_v)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize(("n", "block"), [(1, 1), (5, 2), (6, 3), (7, 16), (9, 4)])
def test_tiled_attention_causal_equals_pytorch(n, block):
    g = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(2, 3, n, 4, generator=g) for _ in range(3))
    out = tiled_attention(q, k, v, is_causal=True, block_size=block)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(out, tiled_attention(q, k, v, mask=causal_mask(n), block_size=block))


@pytest.mark.parametrize("block", [1, 2, 5, 64])
def test_tiled_attention_fully_masked_rows_give_zeros(block):
    """A query with no allowed key gets a zero output, as in helpers.attention, and never NaN."""
    g = torch.Generator().manual_seed(block)
    q, k, v = torch.randn(2, 6, 3, generator=g), torch.randn(2, 7, 3, generator=g), torch.randn(2, 7, 5, generator=g)
    mask = random_mask((2, 6, 7), g, density=0.5, keep_one_per_row=True)
    mask[0, 1] = False
    mask[1, 4] = False
    mask[1, 5, :-1] = False  # only the last key, which sits alone in the last block for some block sizes
    out = tiled_attention(q, k, v, mask=mask, block_size=block)
    assert not torch.isnan(out).any()
    assert torch.equal(out[0, 1], torch.zeros(5)) and torch.equal(out[1, 4], torch.zeros(5))
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v, mask)[0], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize(("block", "use_mask"), [(1, True), (3, True), (4, False), (32, True)])
def test_tiled_attention_gradients_equal_eq1s(block, use_mask):
    g = torch.Generator().manual_seed(block)
    shapes = [(2, 5, 4), (2, 7, 4), (2, 7, 3)]
    ours = [torch.randn(s, generator=g, dtype=torch.float32).requires_grad_() for s in shapes]
    theirs = [t.detach().clone().requires_grad_() for t in ours]
    mask = random_mask((2, 5, 7), g, density=0.5, keep_one_per_row=True) if use_mask else None
    if mask is not None:
        mask[1, 2] = False  # a fully masked row: zero gradients there, not NaN
    upstream = torch.randn(2, 5, 3, generator=g)
    (tiled_attention(*ours, mask=mask, block_size=block) * upstream).sum().backward()
    (scaled_dot_product_attention(*theirs, mask)[0] * upstream).sum().backward()
    for name, a, b in zip("qkv", ours, theirs, strict=True):
        assert torch.isfinite(a.grad).all(), name
        torch.testing.assert_close(a.grad, b.grad, atol=ATOL, rtol=1e-4, msg=f"gradient of {name}")


def test_tiled_attention_peak_memory_is_a_fraction_of_the_naive_one():
    """Measured with the profiler: the tiled pass never holds the (n, m) scores; Eq. 1 holds scores and weights.

    At n = m = 2048 (one head, d = 32, blocks of 64) the ratio is about 8%; at n = 1024, d = 64, blocks of 128
    it is about 31%, as the running output and the block's scores and weights are then not small against n^2.
    """
    n, d, block = 2048, 32, 64
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, n, d, generator=g) for _ in range(3))
    with torch.no_grad():
        tiled, tiled_peak = peak_memory(tiled_attention, q, k, v, block_size=block)
        (naive, _), naive_peak = peak_memory(scaled_dot_product_attention, q, k, v)
        _, again = peak_memory(tiled_attention, q, k, v, block_size=block)
        # The default block size tiles a typical length: 512 keys in 4 blocks of 128, not in one block.
        q, k, v = (x[:, :512] for x in (q, k, v))
        _, default_peak = peak_memory(tiled_attention, q, k, v)
        _, peak_128 = peak_memory(tiled_attention, q, k, v, block_size=128)
        _, one_block = peak_memory(tiled_attention, q, k, v, block_size=512)
    torch.testing.assert_close(tiled, naive, atol=ATOL, rtol=1e-4)
    assert naive_peak >= 2 * n * n * 4, "Eq. 1 holds the float32 scores and weights, (n, m) each"
    assert tiled_peak >= n * d * 4, "the output is allocated during the call"
    assert tiled_peak <= 0.10 * naive_peak, (tiled_peak, naive_peak)
    assert again == tiled_peak, "peak_memory is deterministic"
    assert default_peak == peak_128 < 0.5 * one_block, (default_peak, peak_128, one_block)


def test_interleaved_timings_runs_each_function_in_turn():
    calls = []
    times = interleaved_timings({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3, warmup=2)
    assert calls == ["a", "b"] * 5
    assert set(times) == {"a", "b"} and all(t >= 0 for t in times.values())


def test_interleaved_timings_takes_the_median_of_exactly_repeats_rounds(monkeypatch):
    """A fake clock: the call in round r takes r + 1 seconds, so the median names the rounds that were counted."""
    import helpers.efficient

    clock = [0.0]
    monkeypatch.setattr(helpers.efficient.time, "perf_counter", lambda: clock[0])
    rounds = {"a": 0, "b": 0}

    def timed(name):
        def fn():
            rounds[name] += 1
            clock[0] += rounds[name]

        return fn

    times = interleaved_timings({"a": timed("a"), "b": timed("b")}, repeats=3, warmup=1)
    assert times == {"a": 3.0, "b": 3.0}  # rounds 2, 3, 4 counted (1 was the warm-up): median 3
    rounds.update(a=0, b=0)
    assert interleaved_timings({"a": timed("a"), "b": timed("b")}, repeats=1, warmup=1) == {"a": 2.0, "b": 2.0}
    rounds.update(a=0, b=0)
    assert interleaved_timings({"a": timed("a"), "b": timed("b")}, repeats=2, warmup=0) == {"a": 1.5, "b": 1.5}


# --- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [0, -1, 2.5, True])
def test_bad_block_size(block_size):
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"block_size must be a positive integer"):
        tiled_attention(q, q, q, block_size=block_size)
    with pytest.raises(ValueError, match=r"block_size must be a positive integer"):
        online_softmax(q, block_size=block_size)


def test_tiled_attention_bad_masks_and_causal():
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"is_causal=True needs as many queries as keys.*n=3.*m=5"):
        tiled_attention(q, k, k, is_causal=True)
    with pytest.raises(ValueError, match=r"either mask or is_causal"):
        tiled_attention(q, q, q, mask=causal_mask(3), is_causal=True)
    with pytest.raises(ValueError, match=r"torch.bool"):
        tiled_attention(q, k, k, mask=torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast.*\(2, 3, 5\)"):
        tiled_attention(q, k, k, mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"is_causal must be True or False"):
        tiled_attention(q, q, q, is_causal=1)
    with pytest.raises(ValueError, match=r"floating-point tensor, got torch.int64"):
        online_softmax(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"at least one entry in its last dimension, got \(2, 0\)"):
        online_softmax(torch.zeros(2, 0))
    with pytest.raises(ValueError, match=r"running_max .* must both have the shape of block"):
        online_softmax_update(torch.zeros(3), torch.zeros(3), torch.zeros(2, 4))


@pytest.mark.parametrize("num_kv_heads", [3, 0, -2, True, 2.0])
def test_bad_num_kv_heads(num_kv_heads):
    with pytest.raises(ValueError, match=r"num_kv_heads must be None or a positive integer that divides num_heads=4"):
        MultiHeadAttention(8, 4, num_kv_heads=num_kv_heads)


@pytest.mark.parametrize(
    ("fns", "kwargs", "match"),
    [
        ({}, {}, "non-empty dict"),
        ({"a": 1}, {}, "non-empty dict"),
        ([lambda: None], {}, "non-empty dict"),
        ({"a": lambda: None}, {"repeats": 0}, "repeats must be a positive integer"),
        ({"a": lambda: None}, {"repeats": True}, "repeats must be a positive integer"),
        ({"a": lambda: None}, {"warmup": -1}, "warmup must be a non-negative integer"),
        ({"a": lambda: None}, {"warmup": 1.0}, "warmup must be a non-negative integer"),
    ],
)
def test_bad_interleaved_timings(fns, kwargs, match):
    with pytest.raises(ValueError, match=match):
        interleaved_timings(fns, **kwargs)


def test_other_bad_input():
    with pytest.raises(ValueError, match=r"fn must be callable"):
        peak_memory(3)
    cache = KVCache()
    cache.layer(0)["self_k"] = torch.zeros(3, 2, 4, 5)
    with pytest.raises(ValueError, match=r"index holds rows \[0, 3\], outside the 3 sequences"):
        cache.reorder(torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"outside the 3 sequences"):
        cache.reorder(torch.tensor([-1]))
    with pytest.raises(ValueError, match=r"1-D integer tensor"):
        cache.reorder(torch.tensor([0.0]))
    with pytest.raises(ValueError, match=r"which must be 'self', 'cross' or 'all'"):
        cache.nbytes("keys")
    pe = PositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match=r"positions 8 to 10 exceeds max_len=10"):
        pe(torch.zeros(1, 3, 8), start=8)
    with pytest.raises(ValueError, match=r"start must be a non-negative integer"):
        pe(torch.zeros(1, 3, 8), start=-1)
    with pytest.raises(
        ValueError, match=r"past must be a non-negative integer \(the number of positions before them\), got -1"
    ):
        causal_mask(3, past=-1)
    with pytest.raises(ValueError, match=r"past must be a non-negative integer"):
        causal_mask(3, past=True)
    model = _model(1)
    src = torch.tensor([[3, 4, 5]])
    for decode in (greedy_decode, beam_search):
        with pytest.raises(ValueError, match=r"use_cache must be True or False, got 1"):
            decode(model, src, BOS, EOS, 3, use_cache=1)

    class NoCache:  # a model whose decode cannot take a cache: a clear error, not a TypeError deep inside
        def encode(self, src, src_mask=None):
            return model.encode(src, src_mask)

        def decode(self, tgt, memory, src_mask=None):
            return model.decode(tgt, memory, src_mask)

    for decode in (greedy_decode, beam_search):
        with pytest.raises(
            ValueError, match=r"use_cache=True needs model.decode\(.*cache=.*NoCache.decode takes no cache"
        ):
            decode(NoCache(), src, BOS, EOS, 3, use_cache=True)
        assert decode(NoCache(), src, BOS, EOS, 3) == decode(model, src, BOS, EOS, 3, use_cache=True)
    memory, _ = model.encode(src)
    with pytest.raises(ValueError, match=r"cache must be a helpers.decoder.KVCache"):
        model.decode(src, memory, cache={})


# --- grouped-query attention -------------------------------------------------------------------------------------


def _heads_by_hand(mha: MultiHeadAttention, query, key, value):
    """q (B, h, n, d_k), k (B, h_kv, m, d_k), v (B, h_kv, m, d_v) from the module's own projections."""
    B, n, m = query.shape[0], query.shape[1], key.shape[1]
    q = mha.w_q(query).view(B, n, mha.num_heads, mha.d_k).transpose(1, 2)
    k = mha.w_k(key).view(B, m, mha.num_kv_heads, mha.d_k).transpose(1, 2)
    v = mha.w_v(value).view(B, m, mha.num_kv_heads, mha.d_v).transpose(1, 2)
    return q, k, v


def _merge(mha: MultiHeadAttention, heads):
    B, h, n, d_v = heads.shape
    return mha.w_o(heads.transpose(1, 2).reshape(B, n, h * d_v))


@pytest.mark.parametrize(
    ("h", "g", "d_k", "d_v"), [(4, 1, None, None), (4, 2, None, None), (4, 4, None, None), (6, 3, 3, 5), (6, 2, 2, 4)]
)
@pytest.mark.parametrize("mask_kind", ["none", "(B, n, m)", "(B, h, n, m)"])
def test_gqa_equals_enable_gqa(h, g, d_k, d_v, mask_kind):
    d_model, B, n, m = 12, 2, 3, 5
    torch.manual_seed(h * 10 + g)
    mha = MultiHeadAttention(d_model, h, d_k=d_k, d_v=d_v, num_kv_heads=g).eval()
    gen = torch.Generator().manual_seed(g)
    x, memory = torch.randn(B, n, d_model, generator=gen), torch.randn(B, m, d_model, generator=gen)
    assert mha.w_k.out_features == g * mha.d_k and mha.w_v.out_features == g * mha.d_v

    for key in (memory, x):  # cross-attention; self-attention (one stacked projection)
        length = key.shape[1]
        mask = {
            "none": None,
            "(B, n, m)": random_mask((B, n, length), gen, density=0.5, keep_one_per_row=True),
            "(B, h, n, m)": random_mask((B, h, n, length), gen, density=0.5, keep_one_per_row=True),
        }[mask_kind]
        sdpa_mask = None if mask is None else (mask if mask.dim() == 4 else mask[:, None])
        q, k, v = _heads_by_hand(mha, x, key, key)
        assert [t.shape for t in mha.project_kv(key, key)] == [k.shape, v.shape]
        expected = _merge(mha, F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask, enable_gqa=True))
        repeated = [t.repeat_interleave(h // g, dim=1) for t in (k, v)]
        by_repeat = _merge(mha, F.scaled_dot_product_attention(q, *repeated, attn_mask=sdpa_mask))
        torch.testing.assert_close(by_repeat, expected, atol=ATOL, rtol=1e-4)
        for need_weights in (True, False):
            out, weights = mha(x, key, key, mask=mask, need_weights=need_weights)
            torch.testing.assert_close(out, expected, atol=ATOL, rtol=1e-4)
            attended, _ = mha.attend(x, k, v, mask=mask, need_weights=need_weights)
            torch.testing.assert_close(attended, expected, atol=ATOL, rtol=1e-4)
        _, weights = mha(x, key, key, mask=mask)
        torch.testing.assert_close(weights, scaled_dot_product_attention(q, *repeated, sdpa_mask)[1])
        if 1 < g < h:  # tiling the kv heads (repeat) pairs query heads with the wrong kv heads
            tiled = [t.repeat(1, h // g, 1, 1) for t in (k, v)]
            wrong = _merge(mha, F.scaled_dot_product_attention(q, *tiled, attn_mask=sdpa_mask))
            assert not torch.allclose(wrong, expected, atol=1e-3)


@pytest.mark.parametrize("seed", [0, 1])
def test_gqa_default_is_multi_head_attention(seed):
    """num_kv_heads=None or = h: the same parameters, drawn in the same order, and identical outputs."""
    gen = torch.Generator().manual_seed(seed)
    x, memory = torch.randn(2, 3, 16, generator=gen), torch.randn(2, 4, 16, generator=gen)
    modules = []
    for kwargs in ({}, {"num_kv_heads": None}, {"num_kv_heads": 4}):
        torch.manual_seed(seed)
        modules.append(MultiHeadAttention(16, 4, **kwargs).eval())
    plain = modules[0]
    for mha in modules[1:]:
        assert mha.num_kv_heads == 4
        for (name, a), (_, b) in zip(plain.state_dict().items(), mha.state_dict().items(), strict=True):
            assert a.shape == b.shape and torch.equal(a, b), name
        for args in ((x, x, x), (x, memory, memory)):
            for need_weights in (True, False):
                a_out, a_w = plain(*args, need_weights=need_weights)
                b_out, b_w = mha(*args, need_weights=need_weights)
                assert torch.equal(a_out, b_out)
                assert (a_w is None and b_w is None) or torch.equal(a_w, b_w)
    # and a whole Transformer
    models = []
    for kwargs in ({}, {"num_kv_heads": 2}):
        torch.manual_seed(seed)
        models.append(Transformer(7, 7, 8, num_heads=2, num_layers=1, d_ff=16, max_len=8, **kwargs).eval())
    for (name, a), (_, b) in zip(models[0].state_dict().items(), models[1].state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    src, tgt = torch.tensor([[3, 4, 5, 6]]), torch.tensor([[1, 3, 4]])
    assert torch.equal(models[0](src, tgt), models[1](src, tgt))


@pytest.mark.parametrize("g", [1, 2, 4, 8])
def test_gqa_parameters_shrink_by_h_over_g(g):
    full, grouped = MultiHeadAttention(32, 8), MultiHeadAttention(32, 8, num_kv_heads=g)
    for name in ("w_k", "w_v"):
        a, b = getattr(full, name), getattr(grouped, name)
        assert a.weight.numel() == b.weight.numel() * (8 // g) and a.bias.numel() == b.bias.numel() * (8 // g)
    assert grouped.w_q.weight.shape == full.w_q.weight.shape and grouped.w_o.weight.shape == full.w_o.weight.shape


# --- the KV cache ----------------------------------------------------------------------------------------------


def _model(seed: int, norm_first: bool = False, num_kv_heads: int | None = None, vocab: int = 8) -> Transformer:
    """A small random model whose projection leans towards <eos> a little (so beams finish at different steps)."""
    torch.manual_seed(seed)
    d_model = 16
    model = Transformer(
        vocab, vocab, d_model, num_heads=4, num_layers=2, d_ff=32, dropout=0.0, num_kv_heads=num_kv_heads,
        max_len=32, norm_first=norm_first, share_embeddings=False,
    )  # fmt: skip
    assert all(block.self_attn.num_kv_heads == (num_kv_heads or 4) for block in model.decoder.layers)
    projection = nn.Linear(d_model, vocab)
    with torch.no_grad():
        projection.weight.copy_(model.projection.weight * 3.0)  # sharper distributions than at init
        projection.bias.zero_()
        projection.bias[EOS] = 1.0
    model.projection = projection
    return model.eval()


def _padded_batch(seed: int, vocab: int = 8):
    g = torch.Generator().manual_seed(seed)
    lengths = [6, 3, 1]
    src_mask = padding_mask(lengths, 6)
    src = torch.randint(3, vocab, (3, 6), generator=g).masked_fill(~src_mask[:, 0], 0)
    return src, src_mask


@pytest.mark.parametrize(
    ("norm_first", "num_kv_heads", "chunks"),
    [
        (False, None, [1] * 7),
        (False, None, [2, 3, 2]),
        (True, None, [1] * 7),
        (True, None, [3, 1, 2, 1]),
        (False, 2, [1, 2, 3, 1]),
        (True, 1, [2, 1, 1, 3]),
    ],
)
def test_cached_decode_equals_the_uncached_rows(norm_first, num_kv_heads, chunks):
    """Feeding the target piece by piece through a KVCache gives the rows of one call on the whole target."""
    model = _model(3, norm_first, num_kv_heads)
    src, src_mask = _padded_batch(3)
    tgt = torch.randint(0, 8, (3, sum(chunks)), generator=torch.Generator().manual_seed(5))
    B, m, layers, h_kv, d_k = 3, src.shape[1], 2, num_kv_heads or 4, 4
    with torch.no_grad():
        memory, _ = model.encode(src, src_mask)
        logits, self_w, cross_w = model.decode(tgt, memory, src_mask)
        cache = KVCache()
        t, cross_k = 0, None
        for n in chunks:
            new_logits, new_self, new_cross = model.decode(tgt[:, t : t + n], memory, src_mask, cache=cache)
            torch.testing.assert_close(new_logits, logits[:, t : t + n], atol=ATOL, rtol=1e-4)
            for layer in range(layers):
                assert new_self[layer].shape == (B, 4, n, t + n)
                torch.testing.assert_close(new_self[layer], self_w[layer][:, :, t : t + n, : t + n], atol=ATOL, rtol=0)
                torch.testing.assert_close(new_cross[layer], cross_w[layer][:, :, t : t + n], atol=ATOL, rtol=0)
            if cross_k is None:
                cross_k = cache.layer(0)["cross_k"]
            t += n
            assert cache.length == t and cache.batch_size == B
            assert cache.nbytes("self") == 2 * layers * B * h_kv * t * d_k * 4
            assert cache.nbytes("cross") == 2 * layers * B * h_kv * m * d_k * 4
            assert cache.nbytes() == cache.nbytes("self") + cache.nbytes("cross")
        assert cache.layer(0)["cross_k"] is cross_k, "the encoder's keys are projected once, at the first step"
        assert cache.layer(1)["self_k"].shape == (B, h_kv, t, d_k) and cache.layer(1)["cross_v"].shape == (
            B,
            h_kv,
            m,
            d_k,
        )
        fast_cache, t = KVCache(), 0  # the fused path (need_weights=False), as decoding uses it
        for n in chunks:
            fast, _, _ = model.decode(tgt[:, t : t + n], memory, src_mask, need_weights=False, cache=fast_cache)
            torch.testing.assert_close(fast, logits[:, t : t + n], atol=ATOL, rtol=1e-4)
            t += n


def test_kv_cache_reorder_keeps_duplicates_and_drops_rows():
    cache = KVCache()
    for i in range(2):
        entry = cache.layer(i)
        entry["self_k"] = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 2, 3, 5) + 10 * i
        entry["self_v"] = -entry["self_k"]
        entry["cross_k"] = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 2, 6, 5)
    assert (cache.length, cache.batch_size) == (3, 4)
    cache.reorder(torch.tensor([2, 2, 0]))  # row 2 twice, rows 1 and 3 dropped
    assert (cache.length, cache.batch_size) == (3, 3)
    for i, entry in enumerate(cache.layers):
        assert entry["self_k"][:, 0, 0, 0].tolist() == [2 + 10 * i, 2 + 10 * i, 10 * i]
        assert entry["self_v"][:, 0, 0, 0].tolist() == [-2 - 10 * i, -2 - 10 * i, -10 * i]
        assert entry["cross_k"][:, 0, 0, 0].tolist() == [2, 2, 0]
    cache.reorder(torch.tensor([1]))
    assert cache.batch_size == 1 and cache.layer(1)["self_k"][0, 0, 0, 0] == 12
    assert KVCache().length == 0 and KVCache().batch_size is None and KVCache().nbytes() == 0


def _assert_same_trace(cached, plain) -> None:
    """The same hypotheses at every step; their sums of log p equal to float rounding (the sums differ in order)."""
    assert len(cached) == len(plain)
    for (b, step, live, finished), (b0, step0, live0, finished0) in zip(cached, plain, strict=True):
        assert (b, step) == (b0, step0)
        assert [ids for ids, *_ in live] == [ids for ids, *_ in live0]
        assert [ids for ids, *_ in finished] == [ids for ids, *_ in finished0]
        got = [s for _, *scores in live + finished for s in scores]
        expected = [s for _, *scores in live0 + finished0 for s in scores]
        assert got == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("seed", "norm_first", "num_kv_heads"), [(1, False, None), (2, True, None), (4, False, 2)])
def test_cached_greedy_and_beam_search_return_the_same_ids(seed, norm_first, num_kv_heads):
    """A padded batch; beams that finish at different steps (the cache then shrinks with the beam)."""
    model = _model(seed, norm_first, num_kv_heads)
    src, src_mask = _padded_batch(seed)
    max_len = 12
    assert greedy_decode(model, src, BOS, EOS, max_len, src_mask, use_cache=True) == greedy_decode(
        model, src, BOS, EOS, max_len, src_mask
    )
    shrank = False
    for beam_size in (1, 2, 4):
        trace, cached_trace = [], []
        plain = beam_search(model, src, BOS, EOS, max_len, beam_size, src_mask=src_mask, trace=trace)
        cached = beam_search(
            model, src, BOS, EOS, max_len, beam_size, src_mask=src_mask, trace=cached_trace, use_cache=True
        )
        assert cached == plain
        _assert_same_trace(cached_trace, trace)
        shrank |= any(finished and step < max_len and live for _, step, live, finished in trace)
    assert shrank, "no beam finished a hypothesis early: the test would not exercise a shrinking cache"
    assert model.training is False


def test_cached_decoding_of_an_unpadded_batch_without_eos():
    """eos_id = vocab size can never be emitted: every sentence runs the full max_len steps."""
    model = _model(5)
    src = torch.randint(3, 8, (2, 4), generator=torch.Generator().manual_seed(0))
    for use_cache in (False, True):
        out = greedy_decode(model, src, BOS, 8, 10, use_cache=use_cache)
        assert [len(ids) for ids in out] == [10, 10]
    assert greedy_decode(model, src, BOS, 8, 10, use_cache=True) == greedy_decode(model, src, BOS, 8, 10)
    assert beam_search(model, src, BOS, 8, 10, 3, use_cache=True) == beam_search(model, src, BOS, 8, 10, 3)


# --- lower-right causal masks and positions from an offset ---------------------------------------------------------


def test_causal_mask_with_past_is_the_last_rows_of_the_full_mask():
    for n in range(1, 6):
        for past in range(0, 6):
            mask = causal_mask(n, past=past)
            assert mask.shape == (n, past + n) and mask.dtype == torch.bool
            assert torch.equal(mask, causal_mask(n + past)[past:])
    assert torch.equal(causal_mask(1, past=4), torch.ones(1, 5, dtype=torch.bool))


def test_positional_encoding_from_a_start_position():
    pe = PositionalEncoding(6, max_len=12)
    x = torch.randn(2, 12, 6, generator=torch.Generator().manual_seed(0))
    full = pe(x)
    for start in (0, 1, 5, 9):
        for n in (1, 3):
            if start + n <= 12:
                assert torch.equal(pe(x[:, start : start + n], start=start), full[:, start : start + n])
    assert torch.equal(pe(x[:, 11:], start=11), full[:, 11:])
