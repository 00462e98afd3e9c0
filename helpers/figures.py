"""The notebooks' one-off figures, kept out of the reader's way.

Each function draws one figure of one notebook from numbers the notebook has already computed and checked, and
returns the matplotlib ``Figure``; the notebook's own cells keep the measurement and its asserts. Read a function
here when you want to know how a figure is drawn; nothing in it computes a result the text relies on.
Attention heatmaps themselves are ``helpers.plotting``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from helpers.plotting import DPI

__all__ = ["beam_tree", "dot_product_scaling", "head_score_grid", "phase_change", "training_curve", "two_heads"]


def _same_length(name_a: str, a: Sequence, name_b: str, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} has {len(a)} entries and {name_b} {len(b)}: they must match")


def dot_product_scaling(widths: Sequence[int], variances: Mapping, largest_mean: Mapping, m: int) -> Figure:
    """Notebook 01, section 4: the variance of q·k with and without the 1/sqrt(d_k), and the mean largest weight
    of a softmax over ``m`` keys, against d_k. ``variances[w]`` and ``largest_mean[w]`` are (unscaled, scaled)."""
    missing = [w for w in widths if w not in variances or w not in largest_mean]
    if missing:
        raise ValueError(f"widths {missing} have no measurement in variances or largest_mean")
    fig, (ax_var, ax_top) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=DPI, layout="constrained")
    ax_var.loglog(widths, [variances[w][0] for w in widths], "o-", label="q·k")
    ax_var.loglog(widths, [variances[w][1] for w in widths], "s-", label="q·k / √d_k")
    ax_var.loglog(widths, widths, "k:", label="d_k (footnote 4)")
    ax_var.set(xlabel="d_k", ylabel="variance of the dot product", title="dot products grow with d_k")
    ax_top.semilogx(widths, [largest_mean[w][0] for w in widths], "o-", label="unscaled")
    ax_top.semilogx(widths, [largest_mean[w][1] for w in widths], "s-", label="scaled")
    ax_top.axhline(1 / m, color="k", linestyle=":", label=f"uniform, 1/{m}")
    ax_top.set(
        xlabel="d_k", ylabel="largest weight (mean)", ylim=(0, 1.02), title=f"the unscaled softmax saturates ({m} keys)"
    )
    for ax in (ax_var, ax_top):
        ax.set_xticks(widths, [str(w) for w in widths])  # a tick at every measured width
        ax.minorticks_off()
        ax.legend(fontsize=9)
    return fig


def beam_tree(trace: Sequence, vocab: Sequence[str], title: str) -> Figure:
    """Notebook 10, section 7: the hypotheses of a beam search as a tree, step by step, the winning path in green.

    ``trace`` is ``helpers.decoding.beam_search``'s trace: per step ``(_, step, live, finished)``, ``live`` a list of
    ``(ids, total log p)`` and ``finished`` of ``(ids, total log p, score)``; ``vocab`` turns an id into its word."""
    finished_all = [f for *_, finished in trace for f in finished]
    if not finished_all:
        raise ValueError("the trace has no finished hypothesis: there is no winning path to draw")
    winner = max(finished_all, key=lambda f: f[2])  # (ids, sum_log_p, score)
    fig, ax = plt.subplots(figsize=(10, 3.1), dpi=DPI, layout="constrained")
    place = {(): (0, 0)}  # hypothesis (tuple of ids) -> (step, row)
    boxes = {"ha": "center", "va": "center", "fontsize": 9}
    ax.text(0, 0, "<bos>", bbox={"boxstyle": "round", "fc": "white", "ec": "green", "lw": 2}, **boxes)
    for _, step, live, finished in trace:
        nodes = [(ids, total, False) for ids, total in live]
        nodes += [(ids, score, True) for ids, _, score in finished if len(ids) == step]  # finished at this step
        for row, (ids, value, done) in enumerate(nodes):
            parent = place[tuple(ids[:-1])]
            on_path = list(ids) == list(winner[0][: len(ids)])
            ax.plot([parent[0], step], [parent[1], -row], color="green" if on_path else "grey", lw=2 if on_path else 1)
            frame = {"boxstyle": "round", "fc": "#b7e1b5" if done else "white", "ec": "green" if on_path else "black"}
            ax.text(step, -row, f"{vocab[ids[-1]]}\n{value:.2f}", bbox=frame | {"lw": 2 if on_path else 1}, **boxes)
            place[tuple(ids)] = (step, -row)
    ax.set(xlim=(-0.5, len(trace) + 0.5), ylim=(-3.5, 0.5), yticks=[], xticks=range(len(trace) + 1))  # 4 rows
    ax.set(xlabel="step (tokens generated)", title=title)
    kinds = [
        Patch(fc="white", ec="black", label="live: total Σ log p"),
        Patch(fc="#b7e1b5", ec="black", label="finished: score Σ log p / lp(Y)"),
        Line2D([], [], color="green", lw=2, label="the winning path"),
    ]
    ax.legend(handles=kinds, fontsize=9, loc="lower right")
    for side in ["left", "right", "top"]:
        ax.spines[side].set_visible(False)
    return fig


def head_score_grid(scores: Mapping[str, torch.Tensor | np.ndarray], title: str = "lowest score") -> Figure:
    """Notebook 12, section 5: one (layers, heads) panel per score, in two rows of three, so that the labels stay
    readable on a projector. Each value is a mean attention weight in [0, 1]."""
    if not 1 <= len(scores) <= 6:
        raise ValueError(f"head_score_grid draws 1 to 6 scores, got {len(scores)}")
    arrays = {name: np.asarray(w, dtype=float) for name, w in scores.items()}
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"every score must be one (layers, heads) array of the same shape, got {sorted(shapes)}")
    num_layers, num_heads = next(iter(shapes))
    fig, axes = plt.subplots(2, 3, figsize=(10, 4.8), dpi=DPI, layout="constrained")
    for ax, (name, w) in zip(axes.flat, arrays.items(), strict=False):  # six places, up to six scores
        image = ax.imshow(w, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"{name}: {title}", fontsize=12)
        ax.set_xticks(range(0, num_heads, 2))
        ax.set_yticks(range(num_layers))
        ax.set_xlabel("head", fontsize=11)
        ax.set_ylabel("layer", fontsize=11)
        ax.tick_params(labelsize=10)
    for ax in list(axes.flat)[len(arrays) :]:
        ax.axis("off")  # fewer scores than places
    bar = fig.colorbar(image, ax=axes, fraction=0.025, pad=0.01)
    bar.set_label("mean weight", fontsize=11)
    bar.ax.tick_params(labelsize=10)
    return fig


def two_heads(panels: Sequence[tuple[torch.Tensor, str]], first_copy_ends: int, title: str) -> Figure:
    """Notebook 13, section 4: two (n, n) attention maps side by side, each ``(weights, panel title)``, with a
    dotted line above the first query that has an earlier copy (``first_copy_ends``, the period)."""
    if len(panels) != 2:
        raise ValueError(f"two_heads draws two panels, got {len(panels)}")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), dpi=DPI, layout="constrained")
    for ax, (w, panel_title) in zip(axes, panels, strict=True):
        if w.dim() != 2 or w.shape[0] != w.shape[1]:
            raise ValueError(f"{panel_title!r}: weights must be one (n, n) map, got shape {tuple(w.shape)}")
        image = ax.imshow(np.asarray(w, dtype=float), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(panel_title)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        ax.axhline(first_copy_ends - 0.5, color="white", linestyle=":", linewidth=1.5)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    fig.suptitle(title)
    return fig


def phase_change(losses: Sequence[float], history: Sequence[Sequence[float]], step: int, title: str) -> Figure:
    """Notebook 13, section 4: the training loss and the in-context score (top), the best induction and
    previous-token scores (bottom), against the training step; a dashed line at ``step``. ``history`` holds one
    row per measurement: (step, best previous-token score, best induction score, in-context score)."""
    watched = torch.as_tensor(history, dtype=torch.float).numpy()
    if watched.ndim != 2 or watched.shape[1] != 4:
        raise ValueError(f"history must be rows of (step, previous, induction, in-context), got {tuple(watched.shape)}")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.8), dpi=DPI, sharex=True, layout="constrained")
    top.plot(np.asarray(losses, dtype=float), color="tab:blue", linewidth=1, label="training loss")
    top.plot(watched[:, 0], watched[:, 3], "o-", color="tab:red", markersize=3, label="in-context score")
    top.axhline(0, color="grey", linewidth=0.8)
    top.set_ylabel("nats")
    top.legend(loc="center right")
    bottom.plot(watched[:, 0], watched[:, 2], "o-", markersize=3, color="tab:green", label="best induction score")
    bottom.plot(watched[:, 0], watched[:, 1], "o-", markersize=3, color="tab:purple", label="best previous-token score")
    bottom.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    bottom.set_ylim(0, 1)
    bottom.set_ylabel("attention score")
    bottom.set_xlabel("training step")
    bottom.legend(loc="upper left")
    for ax in (top, bottom):
        ax.axvline(step, color="dimgrey", linestyle="--", linewidth=1)
    top.text(step + 3, 3.0, "loss below 2 nats", color="dimgrey")
    top.set_title(title)
    return fig


def training_curve(curve: Mapping[str, Sequence[float]], title: str) -> Figure:
    """Notebook 15, section 2: a training run's loss against the step, from its record: ``curve["step"]``, the mean
    training loss since the last point (``curve["train_loss"]``) and the held-out loss (``curve["held_out_loss"]``)."""
    missing = {"step", "train_loss", "held_out_loss"} - set(curve)
    if missing:
        raise ValueError(f"the curve lacks {sorted(missing)}")
    steps = list(curve["step"])
    for name in ("train_loss", "held_out_loss"):
        _same_length("curve['step']", steps, f"curve[{name!r}]", curve[name])
    fig, ax = plt.subplots(figsize=(6.4, 3.0), dpi=DPI, layout="constrained")
    ax.plot(steps, curve["train_loss"], "o-", markersize=3, label="training (mean since the last point)")
    ax.plot(steps, curve["held_out_loss"], "s-", markersize=3, label="held out")
    ax.set(xlabel="training step", ylabel="next-token loss (nats)", title=title)
    ax.legend()
    return fig
