"""Tests of helpers.decoding: greedy search and beam search with the GNMT length penalty (§6.1)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from helpers.decoding import (
    apply_temperature,
    beam_search,
    greedy_decode,
    length_penalty,
    sample_decode,
    sampling_probs,
    top_k_filter,
    top_p_filter,
)
from helpers.masks import padding_mask
from helpers.transformer import Transformer

BOS, EOS = 1, 2


def _tiny(seed: int, vocab: int = 5, dropout: float = 0.0) -> Transformer:
    torch.manual_seed(seed)
    model = Transformer(vocab, vocab, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=dropout, max_len=32)
    with torch.no_grad():  # larger logits than at init, so that the distributions are far from uniform
        model.projection.weight.mul_(4.0)
    return model.eval()


class TableModel(nn.Module):
    """A hand-built 'model': the next token's log-probabilities depend only on the last token (a table).

    It has encode and decode and nothing else a decoder may call (forward raises); decode checks that
    gradients are off.
    """

    def __init__(self, table: list[list[float]]):
        super().__init__()
        self.log_table = torch.tensor(table).log()  # (vocab, vocab): row = last token, column = next token
        self.calls = 0

    def forward(self, *args):
        raise AssertionError("decoding must use encode and decode only")

    def encode(self, src, src_mask=None):
        return src.float().unsqueeze(-1), []  # (B, m, 1)

    def decode(self, tgt, memory, src_mask=None):
        assert not torch.is_grad_enabled(), "decoding must run under torch.no_grad()"
        assert memory.shape[0] == tgt.shape[0]
        self.calls += 1
        return self.log_table[tgt], [], []  # (B, n) -> (B, n, vocab)


def _score(model, src, ids, alpha) -> float:
    """sum(log p) / lp(Y) of one generated sequence, by teacher forcing."""
    tgt = torch.tensor([[BOS, *ids[:-1]]])
    with torch.no_grad():
        memory, _ = model.encode(src)
        logits, _, _ = model.decode(tgt, memory)
    log_probs = torch.log_softmax(logits[0], dim=-1)  # (n, vocab)
    total = float(log_probs[torch.arange(len(ids)), torch.tensor(ids)].sum())
    return total / length_penalty(len(ids), alpha)


def _every_output(vocab: int, max_len: int):
    """Every finished hypothesis: ends with EOS (none before it), or has max_len tokens without EOS."""
    others = [t for t in range(vocab) if t != EOS]
    for n in range(1, max_len + 1):
        for prefix in itertools.product(others, repeat=n - 1):
            yield [*prefix, EOS]
            if n == max_len:
                for last in others:
                    yield [*prefix, last]


def test_length_penalty_is_gnmts():
    assert length_penalty(1, 0.6) == 1.0
    assert math.isclose(length_penalty(7, 0.6), 2.0**0.6)
    assert length_penalty(9, 0.0) == 1.0
    for bad in [(0, 0.6), (2, -0.1), (1.5, 0.6)]:
        with pytest.raises(ValueError):
            length_penalty(*bad)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_returns_the_exact_best_sequence(seed, alpha):
    """With a beam as wide as the number of hypotheses, beam search prunes nothing: it finds the argmax."""
    vocab, max_len = 4, 3
    model = _tiny(seed, vocab)
    src = torch.tensor([[3, 0, 2, 3]])
    outputs = list(_every_output(vocab, max_len))
    best = max(outputs, key=lambda ids: _score(model, src, ids, alpha))
    found = beam_search(model, src, BOS, EOS, max_len, beam_size=vocab**max_len, alpha=alpha)
    assert found == [best]
    # and the narrowest beam may miss it for some seed/alpha; the greedy answer is always one of the outputs
    assert greedy_decode(model, src, BOS, EOS, max_len)[0] in outputs


@pytest.mark.parametrize("seed", range(5))
def test_beam_of_one_is_greedy(seed):
    model = _tiny(seed, vocab=6)
    g = torch.Generator().manual_seed(seed)
    lengths = [5, 2, 4, 1]
    src = torch.randint(0, 6, (4, 5), generator=g)
    mask = padding_mask(lengths, 5)
    src = src.masked_fill(~mask[:, 0], 0)
    greedy = greedy_decode(model, src, BOS, EOS, 8, mask)
    assert beam_search(model, src, BOS, EOS, 8, beam_size=1, src_mask=mask) == greedy
    assert beam_search(model, src, BOS, EOS, 8, beam_size=1, alpha=1.3, src_mask=mask) == greedy


def test_beam_beats_greedy_when_the_first_choice_leads_astray():
    """Greedy takes A (p 0.6), after which every next token is unlikely; B (p 0.4) then EOS (0.99) is better."""
    # tokens: 0 pad, 1 bos, 2 eos, 3 A, 4 B; rows: last token, columns: next token
    uniform = [0.2] * 5
    table = [
        uniform,
        [0.0, 0.0, 0.0, 0.6, 0.4],  # after <bos>
        uniform,
        [0.0, 0.0, 0.34, 0.33, 0.33],  # after A: eos 0.34
        [0.0, 0.0, 0.99, 0.005, 0.005],  # after B: eos 0.99
    ]
    model = TableModel(table)
    src = torch.tensor([[3, 4]])
    assert greedy_decode(model, src, BOS, EOS, 5) == [[3, EOS]]
    assert beam_search(model, src, BOS, EOS, 5, beam_size=2) == [[4, EOS]]
    assert beam_search(model, src, BOS, EOS, 5, beam_size=1) == [[3, EOS]]
    assert model.calls > 0


def test_every_token_is_a_candidate_and_max_len_stops():
    """No token is excluded (not even <pad> or <bos>); without <eos>, the output stops after max_len tokens."""
    table = [[0.1, 0.6, 0.1, 0.1, 0.1], [0.6, 0.1, 0.1, 0.1, 0.1]] + [[0.2] * 5] * 3
    model = TableModel(table)  # after <pad>: <bos> (p 0.6); after <bos>: <pad> (p 0.6)
    src = torch.tensor([[3]])
    assert greedy_decode(model, src, BOS, EOS, 4) == [[0, BOS, 0, BOS]]
    assert beam_search(model, src, BOS, EOS, 4, beam_size=3, alpha=0.0) == [[0, BOS, 0, BOS]]


@pytest.mark.parametrize(("alpha", "best"), [(0.0, [EOS]), (0.6, [EOS]), (1.0, [3, EOS]), (2.0, [3, EOS])])
def test_length_penalty_decides_between_a_short_and_a_long_output(alpha, best):
    """[<eos>] has log p = -1; [A, <eos>] has log p = -1.155, between (7/6) * -1 and (8/7) * -1.

    Ranked by sum(log p) / lp(Y) with lp(1) = 1 and lp(2) = (7/6) ** alpha, the long output wins from alpha = 1
    on (-1.155 / (7/6) = -0.990 > -1), and it would lose with |Y| miscounted by one (-1.155 / (8/7) = -1.011).
    """
    p_eos = math.exp(-1.0)
    p_a = 1 - p_eos - 1e-3
    after_a = math.exp(-1.155) / p_a  # p(<eos> | A)
    rest = (1 - after_a) / 4
    table = [[0.2] * 5, [1e-3 / 2, 1e-3 / 2, p_eos, p_a, 0.0], [0.2] * 5, [rest, rest, after_a, rest, rest], [0.2] * 5]
    model = TableModel(table)
    src = torch.tensor([[4]])
    assert beam_search(model, src, BOS, EOS, 2, beam_size=25, alpha=alpha) == [best]
    assert beam_search(model, src, BOS, EOS, 2, beam_size=2, alpha=alpha) == [best]
    assert greedy_decode(model, src, BOS, EOS, 2) == [[3, EOS]]  # greedy takes A (p 0.63), then <eos>


def test_eos_is_included_and_ends_each_sentence_separately():
    table = [[0.2] * 5, [0.0, 0.0, 0.0, 0.9, 0.1], [0.2] * 5, [0.0, 0.0, 0.1, 0.0, 0.9], [0.0, 0.0, 0.9, 0.1, 0.0]]
    model = TableModel(table)  # <bos> -> A -> B -> <eos>
    src = torch.tensor([[3, 3], [4, 0]])
    assert greedy_decode(model, src, BOS, EOS, 10) == [[3, 4, EOS]] * 2
    assert beam_search(model, src, BOS, EOS, 10, beam_size=4) == [[3, 4, EOS]] * 2
    assert greedy_decode(model, src, BOS, EOS, 2) == [[3, 4]] * 2


class CountingModel(TableModel):
    """Sentence b emits token 3 ``src[b, 0]`` times, then <eos>: sentences of one batch end at different steps."""

    def __init__(self):
        super().__init__([[0.2] * 5] * 5)

    def decode(self, tgt, memory, src_mask=None):
        assert not torch.is_grad_enabled(), "decoding must run under torch.no_grad()"
        self.calls += 1
        emitted = torch.arange(tgt.shape[1])  # position i has seen i tokens after <bos>
        wanted = memory[:, :1, 0].long()  # (B, 1) tokens 3 to emit before <eos>
        next_ids = torch.where(emitted[None] < wanted, 3, EOS)  # (B, n)
        logits = torch.full((*tgt.shape, 5), -5.0).scatter(-1, next_ids[..., None], 0.0)
        return logits, [], []


def test_each_sentence_of_a_batch_runs_until_its_own_eos():
    """A sentence that is done does not stop the others; each output stops at its own <eos>, included."""
    src = torch.tensor([[0], [2], [1], [4]])
    expected = [[EOS], [3, 3, EOS], [3, EOS], [3, 3, 3, 3, EOS]]
    model = CountingModel()
    assert greedy_decode(model, src, BOS, EOS, 10) == expected
    assert model.calls == 5  # one call per step, until the longest sentence ends
    assert beam_search(model, src, BOS, EOS, 10, beam_size=2) == expected
    assert greedy_decode(model, src, BOS, EOS, 3) == [[EOS], [3, 3, EOS], [3, EOS], [3, 3, 3]]


@pytest.mark.parametrize("seed", range(3))
def test_padding_never_changes_a_decoded_output(seed):
    model = _tiny(seed, vocab=7)
    g = torch.Generator().manual_seed(100 + seed)
    sentences = [torch.randint(3, 7, (n,), generator=g) for n in (6, 3, 1, 4)]
    lengths = [len(s) for s in sentences]
    src = torch.zeros(len(sentences), 6, dtype=torch.long)
    for b, s in enumerate(sentences):
        src[b, : len(s)] = s
    mask = padding_mask(lengths, 6)
    for decode in (greedy_decode, lambda *a, **k: beam_search(*a, beam_size=3, **k)):
        batched = decode(model, src, BOS, EOS, 7, src_mask=mask)
        alone = [decode(model, s[None], BOS, EOS, 7)[0] for s in sentences]
        assert batched == alone


def test_fully_padded_source_gives_no_nan():
    model = _tiny(0, vocab=5)
    src = torch.tensor([[3, 4, 0], [0, 0, 0]])
    mask = padding_mask([2, 0], 3)
    for out in (
        greedy_decode(model, src, BOS, EOS, 4, mask),
        beam_search(model, src, BOS, EOS, 4, src_mask=mask),
    ):
        assert len(out) == 2 and all(1 <= len(ids) <= 4 and all(0 <= t < 5 for t in ids) for ids in out)


def test_decoding_runs_in_eval_mode_and_restores_the_mode():
    model = _tiny(1, vocab=6, dropout=0.5).train()
    src = torch.tensor([[3, 4, 5, 3]])
    first = greedy_decode(model, src, BOS, EOS, 6)
    assert model.training  # put back
    assert all(greedy_decode(model, src, BOS, EOS, 6) == first for _ in range(3))  # no dropout while decoding
    assert beam_search(model, src, BOS, EOS, 6) == beam_search(model, src, BOS, EOS, 6)
    assert model.training


def test_trace_shows_the_beam():
    table = [
        [0.2] * 5,
        [0.0, 0.0, 0.0, 0.6, 0.4],
        [0.2] * 5,
        [0.0, 0.0, 0.34, 0.33, 0.33],
        [0.0, 0.0, 0.99, 0.005, 0.005],
    ]
    trace = []
    out = beam_search(TableModel(table), torch.tensor([[3]]), BOS, EOS, 3, beam_size=2, trace=trace)
    assert out == [[4, EOS]]
    sentence, step, live, finished = trace[0]
    assert (sentence, step) == (0, 1) and [ids for ids, _ in live] == [[3], [4]] and finished == []
    assert math.isclose(live[0][1], math.log(0.6), rel_tol=1e-6)
    _, step, live, finished = trace[1]  # [4, eos] (-0.93) then [3, eos] (-1.59): both finished, beam full
    assert step == 2 and live == [] and [ids for ids, _, _ in finished] == [[4, EOS], [3, EOS]]
    assert len(trace) == 2


def test_a_finished_hypothesis_takes_a_place_in_the_beam():
    """The beam keeps beam_size - (finished so far) live hypotheses: finished ones count against the beam."""
    # after <bos>: A 0.6, B 0.4; after A: <eos> 0.9; after B: A 0.5, B 0.5
    table = [[0.2] * 5, [0.0, 0.0, 0.0, 0.6, 0.4], [0.2] * 5, [0.0, 0.0, 0.9, 0.05, 0.05], [0.0, 0.0, 0.0, 0.5, 0.5]]
    trace = []
    beam_search(TableModel(table), torch.tensor([[3]]), BOS, EOS, 4, beam_size=2, trace=trace)
    steps = [(len(live), len(finished)) for _, _, live, finished in trace]
    assert steps[:2] == [(2, 0), (1, 1)]  # step 2: [A, eos] finished, [B, A] kept (ties: the smaller id)
    assert all(n_live + n_finished <= 2 for n_live, n_finished in steps)
    assert [ids for ids, _ in trace[1][2]] == [[4, 3]]


def test_bad_input_raises():
    model = _tiny(0)
    src = torch.tensor([[3, 4]])
    with pytest.raises(ValueError, match="src"):
        greedy_decode(model, src.float(), BOS, EOS, 3)
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode(model, src, BOS, EOS, 0)
    with pytest.raises(ValueError, match="src_mask"):
        beam_search(model, src, BOS, EOS, 3, src_mask=torch.ones(1, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, src, BOS, EOS, 3, beam_size=0)
    with pytest.raises(ValueError, match="alpha"):
        beam_search(model, src, BOS, EOS, 3, alpha=-1.0)
    with pytest.raises(ValueError, match="encode"):
        greedy_decode(object(), src, BOS, EOS, 3)


def test_length_penalty_checker_accepts_gnmt_and_names_each_mistake():
    from course import exercises as ex

    def right(sum_log_p, lengths, alpha):
        return torch.tensor(
            [s / length_penalty(int(n), alpha) for s, n in zip(sum_log_p.tolist(), lengths, strict=True)]
        )

    def stub(*args):
        raise NotImplementedError

    assert ex.check_length_penalty(right).passed
    assert ex.check_length_penalty(stub).status == "not attempted"
    wrong = {
        "no penalty": lambda s, n, a: s * 1.0,
        "multiplied": lambda s, n, a: s * ((n + 5) / 6) ** a,
        "<eos> not counted": lambda s, n, a: s / ((n + 4) / 6) ** a,
        "alpha ignored": lambda s, n, a: s * 6 / (n + 5),
        "mean log p": lambda s, n, a: s / n,
        "length ** alpha": lambda s, n, a: s / n.double() ** a,
    }
    for mistake, answer in wrong.items():
        verdict = ex.check_length_penalty(answer)
        assert verdict.mistake == mistake, (mistake, str(verdict))


def test_length_penalty_checker_hints_only_part_of_the_answer():
    from course import exercises as ex

    ex.reset_attempts("10.2")
    verdict = str(ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6) ** a * 1.3))  # the first: conceptual
    assert "§6.1" in verdict and "lp(Y)" not in verdict and "((5 + lengths) / 6) ** alpha" not in verdict
    verdict = str(ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6) ** a * 1.3))  # the second: in code
    assert "lp(Y)" in verdict and "((5 + lengths) / 6) ** alpha" not in verdict
    verdict = str(ex.check_length_penalty(lambda s, n, a: s / ((5 + n) / 6) ** a * 1.3))  # the third: a solution
    assert "((5 + lengths) / 6) ** alpha" in verdict


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_beam_search_runs_on_the_models_device():
    model = _tiny(0, vocab=6).cuda()
    src = torch.randint(0, 6, (3, 4), generator=torch.Generator().manual_seed(0))
    expected = beam_search(_tiny(0, vocab=6), src, BOS, EOS, 6)
    assert beam_search(model, src.cuda(), BOS, EOS, 6) == expected


# Sampling: temperature, top-k and top-p (nucleus) filters, and sample_decode.


def test_temperature_scales_the_logits_and_zero_is_the_argmax():
    logits = torch.tensor([[1.0, 3.0, 2.0, 3.0], [0.5, -1.0, 0.0, 0.25]])
    torch.testing.assert_close(apply_temperature(logits, 2.0), logits / 2)
    torch.testing.assert_close(apply_temperature(logits, 1), logits)
    zero = apply_temperature(logits, 0)
    assert zero[0].tolist() == [-math.inf, 0.0, -math.inf, -math.inf]  # a tie: the first, as argmax
    assert zero[1].tolist() == [0.0, -math.inf, -math.inf, -math.inf]
    p = torch.softmax(logits, -1)
    for t in (0.5, 2.0):  # softmax(z / T) is p ** (1 / T), renormalised
        powered = p ** (1 / t)
        torch.testing.assert_close(sampling_probs(logits, temperature=t), powered / powered.sum(-1, keepdim=True))
    tops = [sampling_probs(logits[1], temperature=t).max().item() for t in (0.01, 0.5, 1.0, 2.0, 10.0)]
    assert all(a > b for a, b in itertools.pairwise(tops)) and tops[0] > 0.999  # sharper as T falls


def test_top_k_keeps_exactly_k_tokens_and_their_ratios():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=g)
    for k in (1, 3, 11, 20):
        kept = top_k_filter(logits, k)
        assert kept.shape == logits.shape
        finite = torch.isfinite(kept)
        assert (finite.sum(-1) == min(k, 11)).all()
        smallest_kept = kept.masked_fill(~finite, math.inf).min(-1).values
        largest_dropped = logits.masked_fill(finite, -math.inf).max(-1).values
        assert (smallest_kept >= largest_dropped).all()  # the k largest, not any k
        assert torch.equal(kept[finite], logits[finite])
    assert torch.equal(top_k_filter(logits, 1).argmax(-1), logits.argmax(-1))
    tied = torch.tensor([2.0, 5.0, 2.0, 2.0])
    assert torch.isfinite(top_k_filter(tied, 2)).tolist() == [True, True, False, False]  # ties: the smaller id


def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p():
    probs = torch.tensor([0.05, 0.5, 0.2, 0.25])  # ranked: 1 (0.5), 3 (0.25), 2 (0.2), 0 (0.05)
    logits = probs.log()
    expected = {  # p -> the ids kept (no p on a boundary: the sums are rounded)
        0.3: [1],
        0.49: [1],  # 0.5 alone reaches it
        0.6: [1, 3],
        0.74: [1, 3],
        0.76: [1, 2, 3],
        0.94: [1, 2, 3],
        0.96: [0, 1, 2, 3],
        1.0: [0, 1, 2, 3],
    }
    for p, kept in expected.items():
        filtered = top_p_filter(logits, p)
        assert torch.isfinite(filtered).nonzero().flatten().tolist() == kept, p
        renormalised = sampling_probs(logits, top_p=p)
        torch.testing.assert_close(renormalised[kept], probs[kept] / probs[kept].sum())
        assert renormalised.sum().item() == pytest.approx(1.0)
    g = torch.Generator().manual_seed(1)
    batch = torch.randn(4, 30, generator=g) * 2
    for p in (0.1, 0.5, 0.9):
        keep = torch.isfinite(top_p_filter(batch, p))
        probs = torch.softmax(batch, -1)
        mass = (probs * keep).sum(-1)
        least = probs.masked_fill(~keep, math.inf).min(-1).values
        assert (mass >= p - 1e-6).all() and (mass - least < p).all()  # reaches p; one token fewer would not


def test_filters_compose_in_order_temperature_top_k_top_p():
    logits = torch.tensor([3.0, 2.5, 2.0, 0.0, -1.0])
    probs = sampling_probs(logits, temperature=2.0, top_k=3, top_p=0.7)
    scaled = torch.softmax(logits[:3] / 2, -1)  # top-k after the temperature: three tokens, then their nucleus
    assert scaled[0] < 0.7 <= scaled[0] + scaled[1] and torch.softmax(logits / 2, -1)[:2].sum() < 0.7  # order matters
    expected = torch.zeros(5)
    expected[:2] = scaled[:2] / scaled[:2].sum()
    torch.testing.assert_close(probs, expected)
    torch.testing.assert_close(sampling_probs(logits), torch.softmax(logits, -1))


def test_sampling_arguments_are_checked():
    logits = torch.zeros(2, 4)
    for bad in (-0.5, math.inf, math.nan, "1", True):
        with pytest.raises(ValueError, match="temperature"):
            apply_temperature(logits, bad)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="top_k"):
            top_k_filter(logits, bad)
    for bad in (0, 0.0, -0.1, 1.01, math.nan, None):
        with pytest.raises(ValueError, match="top_p"):
            top_p_filter(logits, bad)
    for bad in (torch.zeros(3, dtype=torch.long), torch.tensor(1.0), torch.zeros(2, 0), [0.1, 0.9]):
        with pytest.raises(ValueError, match="logits"):
            top_k_filter(bad, 1)
    model, src = _tiny(0), torch.tensor([[3, 4]])
    with pytest.raises(ValueError, match="temperature"):
        sample_decode(model, src, BOS, EOS, 3, temperature=-1.0)
    with pytest.raises(ValueError, match="top_p"):
        sample_decode(model, src, BOS, EOS, 3, top_p=1.5)
    with pytest.raises(ValueError, match="top_k"):
        sample_decode(model, src, BOS, EOS, 3, top_k=0)
    with pytest.raises(ValueError, match="generator"):
        sample_decode(model, src, BOS, EOS, 3, generator=0)
    with pytest.raises(ValueError, match="max_len"):
        sample_decode(model, src, BOS, EOS, 0)


@pytest.mark.parametrize("seed", range(4))
def test_sampling_at_temperature_zero_or_top_k_one_is_greedy(seed):
    model = _tiny(seed, vocab=6)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 6, (5, 4), generator=g)
    mask = padding_mask([4, 2, 3, 1, 4], 4)
    greedy = greedy_decode(model, src, BOS, EOS, 8, mask)
    for kwargs in ({"temperature": 0}, {"top_k": 1}, {"temperature": 3.0, "top_k": 1}, {"top_p": 1e-6}):
        assert sample_decode(
            model, src, BOS, EOS, 8, mask, generator=torch.Generator().manual_seed(seed), **kwargs
        ) == (greedy), kwargs


def test_samples_follow_the_models_distribution():
    """After <bos> the table model gives A 0.6, B 0.3, <eos> 0.1; then always <eos>. Counts over 20,000 draws."""
    table = [[0.2] * 5, [0.0, 0.0, 0.1, 0.6, 0.3], [0.2] * 5, [0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]]
    model = TableModel(table)
    n = 20_000
    out = sample_decode(model, torch.full((n, 1), 3), BOS, EOS, 4, generator=torch.Generator().manual_seed(0))
    first = torch.tensor([ids[0] for ids in out])
    share = torch.bincount(first, minlength=5).double() / n
    se = (0.25 / n) ** 0.5
    for token, p in [(0, 0.0), (1, 0.0), (EOS, 0.1), (3, 0.6), (4, 0.3)]:
        assert abs(share[token].item() - p) < 5 * se, (token, share)
    assert all(ids[-1] == EOS and len(ids) <= 2 for ids in out)  # a zero-probability token is never drawn
    truncated = sample_decode(
        model, torch.full((n, 1), 3), BOS, EOS, 4, top_k=2, generator=torch.Generator().manual_seed(0)
    )
    share = torch.bincount(torch.tensor([ids[0] for ids in truncated]), minlength=5).double() / n
    assert share[EOS] == 0 and abs(share[3].item() - 2 / 3) < 5 * se  # renormalised over A and B
    hot = sample_decode(
        model, torch.full((n, 1), 3), BOS, EOS, 4, temperature=2.0, generator=torch.Generator().manual_seed(0)
    )
    share = torch.bincount(torch.tensor([ids[0] for ids in hot]), minlength=5).double() / n
    root = torch.tensor([0.1, 0.6, 0.3]) ** 0.5  # p ** (1 / T)
    assert abs(share[3].item() - (root[1] / root.sum()).item()) < 5 * se


def test_sampling_is_the_inverse_of_the_cumulative_distribution():
    """The token drawn is the first whose cumulative probability exceeds u; a boundary moved across u changes it."""
    table = [[0.2] * 5, [0.0, 0.0, 0.25, 0.5, 0.25], [0.2] * 5, [0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]]
    n = 1000
    u = torch.rand(n, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(5))[:, 0]
    out = sample_decode(
        TableModel(table), torch.full((n, 1), 3), BOS, EOS, 3, generator=torch.Generator().manual_seed(5)
    )
    expected = torch.where(u < 0.25, EOS, torch.where(u < 0.75, 3, 4))  # cumulative 0.25 (eos), 0.75 (A), 1 (B)
    assert [ids[0] for ids in out] == expected.tolist()
    same = sample_decode(
        TableModel(table), torch.full((n, 1), 3), BOS, EOS, 3, generator=torch.Generator().manual_seed(5)
    )
    assert same == out  # the same generator state and probabilities: the same samples


def test_sample_decode_runs_in_eval_mode_stops_at_eos_and_matches_the_cache():
    model = _tiny(2, vocab=6, dropout=0.5).train()
    src = torch.tensor([[3, 4, 5, 3], [5, 5, 0, 0]])
    mask = padding_mask([4, 2], 4)
    first = sample_decode(model, src, BOS, EOS, 6, mask, generator=torch.Generator().manual_seed(3))
    assert model.training
    assert sample_decode(model, src, BOS, EOS, 6, mask, generator=torch.Generator().manual_seed(3)) == first
    cached = sample_decode(model, src, BOS, EOS, 6, mask, generator=torch.Generator().manual_seed(3), use_cache=True)
    assert cached == first
    assert all(1 <= len(ids) <= 6 and (EOS not in ids or ids.index(EOS) == len(ids) - 1) for ids in first)
    model = CountingModel()  # deterministic logits (-5 against 0): temperature 0 gives its greedy output
    src = torch.tensor([[0], [2], [1]])
    assert sample_decode(model, src, BOS, EOS, 10, temperature=0) == [[EOS], [3, 3, EOS], [3, EOS]]
