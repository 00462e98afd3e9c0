"""Tests of helpers.transformer (§3, §3.4, §3.5, Table 3) and of multi-head attention's general d_k, d_v (§3.2.2)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.encoder import positional_encoding
from helpers.masks import causal_mask, padding_mask
from helpers.reference import torch_transformer
from helpers.transformer import TABLE3, Transformer

BASE = {"num_layers": 6, "d_model": 512, "d_ff": 2048, "num_heads": 8, "d_k": None, "d_v": None}


def _small(**kwargs) -> Transformer:
    settings = {"d_model": 16, "num_heads": 4, "num_layers": 2, "d_ff": 32, "dropout": 0.0, "max_len": 64}
    return Transformer(11, 11, **(settings | kwargs))


def _batch(seed: int, B=2, m=6, n=5, vocab=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (B, m), generator=g), torch.randint(0, vocab, (B, n), generator=g)


# --- multi-head attention with general d_k, d_v (§3.2.2) ----------------------------------------


@pytest.mark.parametrize(("d_model", "h", "d_k", "d_v"), [(12, 3, 5, 7), (10, 3, 4, 4), (16, 4, 2, 8)])
def test_mha_general_widths_equal_the_formula_on_both_paths(d_model, h, d_k, d_v):
    """MultiHead = Concat(head_1..head_h) W^O, head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model, h, d_k=d_k, d_v=d_v).eval()
    assert mha.w_q.weight.shape == mha.w_k.weight.shape == (h * d_k, d_model)
    assert mha.w_v.weight.shape == (h * d_v, d_model) and mha.w_o.weight.shape == (d_model, h * d_v)
    x, memory = torch.randn(2, 4, d_model), torch.randn(2, 6, d_model)
    mask = padding_mask([6, 2])  # (B, 1, m)
    for query, kv, msk in ((x, x, None), (x, memory, mask), (x, memory, None)):
        heads = []
        for i in range(h):  # one head at a time, with the column blocks of w_q, w_k, w_v
            wq, bq = mha.w_q.weight[i * d_k : (i + 1) * d_k], mha.w_q.bias[i * d_k : (i + 1) * d_k]
            wk, bk = mha.w_k.weight[i * d_k : (i + 1) * d_k], mha.w_k.bias[i * d_k : (i + 1) * d_k]
            wv, bv = mha.w_v.weight[i * d_v : (i + 1) * d_v], mha.w_v.bias[i * d_v : (i + 1) * d_v]
            scores = (query @ wq.T + bq) @ (kv @ wk.T + bk).transpose(1, 2) / math.sqrt(d_k)
            if msk is not None:
                scores = scores.masked_fill(~msk, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ (kv @ wv.T + bv))  # (B, n, d_v)
        expected = torch.cat(heads, dim=-1) @ mha.w_o.weight.T + mha.w_o.bias  # (B, n, h d_v) -> (B, n, d_model)
        out, weights = mha(query, kv, kv, msk)
        fused, none = mha(query, kv, kv, msk, need_weights=False)
        assert out.shape == (2, 4, d_model) and weights.shape == (2, h, 4, kv.shape[1]) and none is None
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(fused, expected, atol=1e-5, rtol=1e-4)


def test_mha_default_widths_keep_the_divisibility_error():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3, d_k=4)  # d_v would still default to d_model // h
    with pytest.raises(ValueError, match="d_k"):
        MultiHeadAttention(12, 3, d_k=0, d_v=4)
    assert MultiHeadAttention(10, 3, d_k=4, d_v=4).d_k == 4
    explicit, default = MultiHeadAttention(12, 3, d_k=4, d_v=4), MultiHeadAttention(12, 3)
    assert [p.shape for p in explicit.parameters()] == [p.shape for p in default.parameters()]


# --- the model -----------------------------------------------------------------------------------


def test_shared_embeddings_are_one_tensor():
    torch.manual_seed(0)
    model = _small()
    assert model.src_embedding.weight is model.tgt_embedding.weight is model.projection.weight
    assert model.projection.bias is None
    params = list(model.parameters())
    assert sum(p is model.projection.weight for p in params) == 1  # counted once
    src, tgt = _batch(0)
    model(src, tgt).sum().backward()
    grad = model.projection.weight.grad
    # the one gradient collects all three uses: compare with three separate copies
    untied = _small(share_embeddings=False)
    untied.load_state_dict(
        {k: v for k, v in model.state_dict().items()}, strict=True
    )  # the same values, now in three tensors
    untied(src, tgt).sum().backward()
    total = untied.src_embedding.weight.grad + untied.tgt_embedding.weight.grad + untied.projection.weight.grad
    torch.testing.assert_close(grad, total, atol=1e-5, rtol=1e-4)
    assert untied.src_embedding.weight is not untied.tgt_embedding.weight
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied == sum(p.numel() for p in params) + 2 * 11 * 16


def test_sharing_needs_one_vocabulary():
    with pytest.raises(ValueError, match="share_embeddings"):
        Transformer(100, 90, d_model=16, num_heads=4, num_layers=1, d_ff=32)
    model = Transformer(100, 90, d_model=16, num_heads=4, num_layers=1, d_ff=32, share_embeddings=False)
    assert model.projection.weight.shape == (90, 16) and model.src_embedding.weight.shape == (100, 16)


def test_embedding_is_scaled_by_sqrt_d_model_plus_positions():
    torch.manual_seed(1)
    model = _small().eval()
    src, _ = _batch(1)
    expected = model.src_embedding.weight[src] * 4.0 + positional_encoding(6, 16)  # sqrt(16) = 4
    torch.testing.assert_close(model.embed(src, model.src_embedding), expected)


@pytest.mark.parametrize("share", [True, False])
def test_encode_and_decode_feed_the_stacks_through_embed(share):
    """Each public path starts at embed(): the sqrt(d_model) scale and the positions on both sides (§3.4, §3.5),
    each side with its own table when the embeddings are not shared."""
    torch.manual_seed(8)
    model = _small(share_embeddings=share).eval()
    src, tgt = _batch(8)
    src_mask = padding_mask([6, 3])
    memory, _ = model.encode(src, src_mask)
    expected, _ = model.encoder(model.embed(src, model.src_embedding), src_mask)
    torch.testing.assert_close(memory, expected)
    logits, _, _ = model.decode(tgt, memory, src_mask)
    out, _, _ = model.decoder(model.embed(tgt, model.tgt_embedding), memory, causal_mask(5), src_mask)
    torch.testing.assert_close(logits, model.projection(out))


@pytest.mark.parametrize("share", [True, False])
def test_embeddings_and_projection_start_with_std_one_over_sqrt_d_model(share):
    """nn.Embedding's N(0, 1) times sqrt(d_model) would drown the positions; every table starts at N(0, 1/d_model),
    tied or not (12,800 draws each: the sample std is within 1% of 1/8)."""
    torch.manual_seed(9)
    model = Transformer(200, 200, d_model=64, num_heads=4, num_layers=1, d_ff=64, share_embeddings=share)
    for name in ("src_embedding", "tgt_embedding", "projection"):
        std = getattr(model, name).weight.std().item()
        assert abs(std * 64**0.5 - 1) < 0.05, (name, std)


@pytest.mark.parametrize("norm_first", [False, True])
def test_forward_equals_encode_then_decode_and_the_weights_path(norm_first):
    torch.manual_seed(2)
    model = _small(norm_first=norm_first).eval()
    src, tgt = _batch(2)
    src_mask = padding_mask([6, 3])
    logits = model(src, tgt, src_mask)
    memory, enc_weights = model.encode(src, src_mask)
    dec_logits, self_weights, cross_weights = model.decode(tgt, memory, src_mask)
    assert logits.shape == (2, 5, 11) and memory.shape == (2, 6, 16)
    assert [w.shape for w in enc_weights] == [(2, 4, 6, 6)] * 2
    assert [w.shape for w in self_weights] == [(2, 4, 5, 5)] * 2
    assert [w.shape for w in cross_weights] == [(2, 4, 5, 6)] * 2
    torch.testing.assert_close(logits, dec_logits, atol=1e-5, rtol=1e-4)
    for w in self_weights:  # the causal mask is built inside decode
        assert (w[..., ~causal_mask(5)] == 0).all()
    for w in cross_weights:
        assert (w[1, ..., 3:] == 0).all()


def test_decoding_is_causal_and_ignores_source_padding():
    torch.manual_seed(3)
    model = _small().eval()
    src, tgt = _batch(3)
    src_mask = padding_mask([6, 3])
    logits = model(src, tgt, src_mask)
    changed = tgt.clone()
    changed[:, 3] = (changed[:, 3] + 1) % 11
    new = model(src, changed, src_mask)
    torch.testing.assert_close(new[:, :3], logits[:, :3])  # positions before 3 cannot see it
    assert (new[:, 3:] - logits[:, 3:]).abs().amax() > 1e-3
    src_changed = src.clone()
    src_changed[1, 3:] = (src_changed[1, 3:] + 1) % 11  # only sequence 1's padded source tokens
    torch.testing.assert_close(model(src_changed, tgt, src_mask), logits)


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_equal_nn_transformer(norm_first):
    """Pre-norm: equal to nn.Transformer as it is. Post-norm (the paper): nn.Transformer adds a final LayerNorm
    to both stacks; with those two replaced by the identity it equals ours."""
    torch.manual_seed(4)
    model = _small(norm_first=norm_first).eval()
    with torch.no_grad():
        for norm in (m for m in model.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0.0, 0.5)
    reference = torch_transformer(model.encoder, model.decoder).eval()
    src, tgt = _batch(4)
    src_mask = padding_mask([6, 2])
    x, y = model.embed(src, model.src_embedding), model.embed(tgt, model.tgt_embedding)
    memory, _ = model.encoder(x, src_mask)
    ours, _, _ = model.decoder(y, memory, causal_mask(5), src_mask)
    theirs_kwargs = {
        "tgt_mask": ~causal_mask(5),
        "src_key_padding_mask": ~src_mask[:, 0],
        "memory_key_padding_mask": ~src_mask[:, 0],
    }
    extra = 4 * 16  # two LayerNorms of gain and bias
    ours_count = sum(p.numel() for p in (*model.encoder.parameters(), *model.decoder.parameters()))
    theirs_count = sum(p.numel() for p in reference.parameters())
    if norm_first:
        assert theirs_count == ours_count
        torch.testing.assert_close(reference(x, y, **theirs_kwargs), ours, atol=1e-5, rtol=1e-4)
    else:
        assert theirs_count == ours_count + extra
        assert (reference(x, y, **theirs_kwargs) - ours).abs().amax() > 0.1  # norm3's random gains are undone
        reference.encoder.norm, reference.decoder.norm = nn.Identity(), nn.Identity()
        torch.testing.assert_close(reference(x, y, **theirs_kwargs), ours, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_no_nan_with_a_fully_padded_source(norm_first):
    torch.manual_seed(5)
    model = _small(norm_first=norm_first)
    src, tgt = _batch(5)
    src_mask = padding_mask([6, 0], 6)  # sequence 1 is all padding
    logits = model(src, tgt, src_mask)
    logits.sum().backward()
    assert torch.isfinite(logits).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    memory, _ = model.encode(src, src_mask)
    _, _, cross = model.decode(tgt, memory, src_mask)
    assert all((w[1] == 0).all() and torch.isfinite(w).all() for w in cross)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, s, t: m(s, t.clamp(max=10) + 1), r"outside the vocabulary \[0, 11\)"),
        (lambda m, s, t: m(s.index_fill(1, torch.tensor([2]), -1), t), "from -1 to"),
        (lambda m, s, t: m(s.float(), t), "integer token ids"),
        (lambda m, s, t: m(s[0], t), r"shape \(B, positions\)"),
        (
            lambda m, s, t: m(s, t, padding_mask([5, 3])),
            r"src_mask must be a key-padding mask of shape \(B=2, 1, m=6\)",
        ),
        (lambda m, s, t: m(s, t, padding_mask([6, 3]).expand(2, 6, 6)), "key-padding mask"),
        (lambda m, s, t: m(s, t, padding_mask([6, 3]).long()), "boolean"),
        (lambda m, s, t: m.decode(t, torch.zeros(2, 6, 8)), r"memory must have shape \(B, m, d_model=16\)"),
        (lambda m, s, t: m.decode(t, torch.zeros(3, 6, 16)), "same batch size"),
        (lambda m, s, t: m.decode(t, torch.zeros(2, 4, 16), padding_mask([6, 3])), "m=4"),
        (lambda m, s, t: m(s, torch.zeros(2, 65, dtype=torch.long)), "max_len"),
    ],
)
def test_transformer_bad_input(call, message):
    model = _small()
    src, tgt = _batch(6)
    with pytest.raises(ValueError, match=message):
        call(model, src, tgt)


def test_transformer_bad_construction():
    with pytest.raises(ValueError, match="src_vocab_size"):
        Transformer(0, 0)
    with pytest.raises(ValueError, match="num_layers"):
        Transformer(10, 10, d_model=16, num_heads=4, num_layers=0)


# --- Table 3's parameter column -------------------------------------------------------------------


def closed_form(vocab, num_layers, d_model, d_ff, num_heads, d_k=None, d_v=None) -> int:
    """Our own count, written independently of the modules: biases everywhere except the tied projection."""
    d_k = d_k or d_model // num_heads
    d_v = d_v or d_model // num_heads
    hk, hv = num_heads * d_k, num_heads * d_v
    attention = 2 * (d_model * hk + hk) + (d_model * hv + hv) + (hv * d_model + d_model)
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model
    encoder_layer = attention + ffn + 2 * 2 * d_model
    decoder_layer = 2 * attention + ffn + 3 * 2 * d_model
    return vocab * d_model + num_layers * (encoder_layer + decoder_layer)


@pytest.mark.parametrize("row", list(TABLE3), ids=str)
def test_table3_parameter_counts(row):
    changes, paper_millions = TABLE3[row]
    with torch.device("meta"):  # no memory, no time: shapes only
        model = Transformer(37_000, 37_000, **changes)
    count = sum(p.numel() for p in model.parameters())
    assert count == closed_form(37_000, **(BASE | changes))
    assert abs(count / 1e6 - paper_millions) / paper_millions < 0.07


def test_table3_rows_match_the_paper():
    """The settings are the paper's (Table 3: unlisted values equal the base row)."""
    assert TABLE3["base"] == ({}, 65) and TABLE3["big"] == ({"d_model": 1024, "d_ff": 4096, "num_heads": 16}, 213)
    assert {row: millions for row, (_, millions) in TABLE3.items()} == {
        "base": 65,
        "(B) d_k=16": 58,
        "(B) d_k=32": 60,
        "(C) N=2": 36,
        "(C) N=4": 50,
        "(C) N=8": 80,
        "(C) d_model=256": 28,
        "(C) d_model=1024": 168,
        "(C) d_ff=1024": 53,
        "(C) d_ff=4096": 90,
        "big": 213,
    }


def test_base_model_builds_on_the_meta_device():
    with torch.device("meta"):
        model = Transformer(37_000, 37_000)
    assert model.projection.weight.is_meta
    assert sum(p.numel() for p in model.parameters()) == 63_082_496


def test_dropout_reaches_embeddings_and_every_layer_only_in_training():
    torch.manual_seed(7)
    model = _small(dropout=0.3)
    assert model.positional.dropout.p == 0.3  # on the sum of embeddings and positions (§5.4)
    probabilities = {m.p for m in model.modules() if isinstance(m, nn.Dropout)}
    assert probabilities == {0.3}
    assert {m.dropout for m in model.modules() if isinstance(m, MultiHeadAttention)} == {0.3}
    src, tgt = _batch(7)
    assert not torch.allclose(model(src, tgt), model(src, tgt))
    model.eval()
    torch.testing.assert_close(model(src, tgt), model(src, tgt))


def test_shift_right_and_its_bad_input():
    from helpers.transformer import shift_right

    targets = torch.tensor([[5, 6, 2], [7, 2, 0]])
    assert shift_right(targets, 1).tolist() == [[1, 5, 6], [1, 7, 2]]
    assert shift_right(targets, 1).dtype == targets.dtype
    with pytest.raises(ValueError, match="integer token ids"):
        shift_right(targets.float(), 1)
    with pytest.raises(ValueError, match="bos_id"):
        shift_right(targets, -1)
