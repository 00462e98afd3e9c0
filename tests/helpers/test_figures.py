"""Tests of helpers.figures: each figure draws what it is given, one artist per series, and refuses input that does
not fit it with a ValueError that names the shapes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from helpers.figures import beam_tree, dot_product_scaling, head_score_grid, phase_change, training_curve, two_heads


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_dot_product_scaling_draws_both_panels_from_the_numbers():
    widths = [4, 16, 64]
    variances = {w: (float(w), 1.0) for w in widths}
    largest = {w: (0.5 + w / 200, 0.2) for w in widths}
    fig = dot_product_scaling(widths, variances, largest, m=16)
    left, right = fig.axes
    assert left.lines[0].get_ydata().tolist() == widths and left.lines[1].get_ydata().tolist() == [1.0] * 3
    assert right.lines[0].get_ydata().tolist() == [largest[w][0] for w in widths]
    assert list(right.lines[2].get_ydata()) == [1 / 16, 1 / 16]  # the uniform line
    with pytest.raises(ValueError, match=r"widths \[8\]"):
        dot_product_scaling([4, 8], variances, largest, m=16)


def test_beam_tree_marks_the_winning_path():
    vocab = ["<pad>", "<eos>", "one", "two"]
    trace = [
        (0, 1, [([2], -0.1), ([3], -2.0)], []),
        (0, 2, [([3, 2], -3.0)], [([2, 1], -0.2, -0.15)]),
    ]
    fig = beam_tree(trace, vocab, title="t")
    (ax,) = fig.axes
    green = [line for line in ax.lines if line.get_color() == "green"]
    assert len(green) == 2  # <bos> -> one -> <eos>
    assert {t.get_text() for t in ax.texts} >= {"<bos>", "one\n-0.10", "<eos>\n-0.15", "two\n-2.00"}
    with pytest.raises(ValueError, match="no finished hypothesis"):
        beam_tree(trace[:1], vocab, title="t")


def test_head_score_grid_one_panel_per_score():
    scores = {"previous": torch.rand(6, 12), "next": np.random.default_rng(0).random((6, 12))}
    fig = head_score_grid(scores)
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 2 and shown[0].get_title() == "previous: lowest score"
    np.testing.assert_allclose(shown[1].images[0].get_array(), scores["next"])
    with pytest.raises(ValueError, match=r"same shape.*\(6, 12\).*\(6, 13\)"):
        head_score_grid({"a": torch.rand(6, 12), "b": torch.rand(6, 13)})
    with pytest.raises(ValueError, match="1 to 6 scores, got 7"):
        head_score_grid({str(i): torch.rand(2, 2) for i in range(7)})


def test_two_heads_draws_two_maps_and_the_copy_line():
    maps = [(torch.eye(5), "a"), (torch.rand(5, 5), "b")]
    fig = two_heads(maps, first_copy_ends=3, title="t")
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["a", "b"]
    assert all(ax.lines[0].get_ydata()[0] == 2.5 for ax in panels)
    with pytest.raises(ValueError, match=r"'b'.*\(5, 4\)"):
        two_heads([(torch.eye(5), "a"), (torch.rand(5, 4), "b")], first_copy_ends=3, title="t")
    with pytest.raises(ValueError, match="two panels, got 1"):
        two_heads(maps[:1], first_copy_ends=3, title="t")


def test_phase_change_plots_each_score_against_its_step():
    history = [[0, 0.1, 0.05, 0.0], [5, 0.2, 0.6, -1.0], [10, 0.5, 0.8, -3.0]]
    fig = phase_change([4.0, 3.0, 2.0] * 4, history, step=5, title="t")
    top, bottom = fig.axes
    assert top.lines[1].get_xdata().tolist() == [0, 5, 10] and top.lines[1].get_ydata().tolist() == [0, -1, -3]
    assert bottom.lines[0].get_ydata().tolist() == pytest.approx([0.05, 0.6, 0.8])  # induction
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        phase_change([1.0], [row[:3] for row in history], step=5, title="t")


def test_training_curve_draws_both_losses_against_the_steps():
    curve = {"step": [100, 200, 300], "train_loss": [6.0, 4.4, 3.9], "held_out_loss": [4.9, 4.3, 3.9]}
    (ax,) = training_curve(curve, title="t").axes
    assert list(ax.lines[0].get_xdata()) == [100, 200, 300] and list(ax.lines[1].get_ydata()) == [4.9, 4.3, 3.9]
    assert list(ax.lines[0].get_ydata()) == [6.0, 4.4, 3.9]
    with pytest.raises(ValueError, match="held_out_loss"):
        training_curve({"step": [1], "train_loss": [1.0]}, title="t")
    with pytest.raises(ValueError, match=r"3 entries.*2"):
        training_curve(curve | {"train_loss": [1.0, 2.0]}, title="t")
