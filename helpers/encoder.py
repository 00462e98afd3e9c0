"""The Transformer encoder: positional encoding, feed-forward network, encoder block and stack.

Vaswani et al., 2017: §3.1 (encoder, residual connections, LayerNorm), §3.3 (Eq. 2,
position-wise feed-forward), §3.4 (embeddings scaled by sqrt(d_model)), §3.5
(sinusoidal positional encoding), §5.4 (residual dropout).

Masks follow the series' convention: boolean, ``True`` = this query may attend to this key.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.checks import is_int, non_negative_int, positive_int, shape_text

__all__ = ["Encoder", "EncoderBlock", "FeedForward", "PositionalEncoding", "positional_encoding"]

ACTIVATIONS = {"relu": torch.relu, "gelu": F.gelu}  # F.gelu: the exact x * Phi(x), as BERT uses it


def check_activation(activation) -> str:
    """``activation`` if it names one of :data:`ACTIVATIONS`; otherwise a ValueError listing them."""
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"activation must be one of {sorted(ACTIVATIONS)} (relu: the paper's Eq. 2; gelu: BERT's), "
            f"got {activation!r}"
        )
    return activation


def check_eps(eps) -> float:
    """LayerNorm's eps, added to the variance before the square root: a finite number > 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < float("inf"):
        raise ValueError(f"eps (LayerNorm's guard against dividing by zero) must be a finite number > 0, got {eps!r}")
    return float(eps)


def _check_sequence(x, d_model: int, who: str) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{who} expects input of shape (B, n, d_model={d_model}), got {shape_text(x, dtype=False)}")


def positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table of §3.5, shape ``(max_len, d_model)``, float32.

    ``PE[pos, 2i] = sin(pos / 10000^(2i / d_model))`` and
    ``PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))``: each pair of
    dimensions is a sine and a cosine of one frequency, with wavelengths from
    ``2 pi`` (i = 0) towards ``10000 * 2 pi``.
    """
    positive_int("max_len", max_len)
    if not is_int(d_model) or d_model <= 0 or d_model % 2 != 0:
        raise ValueError(
            f"d_model must be a positive even integer for sinusoidal encoding "
            f"(one sine and one cosine per frequency), got {d_model!r}"
        )
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,) the even dimensions 2i
    angle = position / 10000.0 ** (two_i / d_model)  # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()  # computed in float64, stored like the rest of the model


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``(B, n, d_model)`` inputs, then applies dropout (§3.5, §5.4)."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``x (B, n, d_model)`` holds positions ``start, ..., start + n - 1`` (``start > 0``: a decoder
        that feeds only its newest positions, notebook 11)."""
        _check_sequence(x, self.d_model, "PositionalEncoding")
        non_negative_int("start", start, "the position of x's first row")
        n = x.shape[1]
        if start + n > self.max_len:
            where = f"sequence length n={n}" if start == 0 else f"positions {start} to {start + n - 1}"
            raise ValueError(f"{where} exceeds max_len={self.max_len} of this PositionalEncoding")
        return self.dropout(x + self.pe[start : start + n])  # (B, n, d_model) + (n, d_model)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position alike (§3.3, Eq. 2).

    ``(B, n, d_model) -> (B, n, d_ff) -> (B, n, d_model)``. Dropout (if any)
    sits after the ReLU, where ``nn.TransformerEncoderLayer`` puts it.
    ``activation="gelu"`` puts GELU, ``x * Phi(x)`` (Hendrycks and Gimpel, 2016;
    not in the paper), in the ReLU's place, as BERT does.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        self.activation = check_activation(activation)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


class EncoderBlock(nn.Module):
    """One encoder layer: self-attention and feed-forward, each with a residual and LayerNorm (§3.1).

    ``norm_first=False`` is the paper's post-norm, ``LayerNorm(x + Sublayer(x))``;
    ``norm_first=True`` is pre-norm, ``x + Sublayer(LayerNorm(x))``, which is not
    in the paper but trains more easily in deep stacks. Dropout is applied to
    each sub-layer's output before the residual add (§5.4) and inside the
    attention and feed-forward, as in ``nn.TransformerEncoderLayer``.
    ``d_k`` and ``d_v`` set the per-head widths (default ``d_model // num_heads``;
    §3.2.2, Table 3 rows (B)). ``activation`` is the feed-forward's (``"relu"``, the
    paper's, or ``"gelu"``) and ``eps`` both LayerNorms' (PyTorch's default 1e-5;
    BERT uses 1e-12).
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
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _attend(self, x, mask, need_weights):
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights)
        return self.dropout1(out), weights

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x (B, n, d_model)`` -> ``(output (B, n, d_model), weights (B, h, n, n))``.

        ``mask`` is boolean, ``True`` = may attend, broadcastable to ``(B, n, n)``
        (for example ``helpers.masks.padding_mask(lengths)`` of shape ``(B, 1, n)``).
        """
        _check_sequence(x, self.d_model, "EncoderBlock")
        if self.norm_first:
            attended, weights = self._attend(self.norm1(x), mask, need_weights)
            x = x + attended
            x = x + self.dropout2(self.feed_forward(self.norm2(x)))
        else:
            attended, weights = self._attend(x, mask, need_weights)
            x = self.norm1(x + attended)
            x = self.norm2(x + self.dropout2(self.feed_forward(x)))
        return x, weights


class Encoder(nn.Module):
    """A stack of ``num_layers`` encoder blocks (§3.1: N = 6 in the paper).

    With ``norm_first=True`` a final LayerNorm follows the last block (pre-norm
    blocks leave their output un-normalised); post-norm needs none.
    ``forward`` returns the output and a list with each layer's attention
    weights, ``(B, h, n, n)`` each. ``activation`` and ``eps`` reach every block
    (and the final LayerNorm), as in :class:`EncoderBlock`.
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
            EncoderBlock(
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
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = True
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights=need_weights)
            all_weights.append(weights)
        if self.norm is not None:
            x = self.norm(x)
        return x, all_weights
