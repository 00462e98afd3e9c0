"""The code a notebook writes out inline must equal the official code in helpers/.

Notebooks teach by writing an idea out in full, then importing the official
version from ``helpers``. Cells that define such inline versions carry the tag
``inline-definition``. This test executes exactly those cells (in order, in a
fresh namespace, outside Jupyter) and compares what they define with helpers,
so a notebook and the package cannot drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.encoder import EncoderBlock, positional_encoding
from helpers.masks import padding_mask

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TAG = "inline-definition"


def inline_namespace(name: str) -> dict:
    path = NOTEBOOKS / name
    nb = json.loads(path.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and TAG in c.get("metadata", {}).get("tags", [])]
    assert cells, f"{name} has no cell tagged {TAG!r}"
    namespace: dict = {}
    for cell in cells:
        exec(compile("".join(cell["source"]), f"{name}:{TAG}", "exec"), namespace)
    return namespace


def random_qkv(seed: int, batch=(2,), n=4, m=6, d_k=8, d_v=5):
    g = torch.Generator().manual_seed(seed)
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
    batch = make_batch("sort", 4, 6, 9, min_len=2, generator=torch.Generator().manual_seed(0))
    logits, weights = inline(batch.tokens, batch.mask, need_weights=True)
    ref_logits, ref_weights = ours(batch.tokens, batch.mask, need_weights=True)
    torch.testing.assert_close(logits, ref_logits)
    for w, ref_w in zip(weights, ref_weights, strict=True):
        torch.testing.assert_close(w, ref_w)


@pytest.mark.parametrize(
    "name",
    [
        "01_scaled_dot_product_attention.ipynb",
        "02_masking.ipynb",
        "03_multi_head_attention.ipynb",
        "05_positional_encoding.ipynb",
        "06_encoder_block.ipynb",
        "07_what_attention_learns.ipynb",
    ],
)
def test_inline_cells_are_self_contained(name):
    """Tagged cells import what they use, so a reader can copy them out whole."""
    inline_namespace(name)
