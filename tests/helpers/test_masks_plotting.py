"""Tests of helpers.masks, helpers.plotting and helpers.set_seed."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import helpers
from helpers.masks import causal_mask, padding_mask
from helpers.plotting import plot_attention, plot_heads, plot_layers_heads


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_causal_mask():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool and mask.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert bool(mask[i, j]) == (j <= i), (i, j)


def test_padding_mask():
    mask = padding_mask([3, 1, 4])
    assert mask.shape == (3, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [
        [True, True, True, False],
        [True, False, False, False],
        [True, True, True, True],
    ]
    assert padding_mask(torch.tensor([2]), max_len=5)[0, 0].tolist() == [True, True, False, False, False]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: causal_mask(0), r"n must be a positive integer \(the number of new positions\), got 0"),
        (lambda: padding_mask([3, 7], max_len=5), r"\[0, max_len=5\].*\[3, 7\]"),
        (lambda: padding_mask([-1, 2]), r"\[-1, 2\]"),
        (lambda: padding_mask([1.5, 2.0]), r"integers.*float"),
        (lambda: padding_mask([[1, 2]]), r"1-D.*\(1, 2\)"),
    ],
)
def test_mask_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_set_seed_reproduces_all_generators():
    assert helpers.set_seed(5) is None
    a = (torch.rand(3), np.random.rand(3))
    helpers.set_seed(5)
    b = (torch.rand(3), np.random.rand(3))
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="-1"):
        helpers.set_seed(-1)


def _image_arrays(ax):
    return [im.get_array() for im in ax.get_images()]


def test_plot_attention_labels_and_masked_cells():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    mask = torch.tensor([[True, True, False, False]]).expand(3, 4)
    fig = plot_attention(weights * mask, query_labels=["a", "b", "c"], key_labels=["w", "x", "y", "z"], mask=mask)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    images = _image_arrays(ax)
    assert len(images) == 2, "weights plus the grey overlay for masked cells"
    overlay = np.asarray(images[1])
    assert (overlay[:, 2:, 3] == 1).all() and (overlay[:, :2, 3] == 0).all(), "only masked cells are covered"
    assert len([t for t in ax.texts]) == 6, "annotations only on the 6 allowed cells"


def test_plot_attention_without_mask_has_no_overlay():
    fig = plot_attention(torch.full((2, 2), 0.5))
    assert len(_image_arrays(fig.axes[0])) == 1


def test_plot_heads_grid():
    fig = plot_heads(torch.rand(6, 3, 5), cols=4)
    visible = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    assert len(visible) == 6
    assert [ax.get_title() for ax in visible] == [f"head {i}" for i in range(6)]


def test_plot_heads_titles_and_colour_scale():
    weights = torch.full((2, 3, 3), 0.2)
    fig = plot_heads(weights, titles=["first", "second"], vmax=None)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["first", "second"]
    assert fig.axes[0].get_images()[0].get_clim() == pytest.approx((0.0, 0.2))
    assert plot_attention(weights[0]).axes[0].get_images()[0].get_clim() == (0.0, 1.0)
    with pytest.raises(ValueError, match=r"titles has 1 entries.*2 heads"):
        plot_heads(weights, titles=["one"])


def test_plot_layers_heads_grid():
    fig = plot_layers_heads([torch.rand(2, 3, 3) for _ in range(3)], query_labels=list("abc"), key_labels=list("abc"))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [f"layer {layer}, head {head}" for layer in range(3) for head in range(2)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plot_attention(torch.rand(2, 3, 4)), r"2 dimensions.*\(2, 3, 4\)"),
        (lambda: plot_attention(torch.rand(2, 3), key_labels=["a"]), r"key_labels has 1 labels.*3"),
        (lambda: plot_attention(torch.rand(2, 3), mask=torch.ones(2, 3)), r"boolean"),
        (lambda: plot_attention(torch.rand(2, 3), mask=torch.ones(3, 2, dtype=torch.bool)), r"\(3, 2\).*\(2, 3\)"),
        (lambda: plot_heads(torch.rand(3, 3)), r"3 dimensions"),
        (lambda: plot_layers_heads(torch.rand(2, 3, 3)), r"4 dimensions"),
    ],
)
def test_plot_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def test_auto_colour_limit_ignores_empty_panels():
    # 3 heads in 2 columns: the fourth panel is empty (NaN), so a plain max would give a NaN limit.
    weights = torch.full((3, 2, 2), 0.2)
    weights[1, 0, 0] = 0.3
    fig = plot_heads(weights, cols=2, vmax=None)
    assert len(_panels(fig)) == 3
    for ax in _panels(fig):
        assert ax.get_images()[0].get_clim() == pytest.approx((0.0, 0.3))
    layers = torch.full((2, 2, 3, 3), 0.25)
    layers[1, 1, 0, 0] = float("nan")  # a NaN weight is skipped too
    clim = plot_layers_heads(layers, vmax=None).axes[0].get_images()[0].get_clim()
    assert clim == pytest.approx((0.0, 0.25))


def test_near_uniform_map_spreads_its_colours():
    weights = torch.tensor([[0.24, 0.26, 0.25, 0.25], [0.25, 0.25, 0.23, 0.27]])
    mask = torch.tensor([[True, True, True, False]])
    clim = plot_attention(weights * mask, mask=mask, vmin=None, vmax=None).axes[0].get_images()[0].get_clim()
    assert clim == pytest.approx((0.23, 0.26)), "limits from the allowed cells only (the masked column is left out)"
    clim = plot_heads(weights[None].expand(2, 2, 4), vmin=None, vmax=None).axes[0].get_images()[0].get_clim()
    assert clim == pytest.approx((0.23, 0.27))
    flat = plot_attention(torch.full((2, 2), 0.5), vmin=None, vmax=None).axes[0].get_images()[0].get_clim()
    assert flat[0] < flat[1] == pytest.approx(0.5), "a flat map still gets a drawable colour range"


def _texts(fig):
    fig.canvas.draw()  # creates the colour bar's tick labels
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize(
    "make",
    [
        lambda: plot_attention(torch.rand(3, 4), list("abc"), list("wxyz"), mask=causal_mask(4)[1:], title="one"),
        lambda: plot_attention(torch.rand(12, 20), title="no labels, no annotations"),
        lambda: plot_heads(torch.rand(3, 4, 4), list("abcd"), list("abcd"), title="heads", annotate=True),
        lambda: plot_layers_heads(torch.rand(2, 2, 3, 3), title="layers", cell_size=1.5),
    ],
    ids=["attention", "attention-large", "heads", "layers-heads"],
)
def test_figures_are_sized_for_a_projector(make):
    fig = make()
    assert 120 <= fig.dpi <= 150, f"figures at {fig.dpi} dpi: blurry on a projector or HiDPI screen"
    texts = _texts(fig)
    assert texts
    small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 9]
    assert not small, f"text under 9 pt: {small}"
    titles = [ax.title for ax in fig.axes if ax.get_title()] + ([fig._suptitle] if fig._suptitle else [])
    assert titles
    assert all(t.get_fontsize() >= 11 for t in titles), [(t.get_text(), t.get_fontsize()) for t in titles]


def test_grid_axes_named_on_the_outer_panels():
    fig = plot_heads(torch.rand(6, 3, 5), list("abc"), list("vwxyz"), cols=4)
    panels = _panels(fig)
    assert [ax.get_ylabel() for ax in panels] == ["queries", "", "", "", "queries", ""]
    # the lowest panel of each column names the keys: heads 2 and 3 have no panel below them
    assert [ax.get_xlabel() for ax in panels] == ["", "", "keys", "keys", "keys", "keys"]
    fig = plot_layers_heads(torch.rand(2, 2, 3, 3))
    assert [ax.get_ylabel() for ax in _panels(fig)] == ["query position $i$", "", "query position $i$", ""]
    assert [ax.get_xlabel() for ax in _panels(fig)] == ["", "", "key position $j$", "key position $j$"]


def test_short_key_labels_stay_upright():
    short = plot_attention(torch.rand(3, 4), key_labels=["the", "cat", "sat", "on"])
    assert {t.get_rotation() for t in short.axes[0].get_xticklabels()} == {0.0}
    long = plot_attention(torch.rand(3, 12), key_labels=[f"token-{i}" for i in range(12)])
    assert {t.get_rotation() for t in long.axes[0].get_xticklabels()} == {90.0}
    grid = plot_layers_heads(torch.rand(1, 2, 6, 6), key_labels=["birds", "sing", "loudly", *["<pad>"] * 3])
    assert {t.get_rotation() for t in grid.axes[0].get_xticklabels()} == {90.0}, "six 5-letter labels in 1.8 in"


def test_masked_cells_carry_a_dark_cross():
    mask = torch.tensor([[True, False, False], [True, True, False]])
    ax = plot_attention(torch.rand(2, 3) * mask, mask=mask).axes[0]
    (crosses,) = [c for c in ax.collections if c.get_label() == "masked"]
    assert len(crosses.get_segments()) == 2 * 3, "two strokes for each of the 3 masked cells"
    centres = sorted({tuple(np.round(s.mean(axis=0), 6)) for s in crosses.get_segments()})
    assert centres == [(1.0, 0.0), (2.0, 0.0), (2.0, 1.0)], "crosses sit on the masked cells (column, row)"
    red, green, blue, _ = crosses.get_edgecolor()[0]
    assert max(red, green, blue) < 0.5, "a dark cross on the light grey, visible from the back of a room"
    assert crosses.get_linewidth()[0] >= 1.5


def test_masked_cells_are_drawn_in_the_masked_colour():
    from helpers.plotting import MASKED_COLOUR

    mask = torch.tensor([[True, False, False], [True, True, False]])
    ax = plot_attention(torch.rand(2, 3) * mask, mask=mask).axes[0]
    overlay = np.asarray(ax.images[1].get_array())  # (n, m, 4): the grey drawn over the weights
    np.testing.assert_array_equal(overlay[~mask.numpy()], np.tile(MASKED_COLOUR, (3, 1)))
    assert (overlay[mask.numpy()] == 0).all(), "allowed cells stay transparent: their weight shows"
    assert "#" + "".join(f"{round(255 * c):02x}" for c in MASKED_COLOUR[:3]) == "#d0d0d0", "the explorer's grey"


def test_a_colour_scale_per_layer():
    # layer 0 spread thin (at most 0.3), layer 1 near one-hot: each row of panels gets its own limits and colour bar
    layers = torch.full((2, 3, 4, 4), 0.25)
    layers[0, :, :, 0] = 0.3
    layers[1] = torch.eye(4) * 0.97 + 0.01
    fig = plot_layers_heads(layers, vmax=None, scale_per_layer=True)
    panels = _panels(fig)
    highs = [ax.get_images()[0].get_clim()[1] for ax in panels]
    assert highs == pytest.approx([0.3] * 3 + [0.98] * 3)
    assert all(ax.get_images()[0].get_clim()[0] == 0.0 for ax in panels)
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 2 and all(bar.get_ylabel() == "weight" for bar in bars)
    shared = plot_layers_heads(layers, vmax=None)
    assert [ax.get_images()[0].get_clim()[1] for ax in _panels(shared)] == pytest.approx([0.98] * 6)
    assert len([ax for ax in shared.axes if ax.get_label() == "<colorbar>"]) == 1
    fixed = plot_layers_heads(layers, scale_per_layer=True)  # vmax=1 as given, one bar per row all the same
    assert {ax.get_images()[0].get_clim() for ax in _panels(fixed)} == {(0.0, 1.0)}


def test_long_sequences_get_every_kth_label_in_a_small_panel():
    """32 tokens in a 1.8-inch panel: labels at every k-th position (the first kept), no two closer than they fit."""
    labels = [f"{i}:{i % 7}" for i in range(32)]
    weights = torch.softmax(torch.randn(2, 2, 32, 32, generator=torch.Generator().manual_seed(0)), dim=-1)
    fig = plot_layers_heads(weights, labels, labels)
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    ticks = list(ax.get_yticks())
    assert 4 <= len(rows) < 32 and rows[0] == "0:0" and rows == [labels[int(i)] for i in ticks]
    step = ticks[1] - ticks[0]
    assert all(b - a == step for a, b in itertools.pairwise(ticks))
    height_in = ax.get_position().height * fig.get_figheight()
    assert len(rows) * 1.4 * 10 <= 72 * height_in * 1.05  # they fit at 10 pt
    plt.close(fig)
    short = plot_attention(weights[0, 0, :12, :12], labels[:12], labels[:12])  # 20 or fewer: every label
    assert [t.get_text() for t in short.axes[0].get_yticklabels()] == labels[:12]
    assert [t.get_text() for t in short.axes[0].get_xticklabels()] == labels[:12]
    plt.close(short)


def test_the_heatmap_puts_queries_down_and_keys_across():
    """Cell (i, j) of the image is weight[i, j]: n = 3 rows of queries, m = 5 columns of keys (n != m, so a
    transposed drawing shows), over seeds 0-9."""
    for seed in range(10):
        g = torch.Generator().manual_seed(seed)
        weights = torch.softmax(torch.randn(3, 5, generator=g), dim=-1)
        ax = plot_attention(weights).axes[0]
        image = ax.images[0]
        np.testing.assert_array_equal(np.asarray(image.get_array()), weights.numpy())
        assert image.get_extent() == [-0.5, 4.5, 2.5, -0.5]  # columns 0..m-1 across, rows 0..n-1 down
        plt.close("all")


def _luminance(rgb) -> float:
    """Relative luminance (WCAG 2): sRGB channels linearised, then weighted."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_each_annotation_reads_against_its_cell():
    """Every written weight contrasts with the colour of its cell by a ratio of at least 3 (WCAG 2's bound for
    large text); a dark cell gets light text and a light one dark text, over seeds 0-9 and with vmax=None."""
    for seed, vmax in itertools.product(range(10), (1.0, None)):
        g = torch.Generator().manual_seed(seed)
        weights = torch.softmax(3 * torch.randn(4, 4, generator=g), dim=-1)
        ax = plot_attention(weights, annotate=True, vmax=vmax).axes[0]
        image = ax.images[0]
        assert len(ax.texts) == 16
        for text in ax.texts:
            j, i = (round(c) for c in text.get_position())
            cell = _luminance(image.cmap(image.norm(float(weights[i, j]))))
            ink = _luminance(matplotlib.colors.to_rgb(text.get_color()))
            ratio = (max(cell, ink) + 0.05) / (min(cell, ink) + 0.05)
            assert ratio >= 3, (seed, vmax, i, j, text.get_text(), text.get_color())
        plt.close("all")


def test_one_heatmap_names_its_rows_queries_and_its_columns_keys():
    weights = torch.softmax(torch.randn(2, 3, generator=torch.Generator().manual_seed(0)), dim=-1)
    ax = plot_attention(weights, ["a", "b"], ["x", "y", "z"]).axes[0]
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("queries", "keys")
    ax = plot_attention(weights).axes[0]
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("query position $i$", "key position $j$")
