"""The synthetic task generators, and a tiny model that must learn the reverse task."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from helpers.encoder import positional_encoding
from helpers.tasks import PAD_ID, TASKS, TinyTransformer, make_batch, reverse_targets


def test_reverse_targets_with_padding():
    g = torch.Generator().manual_seed(0)
    batch = make_batch("reverse", 50, 7, 12, min_len=2, generator=g)
    assert batch.tokens.shape == batch.targets.shape == (50, 7)
    assert batch.mask.shape == (50, 1, 7) and batch.mask.dtype == torch.bool
    assert len(set(batch.lengths.tolist())) > 1  # really variable lengths
    for b in range(50):
        length = int(batch.lengths[b])
        assert 2 <= length <= 7
        assert batch.tokens[b, :length].tolist() == batch.targets[b, :length].flip(0).tolist()
        assert (batch.tokens[b, length:] == PAD_ID).all() and (batch.targets[b, length:] == PAD_ID).all()
        assert (batch.tokens[b, :length] != PAD_ID).all()
        assert batch.mask[b, 0].tolist() == [True] * length + [False] * (7 - length)


def test_sort_max_and_count_targets():
    g = torch.Generator().manual_seed(1)
    for task in ("sort", "max", "count"):
        batch = make_batch(task, 40, 6, 5, min_len=1, generator=g)
        for b in range(40):
            length = int(batch.lengths[b])
            seq = batch.tokens[b, :length].tolist()
            expected = {
                "sort": sorted(seq),
                "max": [max(seq)] * length,
                "count": [seq.count(t) for t in seq],
            }[task]
            assert batch.targets[b, :length].tolist() == expected, (task, seq)
            assert (batch.targets[b, length:] == PAD_ID).all()


def test_same_generator_seed_same_batch():
    a = make_batch("sort", 8, 5, 9, min_len=3, generator=torch.Generator().manual_seed(7))
    b = make_batch("sort", 8, 5, 9, min_len=3, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)


def test_fixed_length_by_default_and_bad_input():
    batch = make_batch("sort", 4, 5, 9)
    assert batch.lengths.tolist() == [5, 5, 5, 5] and bool(batch.mask.all())
    assert set(TASKS) == {"reverse", "sort", "max", "count"}
    with pytest.raises(ValueError, match="unknown task 'copy'"):
        make_batch("copy", 4, 5, 9)
    with pytest.raises(ValueError, match="min_len=6, seq_len=5"):
        make_batch("sort", 4, 5, 9, min_len=6)
    with pytest.raises(ValueError, match="vocab_size must be at least 2"):
        make_batch("sort", 4, 5, 1)
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, n\)"):
        TinyTransformer(9, 9)(torch.zeros(2, 3, 4, dtype=torch.long))


def test_tiny_model_shapes_embedding_scale_and_padding():
    torch.manual_seed(0)
    model = TinyTransformer(12, 12, d_model=64, num_heads=4, num_layers=3).eval()
    assert abs(model.embedding.weight.std().item() - 64**-0.5) < 0.01  # scaled by sqrt(64) it has unit size
    batch = make_batch("sort", 3, 6, 12, min_len=2, generator=torch.Generator().manual_seed(0))
    logits, weights = model(batch.tokens, batch.mask, need_weights=True)
    assert logits.shape == (3, 6, 12) and len(weights) == 3 and weights[0].shape == (3, 4, 6, 6)
    fast_logits, none = model(batch.tokens, batch.mask)
    assert none == [None, None, None]
    torch.testing.assert_close(fast_logits, logits, atol=1e-5, rtol=1e-5)
    # Padded keys get zero weight, so whatever sits at padded positions cannot change real outputs.
    real = batch.mask[:, 0, :]
    changed = batch.tokens.masked_fill(~real, 5)
    torch.testing.assert_close(model(changed, batch.mask)[0][real], logits[real])
    for w in weights:
        assert (w.masked_select(~batch.mask[:, None].expand_as(w)) == 0).all()


def test_without_positions_the_model_is_permutation_equivariant():
    torch.manual_seed(0)
    tokens = torch.randint(1, 10, (2, 7))
    perm = torch.randperm(7)
    blind = TinyTransformer(10, 10, use_positions=False).eval()
    torch.testing.assert_close(blind(tokens[:, perm])[0], blind(tokens)[0][:, perm])
    seeing = TinyTransformer(10, 10, use_positions=True).eval()
    assert not torch.allclose(seeing(tokens[:, perm])[0], seeing(tokens)[0][:, perm], atol=1e-3)


def test_tiny_model_learns_reverse():
    """A regression in the attention or encoder helpers shows up here, outside the notebooks."""
    torch.manual_seed(0)
    seq_len, vocab = 6, 8
    model = TinyTransformer(vocab, vocab, d_model=32, num_heads=2, d_ff=64, num_layers=1)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(150):
        batch = make_batch("reverse", 64, seq_len, vocab, generator=g)
        logits, _ = model(batch.tokens, batch.mask)
        loss = F.cross_entropy(logits.reshape(-1, vocab), batch.targets.reshape(-1), ignore_index=PAD_ID)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.1 * math.log(vocab - 1)  # far below guessing among the 7 real tokens
    model.eval()
    test = make_batch("reverse", 500, seq_len, vocab, generator=torch.Generator().manual_seed(99))
    with torch.no_grad():
        logits, weights = model(test.tokens, test.mask, need_weights=True)
    accuracy = (logits.argmax(-1) == test.targets).float().mean().item()
    assert accuracy > 0.98, accuracy
    # Some head puts its largest weight on key n-1-i for almost every query i.
    anti_diagonal = torch.arange(seq_len).flip(0)
    hits = (weights[0].argmax(-1) == anti_diagonal).float().mean(dim=(0, 2))  # (h,)
    assert hits.max() > 0.95, hits


# --- tests that each catch one specific plausible bug ----------------------------------------


def test_reverse_targets_itself_fills_padding_with_pad():
    """Called directly (make_batch writes PAD_ID over padded targets again, which would hide a bug here)."""
    tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15], [3, 3, 3, 3, 3]])
    lengths = torch.tensor([5, 3, 1, 0])
    expected = [[5, 4, 3, 2, 1], [8, 7, 6, PAD_ID, PAD_ID], [11, PAD_ID, PAD_ID, PAD_ID, PAD_ID], [PAD_ID] * 5]
    assert reverse_targets(tokens, lengths).tolist() == expected
    assert reverse_targets(tokens, [5, 3, 1, 0]).tolist() == expected


def test_tiny_model_scales_the_embedding_by_sqrt_d_model_before_adding_positions():
    """§3.4: the encoder sees embedding * sqrt(d_model) + PE."""
    torch.manual_seed(0)
    d_model = 16
    model = TinyTransformer(10, 7, d_model=d_model, num_heads=2, d_ff=24, num_layers=1, max_len=12).eval()
    tokens = torch.tensor([[1, 5, 9, 2, 0], [3, 3, 4, 0, 0]])
    seen = []
    model.encoder.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    logits, _ = model(tokens)
    expected_input = model.embedding.weight[tokens] * math.sqrt(d_model) + positional_encoding(12, d_model)[:5]
    torch.testing.assert_close(seen[0], expected_input)
    expected_logits = model.projection(model.encoder(expected_input)[0])
    torch.testing.assert_close(logits, expected_logits)


@pytest.mark.parametrize("norm_first", [False, True])
def test_tiny_model_passes_its_settings_to_the_encoder(norm_first):
    model = TinyTransformer(10, 7, d_model=16, num_heads=4, d_ff=24, num_layers=3, norm_first=norm_first)
    assert len(model.encoder.layers) == 3
    assert all(layer.norm_first == norm_first for layer in model.encoder.layers)
    assert (model.encoder.norm is not None) == norm_first
    assert model.encoder.layers[0].self_attn.num_heads == 4
    assert model.encoder.layers[0].feed_forward.linear1.out_features == 24
    assert model.projection.out_features == 7 and model.embedding.num_embeddings == 10
