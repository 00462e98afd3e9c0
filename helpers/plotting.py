"""Attention heatmaps. Every function returns the matplotlib ``Figure``.

Rows are queries, columns are keys, colour is the attention weight in [0, 1].
Masked positions (where a given boolean mask is ``False``) are drawn in a flat
grey with a cross, so they never look like a weight of 0 that was learned.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_heads", "plot_layers_heads"]

CMAP = "viridis"
MASKED_COLOUR = "#d0d0d0"
DPI = 80  # modest: keeps the PNGs stored in notebooks small


def _as_numpy(x, name: str, dims: int) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float32).numpy()
    x = np.asarray(x, dtype=float)
    if x.ndim != dims:
        raise ValueError(f"{name} must have {dims} dimensions, got shape {x.shape}")
    return x


def _mask_numpy(mask, shape: tuple[int, ...]) -> np.ndarray | None:
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
        mask = mask.detach().cpu().numpy()
    mask = np.asarray(mask)
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to the weights' shape {shape}") from None


def _check_labels(labels, size: int, name: str):
    if labels is not None and len(labels) != size:
        raise ValueError(f"{name} has {len(labels)} labels but the weights have {size} positions on that axis")
    return labels


def _draw(ax, weights: np.ndarray, mask: np.ndarray | None, query_labels, key_labels, title, annotate, vmax):
    """Draw one (n, m) heatmap on ``ax`` and return the image."""
    n, m = weights.shape
    image = ax.imshow(weights, cmap=CMAP, vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    if mask is not None and not mask.all():
        grey = np.zeros((n, m, 4))
        grey[~mask] = (0.815, 0.815, 0.815, 1.0)
        ax.imshow(grey, aspect="auto", interpolation="nearest")
        rows, cols = np.nonzero(~mask)
        ax.scatter(cols, rows, marker="x", s=12, color="#808080", linewidths=0.8)
    if annotate:
        for i in range(n):
            for j in range(m):
                if mask is not None and not mask[i, j]:
                    continue
                value = weights[i, j]
                colour = "black" if value > 0.6 * vmax else "white"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(m))
    ax.set_yticks(range(n))
    if key_labels is not None:
        ax.set_xticklabels(key_labels, rotation=90)
    else:
        ax.tick_params(axis="x", labelbottom=m <= 20)
    if query_labels is not None:
        ax.set_yticklabels(query_labels)
    else:
        ax.tick_params(axis="y", labelleft=n <= 20)
    if title:
        ax.set_title(title, fontsize=9)
    return image


def plot_attention(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
    vmax: float | None = 1.0,
) -> Figure:
    """Heatmap of one ``(n, m)`` weight matrix: queries down, keys across.

    Args:
        weights: ``(n, m)`` attention weights.
        query_labels, key_labels: optional tokens for the rows and columns.
        mask: optional boolean mask broadcastable to ``(n, m)``; ``False``
            cells are drawn grey with a cross.
        title: optional title.
        annotate: write each weight in its cell (default: when n, m <= 10).
        figsize: figure size in inches (default scales with the matrix).
        vmax: top of the colour scale (default 1, the largest possible weight;
            ``None`` uses the largest weight shown, for nearly uniform maps).
    """
    w = _as_numpy(weights, "weights", 2)
    n, m = w.shape
    mk = _mask_numpy(mask, (n, m))
    _check_labels(query_labels, n, "query_labels")
    _check_labels(key_labels, m, "key_labels")
    if annotate is None:
        annotate = n <= 10 and m <= 10
    if figsize is None:
        figsize = (min(2.2 + 0.55 * m, 10.0), min(1.4 + 0.45 * n, 8.0))
    fig, ax = plt.subplots(figsize=figsize, dpi=DPI, layout="constrained")
    image = _draw(ax, w, mk, query_labels, key_labels, title, annotate, vmax=_top(w, vmax))
    ax.set_xlabel("key position $j$" if key_labels is None else "keys")
    ax.set_ylabel("query position $i$" if query_labels is None else "queries")
    fig.colorbar(image, ax=ax, label="weight")
    return fig


def _top(weights: np.ndarray, vmax: float | None) -> float:
    return float(np.nanmax(weights)) if vmax is None else vmax


def _grid(weights: np.ndarray, row_titles, mask, query_labels, key_labels, title, cell_size, vmax=1.0) -> Figure:
    """Draw a (rows, cols, n, m) array of heatmaps with one shared colour bar."""
    rows, cols, n, m = weights.shape
    mk = _mask_numpy(mask, (n, m)) if mask is not None else None
    _check_labels(query_labels, n, "query_labels")
    _check_labels(key_labels, m, "key_labels")
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(cell_size * cols + 1.0, cell_size * rows + 0.4),
        dpi=DPI,
        squeeze=False,
        layout="constrained",
    )
    image = None
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            sub = f"{row_titles[r]}head {c}" if row_titles else f"head {c}"
            image = _draw(
                ax, weights[r, c], mk, query_labels, key_labels, sub, annotate=False, vmax=_top(weights, vmax)
            )
            if c > 0:
                ax.tick_params(axis="y", labelleft=False)
            if r < rows - 1:
                ax.tick_params(axis="x", labelbottom=False)
    fig.colorbar(image, ax=axes, label="weight", shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_heads(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    cols: int | None = None,
    cell_size: float = 2.2,
    titles: Sequence[str] | None = None,
    vmax: float | None = 1.0,
) -> Figure:
    """A grid of heatmaps, one per head, from ``weights (h, n, m)``.

    ``mask`` broadcastable to ``(n, m)`` is drawn the same way in every head.
    Heads are laid out ``cols`` per row (default: all in one row up to 4).
    ``titles`` replaces the panel titles "head 0", "head 1", ...; ``vmax`` as
    in :func:`plot_attention`.
    """
    w = _as_numpy(weights, "weights", 3)
    h, n, m = w.shape
    cols = cols or min(h, 4)
    rows = -(-h // cols)
    padded = np.full((rows * cols, n, m), np.nan)
    padded[:h] = w
    if titles is not None and len(titles) != h:
        raise ValueError(f"titles has {len(titles)} entries but the weights have {h} heads")
    fig = _grid(padded.reshape(rows, cols, n, m), None, mask, query_labels, key_labels, title, cell_size, vmax)
    for index, ax in enumerate(fig.axes[: rows * cols]):
        if index >= h:
            ax.set_visible(False)
        else:
            ax.set_title(titles[index] if titles is not None else f"head {index}", fontsize=9)
    return fig


def plot_layers_heads(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    cell_size: float = 1.8,
    vmax: float | None = 1.0,
) -> Figure:
    """A layers x heads grid of heatmaps from ``weights (L, h, n, m)``.

    Also accepts a list of ``L`` tensors of shape ``(h, n, m)`` (one per
    layer, e.g. a single sequence taken from each layer's ``(B, h, n, m)``).
    """
    if isinstance(weights, (list, tuple)):
        weights = torch.stack([torch.as_tensor(w) for w in weights])
    w = _as_numpy(weights, "weights", 4)
    layers = w.shape[0]
    return _grid(w, [f"layer {i}, " for i in range(layers)], mask, query_labels, key_labels, title, cell_size, vmax)
