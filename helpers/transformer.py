"""The whole Transformer of "Attention Is All You Need": embeddings, encoder, decoder, pre-softmax projection.

Vaswani et al., 2017: §3 and Figure 1 (the model), §3.1 (encoder and decoder stacks),
§3.4 (embeddings scaled by sqrt(d_model); one weight matrix shared by both embeddings
and the pre-softmax linear transformation), §3.5 (sinusoidal positions), §5.1 (a shared
source-target vocabulary of about 37,000 tokens), §5.4 (dropout), Table 3 (model sizes).

Token ids are integer tensors ``(B, n)``. The source mask is a key-padding mask in the
series' convention (``True`` = a real token that may be attended to), shape ``(B, 1, m)``
as ``helpers.masks.padding_mask(src_lengths)`` returns it. The decoder's causal mask is
built inside :meth:`Transformer.decode`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from helpers.checks import non_negative_int, positive_int, shape_text
from helpers.decoder import Decoder, KVCache
from helpers.encoder import Encoder, PositionalEncoding
from helpers.masks import causal_mask

__all__ = ["TABLE3", "Transformer", "shift_right"]

TABLE3 = {
    # Table 3 rows with a parameter count: row -> (settings that differ from the base model, parameters in millions).
    # Unlisted settings equal the base row: N=6, d_model=512, d_ff=2048, h=8, d_k=d_v=64.
    "base": ({}, 65),
    "(B) d_k=16": ({"d_k": 16}, 58),
    "(B) d_k=32": ({"d_k": 32}, 60),
    "(C) N=2": ({"num_layers": 2}, 36),
    "(C) N=4": ({"num_layers": 4}, 50),
    "(C) N=8": ({"num_layers": 8}, 80),
    "(C) d_model=256": ({"d_model": 256, "d_k": 32, "d_v": 32}, 28),
    "(C) d_model=1024": ({"d_model": 1024, "d_k": 128, "d_v": 128}, 168),
    "(C) d_ff=1024": ({"d_ff": 1024}, 53),
    "(C) d_ff=4096": ({"d_ff": 4096}, 90),
    "big": ({"d_model": 1024, "d_ff": 4096, "num_heads": 16}, 213),
}


def shift_right(targets: torch.Tensor, bos_id: int) -> torch.Tensor:
    """The decoder's input for teacher forcing (§3.1): ``<bos>``, then ``targets`` without their last position.

    ``targets (B, n)`` integer ids -> ``(B, n)``: position ``i`` of the result holds target token ``i - 1``,
    so the prediction at position ``i`` (which sees positions ``<= i`` only) is a prediction of token ``i``.
    """
    if not isinstance(targets, torch.Tensor) or targets.dim() != 2 or targets.is_floating_point():
        raise ValueError(f"targets must be integer token ids of shape (B, n), got {shape_text(targets)}")
    non_negative_int("bos_id", bos_id, "a token id")
    bos = torch.full_like(targets[:, :1], bos_id)  # (B, 1)
    return torch.cat([bos, targets[:, :-1]], dim=1)  # (B, 1) + (B, n - 1) -> (B, n)


class Transformer(nn.Module):
    """The encoder-decoder Transformer (§3, Figure 1), post-norm as in the paper by default.

    ``src ids (B, m)`` -> embedding x sqrt(d_model) + positions -> ``Encoder`` -> ``memory (B, m, d_model)``;
    ``tgt ids (B, n)`` -> embedding x sqrt(d_model) + positions -> ``Decoder`` (causal self-attention,
    cross-attention over ``memory``) -> pre-softmax linear -> ``logits (B, n, tgt_vocab_size)``.

    With ``share_embeddings=True`` (§3.4) the source embedding, the target embedding and the pre-softmax
    projection are one ``(vocab_size, d_model)`` weight matrix (``model.parameters()`` yields it once); this
    needs one shared vocabulary, so the two sizes must be equal. The projection has no bias. The shared
    matrix starts as ``N(0, 1 / d_model)``, so that an embedding times sqrt(d_model) has entries of size
    about 1, like the positional encoding's.

    ``norm_first=True`` gives the pre-norm variant (not in the paper), with a final LayerNorm on both stacks.
    ``d_k`` and ``d_v`` set the per-head widths of every attention (Table 3, rows (B)).

    ``num_kv_heads`` (not in the paper; notebook 11) makes the decoder's self- and cross-attention grouped-query
    attention, ``num_kv_heads`` key/value heads shared by ``num_heads`` query heads (1: multi-query attention), which
    shrinks the decoder's key/value cache by ``num_heads / num_kv_heads``. The encoder's self-attention stays
    multi-head, as in Ainslie et al. (2023, §2.2): the encoder keeps no cache and runs every position at once, so
    sharing there would narrow it without making decoding faster. (``helpers.encoder.Encoder`` takes
    ``num_kv_heads`` too, for an encoder built on its own.) ``None``, the default, is multi-head attention everywhere.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        num_heads: int = 8,
        num_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        d_k: int | None = None,
        d_v: int | None = None,
        num_kv_heads: int | None = None,
        max_len: int = 5000,
        share_embeddings: bool = True,
        norm_first: bool = False,
    ):
        super().__init__()
        for name, value in (
            ("src_vocab_size", src_vocab_size),
            ("tgt_vocab_size", tgt_vocab_size),
            ("d_model", d_model),
            ("num_heads", num_heads),
            ("num_layers", num_layers),
            ("d_ff", d_ff),
            ("max_len", max_len),
        ):
            positive_int(name, value)
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                f"share_embeddings=True needs one shared vocabulary (§3.4, §5.1), but src_vocab_size="
                f"{src_vocab_size} != tgt_vocab_size={tgt_vocab_size}; pass share_embeddings=False"
            )
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        self.d_model = d_model
        self.share_embeddings = share_embeddings

        self.src_embedding = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embedding = self.src_embedding if share_embeddings else nn.Embedding(tgt_vocab_size, d_model)
        self.positional = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)  # adds PE, then dropout
        layer = {"dropout": dropout, "norm_first": norm_first, "d_k": d_k, "d_v": d_v}
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, **layer)  # multi-head, whatever num_kv_heads
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, **layer, num_kv_heads=num_kv_heads)
        self.projection = nn.Linear(d_model, tgt_vocab_size, bias=False)  # the pre-softmax linear transformation
        for embedding in [self.src_embedding] + ([] if share_embeddings else [self.tgt_embedding]):
            nn.init.normal_(embedding.weight, std=d_model**-0.5)
        if share_embeddings:
            self.projection.weight = self.src_embedding.weight  # one Parameter, three uses (§3.4)
        else:
            nn.init.normal_(self.projection.weight, std=d_model**-0.5)

    # --- input checks --------------------------------------------------------------------------

    def _check_ids(self, ids, vocab_size: int, name: str) -> None:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            got = shape_text(ids, dtype=False)
            raise ValueError(f"{name} must be token ids of shape (B, positions), got {got}")
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
            raise ValueError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
        if ids.shape[1] == 0:
            raise ValueError(f"{name} must hold at least one position, got shape {tuple(ids.shape)}")
        if ids.device.type != "meta" and ids.numel() > 0:
            low, high = int(ids.min()), int(ids.max())
            if low < 0 or high >= vocab_size:
                raise ValueError(f"{name} holds ids from {low} to {high}, outside the vocabulary [0, {vocab_size})")

    @staticmethod
    def _check_src_mask(src_mask, batch: int, m: int) -> None:
        if src_mask is None:
            return
        if not isinstance(src_mask, torch.Tensor) or src_mask.dtype != torch.bool:
            got = src_mask.dtype if isinstance(src_mask, torch.Tensor) else type(src_mask).__name__
            raise ValueError(f"src_mask must be a boolean tensor (True = real source token), got {got}")
        if (
            src_mask.dim() != 3
            or src_mask.shape[1] != 1
            or src_mask.shape[2] != m
            or src_mask.shape[0] not in (1, batch)
        ):
            raise ValueError(
                f"src_mask must be a key-padding mask of shape (B={batch}, 1, m={m}), as padding_mask(src_lengths) "
                f"returns it, got {tuple(src_mask.shape)}"
            )

    # --- the model -----------------------------------------------------------------------------

    def embed(self, ids: torch.Tensor, embedding: nn.Embedding, start: int = 0) -> torch.Tensor:
        """Token ids ``(B, n)`` -> ``embedding(ids) * sqrt(d_model) + PE`` (§3.4, §3.5), then dropout (§5.4).

        The ids sit at positions ``start, ..., start + n - 1`` (``start > 0`` when decoding with a cache).
        """
        return self.positional(embedding(ids) * math.sqrt(self.d_model), start)  # (B, n) -> (B, n, d_model)

    def encode(
        self, src: torch.Tensor, src_mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """``src (B, m)`` ids -> ``(memory (B, m, d_model), [weights (B, h, m, m)] per layer)``.

        ``src_mask`` ``(B, 1, m)``: ``True`` at real source tokens (``padding_mask(src_lengths)``).
        """
        self._check_ids(src, self.src_vocab_size, "src")
        self._check_src_mask(src_mask, src.shape[0], src.shape[1])
        return self.encoder(self.embed(src, self.src_embedding), src_mask, need_weights=need_weights)

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor | None], list[torch.Tensor | None]]:
        """``tgt (B, n)`` ids and ``memory (B, m, d_model)`` -> ``(logits (B, n, tgt_vocab_size), self_weights,
        cross_weights)``, the weights one ``(B, h, n, n)`` / ``(B, h, n, m)`` tensor per layer.

        Position i's logits predict token i + 1: the decoder's self-attention is causal (built here), so they
        depend on ``tgt[:, : i + 1]`` only. ``src_mask`` is the source's ``(B, 1, m)`` padding mask.

        With ``cache`` (a :class:`helpers.decoder.KVCache`, empty at the first step), ``tgt`` holds only the
        positions after the ``t = cache.length`` already fed: they are embedded at positions ``t, t + 1, ...``,
        attend to the cached keys and values and to each other causally (``causal_mask(n, past=t)``, aligned
        to the lower right), and are added to the cache. The logits are those of the new positions only, and
        equal the last ``n`` rows of a call without a cache on the whole sequence. The self-attention weights
        are then ``(B, h, n, t + n)``.
        """
        self._check_ids(tgt, self.tgt_vocab_size, "tgt")
        if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.shape[-1] != self.d_model:
            got = shape_text(memory, dtype=False)
            raise ValueError(f"memory must have shape (B, m, d_model={self.d_model}), got {got}")
        if memory.shape[0] != tgt.shape[0]:
            raise ValueError(f"tgt {tuple(tgt.shape)} and memory {tuple(memory.shape)} must have the same batch size B")
        self._check_src_mask(src_mask, tgt.shape[0], memory.shape[1])
        n = tgt.shape[1]
        if cache is None:
            past = 0
        elif not isinstance(cache, KVCache):
            raise ValueError(f"cache must be a helpers.decoder.KVCache or None, got {type(cache).__name__}")
        else:
            past = cache.length  # positions already fed
        # Query i (position past + i) sees keys j <= past + i: the triangle sits at the lower right.
        # One new position may see every key, so it needs no mask at all.
        self_mask = None if past > 0 and n == 1 else causal_mask(n, past=past, device=tgt.device)
        out, self_weights, cross_weights = self.decoder(
            self.embed(tgt, self.tgt_embedding, start=past),
            memory,
            self_mask,
            src_mask,
            need_weights=need_weights,
            cache=cache,
        )
        return self.projection(out), self_weights, cross_weights  # (B, n, d_model) -> (B, n, tgt_vocab_size)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher forcing: ``src (B, m)``, ``tgt (B, n)`` (the shifted-right target) -> ``logits (B, n, tgt_vocab)``.

        Runs the fused attention path (no weights kept), as training does.
        """
        memory, _ = self.encode(src, src_mask, need_weights=False)
        logits, _, _ = self.decode(tgt, memory, src_mask, need_weights=False)
        return logits
