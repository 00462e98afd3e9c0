"""Attention heatmaps. Every function returns the matplotlib ``Figure``.

Rows are queries, columns are keys, colour is the attention weight in [0, 1].
Masked positions (where a given boolean mask is ``False``) are drawn in a flat
grey with a dark cross, so they never look like a weight of 0 that was learned.

Figures are drawn to be read on a projector as well as on a HiDPI laptop:
``DPI`` dots per inch, cell values and ticks of at least 9 pt, titles of at
least 11 pt. A notebook's own figures can use the same resolution with
``plt.subplots(..., dpi=helpers.plotting.DPI)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

__all__ = ["DPI", "mask_array", "plot_attention", "plot_heads", "plot_layers_heads"]

CMAP = "viridis"
MASKED_COLOUR = (
    0.815,
    0.815,
    0.815,
    1.0,
)  # RGBA of a masked cell: light grey, #d0d0d0 (course/explorer/explorer.js too)
CROSS_COLOUR = "#505050"  # the cross over a masked cell
DPI = 130  # sharp on a projector and a HiDPI screen; the largest notebook stays well under 1 MB

# Font sizes in points (1 pt = DPI / 72 pixels in the stored PNG).
ANNOTATION_PT = 9  # the weight written in a cell
TICK_PT = 10  # token labels and numbers on the axes and the colour bar
LABEL_PT = 10  # "queries", "keys", "weight"
TITLE_PT = 11  # one heatmap or one panel of a grid
SUPTITLE_PT = 12  # the title over a whole grid
# A label is about this many points wide per character at TICK_PT (DejaVu Sans, mixed text).
_CHAR_PT = 0.62 * TICK_PT


def _as_numpy(x, name: str, dims: int) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float32).numpy()
    x = np.asarray(x, dtype=float)
    if x.ndim != dims:
        raise ValueError(f"{name} must have {dims} dimensions, got shape {x.shape}")
    return x


def mask_array(mask) -> np.ndarray | None:
    """A mask (True = may attend) as a NumPy array, ``None`` kept; a tensor must be boolean."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
        mask = mask.detach().cpu().numpy()
    return np.asarray(mask)


def _mask_numpy(mask, shape: tuple[int, ...]) -> np.ndarray | None:
    mask = mask_array(mask)
    if mask is None:
        return None
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to the weights' shape {shape}") from None


def _check_labels(labels, size: int, name: str):
    if labels is not None and len(labels) != size:
        raise ValueError(f"{name} has {len(labels)} labels but the weights have {size} positions on that axis")
    return labels


def _limits(weights: np.ndarray, mask: np.ndarray | None, vmin: float | None, vmax: float | None):
    """Colour limits: fixed values, or (``None``) the smallest / largest weight on an allowed cell.

    NaN cells (the empty panels of a head grid) are ignored. A flat map gets a range of at least 1e-6
    so the colour bar stays drawable.
    """
    shown = weights if mask is None else np.where(mask, weights, np.nan)
    if not np.isfinite(shown).any():
        shown = np.zeros(1)
    low = float(np.nanmin(shown)) if vmin is None else float(vmin)
    high = float(np.nanmax(shown)) if vmax is None else float(vmax)
    if high - low < 1e-6:
        if vmin is None:
            low = high - 1e-6
        else:
            high = low + 1e-6
    return low, high


def _rotate_keys(key_labels, m: int, axis_width_in: float) -> bool:
    """Rotate the key labels only when they would not fit side by side under their columns."""
    widest = max((len(str(label)) for label in key_labels), default=0)
    return widest * _CHAR_PT + 4 > 72 * axis_width_in / max(m, 1)


def _label_step(count: int, axis_inches: float) -> int:
    """Label every position, or, for more than 20 positions whose labels would overlap, every k-th one (a label
    needs about 1.4 lines of TICK_PT text), so that long sequences keep readable labels in a small panel."""
    fits = max(1, int(72 * axis_inches / (1.4 * TICK_PT)))
    return 1 if count <= 20 or count <= fits else -(-count // fits)


def _draw(ax, weights, mask, query_labels, key_labels, title, annotate, vmin, vmax, rotate_keys):
    """Draw one (n, m) heatmap on ``ax`` and return the image."""
    n, m = weights.shape
    image = ax.imshow(weights, cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if mask is not None and not mask.all():
        grey = np.zeros((n, m, 4))
        grey[~mask] = MASKED_COLOUR
        ax.imshow(grey, aspect="auto", interpolation="nearest")
        # A cross in data coordinates scales with the cell, so it is as visible in a small grid panel
        # as in a large heatmap. Drawn without anti-aliasing: at DPI the edges still look clean, and
        # the PNG of a layers x heads grid stays about half the size.
        rows, cols = np.nonzero(~mask)
        r = 0.28
        segments = [[(c - r, q - r), (c + r, q + r)] for q, c in zip(rows, cols, strict=True)]
        segments += [[(c - r, q + r), (c + r, q - r)] for q, c in zip(rows, cols, strict=True)]
        ax.add_collection(
            LineCollection(segments, colors=CROSS_COLOUR, linewidths=1.6, antialiaseds=False, label="masked")
        )
    if annotate:
        threshold = vmin + 0.6 * (vmax - vmin)
        for i in range(n):
            for j in range(m):
                if mask is not None and not mask[i, j]:
                    continue
                value = weights[i, j]
                colour = "black" if value > threshold else "white"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=ANNOTATION_PT, color=colour)
    box = ax.get_position()  # in figure fractions: the panel's size in inches, to see how many labels fit
    width_in, height_in = box.width * ax.figure.get_figwidth(), box.height * ax.figure.get_figheight()
    ax.tick_params(labelsize=TICK_PT)
    if key_labels is not None:
        step = _label_step(m, width_in) if rotate_keys else 1
        ax.set_xticks(range(0, m, step), [key_labels[j] for j in range(0, m, step)], rotation=90 if rotate_keys else 0)
    else:
        ax.set_xticks(range(m))
        ax.tick_params(axis="x", labelbottom=m <= 20)
    if query_labels is not None:
        step = _label_step(n, height_in)
        ax.set_yticks(range(0, n, step), [query_labels[i] for i in range(0, n, step)])
    else:
        ax.set_yticks(range(n))
        ax.tick_params(axis="y", labelleft=n <= 20)
    if title:
        ax.set_title(title, fontsize=TITLE_PT)
    return image


def _axis_names(query_labels, key_labels) -> tuple[str, str]:
    return (
        "queries" if query_labels is not None else "query position $i$",
        "keys" if key_labels is not None else "key position $j$",
    )


def _colorbar(fig, image, ax, **kwargs):
    bar = fig.colorbar(image, ax=ax, **kwargs)
    bar.set_label("weight", fontsize=LABEL_PT)
    bar.ax.tick_params(labelsize=TICK_PT)
    return bar


def plot_attention(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    annotate: bool | None = None,
    figsize: tuple[float, float] | None = None,
    vmax: float | None = 1.0,
    vmin: float | None = 0.0,
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
            ``None`` uses the largest weight shown, for maps with small weights).
        vmin: bottom of the colour scale (default 0; ``None`` uses the smallest
            weight on an allowed cell, so a nearly uniform map shows its small
            differences; the colour bar then gives the narrow range).
    """
    w = _as_numpy(weights, "weights", 2)
    n, m = w.shape
    mk = _mask_numpy(mask, (n, m))
    _check_labels(query_labels, n, "query_labels")
    _check_labels(key_labels, m, "key_labels")
    if annotate is None:
        annotate = n <= 10 and m <= 10
    if figsize is None:
        figsize = (min(2.4 + 0.6 * m, 11.0), min(1.6 + 0.48 * n, 8.0))
    low, high = _limits(w, mk, vmin, vmax)
    fig, ax = plt.subplots(figsize=figsize, dpi=DPI, layout="constrained")
    # The heatmap's own width is the figure's less the query labels and the colour bar (about 1.6 in).
    rotate = key_labels is not None and _rotate_keys(key_labels, m, figsize[0] - 1.6)
    image = _draw(ax, w, mk, query_labels, key_labels, title, annotate, low, high, rotate)
    ylabel, xlabel = _axis_names(query_labels, key_labels)
    ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    ax.set_ylabel(ylabel, fontsize=LABEL_PT)
    _colorbar(fig, image, ax)
    return fig


def _grid(
    weights: np.ndarray,
    row_titles,
    mask,
    query_labels,
    key_labels,
    title,
    cell_size,
    vmax=1.0,
    *,
    count: int | None = None,
    annotate: bool = False,
    vmin: float | None = 0.0,
    per_row: bool = False,
) -> Figure:
    """Draw a (rows, cols, n, m) array of heatmaps with one shared colour bar, or (``per_row``) one colour
    scale and bar per row, each from ``vmin``/``vmax`` or, where they are ``None``, from that row's own weights.

    Only the first ``count`` panels (row by row) hold data; the others are hidden. Every panel at the
    left of the grid names the queries, and the lowest panel of each column names the keys.
    """
    rows, cols, n, m = weights.shape
    count = rows * cols if count is None else count
    mk = _mask_numpy(mask, (n, m)) if mask is not None else None
    _check_labels(query_labels, n, "query_labels")
    _check_labels(key_labels, m, "key_labels")
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(cell_size * cols + 1.2, cell_size * rows + 0.5),
        dpi=DPI,
        squeeze=False,
        layout="constrained",
    )
    if per_row:
        limits = [_limits(weights[r], mk, vmin, vmax) for r in range(rows)]
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + 0.3, height)  # room for a colour bar on every row
    else:
        limits = [_limits(weights, mk, vmin, vmax)] * rows
    rotate = key_labels is not None and _rotate_keys(key_labels, m, cell_size - 0.15)
    ylabel, xlabel = _axis_names(query_labels, key_labels)
    image = None
    for index in range(rows * cols):
        r, c = divmod(index, cols)
        ax = axes[r, c]
        if index >= count:
            ax.set_visible(False)
            continue
        sub = f"{row_titles[r]}head {c}" if row_titles else f"head {c}"
        low, high = limits[r]
        image = _draw(ax, weights[r, c], mk, query_labels, key_labels, sub, annotate, low, high, rotate)
        if per_row and (c == cols - 1 or index == count - 1):
            _colorbar(fig, image, axes[r, :], shrink=0.9)
        if c == 0:
            ax.set_ylabel(ylabel, fontsize=LABEL_PT)
        else:
            ax.tick_params(axis="y", labelleft=False)
        if index + cols < count:  # another panel below this one
            ax.tick_params(axis="x", labelbottom=False)
        else:
            ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    if not per_row:
        _colorbar(fig, image, axes, shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=SUPTITLE_PT)
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
    annotate: bool = False,
    vmin: float | None = 0.0,
) -> Figure:
    """A grid of heatmaps, one per head, from ``weights (h, n, m)``.

    ``mask`` broadcastable to ``(n, m)`` is drawn the same way in every head.
    Heads are laid out ``cols`` per row (default: all in one row up to 4) and
    numbered from 0. ``titles`` replaces the panel titles "head 0", "head 1",
    ...; ``annotate`` writes each weight in its cell (for small maps and a
    ``cell_size`` of about 0.5 in per position); ``vmax`` and ``vmin`` as in
    :func:`plot_attention`, one colour scale shared by all panels.
    """
    w = _as_numpy(weights, "weights", 3)
    h, n, m = w.shape
    cols = cols or min(h, 4)
    rows = -(-h // cols)
    padded = np.full((rows * cols, n, m), np.nan)
    padded[:h] = w
    if titles is not None and len(titles) != h:
        raise ValueError(f"titles has {len(titles)} entries but the weights have {h} heads")
    fig = _grid(
        padded.reshape(rows, cols, n, m),
        None,
        mask,
        query_labels,
        key_labels,
        title,
        cell_size,
        vmax,
        count=h,
        annotate=annotate,
        vmin=vmin,
    )
    for index, ax in enumerate(fig.axes[:h]):
        ax.set_title(titles[index] if titles is not None else f"head {index}", fontsize=TITLE_PT)
    return fig


def plot_layers_heads(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    cell_size: float = 1.8,
    vmax: float | None = 1.0,
    annotate: bool = False,
    vmin: float | None = 0.0,
    scale_per_layer: bool = False,
) -> Figure:
    """A layers x heads grid of heatmaps from ``weights (L, h, n, m)``.

    Also accepts a list of ``L`` tensors of shape ``(h, n, m)`` (one per
    layer, e.g. a single sequence taken from each layer's ``(B, h, n, m)``).
    Layers and heads are numbered from 0 ("layer 0, head 0"); ``annotate``,
    ``vmax`` and ``vmin`` as in :func:`plot_heads`. ``scale_per_layer`` gives
    each layer its own colour bar, up to that layer's largest weight where
    ``vmax`` is None: a layer of spread-out weights then shows its pattern
    beside a layer of near one-hot rows.
    """
    if isinstance(weights, (list, tuple)):
        weights = torch.stack([torch.as_tensor(w) for w in weights])
    w = _as_numpy(weights, "weights", 4)
    layers = w.shape[0]
    return _grid(
        w,
        [f"layer {i}, " for i in range(layers)],
        mask,
        query_labels,
        key_labels,
        title,
        cell_size,
        vmax,
        annotate=annotate,
        vmin=vmin,
        per_row=scale_per_layer,
    )
