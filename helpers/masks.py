"""Boolean attention masks in the series' one convention: ``True`` = may attend.

Both functions return masks that broadcast against attention scores of shape
``(B, n, m)`` (and, through :class:`helpers.attention.MultiHeadAttention`,
``(B, h, n, m)``). Vaswani et al., 2017, §3.2.3 (masking illegal connections
in the decoder) and §3.1 (queries see only earlier positions).
"""

from __future__ import annotations

import torch

from helpers.checks import non_negative_int, positive_int

__all__ = ["causal_mask", "padding_mask"]


def causal_mask(n: int, device: torch.device | str | None = None, *, past: int = 0) -> torch.Tensor:
    """``(n, past + n)`` boolean mask where query ``i`` may attend to keys ``j <= past + i``.

    With ``past=0`` (the default) it is the square ``(n, n)`` mask of a decoder: the lower
    triangle, diagonal included. With ``past > 0`` the ``n`` queries are the *last* ``n``
    positions of a sequence of ``past + n`` (a decoder that keeps the keys of the ``past``
    positions it has already processed, notebook 11): each sees every earlier position and
    itself. This is the lower-right alignment; ``F.scaled_dot_product_attention(is_causal=True)``
    aligns the triangle to the top left instead, which is wrong for such queries.
    """
    positive_int("n", n, "the number of new positions")
    non_negative_int("past", past, "the number of positions before them")
    return torch.ones(n, past + n, dtype=torch.bool, device=device).tril(diagonal=past)


def padding_mask(lengths, max_len: int | None = None) -> torch.Tensor:
    """``(B, 1, m)`` boolean mask where key ``j`` of sequence ``b`` is real (``j < lengths[b]``).

    Args:
        lengths: the true length of each sequence in the batch, a list or a
            1-D integer tensor of ``B`` values, each in ``[0, max_len]``.
        max_len: the padded length ``m``; defaults to ``max(lengths)``.

    The middle axis of size 1 broadcasts over the ``n`` queries: padding is a
    property of the keys, the same for every query.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.numel() == 0 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(
            f"lengths must be a non-empty 1-D sequence of integers, got {lengths.dtype} of shape {tuple(lengths.shape)}"
        )
    if max_len is None:
        max_len = int(lengths.max())
    if int(lengths.min()) < 0 or int(lengths.max()) > max_len:
        raise ValueError(f"every length must lie in [0, max_len={max_len}], got lengths {lengths.tolist()}")
    positions = torch.arange(max_len, device=lengths.device)  # (m,)
    return (positions < lengths[:, None]).unsqueeze(1)  # (B, m) -> (B, 1, m)
