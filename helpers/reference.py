"""PyTorch's own modules holding exactly the weights of ours, for equality checks.

The series proves each of its modules equal to PyTorch's; these two functions
do the weight copying in one place (notebook 03 writes it out once, by hand).
Remember that PyTorch's boolean masks mean the opposite of ours: pass ``~mask``.
"""

from __future__ import annotations

import torch
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.encoder import EncoderBlock

__all__ = ["torch_encoder_layer", "torch_multihead_attention"]


def _copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        # PyTorch stacks W^Q, W^K, W^V into one (3 d_model, d_model) matrix.
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        if ours.w_q.bias is not None:
            ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
            ref.out_proj.bias.copy_(ours.w_o.bias)


def torch_multihead_attention(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention(batch_first=True)`` with ``mha``'s weights."""
    ref = nn.MultiheadAttention(
        mha.d_model, mha.num_heads, dropout=mha.dropout, bias=mha.w_q.bias is not None, batch_first=True
    )
    _copy_attention(mha, ref)
    return ref.train(mha.training)


def torch_encoder_layer(block: EncoderBlock) -> nn.TransformerEncoderLayer:
    """An ``nn.TransformerEncoderLayer(batch_first=True)`` with ``block``'s weights."""
    attn, ff = block.self_attn, block.feed_forward
    ref = nn.TransformerEncoderLayer(
        block.d_model,
        attn.num_heads,
        dim_feedforward=ff.linear1.out_features,
        dropout=attn.dropout,
        batch_first=True,
        norm_first=block.norm_first,
    )
    _copy_attention(attn, ref.self_attn)
    ref.linear1.load_state_dict(ff.linear1.state_dict())
    ref.linear2.load_state_dict(ff.linear2.state_dict())
    ref.norm1.load_state_dict(block.norm1.state_dict())
    ref.norm2.load_state_dict(block.norm2.state_dict())
    return ref.train(block.training)
