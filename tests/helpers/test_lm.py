"""Tests of helpers.lm: the language model against transformers' LlamaForCausalLM with copied weights, its cache
against no cache, generation's decoding rules, the shipped files' checksums, and clear errors for bad input."""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from helpers.lm import (
    DATA,
    KVCache,
    LanguageModel,
    LMConfig,
    filter_logits,
    generate,
    held_out_text,
    load_pretrained,
    manifest,
)

SMALL = LMConfig(vocab_size=50, d_model=16, num_layers=2, num_heads=4, num_kv_heads=2, d_ff=24, max_len=32)


def _small(seed: int = 0) -> LanguageModel:
    torch.manual_seed(seed)
    model = LanguageModel(SMALL).eval()
    with torch.no_grad():  # away from the initialisation, so that every weight matters
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model


@pytest.mark.parametrize("seed", range(3))
def test_equal_to_transformers_llama_with_copied_weights(seed: int):
    from helpers.reference import transformers_causal_lm

    model = _small(seed)
    reference = transformers_causal_lm(model)
    tokens = torch.randint(0, SMALL.vocab_size, (3, SMALL.max_len), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        logits, weights = model(tokens, need_weights=True)
        theirs = reference(tokens, output_attentions=True)
    torch.testing.assert_close(logits, theirs.logits, atol=1e-5, rtol=1e-5)
    for ours, their in zip(weights, theirs.attentions, strict=True):
        torch.testing.assert_close(ours, their, atol=1e-6, rtol=1e-5)
    assert reference.lm_head.weight.data_ptr() == reference.model.embed_tokens.weight.data_ptr()  # tied there too


def test_the_cache_gives_the_same_logits_as_the_whole_sequence():
    model = _small()
    tokens = torch.randint(0, SMALL.vocab_size, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        whole, whole_weights = model(tokens, need_weights=True)
        cache = KVCache(SMALL.num_layers)
        pieces = [model(tokens[:, a:b], cache)[0] for a, b in [(0, 7), (7, 8), (8, 20)]]  # a prompt, 1 token, several
        assert cache.length == 20
        torch.testing.assert_close(torch.cat(pieces, dim=1), whole, atol=1e-5, rtol=1e-5)
        cache = KVCache(SMALL.num_layers)
        model(tokens[:, :12], cache)
        _, late = model(tokens[:, 12:], cache, need_weights=True)  # (B, h, 8, 20): the last 8 rows, causal
    torch.testing.assert_close(late[0], whole_weights[0][:, :, 12:], atol=1e-6, rtol=1e-5)
    assert (late[0][..., 13:].triu(diagonal=2) == 0).all()  # no query sees a later key


def test_the_fused_and_the_explicit_path_agree_and_weights_are_causal():
    model = _small()
    tokens = torch.randint(0, SMALL.vocab_size, (2, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        fused, none = model(tokens)
        explicit, weights = model(tokens, need_weights=True)
    assert none is None and len(weights) == SMALL.num_layers
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    for w in weights:
        assert w.shape == (2, SMALL.num_heads, 16, 16)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, SMALL.num_heads, 16))
        assert (w.triu(diagonal=1) == 0).all()


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_is_temperature_zero_or_top_k_one_and_the_cache_changes_no_id(use_cache: bool):
    model = _small()
    prompt = torch.randint(0, SMALL.vocab_size, (3, 4), generator=torch.Generator().manual_seed(3))
    greedy = generate(model, prompt, 10, temperature=0, use_cache=use_cache)
    assert greedy.shape == (3, 14) and torch.equal(greedy[:, :4], prompt)
    assert torch.equal(generate(model, prompt, 10, top_k=1, use_cache=use_cache), greedy)
    assert torch.equal(generate(model, prompt, 10, temperature=0, use_cache=not use_cache), greedy)
    with torch.no_grad():  # greedy means: each new token is the argmax of the logits before it
        logits, _ = model(greedy[:, :-1])
    assert torch.equal(logits[:, 3:].argmax(-1), greedy[:, 4:])
    for kind in [{"temperature": 0.7}, {"top_k": 5}, {"top_p": 0.8}]:
        a = generate(model, prompt, 10, generator=torch.Generator().manual_seed(4), use_cache=True, **kind)
        b = generate(model, prompt, 10, generator=torch.Generator().manual_seed(4), use_cache=False, **kind)
        assert torch.equal(a, b), kind


def test_filter_logits_keeps_the_top_k_and_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.15, 0.1], [0.1, 0.6, 0.2, 0.1]]))
    kept = filter_logits(logits, top_k=2).isfinite()
    assert kept.tolist() == [[True, True, False, False], [False, True, True, False]]
    # top_p: keep a token while the mass ranked above it is under p
    assert filter_logits(logits, top_p=0.5).isfinite().tolist() == [
        [True, False, False, False],
        [False, True, False, False],
    ]
    assert filter_logits(logits, top_p=0.7).isfinite().tolist() == [
        [True, True, False, False],
        [False, True, True, False],
    ]
    assert filter_logits(logits, top_p=1.0).isfinite().all()
    assert filter_logits(logits, top_p=1e-9).isfinite().sum(-1).tolist() == [1, 1]  # the best token always stays


def test_sampling_follows_the_distribution_it_is_given():
    # one-step sampling frequencies against the model's own probabilities (a statistical claim, with margins)
    model = _small()
    prompt = torch.zeros(1, 3, dtype=torch.int64)
    with torch.no_grad():
        probs = model(prompt)[0][0, -1].softmax(-1)
    draws = generate(model, prompt.expand(4000, 3), 1, generator=torch.Generator().manual_seed(5))[:, -1]
    freq = torch.bincount(draws, minlength=SMALL.vocab_size).float() / 4000
    assert (freq - probs).abs().max() < 5 * math.sqrt(0.25 / 4000)  # five standard errors at most


def test_bad_input_gets_a_clear_error():
    model = _small()
    prompt = torch.zeros(1, 3, dtype=torch.int64)
    cases = [
        (dict(temperature=-0.1), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(top_k=0), "top_k"),
        (dict(max_new_tokens=SMALL.max_len), "context of 32"),
    ]
    for kwargs, words in cases:
        kwargs = {"max_new_tokens": 2} | kwargs
        with pytest.raises(ValueError, match=words):
            generate(model, prompt, **kwargs)
    with pytest.raises(ValueError, match=r"\[0, 50\).*max 50"):
        generate(model, torch.tensor([[1, 50]]), 1)
    with pytest.raises(ValueError, match="int64 tensor of shape"):
        generate(model, torch.zeros(3, dtype=torch.int64), 1)
    with pytest.raises(ValueError, match="int64"):
        model(torch.zeros(1, 3))
    cache = KVCache(SMALL.num_layers)
    model(torch.zeros(1, 30, dtype=torch.int64), cache)
    with pytest.raises(ValueError, match="30 cached, 3 new"):
        model(torch.zeros(1, 3, dtype=torch.int64), cache)
    with pytest.raises(ValueError, match="num_kv_heads=3"):
        LMConfig(num_heads=4, num_kv_heads=3, d_model=16)


# The shipped model: files checked by SHA-256, what the record says, the tokenizer's round trip


def test_the_shipped_files_load_and_a_changed_file_is_refused(tmp_path):
    model, tokenizer = load_pretrained()
    record = manifest()
    assert model.config == LMConfig(**record["config"]) and tokenizer.vocab_size == model.config.vocab_size
    total = sum((DATA / name).stat().st_size for name in record["files"]) + (DATA / "manifest.json").stat().st_size
    assert total < 20e6, f"the shipped files take {total / 1e6:.1f} MB"
    copy = tmp_path / "lm"
    shutil.copytree(DATA, copy)
    text = (copy / "held_out.txt").read_text(encoding="utf-8")
    (copy / "held_out.txt").write_text(text + " ", encoding="utf-8")
    with pytest.raises(ValueError, match=r"held_out\.txt does not match its SHA-256"):
        held_out_text(copy)
    (copy / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"course\.qa\.train_lm"):
        load_pretrained(copy)


def test_the_tokenizer_round_trips_any_text():
    _, tokenizer = load_pretrained()
    for text in [held_out_text()[:2000], "déjà vu: naïve café ☕, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\n\tdef f(x):  return x", ""]:
        ids = tokenizer.encode(text)
        assert all(0 <= i < tokenizer.vocab_size for i in ids)
        assert tokenizer.decode(ids) == text
    with pytest.raises(ValueError, match=r"\[0, 4096\)"):
        tokenizer.decode([4096])


def test_the_record_matches_the_shipped_model():
    record = manifest()["training"]
    assert record["seed"] == 0 and record["tokens_seen"] == record["steps"] * record["batch"] * 256
    curve = record["curve"]
    assert (
        len(curve["step"]) == len(curve["train_loss"]) == len(curve["held_out_loss"])
        and curve["step"][-1] == record["steps"]
    )
    # the stored model (float16 weights) scores what training's last evaluation did, within 0.01 nats
    assert abs(record["final_held_out_loss"] - curve["held_out_loss"][-1]) < 0.01
