"""Tests of helpers.masks, helpers.plotting and helpers.set_seed."""

from __future__ import annotations

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
        (lambda: causal_mask(0), r"positive integer length n, got 0"),
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
