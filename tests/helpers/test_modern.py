"""helpers.modern against PyTorch's own modules and kernels, and the properties each piece is used for."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.induction import repeated_sequences
from helpers.modern import (
    DecoderLM,
    RMSNorm,
    SwiGLU,
    accuracy_by_position,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    extend_rope,
    sliding_window_mask,
    train_decoder_lm,
)
from tests.support import generator

# FlexAttention without torch.compile warns that it runs unfused: on the CPU, eagerly, that is what we test.
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


# RMSNorm ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-6, 1e-5])
def test_rms_norm_equals_torch(eps):
    g = generator()
    ours, theirs = RMSNorm(24, eps=eps), nn.RMSNorm(24, eps=eps)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(24, generator=g))
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 24, generator=g) * 4
    torch.testing.assert_close(ours(x), theirs(x))
    torch.testing.assert_close(ours(x), F.rms_norm(x, (24,), ours.weight, eps))


def test_rms_norm_is_not_layer_norm():
    """It keeps the mean: a constant shift of the input is not removed, as LayerNorm would remove it."""
    x = torch.randn(4, 16, generator=generator()) + 3.0
    out = RMSNorm(16)(x)
    torch.testing.assert_close(out.pow(2).mean(-1), torch.ones(4), atol=1e-4, rtol=0)
    assert out.mean(-1).abs().min() > 0.5


# RoPE ------------------------------------------------------------------------------------------------------------


def _half_from_interleaved(d):
    """The permutation that takes the interleaved layout to the half-split one: pair i is (2i, 2i+1) -> (i, i+d/2)."""
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_rotary_scores_depend_only_on_the_offset(interleaved, seed):
    g = generator(seed)
    d = 2 * int(torch.randint(1, 17, (1,), generator=g))
    q, k = torch.randn(2, d, generator=g, dtype=torch.float64).unbind(0)
    a, b, shift = (int(v) for v in torch.randint(0, 300, (3,), generator=g))

    def score(i, j):
        qi = apply_rotary(q[None], torch.tensor([i]), interleaved=interleaved)[0]
        kj = apply_rotary(k[None], torch.tensor([j]), interleaved=interleaved)[0]
        return qi @ kj

    torch.testing.assert_close(score(a, b), score(a + shift, b + shift), atol=1e-5, rtol=0)
    if a != b:  # and it does depend on the offset
        assert not torch.isclose(score(a, b), score(a, a), atol=1e-3)


@pytest.mark.parametrize("interleaved", [True, False])
def test_rotary_keeps_norms_and_position_zero(interleaved):
    x = torch.randn(2, 3, 10, 8, generator=generator())
    y = apply_rotary(x, interleaved=interleaved)
    assert y.shape == x.shape and y.dtype == x.dtype
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[..., 0, :], x[..., 0, :])  # angle 0 at position 0
    assert not torch.allclose(y[..., 1:, :], x[..., 1:, :])


def test_interleaved_and_half_split_are_one_rotation_up_to_a_permutation():
    d = 12
    x = torch.randn(7, d, generator=generator())
    perm = _half_from_interleaved(d)
    inter = apply_rotary(x)
    half = apply_rotary(x[:, perm], interleaved=False)
    torch.testing.assert_close(half, inter[:, perm])
    assert not torch.allclose(apply_rotary(x, interleaved=False), inter, atol=1e-3)  # not the same function


def test_rotary_is_multiplication_by_complex_exponentials():
    d, n, base = 16, 9, 10000.0
    x = torch.randn(n, d, generator=generator(), dtype=torch.float64)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.reshape(n, d // 2, 2).contiguous())  # pair (2i, 2i+1) -> x_2i + i x_2i+1
    rotated = z * torch.polar(torch.ones(n, d // 2, dtype=torch.float64), torch.arange(n)[:, None] * theta)
    torch.testing.assert_close(apply_rotary(x), torch.view_as_real(rotated).reshape(n, d))


def test_rotary_positions_argument():
    x = torch.randn(5, 4, generator=generator())
    torch.testing.assert_close(apply_rotary(x, torch.arange(5)), apply_rotary(x))
    shifted = apply_rotary(x, torch.arange(3, 8))
    assert not torch.allclose(shifted, apply_rotary(x))


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: apply_rotary(torch.randn(4, 5)), "even"),
        (lambda: apply_rotary(torch.randn(4, 6), torch.arange(3)), "positions"),
        (lambda: apply_rotary(torch.randn(4, 6), torch.arange(4.0)), "integer"),
        (lambda: apply_rotary(torch.randn(6)), "(..., n, d)"),
        (lambda: apply_rotary(torch.randn(4, 6), base=0), "base"),
    ],
)
def test_rotary_bad_input(call, words):
    with pytest.raises(ValueError) as e:
        call()
    assert words in str(e.value)


# ALiBi -----------------------------------------------------------------------------------------------------------


def _press_slopes(h):
    """The slopes as Press et al. describe them, built another way: the power-of-2 sequence, then every other one."""

    def power_of_two(c):
        start = 2 ** (-8 / c)  # the first slope is also the ratio
        return [start * start**k for k in range(c)]

    c = 1
    while 2 * c <= h:
        c *= 2
    return power_of_two(c) + power_of_two(2 * c)[0::2][: h - c]


@pytest.mark.parametrize("h", [1, 2, 3, 4, 6, 8, 12, 16, 20])
def test_alibi_slopes(h):
    torch.testing.assert_close(alibi_slopes(h), torch.tensor(_press_slopes(h), dtype=torch.float32))


def test_alibi_slopes_for_eight_heads_are_halves():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0**-k for k in range(1, 9)]))


def test_alibi_bias_values_and_the_cache_layout():
    bias = alibi_bias(4, 5)
    slopes = alibi_slopes(4)
    assert bias.shape == (4, 5, 5)
    for i in range(5):
        for j in range(5):
            torch.testing.assert_close(bias[:, i, j], -slopes * (i - j))
    torch.testing.assert_close(alibi_bias(4, 2, 5), bias[:, 3:, :])  # the last queries of a longer sequence
    with pytest.raises(ValueError, match="m must be >= n"):
        alibi_bias(4, 5, 3)


def _qkv(h=4, n=24, d=16, seed=0):
    return torch.randn(3, 1, h, n, d, generator=generator(seed)).unbind(0)


def test_alibi_equals_flex_attention_and_sdpa_with_a_bias():
    from torch.nn.attention.flex_attention import flex_attention

    q, k, v = _qkv()
    h, n = q.shape[1], q.shape[2]
    slopes = alibi_slopes(h)
    causal = sliding_window_mask(n, n)
    bias = alibi_bias(h, n).masked_fill(~causal, float("-inf"))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)

    def score_mod(score, b, head, i, j):
        return torch.where(i >= j, score - slopes[head] * (i - j), float("-inf"))

    torch.testing.assert_close(flex_attention(q, k, v, score_mod=score_mod), expected, atol=2e-6, rtol=1e-5)


# Sliding window --------------------------------------------------------------------------------------------------


def test_sliding_window_mask():
    mask = sliding_window_mask(6, 3)
    for i in range(6):
        for j in range(6):
            assert bool(mask[i, j]) == (0 <= i - j < 3)
    assert torch.equal(sliding_window_mask(5, 9), torch.ones(5, 5, dtype=torch.bool).tril())
    assert torch.equal(sliding_window_mask(4, 1), torch.eye(4, dtype=torch.bool))
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="window"):
            sliding_window_mask(4, bad)


def test_sliding_window_equals_flex_attention_and_sdpa():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = _qkv(n=40)
    n, window = q.shape[2], 5
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=sliding_window_mask(n, window))

    def mask_mod(b, head, i, j):
        return (i >= j) & (i - j < window)

    block_mask = create_block_mask(mask_mod, None, None, n, n, device="cpu")
    torch.testing.assert_close(flex_attention(q, k, v, block_mask=block_mask), expected, atol=2e-6, rtol=1e-5)


# SwiGLU ----------------------------------------------------------------------------------------------------------


def test_swiglu_formula_and_no_biases():
    ffn = SwiGLU(8, 20)
    x = torch.randn(3, 8, generator=generator())
    w1, w2, w3 = ffn.w1.weight, ffn.w2.weight, ffn.w3.weight
    torch.testing.assert_close(ffn(x), (F.silu(x @ w1.T) * (x @ w3.T)) @ w2.T)
    assert all(name.endswith("weight") for name, _ in ffn.named_parameters())
    with pytest.raises(ValueError, match="d_model=8"):
        ffn(torch.randn(3, 9))


@pytest.mark.parametrize("d_model", [384, 768, 4096])
def test_swiglu_at_two_thirds_width_matches_the_relu_ffn_parameters(d_model):
    def count(m):
        return sum(p.numel() for p in m.parameters())

    with torch.device("meta"):  # shapes only, no memory
        relu = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))
        swiglu = SwiGLU(d_model, round(8 * d_model / 3))
    assert abs(count(swiglu) / count(relu) - 1) < 0.01


# DecoderLM -------------------------------------------------------------------------------------------------------

SETTINGS = [
    dict(norm="layer", ffn="relu", positions="sinusoidal"),  # the paper's block
    dict(norm="rms", ffn="swiglu", positions="rope", num_kv_heads=2),  # Llama-style
    dict(positions="learned"),
    dict(positions="alibi", norm="rms"),
    dict(positions="none", window=3),
    dict(positions="rope", window=4, pre_norm=False),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_decoder_lm_is_causal_and_returns_its_weights(settings):
    torch.manual_seed(0)
    model = DecoderLM(11, 16, 4, 2, 32, max_len=20, **settings).eval()
    tokens = torch.randint(0, 11, (2, 9), generator=generator())
    logits, weights = model(tokens)
    assert logits.shape == (2, 9, 11) and len(weights) == 2
    window = settings.get("window") or 9
    allowed = sliding_window_mask(9, window)
    for w in weights:
        assert w.shape == (2, 4, 9, 9)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 9))
        assert torch.all(w.masked_select(~allowed) == 0)
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 11
    torch.testing.assert_close(model(changed)[0][:, :6], logits[:, :6])  # the future does not leak back
    assert not torch.allclose(model(changed)[0][:, 6:], logits[:, 6:])


def _decoder_lm_from_its_parts(model, tokens):
    """What DecoderLM's forward must compute, written from its own submodules with SDPA and the helpers above."""
    n, h = tokens.shape[1], model.layers[0].attention.num_heads
    x = model.embedding(tokens) * math.sqrt(model.d_model)  # every scheme: §3.4's scale
    if model.positions == "sinusoidal":
        x = x + model.pe[:n]
    elif model.positions == "learned":
        x = x + model.position_embedding.weight[:n]
    allowed = sliding_window_mask(n, model.window or n)
    bias = alibi_bias(h, n) if model.positions == "alibi" else torch.zeros(h, n, n)
    bias = bias.masked_fill(~allowed, float("-inf"))

    def attend(attention, y):
        heads = [
            layer(y).unflatten(-1, (-1, attention.d_k)).transpose(1, 2)
            for layer in (attention.w_q, attention.w_k, attention.w_v)
        ]
        q, k, v = heads  # (B, h, n, d_k), (B, h_kv, n, d_k) twice
        if model.positions == "rope":
            q, k = apply_rotary(q), apply_rotary(k)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
        return attention.w_o(out.transpose(1, 2).flatten(-2))

    for block in model.layers:
        if model.pre_norm:  # x + Sublayer(Norm(x))
            x = x + attend(block.attention, block.norm1(x))
            x = x + block.feed_forward(block.norm2(x))
        else:  # Norm(x + Sublayer(x))
            x = block.norm1(x + attend(block.attention, x))
            x = block.norm2(x + block.feed_forward(x))
    return model.output(model.final_norm(x) if model.pre_norm else x)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_decoder_lm_equals_its_parts_composed_by_hand(settings):
    """Each position scheme reaches the scores (RoPE on queries and keys, ALiBi as a penalty), each norm its place."""
    torch.manual_seed(1)
    model = DecoderLM(11, 16, 4, 2, 32, max_len=20, **{"num_kv_heads": 2, **settings}).eval()
    for module in model.modules():  # norms away from their initial ones, so a norm left out shows
        if isinstance(module, (RMSNorm, nn.LayerNorm)):
            nn.init.uniform_(module.weight, 0.5, 1.5, generator=generator(2))
    tokens = torch.randint(0, 11, (2, 9), generator=generator())
    with torch.no_grad():
        torch.testing.assert_close(model(tokens)[0], _decoder_lm_from_its_parts(model, tokens), rtol=1e-5, atol=1e-5)


def test_decoder_lm_norm_placement_and_gqa_shapes():
    paper = DecoderLM(11, 16, 4, 1, 32)
    llama = DecoderLM(11, 16, 4, 1, 32, num_kv_heads=1, norm="rms", ffn="swiglu", positions="rope")
    assert not paper.pre_norm and not hasattr(paper, "final_norm")
    assert llama.pre_norm and isinstance(llama.final_norm, RMSNorm)
    assert isinstance(paper.layers[0].norm1, nn.LayerNorm) and isinstance(llama.layers[0].norm1, RMSNorm)
    assert llama.layers[0].attention.w_k.weight.shape == (4, 16)  # one key head of d_k = 4
    assert isinstance(llama.layers[0].feed_forward, SwiGLU)


def test_decoder_lm_lengths():
    tokens = torch.zeros(1, 12, dtype=torch.int64)
    for positions in ("rope", "alibi", "none"):  # no table: any length runs
        assert DecoderLM(5, 8, 2, 1, 16, positions=positions, max_len=8)(tokens)[0].shape == (1, 12, 5)
    for positions in ("sinusoidal", "learned"):
        with pytest.raises(ValueError, match="max_len=8"):
            DecoderLM(5, 8, 2, 1, 16, positions=positions, max_len=8)(tokens)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(norm="batch"), "norm must be one of"),
        (dict(ffn="gelu"), "ffn must be one of"),
        (dict(positions="rotary"), "positions must be one of"),
        (dict(window=0), "window"),
        (dict(num_kv_heads=3), "num_kv_heads"),
        (dict(num_heads=3), "divisible"),
        (dict(positions="rope", d_model=12, num_heads=4), "odd"),
        (dict(num_layers=True), "num_layers"),
    ],
)
def test_decoder_lm_bad_settings(kwargs, words):
    args = dict(vocab_size=5, d_model=8, num_heads=2, num_layers=1, d_ff=16) | kwargs
    with pytest.raises(ValueError) as e:
        DecoderLM(**args)
    assert words in str(e.value)


def test_decoder_lm_bad_tokens():
    model = DecoderLM(5, 8, 2, 1, 16)
    for bad, words in [
        (torch.tensor([[0, 5]]), "[0, 5)"),
        (torch.tensor([0, 1]), "(B, n)"),
        (torch.tensor([[0.0, 1.0]]), "int64"),
    ]:
        with pytest.raises(ValueError) as e:
            model(bad)
        assert words in str(e.value)


def test_decoder_lm_trains_without_nan():
    torch.manual_seed(0)
    model = DecoderLM(7, 16, 4, 2, 32, norm="rms", ffn="swiglu", positions="rope", num_kv_heads=2)
    tokens = torch.randint(0, 7, (4, 10), generator=generator())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        logits, _ = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 7), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
    assert math.isfinite(loss.item()) and loss.item() < 0.5 * first


# The length-extrapolation helpers of notebook 14 ---------------------------------------------------------------


def test_train_decoder_lm_learns_the_repeats_and_is_seeded():
    def run(seed):
        torch.manual_seed(seed)
        model = DecoderLM(16, 16, 2, 2, 32, norm="rms", ffn="swiglu", positions="rope", max_len=64)
        return model, train_decoder_lm(model, steps=40, seed=seed, length=16, max_period=6, batch_size=8)

    model, losses = run(0)
    assert len(losses) == 40 and all(math.isfinite(v) for v in losses)
    assert not model.training  # left in eval mode
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5  # it learns something
    assert run(0)[1] == losses and run(1)[1] != losses  # the seed fixes the batches and the run


def test_train_decoder_lm_updates_the_model_in_place():
    torch.manual_seed(0)
    model = DecoderLM(8, 8, 2, 1, 16)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train_decoder_lm(model, steps=2, seed=0, length=12, max_period=4, batch_size=4)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(steps=0), "steps"),
        (dict(seed=-1), "seed"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(batch_size=0), "batch_size"),
        (dict(length=8, max_period=8), "max_period"),
        (dict(min_period=5, max_period=4), "min_period"),
        (dict(length=40), "max_len"),
    ],
)
def test_train_decoder_lm_bad_input(kwargs, words):
    model = DecoderLM(8, 8, 2, 1, 16, positions="learned", max_len=32)
    with pytest.raises(ValueError) as e:
        train_decoder_lm(model, **(dict(steps=1) | kwargs))
    assert words in str(e.value)
    with pytest.raises(ValueError, match="DecoderLM"):
        train_decoder_lm(nn.Linear(2, 2))


def test_accuracy_by_position_counts_only_predictable_queries():
    def oracle(tokens):  # logits that name the true next token at every query
        return F.one_hot(torch.roll(tokens, -1, dims=1), 9).float(), []

    def wrong(tokens):  # never the repeated next token
        return F.one_hot((tokens + 1) % 9, 9).float(), []

    tokens, periods = repeated_sequences(6, 20, 9, 3, 7, generator())
    accuracy, counted = accuracy_by_position(oracle, tokens, periods)
    assert accuracy.shape == counted.shape == (19,)
    expected_counts = (torch.arange(19)[None, :] >= periods[:, None]).sum(0)
    assert torch.equal(counted, expected_counts)
    assert torch.equal(accuracy, (expected_counts > 0).float())  # 1 where counted, 0 (not NaN) where nothing counts
    accuracy, _ = accuracy_by_position(wrong, tokens, periods)
    assert torch.isfinite(accuracy).all() and accuracy.max() < 1


def test_accuracy_by_position_bad_input():
    model = DecoderLM(5, 8, 2, 1, 16)
    tokens = torch.zeros(2, 6, dtype=torch.int64)
    for args, words in [
        ((tokens.float(), torch.tensor([2, 3])), "int64"),
        ((tokens[:, :1], torch.tensor([1, 1])), "at least 2"),
        ((tokens, torch.tensor([2])), "periods"),
        ((tokens, torch.tensor([2, 6])), "period"),
    ]:
        with pytest.raises(ValueError) as e:
            accuracy_by_position(model, *args)
        assert words in str(e.value)


# Stretching a trained RoPE model (extend_rope) and the embedding's scale -------------------------------------------


def test_every_position_scheme_starts_from_token_vectors_of_one_size():
    """One thing varies between two DecoderLMs: whatever the positions, the token vectors start with std about 1 (drawn
    with std d_model ** -0.5, times sqrt(d_model)), the size of the sinusoids, and the output's first layer sees them."""
    stds = {}
    for positions in ("sinusoidal", "learned", "rope", "alibi", "none"):
        torch.manual_seed(0)
        model = DecoderLM(50, 64, 4, 1, 128, norm="rms", ffn="swiglu", positions=positions, max_len=32)
        assert model.embedding.weight.std().item() == pytest.approx(64**-0.5, rel=0.05)
        captured = {}
        model.layers[0].register_forward_pre_hook(lambda _, args, captured=captured: captured.update(x=args[0]))
        with torch.no_grad():
            model(torch.arange(32).remainder(50)[None])
        tokens_only = captured["x"] - (model.pe[:32] if positions == "sinusoidal" else 0)
        if positions == "learned":
            tokens_only = tokens_only - model.position_embedding.weight[:32]
        stds[positions] = tokens_only.std().item()
    assert all(0.9 < std < 1.1 for std in stds.values()), stds
    assert max(stds.values()) - min(stds.values()) < 0.02, stds  # the same draw, scaled alike


def _rope_model(seed=0):
    torch.manual_seed(seed)
    return DecoderLM(13, 16, 2, 2, 32, norm="rms", ffn="swiglu", positions="rope").eval()


def test_extend_rope_methods_change_the_angles_as_their_papers_say():
    model = _rope_model()
    tokens = torch.randint(0, 13, (2, 20), generator=generator())
    with torch.no_grad():
        before = model(tokens)[0]
        extend_rope(model, "base", base=10000.0)  # the trained base: nothing changes
        torch.testing.assert_close(model(tokens)[0], before, rtol=0, atol=0)
        extend_rope(model, "base", base=1e6)
        raised = model(tokens)[0]
        assert not torch.allclose(raised, before)
        twin = DecoderLM(13, 16, 2, 2, 32, norm="rms", ffn="swiglu", positions="rope", rope_base=1e6).eval()
        twin.load_state_dict(model.state_dict())
        torch.testing.assert_close(raised, twin(tokens)[0])  # a raised base is the model built with it
        extend_rope(model, None)
        torch.testing.assert_close(model(tokens)[0], before, rtol=0, atol=0)  # back as trained
    attention, d_k = model.layers[0].attention, 8
    trained = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # radians per position, per pair
    extend_rope(model, "interpolation", factor=4)
    torch.testing.assert_close(attention.rope_frequency_scale, torch.full((4,), 0.25, dtype=torch.float64))
    extend_rope(model, "ntk", factor=4)  # the slowest pair interpolated by 4, the fastest left alone
    ntk = attention.rope_base ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    assert ntk[0] == trained[0] and (ntk[-1] / trained[-1]).item() == pytest.approx(0.25)
    extend_rope(model, "yarn", factor=4, original_length=32)
    scale = attention.rope_frequency_scale
    turns = 32 * trained / (2 * math.pi)  # pair 0 turns about 5 times over 32 positions, the others less than once
    assert bool(((scale >= 0.25) & (scale <= 1)).all()) and scale.tolist() == sorted(scale.tolist(), reverse=True)
    torch.testing.assert_close(scale[1:], torch.full((3,), 0.25, dtype=torch.float64))  # under one turn: by 4
    assert scale[0].item() == pytest.approx(0.25 + 0.75 * (turns[0].item() - 1) / 31)
    assert attention.score_scale == pytest.approx((0.1 * math.log(4) + 1) ** 2)
    extend_rope(model, None)
    assert attention.rope_frequency_scale is None and attention.score_scale == 1.0 and attention.rope_base == 10000.0


def test_rotary_frequency_scale_is_slower_turning():
    x = torch.randn(5, 8, generator=generator())
    torch.testing.assert_close(apply_rotary(x, frequency_scale=1.0), apply_rotary(x))
    # a quarter of every frequency at position 4 is the whole frequency at position 1
    quarter = apply_rotary(x, torch.arange(0, 20, 4), frequency_scale=0.25)
    torch.testing.assert_close(quarter, apply_rotary(x, torch.arange(5)))


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: extend_rope(DecoderLM(5, 8, 2, 1, 16), "base", base=1e6), "positions='rope'"),
        (lambda: extend_rope(_rope_model(), "stretch", factor=2), "one of"),
        (lambda: extend_rope(_rope_model(), "interpolation", factor=0), "factor"),
        (lambda: extend_rope(_rope_model(), "yarn", factor=2), "original_length"),
        (lambda: extend_rope(_rope_model(), "base"), "base"),
        (lambda: apply_rotary(torch.randn(4, 6), frequency_scale=-1.0), "frequency_scale"),
        (lambda: apply_rotary(torch.randn(4, 6), frequency_scale=torch.ones(2)), "(d/2,) = (3,)"),
    ],
)
def test_extend_rope_bad_input(call, words):
    with pytest.raises(ValueError) as e:
        call()
    assert words in str(e.value)
