"""The Transformer decoder: decoder block and stack.

Vaswani et al., 2017: §3.1 (decoder: masked self-attention, attention over the
encoder's output, feed-forward; residual connections and LayerNorm), §3.2.3
(the three uses of attention; masking future positions), §5.4 (residual dropout).

Masks follow the series' convention: boolean, ``True`` = this query may attend to
this key. Letters: ``n`` target (decoder) positions, ``m`` source (memory) positions.
"""

from __future__ import annotations

import torch
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.encoder import FeedForward

__all__ = ["Decoder", "DecoderBlock"]


def _shape(x) -> tuple[int, ...] | str:
    return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__


def _check_decoder_inputs(x, memory, d_model: int, who: str) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{who} expects x of shape (B, n, d_model={d_model}), got {_shape(x)}")
    if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.shape[-1] != d_model:
        raise ValueError(
            f"{who} expects memory (the encoder's output) of shape (B, m, d_model={d_model}), got {_shape(memory)}"
        )
    if x.shape[0] != memory.shape[0]:
        raise ValueError(f"{who}: x {tuple(x.shape)} and memory {tuple(memory.shape)} must have the same batch size B")


class DecoderBlock(nn.Module):
    """One decoder layer (§3.1): masked self-attention, cross-attention, feed-forward.

    Each of the three sub-layers has a residual connection and a LayerNorm:
    ``norm_first=False`` is the paper's post-norm, ``LayerNorm(x + Sublayer(x))``;
    ``norm_first=True`` is pre-norm, ``x + Sublayer(LayerNorm(x))`` (not in the
    paper). The cross-attention (``cross_attn``, "encoder-decoder attention",
    §3.2.3) takes its queries from the decoder and its keys and values from the
    encoder's output ``memory``. Dropout sits where ``nn.TransformerDecoderLayer``
    puts it: on each sub-layer's output before the residual add (§5.4), on the
    attention weights and after the feed-forward network's ReLU.

    ``d_k`` and ``d_v`` (per head, default ``d_model // num_heads``) are passed to
    both attentions (§3.2.2; Table 3, rows (B)).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        d_k: int | None = None,
        d_v: int | None = None,
    ):
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def _self(self, x, mask, need_weights):
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights)
        return self.dropout1(out), weights

    def _cross(self, x, memory, mask, need_weights):
        out, weights = self.cross_attn(x, memory, memory, mask=mask, need_weights=need_weights)
        return self.dropout2(out), weights

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``x (B, n, d_model)``, ``memory (B, m, d_model)`` -> ``(output, self_weights, cross_weights)``.

        ``self_mask`` is boolean, broadcastable to ``(B, n, n)``: for a decoder,
        ``helpers.masks.causal_mask(n)`` (query i sees keys j <= i). ``memory_mask``
        is boolean, broadcastable to ``(B, n, m)``: typically
        ``helpers.masks.padding_mask(src_lengths)`` of shape ``(B, 1, m)``.
        Returns ``output (B, n, d_model)``, ``self_weights (B, h, n, n)`` and
        ``cross_weights (B, h, n, m)`` (both ``None`` with ``need_weights=False``).
        """
        _check_decoder_inputs(x, memory, self.d_model, "DecoderBlock")
        if self.norm_first:
            attended, self_weights = self._self(self.norm1(x), self_mask, need_weights)
            x = x + attended
            attended, cross_weights = self._cross(self.norm2(x), memory, memory_mask, need_weights)
            x = x + attended
            x = x + self.dropout3(self.feed_forward(self.norm3(x)))
        else:
            attended, self_weights = self._self(x, self_mask, need_weights)
            x = self.norm1(x + attended)
            attended, cross_weights = self._cross(x, memory, memory_mask, need_weights)
            x = self.norm2(x + attended)
            x = self.norm3(x + self.dropout3(self.feed_forward(x)))
        return x, self_weights, cross_weights


class Decoder(nn.Module):
    """A stack of ``num_layers`` decoder blocks (§3.1: N = 6 in the paper).

    Every block receives the same ``memory`` (the encoder stack's output) and the
    same masks. With ``norm_first=True`` a final LayerNorm follows the last block,
    as in ``helpers.encoder.Encoder``; the paper's post-norm stack has none.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        d_k: int | None = None,
        d_v: int | None = None,
    ):
        super().__init__()
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        self.layers = nn.ModuleList(
            DecoderBlock(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first, d_k=d_k, d_v=d_v)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, list[torch.Tensor | None], list[torch.Tensor | None]]:
        """Returns ``(output (B, n, d_model), [self_weights (B, h, n, n)] * N, [cross_weights (B, h, n, m)] * N)``."""
        all_self, all_cross = [], []
        for layer in self.layers:
            x, self_weights, cross_weights = layer(x, memory, self_mask, memory_mask, need_weights=need_weights)
            all_self.append(self_weights)
            all_cross.append(cross_weights)
        if self.norm is not None:
            x = self.norm(x)
        return x, all_self, all_cross
