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
from helpers.checks import positive_int, shape_text
from helpers.encoder import FeedForward, check_activation, check_eps

__all__ = ["Decoder", "DecoderBlock", "KVCache"]


def _check_decoder_inputs(x, memory, d_model: int, who: str) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{who} expects x of shape (B, n, d_model={d_model}), got {shape_text(x, dtype=False)}")
    if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.shape[-1] != d_model:
        raise ValueError(
            f"{who} expects memory (the encoder's output) of shape (B, m, d_model={d_model}), got {shape_text(memory, dtype=False)}"
        )
    if x.shape[0] != memory.shape[0]:
        raise ValueError(f"{who}: x {tuple(x.shape)} and memory {tuple(memory.shape)} must have the same batch size B")


class KVCache:
    """What a decoder keeps between decoding steps: each layer's key and value heads (notebook 11).

    A decoder's position ``j`` depends only on positions ``<= j`` (its self-attention is causal), so
    the keys and values a layer computed for earlier positions never change as the output grows.
    Decoding with a cache feeds only the newest position; each layer appends that position's key and
    value heads to ``self_k`` / ``self_v`` (self-attention), and computes ``cross_k`` / ``cross_v`` from
    the encoder's output once, at the first step (cross-attention).

    ``layers[i]`` is a dict for layer ``i`` with tensors ``self_k (B, h_kv, t, d_k)``, ``self_v
    (B, h_kv, t, d_v)``, ``cross_k (B, h_kv, m, d_k)`` and ``cross_v (B, h_kv, m, d_v)``, ``t`` the
    positions fed so far. Make an empty one with ``KVCache()`` and pass it to every step of
    ``Transformer.decode(..., cache=cache)``, or to ``Decoder`` / ``DecoderBlock``.
    """

    def __init__(self) -> None:
        self.layers: list[dict[str, torch.Tensor]] = []

    def layer(self, index: int) -> dict[str, torch.Tensor]:
        """The dict of layer ``index``, made empty the first time a layer asks for it."""
        while len(self.layers) <= index:
            self.layers.append({})
        return self.layers[index]

    @property
    def length(self) -> int:
        """Positions fed so far (0 for an empty cache)."""
        if not self.layers or "self_k" not in self.layers[0]:
            return 0
        return self.layers[0]["self_k"].shape[-2]

    @property
    def batch_size(self) -> int | None:
        """The number of sequences the cache holds (``None`` while empty)."""
        for entry in self.layers:
            for t in entry.values():
                return t.shape[0]
        return None

    def nbytes(self, which: str = "all") -> int:
        """Bytes held: ``"self"`` (grows with every step), ``"cross"`` (fixed by the source) or ``"all"``."""
        if which not in ("self", "cross", "all"):
            raise ValueError(f"which must be 'self', 'cross' or 'all', got {which!r}")
        return sum(
            t.numel() * t.element_size()
            for entry in self.layers
            for name, t in entry.items()
            if which == "all" or name.startswith(which)
        )

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the sequences ``index`` in that order (beam search: each new hypothesis takes its parent's row).

        ``index`` is a 1-D integer tensor of row numbers; a row may appear more than once (two
        hypotheses that extend the same parent) or not at all (a hypothesis that was dropped).

        Every entry is reordered, the cross-attention's too. In beam search each live hypothesis then
        holds its own copy of its sentence's ``cross_k`` / ``cross_v``, identical for all hypotheses of
        one sentence: up to ``beam_size`` copies where one per sentence, broadcast over its hypotheses,
        would do. We keep the copies for simplicity; the self-attention entries do differ per hypothesis.
        """
        size = self.batch_size
        if (
            not isinstance(index, torch.Tensor)
            or index.dim() != 1
            or index.is_floating_point()
            or index.dtype == torch.bool
        ):
            raise ValueError(f"index must be a 1-D integer tensor of row numbers, got {index!r}")
        if size is not None and index.numel() and (int(index.min()) < 0 or int(index.max()) >= size):
            raise ValueError(f"index holds rows {index.tolist()}, outside the {size} sequences of this cache")
        for entry in self.layers:
            for name, t in entry.items():
                entry[name] = t.index_select(0, index.to(t.device))

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.layers)}, length={self.length}, batch_size={self.batch_size})"


def _check_cache(cache, x, memory) -> None:
    if not isinstance(cache, dict):
        raise ValueError(f"cache must be one layer's dict from KVCache.layer(i), got {type(cache).__name__}")
    if "self_k" in cache and cache["self_k"].shape[0] != x.shape[0]:
        raise ValueError(
            f"the cache holds {cache['self_k'].shape[0]} sequences but x {tuple(x.shape)} has {x.shape[0]}; "
            "reorder the cache to the batch first (KVCache.reorder)"
        )
    if "cross_k" in cache and cache["cross_k"].shape[-2] != memory.shape[1]:
        raise ValueError(
            f"the cache's cross-attention keys cover m={cache['cross_k'].shape[-2]} source positions, "
            f"but memory {tuple(memory.shape)} has m={memory.shape[1]}"
        )


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
    both attentions (§3.2.2; Table 3, rows (B)), and so is ``num_kv_heads`` (grouped-query attention,
    not in the paper; see :class:`helpers.attention.MultiHeadAttention`). ``activation`` is the
    feed-forward's (``"relu"``, the paper's, or ``"gelu"``) and ``eps`` the three LayerNorms' (PyTorch's
    default 1e-5), as in :class:`helpers.encoder.EncoderBlock`.
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
        num_kv_heads: int | None = None,
        activation: str = "relu",
        eps: float = 1e-5,
    ):
        super().__init__()
        eps = check_eps(eps)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads
        )
        self.cross_attn = MultiHeadAttention(
            d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads
        )
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.norm3 = nn.LayerNorm(d_model, eps=eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def _self(self, x, mask, need_weights, cache):
        if cache is None:
            out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights)
        else:
            # Project only the new positions, append their key/value heads to the ones kept, attend to all.
            k, v = self.self_attn.project_kv(x, x)  # (B, h_kv, t_new, d_k), (B, h_kv, t_new, d_v)
            if "self_k" in cache:
                k = torch.cat([cache["self_k"], k], dim=-2)  # (B, h_kv, t_past + t_new, d_k)
                v = torch.cat([cache["self_v"], v], dim=-2)
            cache["self_k"], cache["self_v"] = k, v
            out, weights = self.self_attn.attend(x, k, v, mask=mask, need_weights=need_weights)
        return self.dropout1(out), weights

    def _cross(self, x, memory, mask, need_weights, cache):
        if cache is None:
            out, weights = self.cross_attn(x, memory, memory, mask=mask, need_weights=need_weights)
        else:
            if "cross_k" not in cache:  # the encoder's output is fixed: project it once, at the first step
                cache["cross_k"], cache["cross_v"] = self.cross_attn.project_kv(memory, memory)
            out, weights = self.cross_attn.attend(
                x, cache["cross_k"], cache["cross_v"], mask=mask, need_weights=need_weights
            )
        return self.dropout2(out), weights

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        src_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        cache: dict[str, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``x (B, n, d_model)``, ``memory (B, m, d_model)`` -> ``(output, self_weights, cross_weights)``.

        ``self_mask`` is boolean, broadcastable to ``(B, n, n)``: for a decoder,
        ``helpers.masks.causal_mask(n)`` (query i sees keys j <= i). ``src_mask``, the
        source's padding mask, is boolean, broadcastable to ``(B, n, m)``: typically
        ``helpers.masks.padding_mask(src_lengths)`` of shape ``(B, 1, m)``.
        Returns ``output (B, n, d_model)``, ``self_weights (B, h, n, n)`` and
        ``cross_weights (B, h, n, m)`` (both ``None`` with ``need_weights=False``).

        With ``cache`` (one layer's dict, ``KVCache().layer(i)``), ``x`` holds only the positions after
        the ``t`` already in the cache: their keys and values are appended to it, and ``self_mask`` must
        then cover all ``t + n`` keys, ``(n, t + n)`` (``causal_mask(n, past=t)``, or ``None`` for one new
        position, which may see everything); the weights are ``(B, h, n, t + n)``.
        """
        _check_decoder_inputs(x, memory, self.d_model, "DecoderBlock")
        if cache is not None:
            _check_cache(cache, x, memory)
        if self.norm_first:
            attended, self_weights = self._self(self.norm1(x), self_mask, need_weights, cache)
            x = x + attended
            attended, cross_weights = self._cross(self.norm2(x), memory, src_mask, need_weights, cache)
            x = x + attended
            x = x + self.dropout3(self.feed_forward(self.norm3(x)))
        else:
            attended, self_weights = self._self(x, self_mask, need_weights, cache)
            x = self.norm1(x + attended)
            attended, cross_weights = self._cross(x, memory, src_mask, need_weights, cache)
            x = self.norm2(x + attended)
            x = self.norm3(x + self.dropout3(self.feed_forward(x)))
        return x, self_weights, cross_weights


class Decoder(nn.Module):
    """A stack of ``num_layers`` decoder blocks (§3.1: N = 6 in the paper).

    Every block receives the same ``memory`` (the encoder stack's output) and the
    same masks. With ``norm_first=True`` a final LayerNorm follows the last block,
    as in ``helpers.encoder.Encoder``; the paper's post-norm stack has none. ``activation`` and ``eps``
    reach every block (and the final LayerNorm), as in :class:`DecoderBlock`.
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
        num_kv_heads: int | None = None,
        activation: str = "relu",
        eps: float = 1e-5,
    ):
        super().__init__()
        positive_int("num_layers", num_layers)
        check_activation(activation)
        eps = check_eps(eps)
        self.layers = nn.ModuleList(
            DecoderBlock(
                d_model,
                num_heads,
                d_ff,
                dropout=dropout,
                norm_first=norm_first,
                d_k=d_k,
                d_v=d_v,
                num_kv_heads=num_kv_heads,
                activation=activation,
                eps=eps,
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model, eps=eps) if norm_first else None

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        src_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor | None], list[torch.Tensor | None]]:
        """Returns ``(output (B, n, d_model), [self_weights (B, h, n, n)] * N, [cross_weights (B, h, n, m)] * N)``.

        With a :class:`KVCache`, ``x`` holds only the new positions and each layer uses and extends its
        own entry of the cache (see :meth:`DecoderBlock.forward` for the mask).
        """
        if cache is not None and not isinstance(cache, KVCache):
            raise ValueError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        all_self, all_cross = [], []
        for i, layer in enumerate(self.layers):
            entry = None if cache is None else cache.layer(i)
            x, self_weights, cross_weights = layer(
                x, memory, self_mask, src_mask, need_weights=need_weights, cache=entry
            )
            all_self.append(self_weights)
            all_cross.append(cross_weights)
        if self.norm is not None:
            x = self.norm(x)
        return x, all_self, all_cross
