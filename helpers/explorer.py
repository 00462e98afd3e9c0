"""An interactive attention viewer that works offline: in JupyterLab, in the HTML site and in the slides.

``explore_attention(weights, tokens)`` takes what the series' modules return, one ``(B, h, n, m)`` or
``(h, n, m)`` weight tensor or a list of them, one per layer (encoder self-attention, decoder self- or
cross-attention), and returns an :class:`AttentionExplorer`. Shown as a cell's value it displays as:

- ``text/html``: a self-contained view (HTML, CSS and a small script; the weights are inlined, rounded
  to two decimals, one byte each). Pick a layer and a head, or all heads overlaid with one colour per
  head; hover or click a token (or move with the arrow keys) to see its weights as lines to the other
  side and as a highlighted heatmap row (a query) or column (a key), with the numbers; masked keys are
  grey with a cross, as in :mod:`helpers.plotting`. It loads nothing, needs no kernel and no
  require.js, and several views on one page are independent: each script finds its own view as the
  element just before it, so no element id is generated and the output re-executes to the same text
  (nbval compares it).
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

import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.plotting import CMAP, DPI, plot_layers_heads

__all__ = ["AttentionExplorer", "decode_payload", "explore_attention", "read_payload"]

SCALE = 100  # weights are stored as integers 0..100: two decimals, as the heatmaps annotate them
TOLERANCE = 1e-5  # float error allowed outside [0, 1] and on masked keys
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
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
        mask = mask.detach().cpu().numpy()
    mk = np.asarray(mask)
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

    Layers and heads are numbered from 0, as everywhere in the series.
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
    return AttentionExplorer(stored, queries, keys, mk, title)


class AttentionExplorer:
    """The view :func:`explore_attention` returns; Jupyter shows it through ``_repr_mimebundle_``.

    ``weights`` is the ``(layers, h, n, m)`` array as stored (rounded to two decimals), ``mask`` the
    ``(n, m)`` boolean mask or ``None``. ``html``, ``png`` and ``figure()`` give the parts.
    """

    def __init__(self, stored: np.ndarray, queries: list[str], keys: list[str], mask, title: str | None):
        self._stored = stored
        self.queries, self.keys, self.mask, self.title = queries, keys, mask, title
        self._png: bytes | None = None

    @property
    def weights(self) -> np.ndarray:
        return self._stored / SCALE

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self._stored.shape

    def payload(self) -> dict:
        """What the page's script reads: labels, sizes, the weights as base64 bytes (layer, head, query, key)."""
        layers, heads, _, _ = self._stored.shape
        return {
            "title": self.title,
            "layers": layers,
            "heads": heads,
            "queries": self.queries,
            "keys": self.keys,
            "scale": SCALE,
            "weights": base64.b64encode(self._stored.tobytes()).decode("ascii"),
            "mask": None if self.mask is None else "".join("1" if a else "0" for a in self.mask.ravel()),
        }

    def figure(self):
        """The static layers x heads grid (a matplotlib Figure), drawn from the stored weights."""
        n, m = self._stored.shape[2:]
        cell = 1.8 if max(n, m) <= 10 else 2.2
        return plot_layers_heads(
            self.weights, self.queries, self.keys, mask=self.mask, title=self.title, cell_size=cell
        )

    @property
    def png(self) -> bytes:
        """The figure as a PNG, made once, in a palette of 256 colours that holds every colour it draws (160
        steps of viridis and 96 greys for text, masked cells and their crosses): a third of the bytes."""
        if self._png is None:
            from PIL import Image

            fig = self.figure()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", facecolor="white")
            plt.close(fig)
            image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
            small = image.quantize(palette=_palette(), dither=Image.Dither.NONE)
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
            f"</div><script>{_SCRIPT_SHIPPED}</script>"
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


def _palette():
    from PIL import Image

    viridis = plt.get_cmap(CMAP)(np.linspace(0.0, 1.0, 160))[:, :3]
    greys = np.repeat(np.linspace(0.0, 1.0, 96)[:, None], 3, axis=1)
    palette = Image.new("P", (1, 1))
    palette.putpalette((np.concatenate([viridis, greys]) * 255).round().astype(np.uint8).ravel().tolist())
    return palette


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

# Colours: viridis as in helpers.plotting (0 dark purple, 1 yellow), masked cells grey with a dark cross,
# one colour per head (Okabe and Ito's colour-blind-safe set, yellow left out: it vanishes on white).
CSS = """
.attn-x{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:16px;line-height:1.3;color:#1a1a1a;
background:#fff;max-width:100%;box-sizing:border-box}
.attn-x-title{font-size:18px;font-weight:600;margin:2px 0 8px}
.attn-x-controls{display:flex;flex-wrap:wrap;align-items:center;gap:8px 24px;margin:0 0 8px}
.attn-x-group{display:flex;flex-wrap:wrap;align-items:center;gap:4px}
.attn-x-name{font-weight:600;margin-right:4px}
.attn-x button{font:inherit;font-size:16px;line-height:1.2;min-width:40px;margin:0;padding:5px 10px;border:2px solid #5a5a5a;
border-radius:5px;background:#fff;color:#1a1a1a;cursor:pointer}
.attn-x button[aria-checked="true"]{background:#1a1a1a;border-color:#1a1a1a;color:#fff}
.attn-x button:focus-visible{outline:3px solid #c04000;outline-offset:2px}
.attn-x-swatch{display:inline-block;width:12px;height:12px;margin-right:6px;border-radius:2px;vertical-align:-1px;
border:1px solid #fff}
.attn-x-view svg{display:block;max-width:100%;height:auto}
.attn-x-view text{font-size:16px;fill:#1a1a1a;font-family:inherit}
.attn-x-view .attn-x-num{font-size:16px}
.attn-x-tok{cursor:pointer;outline:none}
.attn-x-tok .attn-x-ring{fill:transparent;stroke:transparent;stroke-width:3}
.attn-x-tok.attn-x-on .attn-x-ring{fill:#e8e8e8}
.attn-x-tok.attn-x-on text{font-weight:700}
.attn-x-tok:focus .attn-x-ring{stroke:#c04000}
.attn-x-cell{cursor:pointer}
.attn-x-readout{min-height:1.4em;margin-top:6px;font-size:16px}
.attn-x-help{font-size:16px;color:#444;margin-top:2px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var script = document.currentScript;
  var root = script && script.previousElementSibling;
  if (!root || !root.classList || !root.classList.contains("attn-x") || root.getAttribute("data-live")) return;
  var source = root.querySelector("script.attn-x-data");
  if (!source) return;
  var D = JSON.parse(source.textContent);
  var L = D.layers, H = D.heads, N = D.queries.length, M = D.keys.length;
  var bytes = atob(D.weights), W = new Uint8Array(bytes.length);
  for (var b = 0; b < bytes.length; b++) W[b] = bytes.charCodeAt(b);
  function weight(l, h, q, k) { return W[((l * H + h) * N + q) * M + k] / D.scale; }
  function masked(q, k) { return D.mask !== null && D.mask.charAt(q * M + k) === "0"; }
  function fixed(v) { return v.toFixed(2); }
  var VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
                 "#bddf26", "#fde725"];
  var HEAD_COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00", "#000000", "#8c564b"];
  function channel(hex, i) { return parseInt(hex.substr(1 + 2 * i, 2), 16); }
  function colour(v) {
    var x = Math.max(0, Math.min(1, v)) * (VIRIDIS.length - 1), i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    var f = x - i, rgb = [0, 1, 2].map(function (c) {
      return Math.round(channel(VIRIDIS[i], c) * (1 - f) + channel(VIRIDIS[i + 1], c) * f);
    });
    return "rgb(" + rgb.join(",") + ")";
  }
  function headColour(h) { return HEAD_COLOURS[h % HEAD_COLOURS.length]; }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  // What is shown: a layer, a head (or -1: all heads), and a token: a query (side "q") or a key (side "k").
  var state = {layer: 0, head: 0, side: "q", index: 0};
  var hover = null;  // a token under the mouse, previewed without changing the selection

  var ui = document.createElement("div");
  ui.className = "attn-x-ui";
  if (D.title) {
    var heading = document.createElement("div");
    heading.className = "attn-x-title";
    heading.textContent = D.title;
    ui.appendChild(heading);
  }
  var controls = document.createElement("div");
  controls.className = "attn-x-controls";
  ui.appendChild(controls);

  // A group of radio buttons with one tab stop; the arrow keys, Home and End move the choice.
  function group(name, items, current, choose) {
    var box = document.createElement("div");
    box.className = "attn-x-group";
    var label = document.createElement("span");
    label.className = "attn-x-name";
    label.textContent = name;
    box.appendChild(label);
    var list = document.createElement("div");
    list.className = "attn-x-group";
    list.setAttribute("role", "radiogroup");
    list.setAttribute("aria-label", name);
    var buttons = items.map(function (item, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.setAttribute("role", "radio");
      button.setAttribute("data-value", String(item.value));
      if (item.colour) {
        var swatch = document.createElement("span");
        swatch.className = "attn-x-swatch";
        swatch.style.background = item.colour;
        button.appendChild(swatch);
      }
      button.appendChild(document.createTextNode(item.text));
      button.addEventListener("click", function () { choose(item.value); });
      button.addEventListener("keydown", function (event) {
        var step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[event.key];
        var to = step ? (i + step + items.length) % items.length : event.key === "Home" ? 0
          : event.key === "End" ? items.length - 1 : -1;
        if (to < 0) return;
        event.preventDefault();
        keyboard = true;
        hover = null;
        choose(items[to].value);
        buttons[to].focus();
      });
      list.appendChild(button);
      return button;
    });
    box.appendChild(list);
    controls.appendChild(box);
    return function (value) {
      buttons.forEach(function (button, i) {
        var on = items[i].value === value;
        button.setAttribute("aria-checked", on ? "true" : "false");
        button.tabIndex = on ? 0 : -1;
      });
    };
  }
  var layers = [], heads = [{value: -1, text: "all heads"}];
  for (var l = 0; l < L; l++) layers.push({value: l, text: String(l)});
  for (var h = 0; h < H; h++) heads.push({value: h, text: String(h), colour: headColour(h)});
  var markLayer = group("Layer", layers, 0, function (v) { state.layer = v; render(); });
  var markHead = group(H > 1 ? "Head" : "Head (one)", heads, 0, function (v) { state.head = v; render(); });

  var view = document.createElement("div");
  view.className = "attn-x-view";
  ui.appendChild(view);
  var readout = document.createElement("div");
  readout.className = "attn-x-readout";
  readout.setAttribute("role", "status");
  readout.setAttribute("aria-live", "polite");
  ui.appendChild(readout);
  var help = document.createElement("div");
  help.className = "attn-x-help";
  var HELP = "Click or hover a token (Tab to it, then arrow keys) to see its weights; Esc leaves the view.";
  ui.appendChild(help);

  // Geometry, in CSS pixels at natural size (the drawing scales down, never below the page's width).
  var ROW = 30, CHAR = 10.5, PAD = 8, LINES = 190, NUM = 72, LEFT = 4;
  function widest(labels) { return labels.reduce(function (a, s) { return Math.max(a, s.length); }, 1) * CHAR; }
  var qW = LEFT + widest(D.queries) + 2 * PAD, kW = widest(D.keys) + 2 * PAD;
  var cellW = M * 48 <= 576 ? 48 : Math.max(24, Math.floor(576 / M));
  var upright = widest(D.keys) + 6 <= cellW;
  var top = upright ? ROW + 4 : widest(D.keys) + 2 * PAD;
  var gridX = qW, gridR = qW + M * cellW, linesX = gridR + 14, keysX = linesX + LINES;
  var width = keysX + kW + NUM + PAD, height = top + Math.max(N, M) * ROW + 4;
  function qy(i) { return top + (i + 0.5) * ROW; }
  function ky(j) { return top + (j + 0.5) * ROW; }

  function token(side, i, x, y, w, text, anchor) {
    var on = hover ? hover.side === side && hover.index === i : state.side === side && state.index === i;
    var chosen = state.side === side && state.index === i;
    return '<g class="attn-x-tok' + (on ? " attn-x-on" : "") + '" data-side="' + side + '" data-index="' + i +
      '" tabindex="' + (chosen ? 0 : -1) + '" role="radio" aria-checked="' + chosen + '" aria-label="' +
      (side === "q" ? "query " : "key ") + esc(text) + '"><rect class="attn-x-ring" x="' + x + '" y="' + (y - ROW / 2 + 1) +
      '" width="' + w + '" height="' + (ROW - 2) + '" rx="4"></rect><text x="' + (anchor === "end" ? x + w - PAD : x + PAD) +
      '" y="' + (y + 5.5) + '" text-anchor="' + anchor + '">' + esc(text) + "</text></g>";
  }
  function cross(x, y, w, hgt) {
    var r = Math.min(w, hgt) * 0.28, cx = x + w / 2, cy = y + hgt / 2;
    return '<path d="M' + (cx - r) + " " + (cy - r) + "L" + (cx + r) + " " + (cy + r) + "M" + (cx - r) + " " + (cy + r) +
      "L" + (cx + r) + " " + (cy - r) + '" stroke="#505050" stroke-width="2"></path>';
  }

  function render() {
    markLayer(state.layer);
    markHead(state.head);
    var focused = root.contains(document.activeElement) && document.activeElement.getAttribute("data-side");
    var pick = hover || state, l = state.layer;
    var shownHeads = state.head < 0 ? Array.from({length: H}, function (_, h) { return h; }) : [state.head];
    var out = [];
    out.push('<svg viewBox="0 0 ' + width + " " + height + '" width="' + width +
             '" height="' + height + '" role="group" aria-label="attention weights, layer ' + l + '">');
    // key labels over the heatmap's columns
    for (var k = 0; k < M; k++) {
      var cx = gridX + (k + 0.5) * cellW;
      out.push(upright ? '<text x="' + cx + '" y="' + (top - 10) + '" text-anchor="middle">' + esc(D.keys[k]) + "</text>"
        : '<text transform="translate(' + (cx + 6) + "," + (top - PAD) + ') rotate(-90)">' + esc(D.keys[k]) + "</text>");
    }
    // the heatmap: one colour per cell, or in "all heads" one stripe per head, left to right
    for (var q = 0; q < N; q++) {
      for (k = 0; k < M; k++) {
        var x = gridX + k * cellW, y = top + q * ROW;
        if (masked(q, k)) {
          out.push('<rect class="attn-x-cell" x="' + x + '" y="' + y + '" width="' + cellW + '" height="' + ROW +
                   '" fill="#d0d0d0" data-query="' + q + '" data-key="' + k + '" data-weight="masked"></rect>' +
                   cross(x, y, cellW, ROW));
          continue;
        }
        var stripe = cellW / shownHeads.length;
        shownHeads.forEach(function (h, s) {
          var v = weight(l, h, q, k);
          out.push('<rect class="attn-x-cell" x="' + (x + s * stripe) + '" y="' + y + '" width="' + stripe + '" height="' +
                   ROW + '" fill="' + colour(v) + '" data-query="' + q + '" data-key="' + k + '" data-head="' + h +
                   '" data-weight="' + fixed(v) + '"></rect>');
        });
      }
    }
    // in "all heads", white lines between the cells group each cell's stripes
    if (shownHeads.length > 1) {
      for (k = 1; k < M; k++) {
        out.push('<line x1="' + (gridX + k * cellW) + '" y1="' + top + '" x2="' + (gridX + k * cellW) + '" y2="' +
                 (top + N * ROW) + '" stroke="#fff" stroke-width="3" pointer-events="none"></line>');
      }
    }
    // the chosen row (a query) or column (a key), outlined, with its numbers when one head is shown
    var box = pick.side === "q" ? [gridX, top + pick.index * ROW, M * cellW, ROW]
      : [gridX + pick.index * cellW, top, cellW, N * ROW];
    out.push('<rect x="' + box[0] + '" y="' + box[1] + '" width="' + box[2] + '" height="' + box[3] +
             '" fill="none" stroke="#c04000" stroke-width="3" pointer-events="none"></rect>');
    if (state.head >= 0 && cellW >= 44) {
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var qq = pick.side === "q" ? pick.index : c, kk = pick.side === "q" ? c : pick.index;
        if (masked(qq, kk)) continue;
        var v = weight(l, state.head, qq, kk);
        out.push('<text class="attn-x-num" pointer-events="none" text-anchor="middle" x="' + (gridX + (kk + 0.5) * cellW) +
                 '" y="' + (top + qq * ROW + ROW / 2 + 5.5) + '" fill="' + (v > 0.6 ? "#000" : "#fff") + '" style="fill:' +
                 (v > 0.6 ? "#000" : "#fff") + '">' + fixed(v) + "</text>");
      }
    }
    // lines from the chosen query to every key, or from every query to the chosen key
    var links = [];
    shownHeads.forEach(function (h, s) {
      var dy = shownHeads.length > 1 ? (s - (shownHeads.length - 1) / 2) * 2.5 : 0;
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var qq = pick.side === "q" ? pick.index : c, kk = pick.side === "q" ? c : pick.index;
        if (masked(qq, kk)) continue;
        var v = weight(l, h, qq, kk);
        links.push('<line class="attn-x-link" x1="' + linesX + '" y1="' + (qy(qq) + dy) + '" x2="' + (keysX - 4) + '" y2="' +
                   (ky(kk) + dy) + '" stroke="' + (shownHeads.length > 1 ? headColour(h) : "#1a1a1a") + '" stroke-width="' +
                   (0.75 + 8 * v).toFixed(2) + '" stroke-opacity="' + (0.12 + 0.88 * v).toFixed(2) + '" stroke-linecap="round"' +
                   ' data-query="' + qq + '" data-key="' + kk + '" data-head="' + h + '" data-weight="' + fixed(v) + '"></line>');
      }
    });
    out.push(links.join(""));
    // the tokens: queries left of the heatmap, keys right of the lines, each with its weight for the chosen query
    for (q = 0; q < N; q++) out.push(token("q", q, LEFT, qy(q), qW - LEFT - 4, D.queries[q], "end"));
    for (k = 0; k < M; k++) {
      out.push(token("k", k, keysX, ky(k), kW, D.keys[k], "start"));
      if (pick.side === "q") {
        var text = masked(pick.index, k) ? "masked" : state.head >= 0 ? fixed(weight(l, state.head, pick.index, k)) : "";
        if (text) out.push('<text class="attn-x-num" x="' + (keysX + kW + 2) + '" y="' + (ky(k) + 5.5) + '" style="fill:' +
                           (text === "masked" ? "#666" : "#1a1a1a") + '">' + text + "</text>");
      }
    }
    out.push("</svg>");
    view.innerHTML = out.join("");
    root.setAttribute("data-layer", String(l));
    root.setAttribute("data-head", state.head < 0 ? "all" : String(state.head));
    root.setAttribute("data-token", pick.side + pick.index);
    help.textContent = (state.head < 0 ? "Each heatmap cell has one stripe per head, head 0 at the left; " +
      "the lines take the heads' colours. " : "") + HELP;
    describe(null);
    if (focused) {
      var again = view.querySelector('[data-side="' + state.side + '"][data-index="' + state.index + '"]');
      if (again) again.focus();
    }
  }

  function name(side, i) { return (side === "q" ? "query \u201c" + D.queries[i] : "key \u201c" + D.keys[i]) + "\u201d"; }
  function headName(h) { return "head " + h; }
  // The readout: the hovered cell's or line's weight, else the chosen token's largest weights.
  function describe(target) {
    var pick = hover || state, l = state.layer;
    var where = "layer " + l + ", " + (state.head < 0 ? "all heads" : headName(state.head)) + ": ";
    if (target && target.getAttribute("data-query") !== null) {
      var q = +target.getAttribute("data-query"), k = +target.getAttribute("data-key");
      var h = target.getAttribute("data-head");
      readout.textContent = "layer " + l + (h !== null ? ", " + headName(h) : "") + ": " + name("q", q) + " \u2192 " +
        name("k", k) + ": " + (masked(q, k) ? "masked (may not attend)" : "weight " + target.getAttribute("data-weight"));
      return;
    }
    var parts = [], heads = state.head < 0 ? Array.from({length: H}, function (_, h) { return h; }) : [state.head];
    heads.forEach(function (h) {
      var best = -1, bestV = -1;
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var q = pick.side === "q" ? pick.index : c, k = pick.side === "q" ? c : pick.index;
        if (!masked(q, k) && weight(l, h, q, k) > bestV) { best = c; bestV = weight(l, h, q, k); }
      }
      var other = pick.side === "q" ? D.keys[best] : D.queries[best];
      parts.push((heads.length > 1 ? headName(h) + " " : "") + (best < 0 ? "every key masked"
        : "largest weight " + fixed(bestV) + (pick.side === "q" ? " on key \u201c" : " from query \u201c") + other + "\u201d"));
    });
    readout.textContent = where + name(pick.side, pick.index) + ": " + parts.join("; ");
  }

  function tokenOf(element) { return element && element.closest ? element.closest("[data-side]") : null; }
  // At first and after a key press, the pointer previews nothing until it really moves over the view (a view
  // redrawn, or a slide shown, under a resting pointer would otherwise preview whatever token is under it).
  var keyboard = true, lastX = null, lastY = null;
  view.addEventListener("mousemove", function (event) {
    var moved = event.clientX !== lastX || event.clientY !== lastY;
    lastX = event.clientX;
    lastY = event.clientY;
    if (moved && keyboard) {
      keyboard = false;
      point(event.target);
    }
  });
  view.addEventListener("mouseover", function (event) { if (!keyboard) point(event.target); });
  function point(target) {
    var tok = tokenOf(target);
    if (tok) {
      var next = {side: tok.getAttribute("data-side"), index: +tok.getAttribute("data-index")};
      if (!hover || hover.side !== next.side || hover.index !== next.index) { hover = next; render(); }
      return;
    }
    if (hover) { hover = null; render(); }
    describe(target.getAttribute && target.getAttribute("data-weight") !== null ? target : null);
  }
  view.addEventListener("mouseleave", function () { if (hover) { hover = null; render(); } });
  view.addEventListener("click", function (event) {
    var tok = tokenOf(event.target), cell = event.target.closest && event.target.closest(".attn-x-cell");
    if (tok) choose(tok.getAttribute("data-side"), +tok.getAttribute("data-index"));
    else if (cell) choose("q", +cell.getAttribute("data-query"));
  });
  function choose(side, index) { state.side = side; state.index = index; hover = null; render(); }
  view.addEventListener("focusin", function (event) {
    var tok = tokenOf(event.target);
    if (tok && (tok.getAttribute("data-side") !== state.side || +tok.getAttribute("data-index") !== state.index)) {
      choose(tok.getAttribute("data-side"), +tok.getAttribute("data-index"));
    }
  });
  view.addEventListener("keydown", function (event) {
    var tok = tokenOf(event.target);
    if (!tok) return;
    var side = state.side, i = state.index, size = side === "q" ? N : M;
    if (event.key === "ArrowDown") i = (i + 1) % size;
    else if (event.key === "ArrowUp") i = (i - 1 + size) % size;
    else if (event.key === "Home") i = 0;
    else if (event.key === "End") i = size - 1;
    else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      side = side === "q" ? "k" : "q";
      i = Math.min(i, (side === "q" ? N : M) - 1);
    } else return;
    event.preventDefault();
    keyboard = true;
    choose(side, i);
    var again = view.querySelector('[data-side="' + side + '"][data-index="' + i + '"]');
    if (again) again.focus();
  });
  // Keys used here stay here: reveal.js (the slides) and JupyterLab's command mode would act on them too.
  root.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      if (document.activeElement && root.contains(document.activeElement)) document.activeElement.blur();
      event.stopPropagation();
      return;
    }
    if (/^(Arrow(Up|Down|Left|Right)|Home|End| |Enter|Tab)$/.test(event.key) || event.key === "Spacebar") {
      if (event.key !== "Tab") event.stopPropagation();
    }
  });

  render();
  var fallback = root.querySelector(".attn-x-fallback"), note = root.querySelector(".attn-x-note");
  root.appendChild(ui);
  if (fallback) fallback.remove();
  if (note) note.remove();
  root.setAttribute("data-live", "1");
})();
"""

# What goes into each output: the script without its indentation and whole-line comments (a third smaller).
_SCRIPT_SHIPPED = "\n".join(
    line.strip() for line in SCRIPT.strip().splitlines() if line.strip() and not line.strip().startswith("//")
)
