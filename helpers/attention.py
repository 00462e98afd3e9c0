"""Scaled dot-product attention and multi-head attention.

Vaswani et al., 2017: §3.2.1 (Eq. 1) and §3.2.2.

Shapes use one set of letters throughout the series:
``B`` batch, ``h`` heads, ``n`` query positions, ``m`` key positions,
``d_model`` model width, ``d_k`` query/key width, ``d_v`` value width.

Mask convention (everywhere in this package): a boolean tensor where ``True``
means "this query may attend to this key". This is the meaning of
``torch.nn.functional.scaled_dot_product_attention``'s boolean ``attn_mask``
and the *opposite* of ``torch.nn.MultiheadAttention``'s boolean masks.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import is_int, positive_int, shape_text

__all__ = [
    "MultiHeadAttention",
    "check_mask",
    "check_qkv",
    "combine_heads",
    "scaled_dot_product_attention",
    "split_heads",
]


def check_mask(mask: torch.Tensor | None, target_shape: tuple[int, ...]) -> None:
    """Raise ``ValueError`` unless ``mask`` is boolean and broadcasts to ``target_shape``.

    ``target_shape`` is the shape of the attention scores, ``(..., n, m)``.
    """
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a boolean torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "convert a 0/1 mask with mask.bool(), an additive -inf mask with mask == 0"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(target_shape):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"of shape {tuple(target_shape)} (..., n queries, m keys)"
        )


def check_qkv(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[int, ...]:
    """Raise ``ValueError`` unless Eq. 1's operands fit together; return the shape of the scores ``(..., n, m)``.

    ``query (..., n, d_k)``, ``key (..., m, d_k)``, ``value (..., m, d_v)``, leading dimensions broadcasting.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., positions, features), got shape {tuple(t.shape)}"
            )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query and key must have the same last dimension d_k: "
            f"query {tuple(query.shape)} has d_k={query.shape[-1]}, key {tuple(key.shape)} has d_k={key.shape[-1]}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key and value must have the same number of positions m: "
            f"key {tuple(key.shape)} has m={key.shape[-2]}, value {tuple(value.shape)} has m={value.shape[-2]}"
        )
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"leading (batch) dimensions do not broadcast: query {tuple(query.shape)}, "
            f"key {tuple(key.shape)}, value {tuple(value.shape)}"
        ) from None
    return (*batch, query.shape[-2], key.shape[-2])


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (§3.2.1, Eq. 1).

    Args:
        query: ``(..., n, d_k)``.
        key:   ``(..., m, d_k)``.
        value: ``(..., m, d_v)``.
        mask:  optional boolean tensor broadcastable to ``(..., n, m)``;
            ``True`` means the query may attend to the key.

    Returns:
        ``(output, weights)`` with ``output (..., n, d_v)`` and
        ``weights (..., n, m)``. Each row of ``weights`` sums to 1 over the
        allowed keys and is exactly 0 on masked keys. A query with no allowed
        key at all gets all-zero weights and a zero output (never NaN), and
        gradients stay finite.
    """
    scores_shape = check_qkv(query, key, value)
    check_mask(mask, scores_shape)

    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., n, m)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)  # normalise over the keys
    else:
        # Fill with the most negative finite number, not -inf: a row where every
        # key is masked then gives a uniform softmax instead of 0/0 = NaN, and we
        # zero those weights right after. In a row with at least one allowed key,
        # exp(finfo.min - max) underflows to exactly 0, as -inf would.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    return weights @ value, weights


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``x (B, n, d_model)`` -> ``(B, h, n, d_k)`` with ``d_k = d_model / h`` (§3.2.2).

    Head ``i`` gets features ``i * d_k`` to ``(i + 1) * d_k - 1`` of every position: ``view`` cuts each
    position's features into ``h`` blocks, ``(B, n, h, d_k)``, and ``transpose(1, 2)`` puts the head axis in
    front of the positions, so each head is its own ``(n, d_k)`` matrix (notebook 03, section 3).
    :func:`combine_heads` undoes it.
    """
    positive_int("num_heads", num_heads)
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        got = shape_text(x, dtype=False)
        raise ValueError(f"x must have shape (B, n, d_model) to split into heads, got {got}")
    B, n, d_model = x.shape
    if d_model % num_heads != 0:
        raise ValueError(
            f"x of shape {tuple(x.shape)} does not split into num_heads={num_heads}: d_model={d_model} is not "
            f"divisible by {num_heads} (each head needs d_k = d_model / num_heads features)"
        )
    return x.view(B, n, num_heads, d_model // num_heads).transpose(1, 2)  # (B, n, h, d_k) -> (B, h, n, d_k)


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    """``x (B, h, n, d_k)`` -> ``(B, n, h d_k)``: the paper's Concat (§3.2.2), the inverse of :func:`split_heads`.

    ``transpose(1, 2)`` brings the positions back in front of the heads, ``(B, n, h, d_k)``, and ``reshape``
    merges the last two axes, head 0's features first (after the transpose the tensor is no longer laid out
    row by row, so ``view`` would refuse; ``reshape`` copies).
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        got = shape_text(x, dtype=False)
        raise ValueError(f"x must have shape (B, h, n, d_k) to combine its heads, got {got}")
    B, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_k)  # (B, h, n, d_k) -> (B, n, h, d_k) -> (B, n, h d_k)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (§3.2.2).

    ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
    ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)``, ``W_i^Q, W_i^K`` of shape
    ``(d_model, d_k)``, ``W_i^V`` of shape ``(d_model, d_v)`` and ``W^O`` of shape
    ``(h d_v, d_model)``. The per-head projections ``W_i^Q`` are the column blocks
    of one ``nn.Linear(d_model, h * d_k)`` (``w_q``), and likewise for keys
    (``w_k``, ``h * d_k``) and values (``w_v``, ``h * d_v``); ``w_o`` maps
    ``h * d_v`` back to ``d_model``.

    Args:
        d_model: model width; must be divisible by ``num_heads`` unless both
            ``d_k`` and ``d_v`` are given.
        num_heads: ``h``.
        dropout: dropout on the attention weights (training mode only); the
            weights returned in training are the ones after dropout.
        bias: whether the four linear layers have a bias (the paper's equations
            have none; PyTorch's ``nn.MultiheadAttention`` has one by default).
        d_k: query/key width per head; defaults to ``d_model // num_heads``
            (the paper's base model: 64). Table 3, rows (B), vary it alone.
        d_v: value width per head; defaults to ``d_model // num_heads``.
        num_kv_heads: grouped-query attention (GQA; Ainslie et al., 2023), not in
            the paper. ``None`` (the default) is the paper's multi-head attention,
            one key/value head per query head. Otherwise ``w_k`` and ``w_v`` make
            only ``num_kv_heads`` key/value heads (``d_model -> num_kv_heads * d_k``)
            and each serves ``num_heads // num_kv_heads`` consecutive query heads:
            query head ``i`` uses key/value head ``i // (num_heads // num_kv_heads)``,
            as ``F.scaled_dot_product_attention(..., enable_gqa=True)`` does.
            ``num_kv_heads=1`` is multi-query attention (MQA; Shazeer, 2019).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        d_k: int | None = None,
        d_v: int | None = None,
        num_kv_heads: int | None = None,
    ):
        super().__init__()
        positive_int("d_model", d_model)
        positive_int("num_heads", num_heads)
        for name, width in (("d_k", d_k), ("d_v", d_v)):
            if width is not None:
                positive_int(name, width, "or None, for d_model / num_heads")
        if (d_k is None or d_v is None) and d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}: "
                f"each head needs d_k = d_model / num_heads = {d_model / num_heads:g} features"
            )
        if num_kv_heads is not None and (not is_int(num_kv_heads) or num_kv_heads <= 0 or num_heads % num_kv_heads):
            raise ValueError(
                f"num_kv_heads must be None or a positive integer that divides num_heads={num_heads} "
                f"(each key/value head serves num_heads / num_kv_heads query heads), got {num_kv_heads!r}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        self.d_k = d_model // num_heads if d_k is None else d_k
        self.d_v = d_model // num_heads if d_v is None else d_v
        self.dropout = dropout
        h_kv = self.num_kv_heads
        self.w_q = nn.Linear(d_model, num_heads * self.d_k, bias=bias)  # the h blocks W_i^Q side by side
        self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=bias)  # h_kv = h blocks, unless grouped
        self.w_v = nn.Linear(d_model, h_kv * self.d_v, bias=bias)
        self.w_o = nn.Linear(num_heads * self.d_v, d_model, bias=bias)  # W^O

    def _check_inputs(self, query, key, value, mask) -> None:
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                got = shape_text(t, dtype=False)
                raise ValueError(f"{name} must have shape (B, positions, d_model={self.d_model}), got {got}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same number of positions m: key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"query, key and value must have the same batch size B: "
                f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        self._check_mask(mask, query.shape[0], query.shape[1], key.shape[1])

    def _check_mask(self, mask, B: int, n: int, m: int) -> None:
        """A mask is the same for every head, ``(B, n, m)``, or given per head, ``(B, h, n, m)``."""
        if mask is not None and isinstance(mask, torch.Tensor) and mask.dim() == 4:
            check_mask(mask, (B, self.num_heads, n, m))
        else:
            check_mask(mask, (B, n, m))

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query (B, n, d_model)`` to ``key, value (B, m, d_model)``.

        ``mask`` is boolean, ``True`` = may attend, broadcastable to
        ``(B, n, m)`` (the same for every head) or given per head as a 4-D
        tensor broadcastable to ``(B, h, n, m)``.

        Returns ``(output (B, n, d_model), weights (B, h, n, m))``. With
        ``need_weights=False`` the heads run through PyTorch's fused
        ``F.scaled_dot_product_attention`` (the fast training path) and
        ``weights`` is ``None``.

        In training mode with ``dropout > 0`` the returned ``weights`` are the
        ones multiplied with the values, after dropout (kept entries scaled by
        ``1 / (1 - dropout)``, so a row no longer sums to 1), as
        ``nn.MultiheadAttention`` returns them. In eval mode, or with
        ``dropout=0``, each row sums to 1 over the allowed keys (a query with
        no allowed key gets a row of zeros).
        """
        self._check_inputs(query, key, value, mask)
        h, h_kv, d_k, d_v = self.num_heads, self.num_kv_heads, self.d_k, self.d_v

        if query is key and key is value:
            # Self-attention: one matmul against the three stacked weight
            # matrices is faster than three (same maths, same parameters).
            weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
            bias = None if self.w_q.bias is None else torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
            q, k, v = F.linear(query, weight, bias).split([h * d_k, h_kv * d_k, h_kv * d_v], dim=-1)
            k = split_heads(k, h_kv)  # (B, m, h_kv d_k) -> (B, h_kv, m, d_k)
            v = split_heads(v, h_kv)  # (B, m, h_kv d_v) -> (B, h_kv, m, d_v)
        else:
            q = self.w_q(query)  # (B, n, h d_k)
            k, v = self.project_kv(key, value)  # (B, h_kv, m, d_k), (B, h_kv, m, d_v)
        return self._attend_projected(q, k, v, mask, need_weights)

    def project_kv(self, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The key and value heads: ``key, value (B, m, d_model)`` -> ``k (B, h_kv, m, d_k)``, ``v (B, h_kv, m, d_v)``.

        ``h_kv`` is ``num_kv_heads`` (``num_heads`` unless grouped). These are what a decoder keeps in
        its cache (notebook 11): a key position's heads never change once computed.
        """
        for name, t in (("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                got = shape_text(t, dtype=False)
                raise ValueError(f"{name} must have shape (B, positions, d_model={self.d_model}), got {got}")
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"key {tuple(key.shape)} and value {tuple(value.shape)} must have the same (B, m)")
        k = split_heads(self.w_k(key), self.num_kv_heads)  # (B, m, h_kv d_k) -> (B, h_kv, m, d_k)
        v = split_heads(self.w_v(value), self.num_kv_heads)  # (B, m, h_kv d_v) -> (B, h_kv, m, d_v)
        return k, v

    def attend(
        self,
        query: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Like :meth:`forward`, but with the key and value heads given (from :meth:`project_kv`, or a cache).

        ``query (B, n, d_model)``, ``k (B, h_kv, m, d_k)``, ``v (B, h_kv, m, d_v)``; ``mask`` as in
        :meth:`forward`. Returns ``(output (B, n, d_model), weights (B, h, n, m) or None)``.
        """
        if not isinstance(query, torch.Tensor) or query.dim() != 3 or query.shape[-1] != self.d_model:
            got = shape_text(query, dtype=False)
            raise ValueError(f"query must have shape (B, n, d_model={self.d_model}), got {got}")
        B = query.shape[0]
        for name, t, width in (("k", k, self.d_k), ("v", v, self.d_v)):
            want = (B, self.num_kv_heads, "m", width)
            if (
                not isinstance(t, torch.Tensor)
                or t.dim() != 4
                or t.shape[0] != B
                or t.shape[1] != self.num_kv_heads
                or t.shape[3] != width
            ):
                got = shape_text(t, dtype=False)
                raise ValueError(f"{name} must have shape {want} (B, h_kv, m, width), got {got}")
        if k.shape[2] != v.shape[2]:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must have the same number of positions m")
        self._check_mask(mask, B, query.shape[1], k.shape[2])
        return self._attend_projected(self.w_q(query), k, v, mask, need_weights)

    def _attend_projected(self, q, k, v, mask, need_weights):
        """``q (B, n, h d_k)`` projected queries, ``k, v`` key/value heads -> ``(output, weights)``."""
        h, h_kv = self.num_heads, self.num_kv_heads
        # Split the features into h heads of d_k features; the transpose puts the
        # head axis before the positions so each head is its own (n, d_k) matrix.
        q = split_heads(q, h)  # (B, n, h d_k) -> (B, h, n, d_k)
        if h_kv != h:
            # Grouped-query attention: key/value head j serves query heads
            # j * g, ..., j * g + g - 1, with g = h / h_kv query heads per group.
            k = k.repeat_interleave(h // h_kv, dim=1)  # (B, h_kv, m, d_k) -> (B, h, m, d_k)
            v = v.repeat_interleave(h // h_kv, dim=1)  # (B, h_kv, m, d_v) -> (B, h, m, d_v)

        if mask is not None and mask.dim() < 4:
            mask = mask.unsqueeze(-3)  # (B, n, m) -> (B, 1, n, m): the same for all heads

        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, n, d_v), (B, h, n, m)
            if dropout_p > 0.0:
                # Return the weights actually multiplied with V, as nn.MultiheadAttention
                # does: after dropout, so in training a row no longer sums to 1.
                weights = F.dropout(weights, dropout_p)
                heads = weights @ v
        else:
            weights = None
            empty_rows = None
            if mask is not None:
                # A query with no allowed key: PyTorch 2.13's CPU kernel returns
                # zeros there, but older versions (before 2.5) and some GPU kernels
                # return NaN. Let it attend everywhere, then zero its output below,
                # so the result is zeros on every backend.
                empty_rows = ~mask.any(dim=-1, keepdim=True)  # (..., n, 1)
                mask = mask | empty_rows
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
            if empty_rows is not None:
                heads = heads.masked_fill(empty_rows, 0.0)

        # Concatenate the heads back into h d_v features, then mix them with W^O.
        concat = combine_heads(heads)  # (B, h, n, d_v) -> (B, n, h d_v)
        return self.w_o(concat), weights
