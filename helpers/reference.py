"""PyTorch's own modules holding exactly the weights of ours, for equality checks.

The series proves each of its modules equal to PyTorch's; these functions do
the weight copying in one place (notebook 03 writes it out once, by hand). PyTorch's
attention needs ``h * d_k = h * d_v = d_model``; our general widths have no twin there.
Remember that PyTorch's boolean masks mean the opposite of ours: pass ``~mask``.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.decoder import Decoder, DecoderBlock
from helpers.encoder import Encoder, EncoderBlock

__all__ = [
    "torch_decoder",
    "torch_decoder_layer",
    "torch_encoder_layer",
    "torch_multihead_attention",
    "torch_transformer",
    "transformers_causal_lm",
]


def _check_widths(ours: MultiHeadAttention) -> None:
    if ours.num_heads * ours.d_k != ours.d_model or ours.num_heads * ours.d_v != ours.d_model:
        raise ValueError(
            f"nn.MultiheadAttention needs h * d_k = h * d_v = d_model; this attention has h={ours.num_heads}, "
            f"d_k={ours.d_k}, d_v={ours.d_v}, d_model={ours.d_model}"
        )


def _copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    _check_widths(ours)
    with torch.no_grad():
        # PyTorch stacks W^Q, W^K, W^V into one (3 d_model, d_model) matrix.
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        if ours.w_q.bias is not None:
            ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
            ref.out_proj.bias.copy_(ours.w_o.bias)


def torch_multihead_attention(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention(batch_first=True)`` with ``mha``'s weights."""
    _check_widths(mha)
    ref = nn.MultiheadAttention(
        mha.d_model, mha.num_heads, dropout=mha.dropout, bias=mha.w_q.bias is not None, batch_first=True
    )
    _copy_attention(mha, ref)
    return ref.train(mha.training)


def torch_encoder_layer(block: EncoderBlock) -> nn.TransformerEncoderLayer:
    """An ``nn.TransformerEncoderLayer(batch_first=True)`` with ``block``'s weights, activation and eps."""
    attn, ff = block.self_attn, block.feed_forward
    ref = nn.TransformerEncoderLayer(
        block.d_model,
        attn.num_heads,
        dim_feedforward=ff.linear1.out_features,
        dropout=attn.dropout,
        activation=ff.activation,
        layer_norm_eps=block.norm1.eps,
        batch_first=True,
        norm_first=block.norm_first,
    )
    _copy_attention(attn, ref.self_attn)
    ref.linear1.load_state_dict(ff.linear1.state_dict())
    ref.linear2.load_state_dict(ff.linear2.state_dict())
    ref.norm1.load_state_dict(block.norm1.state_dict())
    ref.norm2.load_state_dict(block.norm2.state_dict())
    return ref.train(block.training)


def _new_torch_layer(block: DecoderBlock) -> nn.TransformerDecoderLayer:
    return nn.TransformerDecoderLayer(
        block.d_model,
        block.self_attn.num_heads,
        dim_feedforward=block.feed_forward.linear1.out_features,
        dropout=block.self_attn.dropout,
        activation=block.feed_forward.activation,
        layer_norm_eps=block.norm1.eps,
        batch_first=True,
        norm_first=block.norm_first,
    )


def _copy_block(block: DecoderBlock, ref: nn.TransformerDecoderLayer) -> None:
    _copy_attention(block.self_attn, ref.self_attn)
    _copy_attention(block.cross_attn, ref.multihead_attn)  # PyTorch's name for the cross-attention
    for name in ("linear1", "linear2"):
        getattr(ref, name).load_state_dict(getattr(block.feed_forward, name).state_dict())
    for name in ("norm1", "norm2", "norm3"):
        getattr(ref, name).load_state_dict(getattr(block, name).state_dict())


def torch_decoder_layer(block: DecoderBlock) -> nn.TransformerDecoderLayer:
    """An ``nn.TransformerDecoderLayer(batch_first=True)`` with ``block``'s weights, activation, eps and mode.

    Call it as ``ref(x, memory, tgt_mask=~self_mask, memory_key_padding_mask=~src_mask[:, 0, :])``.
    """
    ref = _new_torch_layer(block)
    _copy_block(block, ref)
    return ref.train(block.training)


def torch_decoder(decoder: Decoder) -> nn.TransformerDecoder:
    """An ``nn.TransformerDecoder`` with ``decoder``'s weights, layer by layer, and its final LayerNorm (pre-norm)."""
    first = decoder.layers[0]
    norm = None
    if decoder.norm is not None:
        norm = nn.LayerNorm(first.d_model, eps=decoder.norm.eps)
        norm.load_state_dict(decoder.norm.state_dict())
    ref = nn.TransformerDecoder(_new_torch_layer(first), num_layers=len(decoder.layers), norm=norm)
    for block, layer in zip(decoder.layers, ref.layers, strict=True):
        _copy_block(block, layer)
    return ref.train(decoder.training)


def torch_transformer(encoder: Encoder, decoder: Decoder) -> nn.Transformer:
    """An ``nn.Transformer(batch_first=True)`` holding the weights of our ``Encoder`` and ``Decoder`` stacks.

    ``nn.Transformer`` always ends both stacks with a LayerNorm. For our pre-norm stacks those are our final
    norms, copied; for the paper's post-norm stacks we have none, and PyTorch's stay as it builds them (gain 1,
    bias 0): an extra normalisation the paper's model does not have. Embeddings and the pre-softmax
    projection are not part of ``nn.Transformer``.
    """
    first_enc = encoder.layers[0]
    with warnings.catch_warnings():  # PyTorch's note that pre-norm stacks cannot use nested tensors
        warnings.simplefilter("ignore", UserWarning)
        ref = nn.Transformer(
            first_enc.d_model,
            first_enc.self_attn.num_heads,
            num_encoder_layers=len(encoder.layers),
            num_decoder_layers=len(decoder.layers),
            dim_feedforward=first_enc.feed_forward.linear1.out_features,
            dropout=first_enc.self_attn.dropout,
            batch_first=True,
            norm_first=first_enc.norm_first,
        )
    for block, layer in zip(encoder.layers, ref.encoder.layers, strict=True):
        layer.load_state_dict(torch_encoder_layer(block).state_dict())
    for block, layer in zip(decoder.layers, ref.decoder.layers, strict=True):
        _copy_block(block, layer)
    for ours, theirs in ((encoder.norm, ref.encoder.norm), (decoder.norm, ref.decoder.norm)):
        if ours is not None:
            theirs.load_state_dict(ours.state_dict())
    return ref.train(encoder.training)


def transformers_causal_lm(model):
    """Hugging Face's ``LlamaForCausalLM`` holding exactly the weights of our ``helpers.lm.LanguageModel``.

    The block is the same computation under other names: ``embed_tokens`` is our embedding (tied to ``lm_head``),
    each layer's ``input_layernorm``, ``self_attn.{q,k,v,o}_proj``, ``post_attention_layernorm`` and
    ``mlp.{gate,up,down}_proj`` are our ``norm1``, ``w_q, w_k, w_v, w_o``, ``norm2`` and ``w1, w3, w2``, and ``norm``
    is our final norm. Llama's rotary embedding pairs features ``(i, i + d_k / 2)``, as ours does. ``transformers``
    is a reference only: the series never needs it to run its own model. Returns the model in ``eval()`` mode, float32,
    with eager attention (no fused kernel), so that its attention weights can be compared too."""
    with warnings.catch_warnings():  # transformers' import warns that no notebook progress bar is installed
        warnings.simplefilter("ignore")
        from transformers import LlamaConfig, LlamaForCausalLM  # pinned; a reference only

    from helpers.lm import LanguageModel

    if not isinstance(model, LanguageModel):
        raise ValueError(f"transformers_causal_lm takes a helpers.lm.LanguageModel, got {type(model).__name__}")
    c = model.config
    config = LlamaConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        intermediate_size=c.d_ff,
        num_hidden_layers=c.num_layers,
        num_attention_heads=c.num_heads,
        num_key_value_heads=c.num_kv_heads,
        head_dim=c.d_model // c.num_heads,
        max_position_embeddings=c.max_len,
        rms_norm_eps=c.norm_eps,
        rope_theta=c.rope_base,
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        hidden_act="silu",
        attn_implementation="eager",
    )
    reference = LlamaForCausalLM(config)
    names = {"embedding.weight": "model.embed_tokens.weight", "final_norm.weight": "model.norm.weight"}
    parts = {
        "norm1.weight": "input_layernorm.weight",
        "norm2.weight": "post_attention_layernorm.weight",
        "attention.w_q.weight": "self_attn.q_proj.weight",
        "attention.w_k.weight": "self_attn.k_proj.weight",
        "attention.w_v.weight": "self_attn.v_proj.weight",
        "attention.w_o.weight": "self_attn.o_proj.weight",
        "feed_forward.w1.weight": "mlp.gate_proj.weight",
        "feed_forward.w3.weight": "mlp.up_proj.weight",
        "feed_forward.w2.weight": "mlp.down_proj.weight",
    }
    for i in range(c.num_layers):
        names |= {f"layer{i}.{ours}": f"model.layers.{i}.{theirs}" for ours, theirs in parts.items()}
    ours = {(_ours_name(name)): p for name, p in model.state_dict().items() if name != "output.weight"}
    state = {names[name]: p.detach().clone() for name, p in ours.items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = reference.load_state_dict(state, strict=False)
    if unexpected or any("rotary" not in name for name in missing):
        raise ValueError(f"weights did not map onto LlamaForCausalLM: missing {missing}, unexpected {unexpected}")
    return reference.eval()


def _ours_name(name: str) -> str:
    """``layers.3.attention.w_q.weight`` -> ``layer3.attention.w_q.weight`` (the key of the mapping above)."""
    if name.startswith("layers."):
        _, index, rest = name.split(".", 2)
        return f"layer{index}.{rest}"
    return name
