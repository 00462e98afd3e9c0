"""Transformer(num_kv_heads=...) shares keys and values in the decoder only, as grouped-query attention does.

Ainslie et al. (2023) convert the decoder's self- and cross-attention and leave the encoder's self-attention
multi-head: the encoder keeps no cache. Notebook 11, section 8, and exercise 11.5 rely on that split.
"""

from __future__ import annotations

import pytest
import torch

from helpers.decoder import KVCache
from helpers.transformer import Transformer

V, D_MODEL, HEADS, LAYERS, D_FF = 11, 16, 4, 2, 32


def _model(num_kv_heads=None, seed=0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(V, V, D_MODEL, HEADS, LAYERS, D_FF, dropout=0.0, max_len=16, num_kv_heads=num_kv_heads).eval()


@pytest.mark.parametrize("h_kv", [1, 2, 4])
def test_only_the_decoder_shares_keys_and_values(h_kv):
    model = _model(h_kv)
    assert all(block.self_attn.num_kv_heads == HEADS for block in model.encoder.layers), "the encoder stays multi-head"
    for block in model.decoder.layers:
        assert block.self_attn.num_kv_heads == h_kv and block.cross_attn.num_kv_heads == h_kv
        for attention in (block.self_attn, block.cross_attn):
            assert attention.w_k.weight.shape == (h_kv * attention.d_k, D_MODEL)
            assert attention.w_v.weight.shape == (h_kv * attention.d_v, D_MODEL)
            assert attention.w_q.weight.shape == (HEADS * attention.d_k, D_MODEL)


@pytest.mark.parametrize("h_kv", [1, 2])
def test_the_encoder_is_the_multi_head_one_drawn_from_the_same_seed(h_kv):
    """The encoder is built before the decoder, so with the same seed its weights are exactly the MHA model's.

    (The shared embedding is drawn after both stacks, so it differs; the encoder stack itself does not.)
    """
    shared, full = _model(h_kv, seed=3), _model(None, seed=3)
    for (name, a), (_, b) in zip(shared.encoder.state_dict().items(), full.encoder.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    x = torch.randn(2, 5, D_MODEL, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(shared.encoder(x)[0], full.encoder(x)[0])


def test_default_and_num_kv_heads_equal_to_num_heads_are_the_same_model():
    a, b = _model(None, seed=5), _model(HEADS, seed=5)
    assert a.state_dict().keys() == b.state_dict().keys()
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


@pytest.mark.parametrize("h_kv", [1, 2])
def test_parameters_saved_are_the_decoders_key_and_value_columns(h_kv):
    full, shared = _model(None), _model(h_kv)
    d_k = D_MODEL // HEADS
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(shared.encoder) == count(full.encoder)
    # per decoder layer: self- and cross-attention each lose (h - h_kv) heads of W^K and of W^V, weights and biases
    assert count(full.decoder) - count(shared.decoder) == LAYERS * 2 * 2 * (HEADS - h_kv) * d_k * (D_MODEL + 1)
    assert count(full) - count(shared) == count(full.decoder) - count(shared.decoder)


@pytest.mark.parametrize("h_kv", [1, 2])
def test_the_cache_shrinks_by_h_over_h_kv_self_and_cross(h_kv):
    src = torch.randint(3, V, (3, 6), generator=torch.Generator().manual_seed(2))
    sizes = {}
    for heads in (None, h_kv):
        model, cache = _model(heads), KVCache()
        with torch.no_grad():
            memory, _ = model.encode(src)
            for _ in range(4):
                model.decode(torch.ones(3, 1, dtype=torch.long), memory, cache=cache)
        sizes[heads] = (cache.nbytes("self"), cache.nbytes("cross"))
        assert cache.layers[0]["cross_k"].shape == (3, heads or HEADS, 6, D_MODEL // HEADS)
    assert sizes[None][0] == (HEADS // h_kv) * sizes[h_kv][0] and sizes[None][1] == (HEADS // h_kv) * sizes[h_kv][1]


@pytest.mark.parametrize("bad", [3, 0, -1, True, 2.0])
def test_bad_num_kv_heads_is_a_value_error(bad):
    with pytest.raises(ValueError, match="num_kv_heads"):
        _model(bad)
