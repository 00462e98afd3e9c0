"""Tests of helpers.decoder against nn.TransformerDecoderLayer / nn.TransformerDecoder (§3.1, §3.2.3)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.decoder import Decoder, DecoderBlock
from helpers.masks import causal_mask, padding_mask
from helpers.reference import torch_decoder, torch_decoder_layer, torch_multihead_attention

D_MODEL, HEADS, D_FF = 16, 4, 32


def _randomise_norms(module: nn.Module, seed: int = 0) -> None:
    """Distinct gains and biases in every LayerNorm, so a swapped or skipped norm shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.copy_(torch.rand(norm.weight.shape, generator=g) + 0.5)
            norm.bias.copy_(torch.randn(norm.bias.shape, generator=g) * 0.5)


def _inputs(seed: int, B=2, n=5, m=7):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n, D_MODEL, generator=g)
    memory = torch.randn(B, m, D_MODEL, generator=g)
    return x, memory


def _torch_grads(block: DecoderBlock) -> dict[str, torch.Tensor]:
    """Our parameter gradients under nn.TransformerDecoderLayer's names."""
    grads = {}
    for ours, theirs in (("self_attn", "self_attn"), ("cross_attn", "multihead_attn")):
        attn = getattr(block, ours)
        grads[f"{theirs}.in_proj_weight"] = torch.cat(
            [attn.w_q.weight.grad, attn.w_k.weight.grad, attn.w_v.weight.grad]
        )
        grads[f"{theirs}.in_proj_bias"] = torch.cat([attn.w_q.bias.grad, attn.w_k.bias.grad, attn.w_v.bias.grad])
        grads[f"{theirs}.out_proj.weight"] = attn.w_o.weight.grad
        grads[f"{theirs}.out_proj.bias"] = attn.w_o.bias.grad
    for name, p in block.named_parameters():
        if not name.startswith(("self_attn.", "cross_attn.")):
            grads[name.removeprefix("feed_forward.")] = p.grad
    return grads


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_masks", [False, True])
def test_decoder_block_equals_torch_with_gradients(norm_first, use_masks):
    torch.manual_seed(0)
    block = DecoderBlock(D_MODEL, HEADS, D_FF, norm_first=norm_first)
    _randomise_norms(block)
    reference = torch_decoder_layer(block)
    x, memory = _inputs(1)  # n = 5 target positions, m = 7 source positions
    x.requires_grad_()
    memory.requires_grad_()
    x_ref, memory_ref = (t.detach().clone().requires_grad_() for t in (x, memory))
    self_mask = causal_mask(5) if use_masks else None
    src_mask = padding_mask([7, 4]) if use_masks else None
    kwargs = {"tgt_mask": ~self_mask, "memory_key_padding_mask": ~src_mask[:, 0, :]} if use_masks else {}

    out, self_weights, cross_weights = block(x, memory, self_mask, src_mask)
    ref_out = reference(x_ref, memory_ref, **kwargs)
    upstream = torch.randn_like(out)
    (out * upstream).sum().backward()
    (ref_out * upstream).sum().backward()

    assert self_weights.shape == (2, HEADS, 5, 5) and cross_weights.shape == (2, HEADS, 5, 7)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(memory.grad, memory_ref.grad, atol=1e-5, rtol=1e-4)
    ours = _torch_grads(block)
    assert sorted(ours) == sorted(name for name, _ in reference.named_parameters())
    for name, p in reference.named_parameters():
        torch.testing.assert_close(ours[name], p.grad, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_stack_equals_torch_decoder(norm_first):
    torch.manual_seed(1)
    decoder = Decoder(3, D_MODEL, HEADS, D_FF, norm_first=norm_first)
    _randomise_norms(decoder, seed=1)
    assert (decoder.norm is not None) == norm_first  # a final LayerNorm only for pre-norm
    reference = torch_decoder(decoder)
    x, memory = _inputs(2, n=6, m=4)
    x.requires_grad_()
    memory.requires_grad_()
    x_ref, memory_ref = (t.detach().clone().requires_grad_() for t in (x, memory))
    self_mask, src_mask = causal_mask(6), padding_mask([4, 2])
    out, self_weights, cross_weights = decoder(x, memory, self_mask, src_mask)
    ref_out = reference(x_ref, memory_ref, tgt_mask=~self_mask, memory_key_padding_mask=~src_mask[:, 0, :])
    out.pow(2).sum().backward()
    ref_out.pow(2).sum().backward()
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(memory.grad, memory_ref.grad, atol=1e-5, rtol=1e-4)
    assert len(self_weights) == len(cross_weights) == 3
    assert all(w.shape == (2, HEADS, 6, 4) for w in cross_weights)


def test_decoder_stack_runs_its_blocks_in_order():
    torch.manual_seed(2)
    decoder = Decoder(3, D_MODEL, HEADS, D_FF).eval()
    _randomise_norms(decoder, seed=2)
    x, memory = _inputs(3)
    self_mask, src_mask = causal_mask(5), padding_mask([7, 3])
    y = x
    expected_self, expected_cross = [], []
    for block in decoder.layers:
        y, s, c = block(y, memory, self_mask, src_mask)
        expected_self.append(s)
        expected_cross.append(c)
    out, self_weights, cross_weights = decoder(x, memory, self_mask, src_mask)
    torch.testing.assert_close(out, y)
    for got, want in zip(self_weights + cross_weights, expected_self + expected_cross, strict=True):
        torch.testing.assert_close(got, want)


def test_decoder_weights_respect_the_masks():
    torch.manual_seed(3)
    block = DecoderBlock(D_MODEL, HEADS, D_FF).eval()
    x, memory = _inputs(4)
    _, self_weights, cross_weights = block(x, memory, causal_mask(5), padding_mask([7, 4]))
    future = ~causal_mask(5)  # (n, n): keys after the query
    assert (self_weights[..., future] == 0).all()
    assert (cross_weights[1, :, :, 4:] == 0).all()  # sequence 1's padded source positions
    assert (cross_weights[1, :, :, :4] > 0).all()
    torch.testing.assert_close(self_weights.sum(-1), torch.ones(2, HEADS, 5))
    torch.testing.assert_close(cross_weights.sum(-1), torch.ones(2, HEADS, 5))


def test_cross_attention_takes_queries_from_the_decoder_and_keys_from_memory():
    """Changing the decoder input at one position changes that row only of the cross-attention weights;
    changing memory changes every row."""
    torch.manual_seed(4)
    block = DecoderBlock(D_MODEL, HEADS, D_FF).eval()
    x, memory = _inputs(5)
    _, _, cross = block(x, memory)
    x2 = x.clone()
    x2[:, 2] += 1.0
    _, _, cross_x = block(x2, memory)  # no self-attention mask: every position sees position 2
    rows_changed = (cross_x - cross).abs().amax(dim=(0, 1, 3)) > 1e-6  # (n,)
    # position 2's change reaches later rows through the (unmasked) self-attention, but not earlier ones
    # when the self-attention is causal:
    _, _, cross_causal = block(x, memory, causal_mask(5))
    _, _, cross_causal_x = block(x2, memory, causal_mask(5))
    causal_changed = (cross_causal_x - cross_causal).abs().amax(dim=(0, 1, 3)) > 1e-6
    assert causal_changed.tolist() == [False, False, True, True, True]
    assert rows_changed.all()
    memory2 = memory.clone()
    memory2[:, 0] += 1.0
    _, _, cross_m = block(x, memory2)
    assert ((cross_m - cross).abs().amax(dim=(0, 1, 3)) > 1e-6).all()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_no_nan_with_a_fully_padded_memory_row(norm_first, need_weights):
    torch.manual_seed(5)
    decoder = Decoder(2, D_MODEL, HEADS, D_FF, norm_first=norm_first)
    x, memory = _inputs(6)
    x.requires_grad_()
    memory.requires_grad_()
    src_mask = padding_mask([7, 0], 7)  # sequence 1 has no source token at all
    out, _, cross = decoder(x, memory, causal_mask(5), src_mask, need_weights=need_weights)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all() and torch.isfinite(memory.grad).all()
    assert (memory.grad[1] == 0).all()  # nothing reads a fully padded memory
    if need_weights:
        assert all((w[1] == 0).all() for w in cross)


@pytest.mark.parametrize("norm_first", [False, True])
def test_fused_path_equals_weights_path(norm_first):
    torch.manual_seed(6)
    decoder = Decoder(2, D_MODEL, HEADS, D_FF, norm_first=norm_first).eval()
    x, memory = _inputs(7)
    args = (x, memory, causal_mask(5), padding_mask([7, 3]))
    with_weights, _, _ = decoder(*args, need_weights=True)
    fused, self_w, cross_w = decoder(*args, need_weights=False)
    torch.testing.assert_close(fused, with_weights, atol=1e-5, rtol=1e-4)
    assert self_w == [None, None] and cross_w == [None, None]


def test_dropout_is_active_only_in_training():
    torch.manual_seed(7)
    block = DecoderBlock(D_MODEL, HEADS, D_FF, dropout=0.5)
    x, memory = _inputs(8)
    assert not torch.allclose(block(x, memory)[0], block(x, memory)[0])
    block.eval()
    torch.testing.assert_close(block(x, memory)[0], block(x, memory)[0])
    assert block.dropout3.p == block.feed_forward.dropout.p == block.cross_attn.dropout == 0.5


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b, x, m: b(x[..., :8], m), "x of shape"),
        (lambda b, x, m: b(x, m[..., :8]), "memory"),
        (lambda b, x, m: b(x, m[:1]), "same batch size"),
        (lambda b, x, m: b(x[0], m), "x of shape"),
        (lambda b, x, m: b(x, m, causal_mask(4)), "does not broadcast"),
        (lambda b, x, m: b(x, m, None, padding_mask([6, 6])), "does not broadcast"),
        (lambda b, x, m: b(x, m, None, padding_mask([7, 4]).float()), "torch.bool"),
    ],
)
def test_decoder_bad_input(call, message):
    block = DecoderBlock(D_MODEL, HEADS, D_FF)
    x, memory = _inputs(9)
    with pytest.raises(ValueError, match=message):
        call(block, x, memory)


def test_decoder_bad_construction():
    with pytest.raises(ValueError, match="num_layers"):
        Decoder(0, D_MODEL, HEADS, D_FF)
    with pytest.raises(ValueError, match="divisible"):
        DecoderBlock(10, 3, D_FF)


def test_decoder_layer_parameter_count_and_names():
    block = DecoderBlock(512, 8, 2048)
    attention = 4 * (512 * 512 + 512)
    expected = 2 * attention + (512 * 2048 + 2048) + (2048 * 512 + 512) + 3 * 2 * 512
    assert sum(p.numel() for p in block.parameters()) == expected == 4_204_032
    assert sum(p.numel() for p in nn.TransformerDecoderLayer(512, 8, 2048).parameters()) == expected
    names = {name.split(".")[0] for name, _ in block.named_parameters()}
    assert names == {"self_attn", "cross_attn", "feed_forward", "norm1", "norm2", "norm3"}


def test_reference_copies_mode_and_refuses_general_widths():
    block = DecoderBlock(D_MODEL, HEADS, D_FF, dropout=0.1).eval()
    reference = torch_decoder_layer(block)
    assert not reference.training and reference.dropout.p == 0.1
    odd = DecoderBlock(D_MODEL, HEADS, D_FF, d_k=3, d_v=5)
    assert odd.cross_attn.w_v.weight.shape == (HEADS * 5, D_MODEL)
    with pytest.raises(ValueError, match=r"h \* d_k = h \* d_v = d_model"):
        torch_decoder_layer(odd)
    with pytest.raises(ValueError, match="d_k=3, d_v=5"):
        torch_multihead_attention(odd.self_attn)


class _Scale(nn.Module):
    """A deterministic stand-in for dropout: multiplies by a constant, so its place in the block shows."""

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


@pytest.mark.parametrize("norm_first", [False, True])
def test_residual_dropout_sits_on_each_sub_layers_output(norm_first):
    """§5.4: dropout on each sub-layer's output, before the residual add (and the norm, in post-norm)."""
    torch.manual_seed(9)
    block = DecoderBlock(D_MODEL, HEADS, D_FF, norm_first=norm_first).eval()
    _randomise_norms(block, seed=9)
    x, memory = _inputs(12)
    self_mask, src_mask = causal_mask(5), padding_mask([7, 4])
    sa = lambda y: block.self_attn(y, y, y, self_mask)[0]  # noqa: E731
    ca = lambda y: block.cross_attn(y, memory, memory, src_mask)[0]  # noqa: E731
    ff, n1, n2, n3 = block.feed_forward, block.norm1, block.norm2, block.norm3
    a, b, c = 0.5, 1.5, 2.5
    if norm_first:
        y = x + a * sa(n1(x))
        y = y + b * ca(n2(y))
        expected = y + c * ff(n3(y))
    else:
        y = n1(x + a * sa(x))
        y = n2(y + b * ca(y))
        expected = n3(y + c * ff(y))
    block.dropout1, block.dropout2, block.dropout3 = _Scale(a), _Scale(b), _Scale(c)
    torch.testing.assert_close(block(x, memory, self_mask, src_mask)[0], expected)


# --- activation and eps, as EncoderBlock has them ----------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
def test_gelu_block_with_small_eps_equals_torch(norm_first):
    torch.manual_seed(8)
    block = DecoderBlock(8, 2, 12, norm_first=norm_first, activation="gelu", eps=1e-6)
    _randomise_norms(block, 3)
    assert block.norm1.eps == block.norm2.eps == block.norm3.eps == 1e-6
    ref = nn.TransformerDecoderLayer(
        8, 2, 12, dropout=0.0, activation="gelu", layer_norm_eps=1e-6, batch_first=True, norm_first=norm_first
    )
    ref.load_state_dict(torch_decoder_layer(block).state_dict())
    g = torch.Generator().manual_seed(4)
    x, memory = torch.randn(2, 5, 8, generator=g), torch.randn(2, 7, 8, generator=g)
    self_mask, src_mask = causal_mask(5), padding_mask([7, 4])
    out, _, _ = block(x, memory, self_mask, src_mask)
    want = ref(x, memory, tgt_mask=~self_mask, memory_key_padding_mask=~src_mask[:, 0, :])
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-4)
    # Not a coincidence of the inputs: ReLU gives something else.
    relu = DecoderBlock(8, 2, 12, norm_first=norm_first, eps=1e-6)
    relu.load_state_dict(block.state_dict())
    assert not torch.allclose(relu(x, memory, self_mask, src_mask)[0], out, atol=1e-3)


def test_decoder_passes_activation_and_eps_to_every_layer():
    dec = Decoder(3, 8, 2, 12, norm_first=True, activation="gelu", eps=1e-6)
    assert all(layer.feed_forward.activation == "gelu" for layer in dec.layers)
    norms = [m for m in dec.modules() if isinstance(m, nn.LayerNorm)]
    assert len(norms) == 3 * 3 + 1 and all(norm.eps == 1e-6 for norm in norms)
    default = Decoder(2, 8, 2, 12)
    assert all(layer.feed_forward.activation == "relu" and layer.norm3.eps == 1e-5 for layer in default.layers)
    assert torch_decoder(dec).norm.eps == 1e-6


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: DecoderBlock(8, 2, 16, activation="GELU"), r"activation must be one of \['gelu', 'relu'\].*'GELU'"),
        (lambda: Decoder(2, 8, 2, 16, activation=None), r"activation.*None"),
        (lambda: DecoderBlock(8, 2, 16, eps=0), r"eps.*finite number > 0, got 0"),
        (lambda: Decoder(2, 8, 2, 16, eps=-1e-5), r"eps.*got -1e-05"),
        (lambda: DecoderBlock(8, 2, 16, eps=float("nan")), r"eps.*nan"),
        (lambda: DecoderBlock(8, 2, 16, eps=True), r"eps.*True"),
        (lambda: DecoderBlock(8, 2, 16, eps="1e-6"), r"eps.*'1e-6'"),
    ],
)
def test_decoder_bad_activation_or_eps(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_torch_decoder_layer_carries_activation_and_eps():
    torch.manual_seed(9)
    block = DecoderBlock(8, 2, 12, activation="gelu", eps=1e-6).eval()
    _randomise_norms(block, 4)
    ref = torch_decoder_layer(block)
    assert ref.norm1.eps == ref.norm2.eps == ref.norm3.eps == 1e-6 and ref.activation is F.gelu
    g = torch.Generator().manual_seed(5)
    x, memory = torch.randn(2, 5, 8, generator=g), torch.randn(2, 7, 8, generator=g)
    torch.testing.assert_close(block(x, memory)[0], ref(x, memory), atol=1e-5, rtol=1e-4)
