"""The code a notebook writes out inline must equal the official code in helpers/.

Notebooks teach by writing an idea out in full, then importing the official
version from ``helpers``. Cells that define such inline versions carry the tag
``inline-definition``. This file executes exactly those cells (in order, in a
fresh namespace, outside Jupyter) and compares what they define with helpers,
so a notebook and the package cannot drift apart. It is the one place that does:
every notebook with a tagged cell has a ``test_NN_...`` here.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.decoder import DecoderBlock
from helpers.encoder import EncoderBlock, positional_encoding
from helpers.masks import causal_mask, padding_mask
from helpers.modern import RMSNorm, SwiGLU, alibi_slopes, apply_rotary
from helpers.transformer import shift_right
from tests.support import INLINE_TAG, NOTEBOOKS, generator, inline_namespace


def random_qkv(seed: int, batch=(2,), n=4, m=6, d_k=8, d_v=5):
    g = generator(seed)
    return (
        torch.randn(*batch, n, d_k, generator=g),
        torch.randn(*batch, m, d_k, generator=g),
        torch.randn(*batch, m, d_v, generator=g),
    )


def test_01_inline_attention_equals_helpers():
    ns = inline_namespace("01_scaled_dot_product_attention.ipynb")
    for seed in range(3):
        q, k, v = random_qkv(seed, batch=(2, 3))
        out, weights = ns["attention"](q, k, v)
        ref_out, ref_weights = scaled_dot_product_attention(q, k, v)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(weights, ref_weights)


def test_02_inline_masked_attention_equals_helpers():
    ns = inline_namespace("02_masking.ipynb")
    q, k, v = random_qkv(0, batch=(3,), n=4, m=5)
    mask = padding_mask([5, 2, 0], 5)  # includes a sequence with no real key at all
    out, weights = ns["masked_attention"](q, k, v, mask)
    ref_out, ref_weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    assert torch.isfinite(out).all()


def test_03_inline_multi_head_attention_equals_helpers():
    ns = inline_namespace("03_multi_head_attention.ipynb")
    torch.manual_seed(0)
    ours = MultiHeadAttention(12, 3)
    inline = ns["InlineMultiHeadAttention"](12, 3)
    inline.load_state_dict(ours.state_dict())  # same parameter names: w_q, w_k, w_v, w_o
    x, y = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    for query, kv in ((x, x), (x, y)):
        out, weights = inline(query, kv, kv)
        ref_out, ref_weights = ours(query, kv, kv)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(weights, ref_weights)
    heads = ns["split_heads"](x, 3)
    assert heads.shape == (2, 3, 4, 4)
    torch.testing.assert_close(heads[:, 1], x[:, :, 4:8], msg="head 1 holds features 4..7 of every position")
    torch.testing.assert_close(ns["combine_heads"](heads), x)


def test_05_inline_positional_encoding_equals_helpers():
    ns = inline_namespace("05_positional_encoding.ipynb")
    for max_len, d_model in ((7, 2), (50, 16), (300, 64)):
        torch.testing.assert_close(ns["sinusoidal_table"](max_len, d_model), positional_encoding(max_len, d_model))


@pytest.mark.parametrize(("class_name", "norm_first"), [("InlineEncoderBlock", False), ("InlinePreNormBlock", True)])
def test_06_inline_encoder_blocks_equal_helpers(class_name, norm_first):
    ns = inline_namespace("06_encoder_block.ipynb")
    torch.manual_seed(0)
    ours = EncoderBlock(16, 4, 32, norm_first=norm_first)
    inline = ns[class_name](16, 4, 32)
    inline.load_state_dict(ours.state_dict())  # same names: self_attn, feed_forward.linear1/2, norm1/2
    x = torch.randn(2, 5, 16)
    mask = padding_mask([5, 3], 5)
    out, weights = inline(x, mask)
    ref_out, ref_weights = ours(x, mask)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    ff = ns["InlineFeedForward"](16, 32)
    ff.load_state_dict(ours.feed_forward.state_dict())
    torch.testing.assert_close(ff(x), ours.feed_forward(x))


@pytest.mark.parametrize("use_positions", [True, False])
def test_07_inline_model_equals_helpers(use_positions):
    from helpers.tasks import TinyTransformer, make_batch

    ns = inline_namespace("07_what_attention_learns.ipynb")
    torch.manual_seed(0)
    ours = TinyTransformer(9, 9, use_positions=use_positions)
    inline = ns["InlineTinyTransformer"](9, 9, use_positions=use_positions)
    inline.load_state_dict(ours.state_dict())
    batch = make_batch("sort", 4, 6, 9, min_len=2, generator=generator(0))
    logits, weights = inline(batch.tokens, batch.mask, need_weights=True)
    ref_logits, ref_weights = ours(batch.tokens, batch.mask, need_weights=True)
    torch.testing.assert_close(logits, ref_logits)
    for w, ref_w in zip(weights, ref_weights, strict=True):
        torch.testing.assert_close(w, ref_w)


@pytest.mark.parametrize("norm_first", [False, True])
def test_09_inline_decoder_block_equals_helpers(norm_first):
    ns = inline_namespace("09_the_whole_transformer.ipynb")
    torch.manual_seed(8)
    ours = DecoderBlock(16, 4, 32, norm_first=norm_first)
    g = generator(8)
    with torch.no_grad():  # distinct gains and biases in every LayerNorm, so a swapped or skipped norm shows
        for norm in (m for m in ours.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.copy_(torch.rand(norm.weight.shape, generator=g) + 0.5)
            norm.bias.copy_(torch.randn(norm.bias.shape, generator=g) * 0.5)
    inline = ns["InlineDecoderBlock"](16, 4, 32, norm_first=norm_first)
    inline.load_state_dict(ours.state_dict())  # same names: self_attn, cross_attn, feed_forward, norm1..3
    g = generator(10)
    x, memory = torch.randn(2, 5, 16, generator=g), torch.randn(2, 7, 16, generator=g)
    args = (x, memory, causal_mask(5), padding_mask([7, 4]))
    for got, want in zip(inline(*args), ours(*args), strict=True):
        torch.testing.assert_close(got, want)
    targets = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])
    assert ns["shift_right"](targets, 1).tolist() == [[1, 5, 6, 7], [1, 8, 9, 2]]
    assert torch.equal(ns["shift_right"](targets, 3), shift_right(targets, 3))


def test_09_inline_cross_attention_equals_helpers():
    ns = inline_namespace("09_the_whole_transformer.ipynb")
    g = generator(10)
    x, memory = torch.randn(2, 5, 16, generator=g), torch.randn(2, 7, 16, generator=g)
    g = generator(11)
    w_q, w_k, w_v = (torch.randn(16, 6, generator=g) for _ in range(3))
    mask = padding_mask([7, 3])
    out, weights = ns["cross_attention"](x, memory, mask, w_q, w_k, w_v)
    ref_out, ref_weights = scaled_dot_product_attention(x @ w_q, memory @ w_k, memory @ w_v, mask)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    assert weights.shape == (2, 5, 7)


def test_14_inline_modern_pieces_equal_helpers():
    ns = inline_namespace("14_modern_attention_blocks.ipynb")
    g = generator(14)
    x, weight = torch.randn(3, 7, 12, generator=g), torch.randn(12, generator=g)
    norm = RMSNorm(12)
    with torch.no_grad():
        norm.weight.copy_(weight)
    torch.testing.assert_close(ns["rms_norm"](x, weight), norm(x))
    torch.testing.assert_close(ns["rotary"](x), apply_rotary(x))
    torch.testing.assert_close(ns["rotary"](x, base=500.0), apply_rotary(x, base=500.0))
    for h in range(1, 40):
        torch.testing.assert_close(ns["slopes"](h), alibi_slopes(h))
    ffn = SwiGLU(12, 20)
    torch.testing.assert_close(ns["swiglu"](x, ffn.w1.weight, ffn.w3.weight, ffn.w2.weight), ffn(x))


@pytest.mark.parametrize("seed", [0, 1])
def test_15_inline_decoder_only_model_equals_helpers(seed):
    from helpers.lm import LanguageModel, LMConfig

    ns = inline_namespace("15_a_language_model_of_our_own.ipynb")
    torch.manual_seed(seed)
    config = LMConfig(vocab_size=60, d_model=24, num_layers=2, num_heads=6, num_kv_heads=2, d_ff=40, max_len=32)
    model = LanguageModel(config).eval()
    with torch.no_grad():  # away from the initialisation, so that every weight, the norms' gains too, matters
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    tokens = torch.randint(0, 60, (3, 32), generator=generator(seed))
    with torch.no_grad():
        torch.testing.assert_close(ns["decoder_only_logits"](model, tokens), model(tokens)[0], atol=1e-5, rtol=1e-5)


TESTED = {"01", "02", "03", "05", "06", "07", "09", "14", "15"}  # the notebooks with a test_NN_ above


def test_every_notebook_with_inline_code_is_tested_here():
    """A notebook that gains an inline-definition cell must gain a test in this file."""
    tagged = set()
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        if any(INLINE_TAG in c.get("metadata", {}).get("tags", []) for c in cells if c["cell_type"] == "code"):
            tagged.add(path.name[:2])
    assert tagged == TESTED
    names = {name[5:7] for name in globals() if name.startswith("test_") and name[5:7].isdigit()}
    assert names == TESTED


@pytest.mark.parametrize("name", sorted(path.name for path in NOTEBOOKS.glob("*.ipynb") if path.name[:2] in TESTED))
def test_inline_cells_are_self_contained(name):
    """Tagged cells import what they use, so a reader can copy them out whole."""
    inline_namespace(name)
