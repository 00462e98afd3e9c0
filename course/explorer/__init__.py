"""An interactive attention viewer that works offline: in JupyterLab, in the HTML site and in the slides.

``explore_attention(weights, tokens)`` takes what the series' modules return, one ``(B, h, n, m)`` or
``(h, n, m)`` weight tensor or a list of them, one per layer (encoder self-attention, decoder self- or
cross-attention), and returns an :class:`AttentionExplorer`. Shown as a cell's value it displays as:

- ``text/html``: a self-contained view (HTML, CSS and a small script; the weights are inlined, rounded
  to two decimals, one byte each). Pick a layer and a head, or all heads overlaid with one colour per
  head, or any set of heads (a head's colour square adds it or removes it); hover or click a token (or
  move with the arrow keys) to see its weights as lines to the other side and as a highlighted heatmap
  row (a query) or column (a key), with the numbers; a hovered cell is outlined and its weight read out.
  Masked keys are grey with a cross, as in :mod:`helpers.plotting`; the colours run from 0 to ``vmax``
  (1, or the largest weight shown), as the colour scale under the heatmap says. It loads nothing,
  needs no kernel and no require.js, and several views on one page are independent: each script finds
  its own view as the element just before it, so no element id is generated and the output re-executes
  to the same text (nbval compares it, inlined style and script included: a change to explorer.js or
  explorer.css changes every stored view, whose notebook is then re-executed).
- ``image/png``: the static layers x heads grid of :func:`helpers.plotting.plot_layers_heads`, for a
  viewer that shows no HTML. The HTML holds the same picture as its static part, which the script
  replaces: where scripts do not run (JupyterLab strips them from an untrusted notebook's outputs,
  and so do sanitising viewers) the reader sees that figure, with a line saying how to get the
  interactive view, never an empty box. JupyterLab and nbconvert (the site, the slides) prefer
  ``text/html`` to ``image/png``.

Both pictures are drawn from the rounded weights, so the stored output depends only on what is shown.
Bad input raises ``ValueError``: a tensor of the wrong rank, layers of different shapes, token labels
of the wrong length, weights outside [0, 1] or NaN, a mask that is not boolean, does not fit, or hides
keys that have weight.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.plotting import CMAP, DPI, mask_array, plot_heads, plot_layers_heads

__all__ = ["AttentionExplorer", "decode_payload", "distinct_labels", "explore_attention", "read_payload"]

SCALE = 100  # weights are stored as integers 0..100: two decimals, as the heatmaps annotate them
TOLERANCE = 1e-5  # float error allowed outside [0, 1] and on masked keys
MAX_HEIGHT = 1080  # px: the static figure fits a 1080p screen
MOSAIC_PANELS = 32  # more panels than this: the static figure is one mosaic of the maps (AttentionExplorer.mosaic)
MARKER = "data-attention-explorer"  # on the view's outer element; build and test scripts look for it
# The view's data; a page builder may reorder the attributes (nbconvert's slides sort them).
_DATA = re.compile(r'<script\b[^>]*\bclass="attn-x-data"[^>]*>(.*?)</script>', re.S)


def _array(x, where: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float64).numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a tensor of attention weights, got {type(x).__name__}") from None


def _layers(weights, sequence: int | None) -> tuple[np.ndarray, int | None, int]:
    """(L, h, n, m) weights of one sequence, the batch size (None without a batch axis) and the index picked."""
    if isinstance(weights, (list, tuple)):
        if not weights:
            raise ValueError("weights is an empty list: pass one (B, h, n, m) or (h, n, m) tensor per layer")
        items = [(w, f"weights[{i}]") for i, w in enumerate(weights)]
    else:
        items = [(weights, "weights")]
    arrays, batches = [], set()
    for w, where in items:
        a = _array(w, where)
        if a.ndim == 4:
            batches.add(a.shape[0])
        elif a.ndim != 3:
            raise ValueError(
                f"{where} must have shape (B, h, n, m) or (h, n, m) (one layer's attention weights), got {a.shape}"
            )
        arrays.append(a)
    if len({a.ndim for a in arrays}) > 1:
        raise ValueError(f"every layer needs the same rank, got shapes {[a.shape for a in arrays]}")
    batch = batches.pop() if batches else None
    if batches:
        raise ValueError(f"the layers hold different batch sizes: shapes {[a.shape for a in arrays]}")
    index = 0
    if batch is not None:
        if sequence is None and batch > 1:
            raise ValueError(f"weights hold a batch of {batch} sequences: pass sequence= to pick the one to show")
        index = 0 if sequence is None else sequence
        if not 0 <= index < batch:
            raise ValueError(f"sequence={sequence} is outside the batch of {batch} sequences")
        arrays = [a[index] for a in arrays]
    elif sequence not in (None, 0):
        raise ValueError(f"sequence={sequence} given, but the weights have no batch axis: shape {arrays[0].shape}")
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"every layer needs the same (h, n, m), got {[a.shape for a in arrays]}")
    return np.stack(arrays), batch, index


def _mask(mask, batch: int | None, index: int, n: int, m: int) -> np.ndarray | None:
    """The (n, m) boolean mask of the shown sequence (True = may attend), from any shape that broadcasts."""
    mk = mask_array(mask)
    if mk is None:
        return None
    if mk.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got {mk.dtype}")
    original = mk.shape
    if mk.ndim > 2:  # (B, 1, m), (B, n, m), (B, 1, 1, m), ...: the leading axes hold 1 or the batch
        lead = mk.reshape(-1, *mk.shape[-2:])
        if lead.shape[0] == 1:
            mk = lead[0]
        elif batch is not None and lead.shape[0] == batch and all(d in (1, batch) for d in mk.shape[:-2]):
            mk = lead[index]
        else:
            raise ValueError(f"mask of shape {original} does not fit weights of one sequence of {n} queries x {m} keys")
    try:
        return np.broadcast_to(mk, (n, m)).copy()
    except ValueError:
        raise ValueError(f"mask of shape {original} does not broadcast to {n} queries x {m} keys") from None


def _labels(labels, size: int, name: str, axis: str) -> list[str]:
    """The labels as strings; ``axis`` is "key" or "query"."""
    if isinstance(labels, torch.Tensor):
        labels = labels.tolist()
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a sequence of labels, one per {axis}, not one string: {labels!r}")
    labels = [str(t) for t in labels]
    if len(labels) != size:
        plural = {"key": "keys", "query": "queries"}[axis]
        raise ValueError(f"{name} has {len(labels)} labels but the weights have {size} {plural}")
    return labels


def explore_attention(
    weights,
    tokens: Sequence,
    query_tokens: Sequence | None = None,
    title: str | None = None,
    mask=None,
    sequence: int | None = None,
    layer: int = 0,
    head: int | str = 0,
    cross: bool = False,
    vmax: float | None = 1.0,
) -> AttentionExplorer:
    """An interactive view of attention weights, with a static figure for viewers that run no script.

    Args:
        weights: one layer's weights, ``(B, h, n, m)`` or ``(h, n, m)``, or a list of them, one per
            layer (what ``Encoder``, ``Decoder`` and ``TinyTransformer`` return). Values in [0, 1]; a
            query with no allowed key may have a row of zeros.
        tokens: the ``m`` key labels (for self-attention also the queries').
        query_tokens: the ``n`` query labels when they differ from the keys (cross-attention, or
            labels such as ``"2→9"``); default ``tokens``.
        title: shown above the view and the figure.
        mask: optional boolean mask, ``True`` = may attend, broadcastable to ``(n, m)`` or, with a
            batch, ``(B, 1, m)`` / ``(B, n, m)``: masked keys are drawn grey with a cross. Masked
            weights must be 0 (a mask the model did not use is an error, not a picture).
        sequence: which sequence of a batch to show; needed when ``B > 1``.
        layer: the layer the view opens on (the one the text discusses); the reader can pick another.
        head: the head it opens on, or ``"all"`` for all heads overlaid.
        cross: ``True`` for cross-attention: the sides are named "target (queries)" and "source (keys)"
            rather than "queries" and "keys". Say it: ``n != m`` alone does not make attention cross.
        vmax: the weight at the top of the colour scale, in (0, 1], rounded to two decimals as the weights are
            (default 1, the largest possible weight). ``None`` takes the largest weight the view holds, over
            every layer and head, so that untrained heads whose weights stay well under 1 do not all look dark.
            The heatmap, the model view's thumbnails, the colour scale (its top label says the value) and the
            static figure use it; a larger weight gets the top colour.

    Layers and heads are numbered from 0, as everywhere in the series. A label that repeats in its sequence
    is shown with its position in front (``"2·the"``), in the view and in its figure.
    """
    w, batch, index = _layers(weights, sequence)
    _, heads, n, m = w.shape
    if heads == 0 or n == 0 or m == 0:
        raise ValueError(f"weights have an empty axis: (layers, h, n, m) = {w.shape}")
    bad = np.argwhere(~np.isfinite(w))
    if len(bad):
        layer, head, q, k = bad[0].tolist()
        raise ValueError(
            f"weights hold {len(bad)} NaN or infinite value(s), first at layer {layer}, head {head}, query {q}, key {k}"
        )
    low, high = float(w.min()), float(w.max())
    if low < -TOLERANCE or high > 1 + TOLERANCE:
        raise ValueError(
            f"attention weights must lie in [0, 1], these span [{low:.4g}, {high:.4g}]: "
            "scores before the softmax, or logits, are not weights"
        )
    keys = _labels(tokens, m, "tokens", "key")
    if query_tokens is None and n != m:
        raise ValueError(
            f"the weights have {n} queries and {m} keys (cross-attention?): pass query_tokens with {n} labels"
        )
    queries = keys if query_tokens is None else _labels(query_tokens, n, "query_tokens", "query")
    mk = _mask(mask, batch, index, n, m)
    if mk is not None:
        hidden = np.where(mk, 0.0, w)
        if hidden.max() > TOLERANCE:
            layer, head, q, k = np.unravel_index(hidden.argmax(), hidden.shape)
            raise ValueError(
                f"the mask hides key {k} ({keys[k]!r}) from query {q}, but layer {layer}, head {head} gives it "
                f"weight {hidden.max():.4f}: pass the mask the model used"
            )
    stored = np.rint(np.clip(w, 0.0, 1.0) * SCALE).astype(np.uint8)
    if mk is not None:
        stored[:, :, ~mk] = 0
    start = (_index(layer, w.shape[0], "layer"), -1 if head == "all" else _index(head, heads, "head"))
    if not isinstance(cross, (bool, np.bool_)):
        raise ValueError(f"cross must be True or False, got {cross!r}")
    return AttentionExplorer(stored, queries, keys, mk, title, start=start, cross=bool(cross), top=_top(vmax, stored))


def _top(vmax, stored: np.ndarray) -> int:
    """The top of the colour scale in stored units (1 to SCALE): vmax rounded, or the largest stored weight."""
    if vmax is None:
        return int(stored.max()) or SCALE  # every weight 0 (all masked): the default scale
    if isinstance(vmax, (bool, np.bool_)) or not isinstance(vmax, (int, float, np.integer, np.floating)):
        raise ValueError(f"vmax must be a number in (0, 1] or None (the largest weight shown), got {vmax!r}")
    top = round(float(vmax) * SCALE) if 0 < vmax <= 1 else 0  # NaN fails the comparison
    if top < 1:
        raise ValueError(
            f"vmax={vmax!r} is outside (0, 1]: the top of the colour scale is a weight of at least "
            f"{1 / SCALE:.2f} (two decimals), or None for the largest weight shown"
        )
    return top


def _cell_size(n: int, m: int) -> float:
    """Inches per panel of the static figure."""
    return 1.8 if max(n, m) <= 10 else 2.2


def _index(value, size: int, name: str) -> int:
    """A layer or head number in range(size); True and False are not numbers here."""
    allowed = f"0 to {size - 1}" if size > 1 else "0 (there is one)"
    if name == "head":
        allowed += ', or "all"'
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, {allowed}; got {value!r}")
    if not 0 <= value < size:
        plural = "layers" if name == "layer" else "heads"
        raise ValueError(f"{name}={value} is out of range: the weights have {size} {plural}, so {name} is {allowed}")
    return int(value)


def distinct_labels(labels: Sequence[str]) -> list[str]:
    """The labels with a label that repeats told apart by its position, from 0: ``["the", "cat", "the"]`` becomes
    ``["0·the", "cat", "2·the"]``. The view's script applies the same rule to what it draws."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{i}\u00b7{label}" if counts[label] > 1 else label for i, label in enumerate(labels)]


class AttentionExplorer:
    """The view :func:`explore_attention` returns; Jupyter shows it through ``_repr_mimebundle_``.

    ``weights`` is the ``(layers, h, n, m)`` array as stored (rounded to two decimals), ``mask`` the
    ``(n, m)`` boolean mask or ``None``. ``html``, ``png`` and ``figure()`` give the parts.
    """

    def __init__(
        self,
        stored: np.ndarray,
        queries: list[str],
        keys: list[str],
        mask,
        title: str | None,
        start: tuple[int, int] = (0, 0),
        cross: bool = False,
        top: int = SCALE,
    ):
        self._stored = stored
        self.queries, self.keys, self.mask, self.title = queries, keys, mask, title
        self.start, self.cross = start, cross  # (layer, head) shown first, head -1 = all heads
        self._top = top  # the top of the colour scale, in stored units (SCALE = a weight of 1)
        self._png: bytes | None = None

    @property
    def sides(self) -> tuple[str, str]:
        """What the view calls the queries and the keys."""
        return ("target (queries)", "source (keys)") if self.cross else ("queries", "keys")

    @property
    def vmax(self) -> float:
        """The weight at the top of the colour scale (two decimals)."""
        return self._top / SCALE

    @property
    def weights(self) -> np.ndarray:
        return self._stored / SCALE

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self._stored.shape

    def payload(self) -> dict:
        """What the page's script reads: labels, sizes, the weights as base64 bytes (layer, head, query, key), and
        ``vmax``, the top of the colour scale, only when it is not 1 (a view made with the default holds the same
        data as one made before vmax existed)."""
        layers, heads, _, _ = self._stored.shape
        top = {} if self._top == SCALE else {"vmax": self._top / SCALE}
        return {
            "title": self.title,
            "layers": layers,
            "heads": heads,
            "queries": self.queries,
            "keys": self.keys,
            "scale": SCALE,
            "weights": base64.b64encode(self._stored.tobytes()).decode("ascii"),
            "mask": None if self.mask is None else "".join("1" if a else "0" for a in self.mask.ravel()),
            "start": {"layer": self.start[0], "head": self.start[1]},
            "sides": list(self.sides),
            **top,
        }

    def figure(self, cell_size: float | None = None, layers: int | None = None):
        """The static layers x heads grid (a matplotlib Figure), drawn from the stored weights, repeated labels
        told apart by position (:func:`distinct_labels`). ``cell_size``: inches per panel (default by size);
        ``layers``: draw only the first ``layers`` layers (default: all)."""
        stored = self._stored[:layers]
        layers, heads, n, m = stored.shape
        weights = stored / SCALE
        cell = cell_size if cell_size is not None else _cell_size(n, m)
        if cell >= 1.6:
            return plot_layers_heads(
                weights,
                distinct_labels(self.queries),
                distinct_labels(self.keys),
                mask=self.mask,
                title=self.title,
                cell_size=cell,
                vmax=self.vmax,
            )
        # small panels (many layers, made to fit a screen's height): shorter panel titles, "L2, head 1"
        return plot_heads(
            weights.reshape(layers * heads, n, m),
            distinct_labels(self.queries),
            distinct_labels(self.keys),
            mask=self.mask,
            title=self.title,
            cols=heads,
            cell_size=cell,
            vmax=self.vmax,
            titles=[f"L{layer}, head {head}" for layer in range(layers) for head in range(heads)],
        )

    def mosaic(self):
        """The static figure of a grid of more than MOSAIC_PANELS panels: every head's map in one picture,
        layers down and heads across, without token labels, which could not be read at that size (the live view
        has them). Masked cells are grey, as in the panels of :meth:`figure`."""
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        from helpers.plotting import LABEL_PT, MASKED_COLOUR, TITLE_PT

        layers, heads, n, m = self._stored.shape
        norm = Normalize(0.0, self.vmax)
        colours = plt.get_cmap(CMAP)(norm(self.weights))  # (L, h, n, m, 4)
        if self.mask is not None:
            colours[:, :, ~self.mask] = MASKED_COLOUR
        picture = np.ones((layers * (n + 1) - 1, heads * (m + 1) - 1, 4))  # white lines between the maps
        for layer in range(layers):
            for head in range(heads):
                picture[layer * (n + 1) : layer * (n + 1) + n, head * (m + 1) : head * (m + 1) + m] = colours[
                    layer, head
                ]
        inch = min(7.0 / picture.shape[0], 12.5 / picture.shape[1])  # per position: fits 1080 x 1920 px at DPI
        fig, ax = plt.subplots(
            figsize=(picture.shape[1] * inch + 1.6, picture.shape[0] * inch + 1.0), dpi=DPI, layout="constrained"
        )
        ax.imshow(picture, interpolation="nearest", aspect="equal")
        ax.set_xticks([head * (m + 1) + (m - 1) / 2 for head in range(heads)], range(heads))
        ax.set_yticks([layer * (n + 1) + (n - 1) / 2 for layer in range(layers)], range(layers))
        ax.set_xlabel(f"head (each map: {n} {self.sides[0]} down, {m} {self.sides[1]} across)", fontsize=LABEL_PT)
        ax.set_ylabel("layer", fontsize=LABEL_PT)
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        if self.title:
            ax.set_title(self.title, fontsize=TITLE_PT)
        bar = fig.colorbar(ScalarMappable(norm, CMAP), ax=ax, shrink=0.8)
        bar.set_label("weight", fontsize=LABEL_PT)
        return fig

    def _render(self, cell_size: float | None = None, layers: int | None = None):
        layers_total, heads = self._stored.shape[:2]
        big = layers is None and cell_size is None and layers_total * heads > MOSAIC_PANELS
        fig = self.mosaic() if big else self.figure(cell_size, layers)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", facecolor="white")
        plt.close(fig)
        from PIL import Image

        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")

    def _grid_image(self, layers: int, cell: float):
        """The panels' figure as an image, drawn once at the size that fits MAX_HEIGHT if the default does not."""
        # The height is a margin (title, labels) plus the rows of panels. When the rows alone come near the
        # screen's height, the margin is measured on one row (a fraction of the grid's drawing time), so the grid
        # is drawn once, with smaller panels if it would not fit; otherwise the grid drawn tells the margin.
        rows, image = layers * cell * DPI, None
        margin = self._render(cell, layers=1).height - cell * DPI if layers > 1 and rows > MAX_HEIGHT - 200 else None
        if margin is None or margin + rows <= MAX_HEIGHT:
            image = self._render()
            margin = image.height - rows
        if margin + rows > MAX_HEIGHT:  # smaller panels
            image = self._render(max(0.9, (MAX_HEIGHT - margin) / (layers * DPI) - 0.02))
        return image

    @property
    def png(self) -> bytes:
        """The figure as a PNG, made once, in a palette of 256 colours that holds every colour it draws (160
        steps of viridis and 96 greys for text, masked cells and their crosses): a third of the bytes.

        The picture is never taller than MAX_HEIGHT (a 1080p screen): a grid of many layers is drawn with smaller
        panels, and scaled down if that is not enough; more than MOSAIC_PANELS panels are drawn as one mosaic
        (:meth:`mosaic`). Its background is white.
        """
        if self._png is None:
            from PIL import Image

            layers, heads, n, m = self._stored.shape
            if layers * heads > MOSAIC_PANELS:  # one picture of all the maps, drawn to fit
                image = self._render()
            else:
                image = self._grid_image(layers, _cell_size(n, m))
            if image.height > MAX_HEIGHT:
                width = round(image.width * MAX_HEIGHT / image.height)
                image = image.resize((width, MAX_HEIGHT), Image.Resampling.LANCZOS)
            small = _quantize(image)
            out = io.BytesIO()
            small.save(out, format="PNG", optimize=True, dpi=(DPI, DPI))  # keep the resolution in the file
            self._png = out.getvalue()
        return self._png

    @property
    def html(self) -> str:
        layers, heads, n, m = self._stored.shape
        data = json.dumps(self.payload(), ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
        png = base64.b64encode(self.png).decode("ascii")
        alt = html.escape(self._summary(), quote=True)
        return (
            f'<div class="attn-x" {MARKER}="{layers}x{heads}x{n}x{m}">'
            f"<style>{CSS}</style>"
            f'<script class="attn-x-data" type="application/json">{data}</script>'
            f'<img class="attn-x-fallback" alt="{alt}" src="data:image/png;base64,{png}">'
            f'<div class="attn-x-note" style="font-size:16px;color:#444;margin:4px 0">{STATIC_NOTE}</div>'
            f"</div><script>{SCRIPT_SHIPPED}</script>"
        )

    def _summary(self) -> str:
        layers, heads, n, m = self._stored.shape
        what = f": {self.title}" if self.title else ""
        return (
            f"attention weights{what}, {layers} layer{'s' * (layers != 1)} x {heads} head{'s' * (heads != 1)}, "
            f"{n} queries x {m} keys"
        )

    def __repr__(self) -> str:
        return f"AttentionExplorer({self._summary()})"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "text/html": self.html,
            "image/png": base64.b64encode(self.png).decode("ascii"),
            "text/plain": repr(self),
        }


def _palette_colours() -> np.ndarray:
    """(256, 3) uint8: 160 steps of viridis, then 96 greys from black to white."""
    viridis = plt.get_cmap(CMAP)(np.linspace(0.0, 1.0, 160))[:, :3]
    greys = np.repeat(np.linspace(0.0, 1.0, 96)[:, None], 3, axis=1)
    return (np.concatenate([viridis, greys]) * 255).round().astype(np.uint8)


def _quantize(image):
    """The RGB image in the palette, each colour mapped to its nearest palette colour (white stays white:
    PIL's own quantize rounds colours first, and drew the background #fcfcfc)."""
    from PIL import Image

    colours = _palette_colours().astype(np.int32)
    pixels = np.asarray(image, dtype=np.uint8)
    unique, inverse = np.unique(pixels.reshape(-1, 3), axis=0, return_inverse=True)
    distance = ((unique[:, None, :].astype(np.int32) - colours[None, :, :]) ** 2).sum(axis=-1)
    indices = distance.argmin(axis=1).astype(np.uint8)[inverse.ravel()].reshape(pixels.shape[:2])
    small = Image.fromarray(indices, mode="P")
    small.putpalette(colours.astype(np.uint8).ravel().tolist())
    return small


def read_payload(page: str) -> list[dict]:
    """The views' data in an HTML output or page, decoded (see :func:`decode_payload`), one dict per view, in
    page order."""
    return [decode_payload(match.group(1)) for match in _DATA.finditer(page)]


def decode_payload(text: str) -> dict:
    """One view's JSON data with ``weights`` as a float array ``(layers, h, n, m)`` (two decimals) and ``mask``
    as a boolean ``(n, m)`` array or None."""
    data = json.loads(text)
    n, m = len(data["queries"]), len(data["keys"])
    raw = np.frombuffer(base64.b64decode(data["weights"]), dtype=np.uint8)
    data["weights"] = raw.reshape(data["layers"], data["heads"], n, m) / data["scale"]
    if data["mask"] is not None:
        data["mask"] = np.array([c == "1" for c in data["mask"]]).reshape(n, m)
    return data


STATIC_NOTE = (
    "A static picture of an interactive view: run this cell, or trust the notebook (Trust Notebook in the command "
    "palette), to explore it."
)

# The view's style and script ship with the package (course/explorer/explorer.css, course/explorer/explorer.js) and are read
# once, here, then inlined into every output: a view needs no file beside the page (JupyterLab, the site, the
# decks, offline). Colours: viridis as in helpers.plotting (0 dark purple, 1 yellow), masked cells grey with a
# dark cross, one colour per head (Okabe and Ito's colour-blind-safe set, yellow left out: it vanishes on white).
_HERE = Path(__file__).resolve().parent
_CSS_SOURCE = re.sub(r"/\*.*?\*/", "", (_HERE / "explorer.css").read_text(encoding="utf-8"), flags=re.S)
CSS = "\n".join(line.strip() for line in _CSS_SOURCE.splitlines() if line.strip())  # without its comments
SCRIPT = (_HERE / "explorer.js").read_text(encoding="utf-8")

# What goes into each output: the script without its indentation and whole-line comments (a third smaller).
SCRIPT_SHIPPED = "\n".join(
    line.strip() for line in SCRIPT.strip().splitlines() if line.strip() and not line.strip().startswith("//")
)
