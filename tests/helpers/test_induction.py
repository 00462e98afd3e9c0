"""helpers.induction: the repeated-sequence task, the attention-only model against nn.MultiheadAttention, the scores."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from helpers.induction import (
    AttentionOnlyTransformer,
    composition_scores,
    copying_scores,
    in_context_score,
    induction_scores,
    next_token_accuracy,
    predictable_accuracy,
    predictable_positions,
    previous_token_scores,
    repeated_sequences,
    train_induction_model,
)
from helpers.masks import causal_mask


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _model(seed=0, layers=2, heads=4, d=16, vocab=11, max_len=12):
    torch.manual_seed(seed)
    model = AttentionOnlyTransformer(vocab, d, heads, layers, max_len)
    with torch.no_grad():  # non-zero biases, so that a test would see one added in the wrong place
        for p in model.parameters():
            if p.dim() == 1:
                p.normal_(0, 0.3)
    return model.eval()


# repeated_sequences -----------------------------------------------------------------------------------------------


def test_repeated_sequences_repeat_with_their_period():
    tokens, periods = repeated_sequences(200, 20, 7, 2, 9, _gen())
    assert tokens.shape == (200, 20) and tokens.dtype == torch.int64
    assert periods.shape == (200,) and periods.dtype == torch.int64
    assert int(tokens.min()) >= 0 and int(tokens.max()) <= 6
    assert int(periods.min()) == 2 and int(periods.max()) == 9  # both ends drawn among 200 rows
    for row, p in zip(tokens, periods.tolist(), strict=False):
        assert torch.equal(row[p:], row[:-p])  # tokens[i] == tokens[i - p] for i >= p
        first = row[:p].tolist()
        assert row.tolist() == (first * 20)[:20]


def test_repeated_sequences_fixed_period_and_generator():
    a, pa = repeated_sequences(8, 10, 5, 4, 4, _gen(3))
    b, pb = repeated_sequences(8, 10, 5, 4, 4, _gen(3))
    assert torch.equal(a, b) and torch.equal(pa, pb) and pa.tolist() == [4] * 8
    c, _ = repeated_sequences(8, 10, 5, 4, 4, _gen(4))
    assert not torch.equal(a, c)


def test_repeated_sequences_blocks_are_uniform():
    tokens, _ = repeated_sequences(4000, 8, 4, 3, 3, _gen())
    counts = torch.bincount(tokens[:, :3].reshape(-1), minlength=4).float() / (4000 * 3)
    assert torch.allclose(counts, torch.full((4,), 0.25), atol=0.02)


@pytest.mark.parametrize(
    "args, message",
    [
        ((4, 8, 5, 3, 8), "max_period=8 must be shorter than the sequence"),
        ((4, 8, 5, 6, 3), "min_period must be <= max_period"),
        ((0, 8, 5, 2, 3), "batch_size must be a positive integer"),
        ((4, 8, 5, 0, 3), "min_period must be a positive integer"),
        ((4, 8, True, 2, 3), "vocab_size must be a positive integer"),
    ],
)
def test_repeated_sequences_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        repeated_sequences(*args)


def test_repeated_sequences_bad_generator():
    with pytest.raises(ValueError, match=r"generator must be a torch\.Generator"):
        repeated_sequences(4, 8, 5, 2, 3, 0)


# AttentionOnlyTransformer -----------------------------------------------------------------------------------------


def test_model_shapes_and_causal_weights():
    model = _model()
    tokens = torch.randint(0, 11, (3, 9), generator=_gen())
    logits, weights = model(tokens)
    assert logits.shape == (3, 9, 11) and len(weights) == 2
    for w in weights:
        assert w.shape == (3, 4, 9, 9)
        assert torch.all(w.triu(1) == 0)
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, 9))


def _pytorch_layer(model, layer):
    """nn.MultiheadAttention holding one of our layers' weights."""
    d, h = model.d_model, model.num_heads
    theirs = nn.MultiheadAttention(d, h, batch_first=True)
    ours = model.layers[layer]
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours[n].weight for n in ("query", "key", "value")]))
        theirs.in_proj_bias.copy_(torch.cat([ours[n].bias for n in ("query", "key", "value")]))
        theirs.out_proj.weight.copy_(ours["output"].weight)
        theirs.out_proj.bias.copy_(ours["output"].bias)
    return theirs.eval()


def test_model_equals_pytorch_multihead_attention_with_residuals():
    model = _model(seed=1)
    tokens = torch.randint(0, 11, (4, 12), generator=_gen(1))
    n = tokens.shape[1]
    with torch.no_grad():
        x = model.embedding(tokens) + model.position(torch.arange(n))
        expected_weights = []
        for layer in range(model.num_layers):
            out, w = _pytorch_layer(model, layer)(
                x, x, x, attn_mask=~causal_mask(n), need_weights=True, average_attn_weights=False
            )  # PyTorch's boolean attn_mask: True = may NOT attend
            expected_weights.append(w)
            x = x + out
        expected = model.unembedding(x)
        logits, weights = model(tokens)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    for ours, theirs in zip(weights, expected_weights, strict=False):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)


def test_head_outputs_sum_to_the_output_projection():
    model = _model(seed=2)
    z = torch.randn(2, 4, 5, 4, generator=_gen(2))  # (B, h, n, d_k)
    per_head = model.head_outputs(0, z)
    assert per_head.shape == (2, 4, 5, 16)
    concatenated = z.transpose(1, 2).reshape(2, 5, 16)
    with torch.no_grad():
        expected = model.layers[0]["output"](concatenated) - model.layers[0]["output"].bias
    torch.testing.assert_close(per_head.sum(1), expected, atol=1e-6, rtol=1e-5)


def test_full_head_mask_is_no_mask_and_empty_mask_leaves_only_biases():
    model = _model(seed=3)
    tokens = torch.randint(0, 11, (2, 7), generator=_gen(3))
    with torch.no_grad():
        plain, _ = model(tokens)
        kept, _ = model(tokens, head_mask=torch.ones(2, 4, dtype=torch.bool))
        none, _ = model(tokens, head_mask=torch.zeros(2, 4, dtype=torch.bool))
        x = model.embedding(tokens) + model.position(torch.arange(7))
        x = x + model.layers[0]["output"].bias + model.layers[1]["output"].bias
        expected = model.unembedding(x)
    assert torch.equal(plain, kept)
    torch.testing.assert_close(none, expected, atol=1e-6, rtol=1e-5)


def test_removing_one_head_removes_its_term():
    model = _model(seed=4, layers=1)
    tokens = torch.randint(0, 11, (2, 6), generator=_gen(4))
    mask = torch.ones(1, 4, dtype=torch.bool)
    mask[0, 2] = False
    with torch.no_grad():
        plain, _ = model(tokens)
        ablated, _ = model(tokens, head_mask=mask)
        # In one layer the logits are linear in the residual stream: the difference is head 2's term, unembedded.
        x = model.embedding(tokens) + model.position(torch.arange(6))
        layer = model.layers[0]
        from helpers.attention import scaled_dot_product_attention, split_heads

        q, k, v = (split_heads(layer[n](x), 4) for n in ("query", "key", "value"))
        z, _ = scaled_dot_product_attention(q, k, v, causal_mask(6))
        term = model.head_outputs(0, z)[:, 2]
    torch.testing.assert_close(plain - ablated, term @ model.unembedding.weight.T, atol=1e-5, rtol=1e-4)


def test_path_masks_touch_only_what_they_name():
    model = _model(seed=5)
    tokens = torch.randint(0, 11, (3, 8), generator=_gen(5))
    off = torch.ones(2, 4, dtype=torch.bool)
    off[0] = False  # every layer-0 head
    with torch.no_grad():
        plain, plain_w = model(tokens)
        for name in ("key_head_mask", "query_head_mask", "value_head_mask"):
            edited, edited_w = model(tokens, **{name: off})
            assert torch.equal(edited_w[0], plain_w[0])  # layer 0 reads the embedding only
            assert not torch.allclose(edited, plain)
        # Only values are edited: layer 1's weights stay; only keys or queries: its weights move.
        _, value_w = model(tokens, value_head_mask=off)
        _, key_w = model(tokens, key_head_mask=off)
        assert torch.equal(value_w[1], plain_w[1]) and not torch.allclose(key_w[1], plain_w[1])
        # Removing a head from keys, queries and values together is removing it from layer 1's input, which
        # differs from a full ablation only by what the unembedding reads.
        _both, both_w = model(tokens, key_head_mask=off, query_head_mask=off, value_head_mask=off)
        _full, full_w = model(tokens, head_mask=off)
        torch.testing.assert_close(both_w[1], full_w[1])
        # The last layer's path masks change nothing: no later layer reads it.
        last = torch.ones(2, 4, dtype=torch.bool)
        last[1] = False
        same, _ = model(tokens, key_head_mask=last, query_head_mask=last, value_head_mask=last)
    assert torch.equal(same, plain)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"head_mask": torch.ones(4, 2, dtype=torch.bool)},
            r"head_mask must be a boolean tensor of shape \(num_layers",
        ),
        ({"key_head_mask": torch.ones(2, 4)}, "key_head_mask must be a boolean tensor"),
        ({"value_head_mask": [[True] * 4] * 2}, "value_head_mask must be a boolean tensor"),
    ],
)
def test_model_bad_masks(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _model()(torch.zeros(1, 4, dtype=torch.long), **kwargs)


def test_model_bad_tokens():
    model = _model()
    with pytest.raises(ValueError, match="exceeds max_len=12"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens must lie in 0 \.\. 10"):
        model(torch.full((1, 3), 11))
    with pytest.raises(ValueError, match=r"integer tensor of shape \(B, n\)"):
        model(torch.zeros(3))
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        AttentionOnlyTransformer(5, 16, 3, 1, 8)


# Training -----------------------------------------------------------------------------------------------------------


def test_train_returns_eval_model_and_finite_losses():
    model, losses = train_induction_model(num_layers=1, seed=0, steps=6, batch_size=8)
    assert not model.training and model.num_layers == 1 and len(losses) == 6
    assert all(math.isfinite(x) for x in losses)
    _again, again_losses = train_induction_model(num_layers=1, seed=0, steps=6, batch_size=8)
    assert again_losses == losses
    _, other = train_induction_model(num_layers=1, seed=1, steps=6, batch_size=8)
    assert other != losses


def test_train_starts_near_chance():
    _, losses = train_induction_model(num_layers=2, seed=0, steps=1)
    assert abs(losses[0] - math.log(32)) < 0.3  # uniform over the 32 tokens at initialisation


def test_train_callback_watches_without_changing_the_run():
    seen = []

    def callback(step, model):
        assert not torch.is_grad_enabled()
        seen.append((step, model.layers[0]["query"].weight.clone()))

    model, losses = train_induction_model(num_layers=1, seed=0, steps=7, batch_size=8, callback=callback, every=3)
    plain, plain_losses = train_induction_model(num_layers=1, seed=0, steps=7, batch_size=8)
    assert [step for step, _ in seen] == [0, 3, 6]
    assert losses == plain_losses
    for a, b in zip(model.parameters(), plain.parameters(), strict=True):
        assert torch.equal(a, b)
    torch.manual_seed(0)  # step 0 sees the initial weights, and later calls see the weights after that many steps
    assert torch.equal(seen[0][1], AttentionOnlyTransformer(32, 64, 4, 1, 32).layers[0]["query"].weight)
    assert not torch.equal(seen[1][1], seen[0][1]) and not torch.equal(seen[2][1], seen[1][1])
    steps = []
    train_induction_model(num_layers=1, seed=0, steps=3, batch_size=8, callback=lambda step, m: steps.append(step))
    assert steps == [0, 1, 2, 3]  # every defaults to 1


@pytest.mark.parametrize("bad", [{"seed": -1}, {"steps": 0}, {"seed": 1.0}, {"every": 0}, {"callback": 3}])
def test_train_bad_input(bad):
    with pytest.raises(ValueError):
        train_induction_model(**bad)


# Accuracy on predictable positions ------------------------------------------------------------------------------


class _Oracle(nn.Module):
    """Right at predictable positions (``right_where_predictable``) or only at the others."""

    def __init__(self, periods, right_where_predictable=True, vocab=9):
        super().__init__()
        self.periods, self.right, self.vocab = periods, right_where_predictable, vocab

    def forward(self, tokens, **masks):
        B, n = tokens.shape
        answer = torch.roll(tokens, -1, dims=1)  # the next token at each position
        where = torch.zeros(B, n, dtype=torch.bool)
        where[:, :-1] = predictable_positions(self.periods, n)
        right = where if self.right else ~where
        guess = torch.where(right, answer, (answer + 1) % self.vocab)
        return nn.functional.one_hot(guess, self.vocab).float(), []


def test_predictable_accuracy_counts_only_predictable_positions():
    tokens, periods = repeated_sequences(16, 12, 9, 2, 6, _gen())
    assert predictable_accuracy(_Oracle(periods), tokens, periods) == 1.0
    assert predictable_accuracy(_Oracle(periods, False), tokens, periods) == 0.0


def test_predictable_positions_start_at_the_period():
    where = predictable_positions(torch.tensor([2, 4]), 6)
    assert where.tolist() == [[False, False, True, True, True], [False, False, False, False, True]]


def test_predictable_accuracy_bad_periods():
    tokens, periods = repeated_sequences(4, 8, 5, 2, 3, _gen())
    with pytest.raises(ValueError, match=r"periods must be an integer tensor of shape \(B,\) = \(4,\)"):
        predictable_accuracy(_Oracle(periods), tokens, periods[:3])
    with pytest.raises(ValueError, match=r"each period must lie in 1 \.\. 7"):
        predictable_accuracy(_Oracle(periods), tokens, torch.tensor([2, 3, 8, 2]))


# Head scores --------------------------------------------------------------------------------------------------------


def _pattern(n, target):
    """(1, 1, n, n) weights: query i puts all its weight on key target(i)."""
    w = torch.zeros(1, 1, n, n)
    for i in range(n):
        w[0, 0, i, target(i)] = 1.0
    return w


def test_previous_token_scores():
    n = 6
    previous = _pattern(n, lambda i: max(i - 1, 0))
    itself = _pattern(n, lambda i: i)
    uniform = causal_mask(n).float()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None]
    scores = previous_token_scores(torch.cat([previous, itself, uniform], dim=1))
    expected_uniform = sum(1 / (i + 1) for i in range(1, n)) / (n - 1)
    torch.testing.assert_close(scores, torch.tensor([1.0, 0.0, expected_uniform]))


def test_induction_scores():
    n, p = 10, 4
    periods = torch.tensor([p])
    induction = _pattern(n, lambda i: i - p + 1 if i >= p else 0)
    same_token = _pattern(n, lambda i: i - p if i >= p else 0)  # the earlier copy itself, one too far back
    previous = _pattern(n, lambda i: max(i - 1, 0))
    scores = induction_scores(torch.cat([induction, same_token, previous], dim=1), periods)
    torch.testing.assert_close(scores, torch.tensor([1.0, 0.0, 0.0]))
    # With period 2 the token after the earlier copy is the previous token: the two scores coincide.
    torch.testing.assert_close(induction_scores(previous, torch.tensor([2])), torch.tensor([1.0]))


def test_induction_scores_every_copy():
    n, p = 12, 3
    periods = torch.tensor([p])
    # Query i spreads its weight evenly over the tokens after every earlier copy: i - p + 1, i - 2p + 1, ...
    w = torch.zeros(1, 1, n, n)
    for i in range(n):
        keys = [j for j in range(1, i + 1) if (i + 1 - j) % p == 0 and i + 1 - j >= p]
        for j in keys:
            w[0, 0, i, j] = 1 / len(keys)
        if not keys:
            w[0, 0, i, 0] = 1.0
    torch.testing.assert_close(induction_scores(w, periods, every_copy=True), torch.tensor([1.0]))
    first_only = sum(1 / len([j for j in range(1, i + 1) if (i + 1 - j) % p == 0]) for i in range(p, n)) / (n - p)
    torch.testing.assert_close(induction_scores(w, periods), torch.tensor([first_only]))
    # Position 0 follows no token: a head that looks only there scores 0, though token 0 may be the answer.
    at_start = torch.zeros(1, 1, n, n)
    at_start[..., 0] = 1.0
    torch.testing.assert_close(induction_scores(at_start, periods, every_copy=True), torch.tensor([0.0]))
    # Every earlier copy includes the first: the score can only grow.
    g = torch.randn(2, 3, n, n, generator=_gen(9)).masked_fill(~causal_mask(n), float("-inf")).softmax(-1)
    two = torch.tensor([3, 5])
    assert bool((induction_scores(g, two, every_copy=True) >= induction_scores(g, two) - 1e-7).all())


def test_induction_scores_average_rows_with_their_own_periods():
    n = 8
    w = torch.cat([_pattern(n, lambda i: i - 3 + 1 if i >= 3 else 0), _pattern(n, lambda i: i)], dim=0)
    # Row 0 is an induction pattern for period 3 (5 valid queries), row 1 never is (period 5: 3 valid queries).
    torch.testing.assert_close(induction_scores(w, torch.tensor([3, 5])), torch.tensor([5 / 8]))


def test_scores_bad_input():
    with pytest.raises(ValueError, match=r"shape \(B, h, n, n\)"):
        previous_token_scores(torch.zeros(2, 3, 3))
    with pytest.raises(ValueError, match=r"shape \(B, h, n, n\)"):
        induction_scores(torch.zeros(1, 2, 4, 5), torch.tensor([2]))
    with pytest.raises(ValueError, match=r"each period must lie in 1 \.\. 3"):
        induction_scores(torch.zeros(1, 2, 4, 4), torch.tensor([4]))


# Composition scores ---------------------------------------------------------------------------------------------------


def _probe_matrices(model, layer):
    """W_QK and W_OV per head, measured by feeding basis vectors through the model's own Linear layers."""
    d, h = model.d_model, model.num_heads
    d_k = d // h
    eye = torch.eye(d)
    projections = model.layers[layer]
    with torch.no_grad():
        q, k, v = ((projections[n](eye) - projections[n].bias) for n in ("query", "key", "value"))  # (d, d)
        qk, ov = [], []
        for head in range(h):
            cols = slice(head * d_k, (head + 1) * d_k)
            qk.append(q[:, cols] @ k[:, cols].T)  # entry (i, j): e_i's query against e_j's key
            z = torch.zeros(1, h, d, d_k)
            z[0, head] = v[:, cols]
            ov.append(model.head_outputs(layer, z)[0, head])  # row i: what e_i's value adds to the stream
    return qk, ov


def test_composition_scores_match_a_measurement_of_the_matrices():
    model = _model(seed=6)
    _, ov0 = _probe_matrices(model, 0)
    qk1, ov1 = _probe_matrices(model, 1)

    def score(a, b):
        return torch.linalg.matrix_norm(a @ b) / (torch.linalg.matrix_norm(a) * torch.linalg.matrix_norm(b))

    expected = {
        "key": torch.tensor([[score(qk1[b], ov0[a].T) for b in range(4)] for a in range(4)]),
        "query": torch.tensor([[score(ov0[a], qk1[b]) for b in range(4)] for a in range(4)]),
        "value": torch.tensor([[score(ov0[a], ov1[b]) for b in range(4)] for a in range(4)]),
    }
    for kind, values in expected.items():
        got = composition_scores(model, kind)
        assert got.shape == (4, 4) and bool(((got >= 0) & (got <= 1)).all())
        torch.testing.assert_close(got, values, atol=1e-5, rtol=1e-4)


def test_composition_score_is_zero_when_the_key_never_reads_the_head():
    model = _model(seed=7, heads=2, d=8)
    with torch.no_grad():
        # Layer-0 head 0 writes only to features 0-3; layer-1 head 1's keys read only features 4-7.
        model.layers[0]["output"].weight[4:, 0:4] = 0
        model.layers[1]["key"].weight[4:8, 0:4] = 0
    scores = composition_scores(model, "key")
    assert scores[0, 1] < 1e-6 and scores[0, 0] > 0.05


def test_composition_scores_bad_input():
    with pytest.raises(ValueError, match="at least 2 layers"):
        composition_scores(_model(layers=1))
    with pytest.raises(ValueError, match="kind must be"):
        composition_scores(_model(), "keys")


def test_next_token_accuracy_is_what_predictable_accuracy_reports():
    tokens, periods = repeated_sequences(16, 12, 9, 2, 6, _gen())
    logits, _ = _Oracle(periods)(tokens)
    assert next_token_accuracy(logits, tokens, periods).item() == 1.0
    model = _model(vocab=9)
    with torch.no_grad():
        out, _ = model(tokens)
    assert next_token_accuracy(out, tokens, periods).item() == predictable_accuracy(model, tokens, periods)
    with pytest.raises(ValueError, match=r"logits must have shape \(B, n, V\) = \(16, 12, V\)"):
        next_token_accuracy(out[:, :-1], tokens, periods)


def test_a_head_mask_removes_the_head_from_every_path_it_is_combined_with():
    """head_mask with a path mask: the ablated head is gone from what keys, queries and values read as well, so
    ``head_mask=H, key_head_mask=K`` equals masking every path by hand with ``H`` (keys with ``H * K``), over
    seeds 0-9; the head that K keeps and H removes shows it."""
    H = torch.ones(2, 4, dtype=torch.bool)
    H[0, 1] = False  # layer 0, head 1: removed everywhere
    K = torch.ones(2, 4, dtype=torch.bool)
    K[0, 2] = False  # layer 0, head 2: removed from layer 1's keys only
    for seed in range(10):
        model = _model(seed=seed)
        tokens = torch.randint(0, 11, (3, 8), generator=_gen(seed))
        with torch.no_grad():
            combined, combined_w = model(tokens, head_mask=H, key_head_mask=K)
            by_hand, by_hand_w = model(tokens, head_mask=H, key_head_mask=H & K, query_head_mask=H, value_head_mask=H)
        torch.testing.assert_close(combined, by_hand)
        torch.testing.assert_close(combined_w[1], by_hand_w[1])


# In-context score and copying score ---------------------------------------------------------------------------------


def test_in_context_score_is_late_loss_minus_early_loss():
    torch.manual_seed(0)
    tokens = torch.randint(0, 7, (3, 12))
    logits = torch.randn(3, 12, 7)
    per_query = [
        [nn.functional.cross_entropy(logits[b, i], tokens[b, i + 1]).item() for i in range(11)] for b in range(3)
    ]
    late = sum(row[i] for row in per_query for i in range(8, 11)) / 9  # queries 8, 9, 10 predict tokens 9, 10, 11
    early = sum(row[i] for row in per_query for i in range(2)) / 6  # queries 0, 1
    got = in_context_score(logits, tokens, early=2, late=8)
    assert got.shape == ()
    assert abs(got.item() - (late - early)) < 1e-5


def test_in_context_score_of_a_copier_is_negative_and_of_a_constant_model_zero():
    tokens, periods = repeated_sequences(32, 32, 32, 4, 16, _gen(3))
    oracle_logits, _ = _Oracle(periods, vocab=32)(tokens)  # one-hot: right where predictable, wrong elsewhere
    # 10 nats of margin: a loss near 0 late (every query there predictable) and near 10 early (none is)
    assert in_context_score(10 * oracle_logits, tokens) < -9
    assert abs(in_context_score(torch.zeros(32, 32, 32), tokens).item()) < 1e-6


def test_in_context_score_bad_input():
    tokens = torch.zeros(2, 10, dtype=torch.long)
    with pytest.raises(ValueError, match="early <= late"):
        in_context_score(torch.zeros(2, 10, 5), tokens, early=5, late=4)
    with pytest.raises(ValueError, match="n - 2"):
        in_context_score(torch.zeros(2, 10, 5), tokens, early=2, late=9)
    with pytest.raises(ValueError, match="logits must have shape"):
        in_context_score(torch.zeros(2, 9, 5), tokens)
    with pytest.raises(ValueError, match="tokens must be"):
        in_context_score(torch.zeros(2, 10, 5), tokens.float())


def _ov_circuit(model, layer, head):
    """The token -> logits map of one head, measured by running one-hot values through the model's own layers."""
    d, h = model.d_model, model.num_heads
    d_k = d // h
    projections = model.layers[layer]
    v = model.embedding.weight @ projections["value"].weight.T  # (V, d): each token's value, without the bias
    z = torch.zeros(model.vocab_size, h, 1, d_k)
    z[:, head, 0] = v[:, head * d_k : (head + 1) * d_k]
    added = model.head_outputs(layer, z)[:, head, 0]  # (V, d): what attending to each token adds to the stream
    return added @ model.unembedding.weight.T  # (V, V)


def test_copying_scores_match_the_eigenvalues_of_the_measured_circuit():
    model = _model(seed=8)
    with torch.no_grad():
        for layer in range(2):
            got = copying_scores(model, layer)
            assert got.shape == (4,) and bool(((got >= -1) & (got <= 1)).all())
            for head in range(4):
                eig = torch.linalg.eigvals(_ov_circuit(model, layer, head).double())
                expected = (eig.sum().real / eig.abs().sum()).item()
                assert abs(got[head].item() - expected) < 1e-4


def test_copying_score_is_one_for_a_copier_and_minus_one_for_an_anti_copier():
    model = _model(seed=9, layers=1, heads=1, d=16, vocab=11)
    with torch.no_grad():
        # Embedding and unembedding orthonormal rows, W_V W^O the identity: the circuit is E E^T, positive definite.
        q, _ = torch.linalg.qr(torch.randn(16, 16))
        model.embedding.weight.copy_(q[:11])
        model.unembedding.weight.copy_(q[:11])
        model.layers[0]["value"].weight.copy_(torch.eye(16))
        model.layers[0]["output"].weight.copy_(torch.eye(16))
        assert abs(copying_scores(model, 0).item() - 1) < 1e-5
        model.layers[0]["output"].weight.copy_(-torch.eye(16))
        assert abs(copying_scores(model, 0).item() + 1) < 1e-5


def test_copying_scores_bad_input():
    with pytest.raises(ValueError, match="layer must be"):
        copying_scores(_model(), 2)
    with pytest.raises(ValueError, match="AttentionOnlyTransformer"):
        copying_scores(nn.Linear(2, 2), 0)
