"""Tests of helpers.encoder against nn.TransformerEncoderLayer and the formulas of §3.3-§3.5."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from helpers.encoder import Encoder, EncoderBlock, FeedForward, PositionalEncoding, positional_encoding
from helpers.masks import padding_mask
from helpers.reference import torch_encoder_layer

# --- positional encoding -------------------------------------------------------------------


def test_positional_encoding_matches_formula_elementwise():
    """An independent computation with Python's math module, one entry at a time (§3.5)."""
    max_len, d_model = 50, 16
    pe = positional_encoding(max_len, d_model)
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    for pos in range(max_len):
        for dim in range(d_model):
            i = dim // 2
            angle = pos / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, dim].item() - expected) < 1e-6, (pos, dim)


def test_positional_encoding_wavelengths():
    d_model = 64
    pe = positional_encoding(20_000, d_model).double()
    # Dimension pair i has wavelength 2 pi * 10000^(2i / d_model): from 2 pi up to (almost) 10000 * 2 pi.
    wavelengths = [2 * math.pi * 10000 ** (2 * i / d_model) for i in range(d_model // 2)]
    assert wavelengths[0] == pytest.approx(2 * math.pi)
    assert 2 * math.pi < wavelengths[-1] < 10000 * 2 * math.pi
    # Check one period numerically for the fastest pair: PE(pos + 2 pi) = PE(pos) is not on the integer grid,
    # so compare the sine column with sin(pos) directly.
    positions = torch.arange(20_000, dtype=torch.float64)
    torch.testing.assert_close(pe[:, 0], torch.sin(positions).float().double(), atol=1e-6, rtol=0)


@settings(max_examples=30, deadline=None)
@given(k=st.integers(0, 60), half_d=st.integers(1, 16))
def test_pe_at_pos_plus_k_is_a_linear_function_of_pe_at_pos(k, half_d):
    """§3.5: PE(pos + k) = M_k PE(pos) with M_k block-diagonal 2x2 rotations, independent of pos."""
    d_model = 2 * half_d
    pe = positional_encoding(200, d_model).double()
    freqs = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(freqs):
        c, s = math.cos(k * w), math.sin(k * w)
        # (sin(a + b), cos(a + b)) = [[cos b, sin b], [-sin b, cos b]] @ (sin a, cos a)
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    shifted = pe[: 200 - k] @ rotation.T
    torch.testing.assert_close(shifted, pe[k:], atol=1e-5, rtol=0)


def test_positional_encoding_module_adds_table():
    module = PositionalEncoding(8, max_len=10)
    x = torch.randn(3, 6, 8)
    torch.testing.assert_close(module(x), x + positional_encoding(10, 8)[:6])
    assert "pe" not in module.state_dict(), "the table is recomputed, not learned or saved"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: positional_encoding(10, 7), r"even.*7"),
        (lambda: positional_encoding(0, 8), r"max_len.*0"),
        (lambda: PositionalEncoding(8, max_len=4)(torch.randn(1, 5, 8)), r"n=5 exceeds max_len=4"),
        (lambda: PositionalEncoding(8)(torch.randn(1, 5, 6)), r"\(B, n, d_model=8\), got \(1, 5, 6\)"),
        (lambda: PositionalEncoding(8)(torch.randn(5, 8)), r"got \(5, 8\)"),
        (lambda: EncoderBlock(8, 2, 16)(torch.randn(2, 3, 4)), r"EncoderBlock.*d_model=8.*\(2, 3, 4\)"),
        (lambda: EncoderBlock(8, 3, 16), r"d_model=8 is not divisible by num_heads=3"),
        (lambda: Encoder(0, 8, 2, 16), r"num_layers.*0"),
    ],
)
def test_encoder_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- feed-forward and encoder block ---------------------------------------------------------


def test_feed_forward_is_eq2_per_position():
    torch.manual_seed(0)
    ff = FeedForward(6, 10)
    x = torch.randn(2, 4, 6)
    w1, b1, w2, b2 = ff.linear1.weight, ff.linear1.bias, ff.linear2.weight, ff.linear2.bias
    expected = torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2  # max(0, x W_1 + b_1) W_2 + b_2
    torch.testing.assert_close(ff(x), expected)
    # Position-wise: each position is transformed alone.
    torch.testing.assert_close(ff(x[:, 2:3]), ff(x)[:, 2:3])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_mask", [False, True])
def test_encoder_block_equals_torch_with_gradients(norm_first, use_mask):
    torch.manual_seed(1)
    block = EncoderBlock(16, 4, 32, norm_first=norm_first)
    ref = torch_encoder_layer(block)
    x = torch.randn(3, 5, 16, requires_grad=True)
    lengths = [5, 3, 1]
    mask = padding_mask(lengths, 5) if use_mask else None
    ref_kwargs = {"src_key_padding_mask": ~mask[:, 0, :]} if use_mask else {}

    out, weights = block(x, mask)
    ref_out = ref(x, **ref_kwargs)
    assert out.shape == (3, 5, 16) and weights.shape == (3, 4, 5, 5)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)

    upstream = torch.randn(3, 5, 16)
    grads = torch.autograd.grad((out * upstream).sum(), [x, *block.parameters()])
    ref_grads = torch.autograd.grad((ref_out * upstream).sum(), [x, *ref.parameters()])
    torch.testing.assert_close(grads[0], ref_grads[0], atol=1e-4, rtol=1e-4)
    ours = dict(zip([name for name, _ in block.named_parameters()], grads[1:], strict=True))
    theirs = dict(zip([name for name, _ in ref.named_parameters()], ref_grads[1:], strict=True))
    d = 16
    pairs = {
        "self_attn.w_q.weight": theirs["self_attn.in_proj_weight"][:d],
        "self_attn.w_k.weight": theirs["self_attn.in_proj_weight"][d : 2 * d],
        "self_attn.w_v.weight": theirs["self_attn.in_proj_weight"][2 * d :],
        "self_attn.w_q.bias": theirs["self_attn.in_proj_bias"][:d],
        "self_attn.w_k.bias": theirs["self_attn.in_proj_bias"][d : 2 * d],
        "self_attn.w_v.bias": theirs["self_attn.in_proj_bias"][2 * d :],
        "self_attn.w_o.weight": theirs["self_attn.out_proj.weight"],
        "self_attn.w_o.bias": theirs["self_attn.out_proj.bias"],
        "feed_forward.linear1.weight": theirs["linear1.weight"],
        "feed_forward.linear1.bias": theirs["linear1.bias"],
        "feed_forward.linear2.weight": theirs["linear2.weight"],
        "feed_forward.linear2.bias": theirs["linear2.bias"],
        "norm1.weight": theirs["norm1.weight"],
        "norm1.bias": theirs["norm1.bias"],
        "norm2.weight": theirs["norm2.weight"],
        "norm2.bias": theirs["norm2.bias"],
    }
    assert set(ours) == set(pairs)
    for name, grad in ours.items():
        torch.testing.assert_close(grad, pairs[name], atol=1e-4, rtol=1e-4, msg=lambda s, n=name: f"{n}: {s}")


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_equals_torch_encoder(norm_first):
    torch.manual_seed(2)
    ours = Encoder(3, 16, 4, 32, norm_first=norm_first)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first)
    final_norm = nn.LayerNorm(16) if norm_first else None
    ref = nn.TransformerEncoder(layer, 3, norm=final_norm, enable_nested_tensor=False)
    for ours_block, i in zip(ours.layers, range(3), strict=True):
        ref.layers[i] = torch_encoder_layer(ours_block)
    if norm_first:
        ref.norm.load_state_dict(ours.norm.state_dict())
    x = torch.randn(2, 6, 16, requires_grad=True)
    mask = padding_mask([6, 4], 6)
    out, weights = ours(x, mask)
    ref_out = ref(x, src_key_padding_mask=~mask[:, 0, :])
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)
    assert len(weights) == 3 and all(w.shape == (2, 4, 6, 6) for w in weights)
    assert all((w[1, :, :, 4:] == 0).all() for w in weights), "padding gets no attention in any layer"


def test_encoder_fast_path_matches_weights_path():
    torch.manual_seed(3)
    enc = Encoder(2, 16, 4, 32)
    x = torch.randn(2, 5, 16)
    mask = padding_mask([5, 2], 5)
    a, weights = enc(x, mask)
    assert [w.shape for w in weights] == [(2, 4, 5, 5)] * 2
    b, none = enc(x, mask, need_weights=False)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert none == [None, None]


@pytest.mark.parametrize("norm_first", [False, True])
def test_no_nan_with_padding_even_for_an_all_padding_sequence(norm_first):
    torch.manual_seed(4)
    enc = Encoder(2, 8, 2, 16, norm_first=norm_first)
    x = torch.randn(3, 4, 8, requires_grad=True)
    mask = padding_mask([4, 1, 0], 4)  # the last sequence is nothing but padding
    for need_weights in (True, False):
        out, _ = enc(x, mask, need_weights=need_weights)
        assert torch.isfinite(out).all()
        (grad,) = torch.autograd.grad(out.sum(), x)
        assert torch.isfinite(grad).all()


def test_dropout_is_active_only_in_training():
    torch.manual_seed(5)
    block = EncoderBlock(8, 2, 16, dropout=0.3)
    x = torch.randn(2, 4, 8)
    block.eval()
    torch.testing.assert_close(block(x)[0], block(x)[0])
    block.train()
    assert not torch.allclose(block(x)[0], block(x)[0])


def test_base_model_layer_parameter_count():
    """One encoder layer of the base model (d_model 512, h 8, d_ff 2048; Table 3)."""
    block = EncoderBlock(512, 8, 2048)
    attention = 4 * (512 * 512 + 512)
    feed_forward = (512 * 2048 + 2048) + (2048 * 512 + 512)
    norms = 2 * (2 * 512)
    assert sum(p.numel() for p in block.parameters()) == attention + feed_forward + norms == 3_152_384
    ref = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    assert sum(p.numel() for p in ref.parameters()) == 3_152_384


# --- tests that each catch one specific plausible bug ----------------------------------------


def _randomise_norms(module: nn.Module, seed: int) -> None:
    """Give every LayerNorm random gains and biases: at their identity init, swapped norms look alike."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=g))
            norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=g))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_with_random_norms_equals_torch(norm_first):
    torch.manual_seed(6)
    block = EncoderBlock(8, 2, 12, norm_first=norm_first)
    _randomise_norms(block, 0)
    ref = torch_encoder_layer(block)
    x = torch.randn(2, 5, 8)
    mask = padding_mask([5, 3], 5)
    for need_weights in (True, False):
        out, _ = block(x, mask, need_weights=need_weights)
        torch.testing.assert_close(out, ref(x, src_key_padding_mask=~mask[:, 0, :]), atol=1e-5, rtol=1e-4)


def test_pre_norm_stack_with_random_norms_equals_pre_norm_torch_layers():
    """Every block of Encoder(norm_first=True) is pre-norm, and the final LayerNorm comes last."""
    torch.manual_seed(7)
    enc = Encoder(2, 8, 2, 12, norm_first=True)
    _randomise_norms(enc, 1)
    x = torch.randn(2, 4, 8)
    expected = x
    for block in enc.layers:
        # Built pre-norm here, not copied from the block, so a block that is not pre-norm cannot match.
        layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True, norm_first=True)
        layer.load_state_dict(torch_encoder_layer(block).state_dict())
        expected = layer(expected)
    expected = F.layer_norm(expected, (8,), enc.norm.weight, enc.norm.bias)
    torch.testing.assert_close(enc(x)[0], expected, atol=1e-5, rtol=1e-4)


def test_feed_forward_dropout_in_training_matches_the_formula():
    """Dropout sits after the ReLU (as in nn.TransformerEncoderLayer): same seed, same result."""
    torch.manual_seed(0)
    ff = FeedForward(6, 10, dropout=0.4).train()
    x = torch.randn(3, 4, 6)
    torch.manual_seed(1)
    out = ff(x)
    hidden = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias)  # (B, n, d_ff)
    torch.manual_seed(1)
    torch.testing.assert_close(out, F.dropout(hidden, 0.4) @ ff.linear2.weight.T + ff.linear2.bias)
    torch.testing.assert_close(ff.eval()(x), hidden @ ff.linear2.weight.T + ff.linear2.bias)


def test_positional_encoding_dropout_in_training_matches_the_formula():
    module = PositionalEncoding(8, max_len=10, dropout=0.5).train()
    x = torch.randn(2, 6, 8)
    torch.manual_seed(1)
    out = module(x)
    torch.manual_seed(1)
    torch.testing.assert_close(out, F.dropout(x + positional_encoding(10, 8)[:6], 0.5))
    torch.testing.assert_close(module.eval()(x), x + positional_encoding(10, 8)[:6])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_encoder_block_dropout_in_training_matches_the_formula(norm_first, need_weights):
    """Every dropout of §5.4 in its place, under one seed: attention weights, sub-layer outputs, inside the FFN.

    (PyTorch's layer cannot be compared draw for draw: its attention output is a transposed view,
    so its dropout masks land on other elements.)
    """
    p = 0.3
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 12, dropout=p, norm_first=norm_first).train()
    _randomise_norms(block, 2)
    x = torch.randn(3, 5, 8)
    mask = padding_mask([5, 3, 2], 5)
    torch.manual_seed(1)
    out, _ = block(x, mask, need_weights=need_weights)

    def ffn(y):
        ff = block.feed_forward
        return ff.linear2(F.dropout(torch.relu(ff.linear1(y)), p))

    torch.manual_seed(1)
    attn, norm1, norm2 = block.self_attn, block.norm1, block.norm2
    if norm_first:
        y = norm1(x)
        y = x + F.dropout(attn(y, y, y, mask, need_weights=need_weights)[0], p)
        expected = y + F.dropout(ffn(norm2(y)), p)
    else:
        y = norm1(x + F.dropout(attn(x, x, x, mask, need_weights=need_weights)[0], p))
        expected = norm2(y + F.dropout(ffn(y), p))
    torch.testing.assert_close(out, expected)
    assert attn.dropout == p


def test_reference_encoder_layer_copies_mode_and_dropout():
    block = EncoderBlock(8, 2, 12, dropout=0.2, norm_first=True)
    for training in (True, False, True):
        block.train(training)
        ref = torch_encoder_layer(block)
        assert all(module.training == training for module in ref.modules())
    assert ref.norm_first and ref.self_attn.dropout == 0.2
    assert ref.dropout.p == ref.dropout1.p == ref.dropout2.p == 0.2
    assert ref.linear1.out_features == 12


def test_encoder_takes_general_head_widths():
    """d_k and d_v reach every block's attention, so d_model need not be divisible by h (§3.2.2, Table 3 (B))."""
    torch.manual_seed(0)
    encoder = Encoder(2, d_model=10, num_heads=4, d_ff=16, d_k=3, d_v=5).eval()
    for layer in encoder.layers:
        assert layer.self_attn.w_q.weight.shape == (4 * 3, 10)
        assert layer.self_attn.w_v.weight.shape == (4 * 5, 10)
        assert layer.self_attn.w_o.weight.shape == (10, 4 * 5)
    out, weights = encoder(torch.randn(2, 7, 10))
    assert out.shape == (2, 7, 10) and torch.isfinite(out).all()
    assert [w.shape for w in weights] == [(2, 4, 7, 7)] * 2
    with pytest.raises(ValueError, match="divisible"):
        Encoder(1, d_model=10, num_heads=4, d_ff=16)


# --- activation and LayerNorm eps (BERT's choices, notebook 12) -------------------------------


def test_feed_forward_gelu_is_x_times_phi_of_x():
    torch.manual_seed(0)
    ff = FeedForward(6, 10, activation="gelu")
    x = torch.randn(2, 4, 6)
    hidden = x @ ff.linear1.weight.T + ff.linear1.bias
    phi = 0.5 * (1 + torch.erf(hidden / math.sqrt(2)))  # the standard normal CDF: exact GELU, not tanh's
    torch.testing.assert_close(ff(x), (hidden * phi) @ ff.linear2.weight.T + ff.linear2.bias)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gelu_block_with_small_eps_equals_torch(norm_first):
    torch.manual_seed(8)
    block = EncoderBlock(8, 2, 12, norm_first=norm_first, activation="gelu", eps=1e-12)
    _randomise_norms(block, 3)
    assert block.norm1.eps == block.norm2.eps == 1e-12
    ref = nn.TransformerEncoderLayer(
        8, 2, 12, dropout=0.0, activation="gelu", layer_norm_eps=1e-12, batch_first=True, norm_first=norm_first
    )
    ref.load_state_dict(torch_encoder_layer(block).state_dict())
    x = torch.randn(2, 5, 8)
    mask = padding_mask([5, 3], 5)
    out, _ = block(x, mask)
    torch.testing.assert_close(out, ref(x, src_key_padding_mask=~mask[:, 0, :]), atol=1e-5, rtol=1e-4)
    # Not a coincidence of the inputs: ReLU gives something else.
    relu = EncoderBlock(8, 2, 12, norm_first=norm_first, eps=1e-12)
    relu.load_state_dict(block.state_dict())
    assert not torch.allclose(relu(x, mask)[0], out, atol=1e-3)


def test_encoder_passes_activation_and_eps_to_every_layer():
    enc = Encoder(3, 8, 2, 12, norm_first=True, activation="gelu", eps=1e-12)
    assert all(layer.feed_forward.activation == "gelu" for layer in enc.layers)
    norms = [m for m in enc.modules() if isinstance(m, nn.LayerNorm)]
    assert len(norms) == 3 * 2 + 1 and all(norm.eps == 1e-12 for norm in norms)
    default = Encoder(2, 8, 2, 12)
    assert all(layer.feed_forward.activation == "relu" and layer.norm1.eps == 1e-5 for layer in default.layers)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: FeedForward(8, 16, activation="tanh"), r"activation must be one of \['gelu', 'relu'\].*'tanh'"),
        (lambda: EncoderBlock(8, 2, 16, activation="GELU"), r"activation.*'GELU'"),
        (lambda: Encoder(2, 8, 2, 16, activation=None), r"activation.*None"),
        (lambda: EncoderBlock(8, 2, 16, eps=0), r"eps.*finite number > 0, got 0"),
        (lambda: Encoder(2, 8, 2, 16, eps=-1e-5), r"eps.*got -1e-05"),
        (lambda: EncoderBlock(8, 2, 16, eps=float("nan")), r"eps.*nan"),
        (lambda: EncoderBlock(8, 2, 16, eps=True), r"eps.*True"),
        (lambda: EncoderBlock(8, 2, 16, eps="1e-12"), r"eps.*'1e-12'"),
    ],
)
def test_bad_activation_or_eps(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_torch_encoder_layer_carries_activation_and_eps():
    torch.manual_seed(9)
    block = EncoderBlock(8, 2, 12, activation="gelu", eps=1e-6).eval()
    _randomise_norms(block, 4)
    ref = torch_encoder_layer(block)
    assert ref.norm1.eps == ref.norm2.eps == 1e-6 and ref.activation is F.gelu
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(block(x)[0], ref(x), atol=1e-5, rtol=1e-4)
