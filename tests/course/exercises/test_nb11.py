"""The checkers of notebook 11, efficient attention (``course.exercises.nb11``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from course import exercises as ex
from course.exercises import nb11
from helpers.efficient import online_softmax_update
from helpers.masks import causal_mask
from tests.course.exercises.answers import finite_or_zero, inverted, joined_cache, no_mask, running_max_step

INF = math.inf


def stub(*args):
    raise NotImplementedError


def hostile_answers():
    def exits(*args):
        raise SystemExit(1)

    return (None, 42, "my_answer", lambda *args: "hello", lambda *args: None, lambda *args: 1 / 0, lambda: 0, exits)


CODE_TOKENS = ("@", "softmax(", "transpose(", ".view(", "gather(", "masked_fill", "tril(", "unsqueeze", "arange(")


@pytest.mark.parametrize(
    "checker", [ex.check_online_softmax_update, ex.check_cached_attention, ex.check_grouped_attention]
)
def test_stubs_hostile_answers_and_hint_tiers(checker):
    verdict = checker(stub)
    assert verdict.status == "not attempted" and "Hint:" in str(verdict), verdict
    hint = str(verdict).split("Hint:", 1)[1]
    assert not any(token in hint for token in CODE_TOKENS), hint  # the first hint is conceptual
    for answer in hostile_answers():
        verdict = checker(answer)
        assert verdict.status == "failed" and verdict.message, (answer, verdict)
    assert checker(lambda *args: None).mistake == "no return"
    assert checker(lambda *args: [1.0, 2.0, 3.0]).status == "failed"
    assert "check_" in checker.__name__ and checker.__name__ in ex.__all__


def update_log_space(m, s, block):  # log-space: logaddexp of the two log-normalisers
    new_max = torch.maximum(m, block.amax(-1))
    log_total = torch.logaddexp(m + s.log(), torch.logsumexp(block, dim=-1))
    return new_max, torch.where(new_max == -INF, torch.zeros_like(s), torch.exp(log_total - new_max))


def update_rows_loop(m, s, block):  # one row at a time, in Python floats
    maxes, sums = [], []
    for old_max, old_sum, row in zip(m.tolist(), s.tolist(), block.tolist(), strict=True):
        new_max = max([old_max, *row])
        if new_max == -INF:
            maxes.append(new_max)
            sums.append(0.0)
            continue
        maxes.append(new_max)
        sums.append(old_sum * math.exp(old_max - new_max) + sum(math.exp(x - new_max) for x in row))
    return [torch.tensor(maxes), torch.tensor(sums)]  # a list is as good as a tuple


def update_cat_nan_to_num(m, s, block):  # the old max as an extra column, NaN cleaned up afterwards
    both = torch.cat([m[:, None], block], dim=1)
    new_max = both.amax(dim=1)
    weights = torch.cat([s[:, None], torch.ones_like(block)], dim=1)
    return new_max, (weights * torch.exp(both - new_max[:, None])).nansum(dim=1)


def update_entry_by_entry(m, s, block):  # the block's columns folded in one at a time
    for j in range(block.shape[-1]):
        new_max = torch.maximum(m, block[:, j])
        shift = torch.where(new_max == -INF, torch.zeros_like(new_max), new_max)
        s = s * torch.exp(m - shift) + torch.exp(block[:, j] - shift)
        m = new_max
    return m, s


def test_online_softmax_update_accepts_right_answers():
    answers = (online_softmax_update, update_log_space, update_rows_loop, update_cat_nan_to_num, update_entry_by_entry)
    for answer in answers:
        verdict = ex.check_online_softmax_update(answer)
        assert verdict.passed, (answer.__name__, str(verdict))


def test_online_softmax_folded_case_is_the_logsumexp_of_the_row():
    case = nb11.online_cases()[-1]
    row = case.args[2]
    new_max, new_sum = nb11.folded(online_softmax_update)(*case.args)
    torch.testing.assert_close(new_max + new_sum.log(), torch.logsumexp(row, dim=-1))


def no_rescale(m, s, block):
    new_max, shift = running_max_step(m, block)
    return new_max, s + torch.exp(block - shift[:, None]).sum(-1)


def unshifted(m, s, block):
    new_max, shift = running_max_step(m, block)
    return new_max, s * torch.exp(m - shift) + block.exp().sum(-1)


def own_max(m, s, block):
    new_max, shift = running_max_step(m, block)
    block_max = block.max(dim=-1).values
    return new_max, s * torch.exp(m - shift) + torch.exp(block - finite_or_zero(block_max)[:, None]).sum(-1)


def unguarded(m, s, block):
    new_max = torch.maximum(m, block.amax(-1))
    return new_max, s * torch.exp(m - new_max) + torch.exp(block - new_max.unsqueeze(-1)).sum(-1)


def old_max(m, s, block):
    return m, online_softmax_update(m, s, block)[1]


def raw_sum(m, s, block):
    new_max, shift = running_max_step(m, block)
    return new_max, s * torch.exp(m - shift) + block.sum(-1)


def only_the_raw_block(m, s, block):
    return torch.maximum(m, block.amax(-1)), block.sum(-1)


def old_sum_dropped(m, s, block):
    new_max, shift = running_max_step(m, block)
    return new_max, torch.exp(block - shift[:, None]).sum(-1)


def no_rescale_unguarded(m, s, block):
    new_max = torch.maximum(m, block.amax(-1))
    return new_max, s + torch.exp(block - new_max[:, None]).sum(-1)


def stand_in_max(m, s, block):
    new_max = torch.maximum(m, block.amax(-1))
    new_max = torch.where(new_max == -INF, 0.0, new_max)
    return new_max, s * torch.exp(m - new_max) + torch.exp(block - new_max[:, None]).sum(-1)


ONLINE_MISTAKES = {
    stand_in_max: ("masked row's max not -inf", "stays -inf"),
    no_rescale: ("old sum not rescaled", "exp(old_max - new_max)"),
    inverted: ("rescaled the wrong way", "inverse factor"),
    unshifted: ("block not shifted", "overflows"),
    own_max: ("shifted by the block's own max", "the block's own max"),
    unguarded: ("-inf - -inf gives NaN", "subtracting -inf from -inf"),
    old_max: ("returned the old max", "return the new max"),
    raw_sum: ("raw entries summed", "sum of exponentials"),
    only_the_raw_block: ("raw entries summed", "plain sum of the block's entries"),
    old_sum_dropped: ("old sum dropped", "earlier entries are lost"),
    no_rescale_unguarded: ("old sum not rescaled", "subtracting -inf from -inf"),
}


@pytest.mark.parametrize("answer", ONLINE_MISTAKES, ids=lambda f: f.__name__)
def test_online_softmax_update_names_each_mistake(answer):
    key, words = ONLINE_MISTAKES[answer]
    verdict = ex.check_online_softmax_update(answer)
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == key, text
    assert "Likely mistake: " in text and words in text, text
    assert "Hint:" not in text  # a named mistake gets its diagnosis, not the recipe


def test_online_softmax_update_wrong_shapes_and_unnamed_mistakes_get_clear_verdicts():
    def keepdim(m, s, block):
        new_max, new_sum = online_softmax_update(m, s, block)
        return new_max[:, None], new_sum[:, None]

    text = str(ex.check_online_softmax_update(keepdim))
    assert "expected shape (3,), got (3, 1)" in text and "axes of size 1" in text, text
    verdict = ex.check_online_softmax_update(lambda m, s, b: online_softmax_update(m, s, b)[1])
    assert verdict.mistake == "wrong return type" and "return a tuple (new_max, new_sum)" in str(verdict)
    ex.reset_attempts("11.1")
    text = str(ex.check_online_softmax_update(lambda m, s, b: (online_softmax_update(m, s, b)[0], s * 2 + 1)))
    assert "largest difference" in text and "Hint: the softmax's normaliser" in text, text  # the first: conceptual
    text = str(ex.check_online_softmax_update(lambda m, s, b: (online_softmax_update(m, s, b)[0], s * 2 + 1)))
    assert "Hint in code: the new max is torch.maximum" in text and "A solution" not in text, text


def test_an_answer_without_the_guard_on_a_fresh_start_fails_on_the_fully_masked_row():
    """The 08-14 review's class: a special case for the first block (nothing to rescale yet) that skips the guard
    against a max of -inf. Right for every row that has a real entry; NaN for a row of a fresh batch whose first
    block is all -inf (a fully masked row), which one case now holds."""

    def fresh_start_unguarded(running_max, running_sum, block):
        new_max = torch.maximum(running_max, block.max(dim=-1).values)
        if torch.isinf(running_max).all():  # a fresh start: nothing to rescale
            return new_max, torch.exp(block - new_max[:, None]).sum(dim=-1)
        safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        return new_max, running_sum * torch.exp(running_max - safe) + torch.exp(block - safe[:, None]).sum(dim=-1)

    verdict = ex.check_online_softmax_update(fresh_start_unguarded)
    text = str(verdict)
    assert verdict.status == "failed" and "row 1 is all -inf" in text and "NaN" in text, text


def cached_helpers(q, k, v, cache_k, cache_v):
    from helpers.attention import scaled_dot_product_attention
    from helpers.masks import causal_mask

    keys, values = torch.cat([cache_k, k], dim=-2), torch.cat([cache_v, v], dim=-2)
    mask = causal_mask(q.shape[-2], past=cache_k.shape[-2])
    return scaled_dot_product_attention(q, keys, values, mask)[0], keys, values


def cached_lower_right(q, k, v, cache_k, cache_v):
    keys, values = torch.concat((cache_k, k), dim=2), torch.concat((cache_v, v), dim=2)
    bias = causal_lower_right(q.shape[2], keys.shape[2])
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=bias), keys, values


def cached_hand_mask(q, k, v, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k], dim=2), torch.cat([cache_v, v], dim=2)
    t, n = cache_k.shape[2], q.shape[2]
    allowed = torch.arange(t + n)[None, :] <= t + torch.arange(n)[:, None]
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed), keys, values


def cached_query_loop(q, k, v, cache_k, cache_v):  # one new query at a time, no mask: it sees keys[: t + i + 1]
    keys, values = torch.cat([cache_k, k], dim=2), torch.cat([cache_v, v], dim=2)
    t = cache_k.shape[2]
    outputs = []
    for i in range(q.shape[2]):
        scores = torch.einsum("bhd,bhmd->bhm", q[:, :, i], keys[:, :, : t + i + 1]) / q.shape[-1] ** 0.5
        outputs.append(torch.einsum("bhm,bhmd->bhd", scores.softmax(-1), values[:, :, : t + i + 1]))
    return torch.stack(outputs, dim=2), keys, values


def test_cached_attention_accepts_right_answers():
    for answer in (cached_helpers, cached_lower_right, cached_hand_mask, cached_query_loop):
        verdict = ex.check_cached_attention(answer)
        assert verdict.passed, (answer.__name__, str(verdict))


def is_causal_with_cache(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    return F.scaled_dot_product_attention(q, keys, values, is_causal=True), keys, values


def top_left_by_hand(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    allowed = torch.ones(q.shape[2], keys.shape[2], dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed), keys, values


def cache_only(q, k, v, cache_k, cache_v):
    out = F.scaled_dot_product_attention(q, cache_k, cache_v)
    return out, *joined_cache(k, v, cache_k, cache_v)


def prepended(q, k, v, cache_k, cache_v):
    keys, values = torch.cat([k, cache_k], dim=2), torch.cat([v, cache_v], dim=2)
    return F.scaled_dot_product_attention(q, keys, values), keys, values


def old_caches(q, k, v, cache_k, cache_v):
    return cached_helpers(q, k, v, cache_k, cache_v)[0], cache_k, cache_v


def scaled_by_d_v(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    bias = causal_lower_right(q.shape[2], keys.shape[2])
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=bias, scale=v.shape[-1] ** -0.5), keys, values


def unscaled(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    bias = causal_lower_right(q.shape[2], keys.shape[2])
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=bias, scale=1.0), keys, values


def softmax_over_queries(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~causal_mask(q.shape[2], past=cache_k.shape[2]), float("-inf"))
    return torch.softmax(scores, dim=-2) @ values, keys, values


def cat_heads(q, k, v, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k], dim=1), torch.cat([cache_v, v], dim=1)
    return F.scaled_dot_product_attention(q, keys, values), keys, values


def cat_features(q, k, v, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k], dim=-1), torch.cat([cache_v, v], dim=-1)
    return F.scaled_dot_product_attention(q, keys, values), keys, values


def stacked(q, k, v, cache_k, cache_v):
    keys, values = torch.stack([cache_k, k], dim=2), torch.stack([cache_v, v], dim=2)
    return F.scaled_dot_product_attention(q, keys, values), keys, values


def own_key_excluded(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    t, n = cache_k.shape[2], q.shape[2]
    allowed = torch.arange(t + n)[None, :] < t + torch.arange(n)[:, None]
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed), keys, values


def pytorch_module_mask(q, k, v, cache_k, cache_v):  # nn.MultiheadAttention's True = hidden, given to SDPA
    from helpers.masks import causal_mask

    keys, values = joined_cache(k, v, cache_k, cache_v)
    hidden = ~causal_mask(q.shape[2], past=cache_k.shape[2])
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=hidden), keys, values


def square_mask(q, k, v, cache_k, cache_v):
    from helpers.attention import scaled_dot_product_attention
    from helpers.masks import causal_mask

    keys, values = joined_cache(k, v, cache_k, cache_v)
    return scaled_dot_product_attention(q, keys, values, causal_mask(q.shape[2]))[0], keys, values


CACHED_MISTAKES = {
    is_causal_with_cache: ("causal mask aligned top-left", "is_causal=True"),
    top_left_by_hand: ("causal mask aligned top-left", "keys j <= t + i"),
    no_mask: ("no causal mask", "new positions after it"),
    cache_only: ("new keys left out", "only to the cached keys"),
    prepended: ("new keys prepended", "For a single new query the output is the same"),
    old_caches: ("old caches returned", "extended by the new keys"),
    scaled_by_d_v: ("scaled by sqrt(d_v)", "sqrt(d_v)"),
    unscaled: ("no scaling", "sqrt(d_k)"),
    softmax_over_queries: ("softmax over queries", "dim=-1"),
    cat_heads: ("concatenated along the wrong axis", "dim=-2"),
    cat_features: ("concatenated along the wrong axis", "dim=-2"),
    stacked: ("stacked instead of concatenated", "new axis"),
    square_mask: ("square causal mask", "the mask is (3, 7)"),
    own_key_excluded: ("own key excluded", "j <= t + i"),
    pytorch_module_mask: ("causal mask inverted", "True = may attend"),
}


def test_cached_attention_the_trap_and_the_prepended_caches_say_where():
    text = str(ex.check_cached_attention(is_causal_with_cache))  # passes t=0, fails every case with a cache
    assert 'case "one new position after t=5 cached' in text and "(3 of 5 cases)" in text, text
    assert "cache_k and cache_v match; output does not." in text and "bottom right" in text, text
    text = str(ex.check_cached_attention(prepended))
    assert "output match; cache_k and cache_v do not." in text, text


def test_a_causal_mask_only_when_something_is_cached_fails_on_the_prompt():
    """The 08-14 review's class: the first call of a generation has several new positions and an empty cache. An
    answer that masks only when the cache holds something is right for every later call, and wrong there."""
    from helpers.attention import scaled_dot_product_attention
    from helpers.masks import causal_mask

    def masks_only_with_a_cache(q, k, v, cache_k, cache_v):
        keys, values = joined_cache(k, v, cache_k, cache_v)
        t, n = cache_k.shape[2], q.shape[2]
        mask = causal_mask(n, past=t) if t > 0 else None
        return scaled_dot_product_attention(q, keys, values, mask)[0], keys, values

    verdict = ex.check_cached_attention(masks_only_with_a_cache)
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == "no causal mask on the prompt", text
    assert 'case "a prompt: 4 new positions, empty caches (t=0)' in text and "(1 of 5 cases)" in text, text


def test_cached_attention_wrong_shapes_and_types_get_clear_verdicts():
    verdict = ex.check_cached_attention(lambda *a: cached_helpers(*a)[0])
    assert verdict.mistake == "wrong return type" and "return a tuple (output, cache_k, cache_v)" in str(verdict)
    verdict = ex.check_cached_attention(lambda *a: cached_helpers(*a)[:2])
    assert verdict.mistake == "wrong return type", str(verdict)

    def heads_last(*args):
        out, keys, values = cached_helpers(*args)
        return out.transpose(1, 2), keys, values

    ex.reset_attempts()
    text = str(ex.check_cached_attention(heads_last))
    assert "output: expected shape (2, 2, 1, 8), got (2, 1, 2, 8)" in text and "Hint: the n_new new positions" in text
    text = str(ex.check_cached_attention(heads_last))
    assert "Hint in code: the caches grow along the positions axis" in text, text
    verdict = ex.check_cached_attention(lambda *a: (cached_helpers(*a)[0], *cached_helpers(*a)[1:][::-1]))
    assert verdict.mistake == "caches swapped" and "the keys first" in str(verdict), str(verdict)


def grouped_sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def grouped_repeat_interleave(q, k, v):
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


def grouped_expand(q, k, v):
    B, h, _, d_k = q.shape
    h_kv, m = k.shape[1], k.shape[2]
    k = k[:, :, None].expand(B, h_kv, h // h_kv, m, d_k).reshape(B, h, m, d_k)
    v = v[:, :, None].expand(B, h_kv, h // h_kv, m, v.shape[-1]).reshape(B, h, m, v.shape[-1])
    return F.scaled_dot_product_attention(q, k, v)


def grouped_head_loop(q, k, v):
    group = q.shape[1] // k.shape[1]
    heads = []
    for i in range(q.shape[1]):
        kv = i // group
        weights = torch.softmax(q[:, i] @ k[:, kv].mT / q.shape[-1] ** 0.5, dim=-1)
        heads.append(weights @ v[:, kv])
    return torch.stack(heads, dim=1)


def grouped_einsum(q, k, v):  # the query heads viewed as (h_kv, group): no copies of k and v
    B, h, n, d_k = q.shape
    h_kv = k.shape[1]
    qg = q.view(B, h_kv, h // h_kv, n, d_k)
    weights = torch.einsum("bkgnd,bkmd->bkgnm", qg, k).div(math.sqrt(d_k)).softmax(-1)
    return torch.einsum("bkgnm,bkme->bkgne", weights, v).reshape(B, h, n, v.shape[-1])


def test_grouped_attention_accepts_right_answers():
    for answer in (grouped_sdpa, grouped_repeat_interleave, grouped_expand, grouped_head_loop, grouped_einsum):
        verdict = ex.check_grouped_attention(answer)
        assert verdict.passed, (answer.__name__, str(verdict))


def test_grouped_reference_equals_repeating_the_key_value_heads():
    for case in nb11.grouped_cases():
        torch.testing.assert_close(nb11.grouped_reference(*case.args), grouped_repeat_interleave(*case.args))


def tiled_repeat(q, k, v):
    g = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1))


def tiled_expand(q, k, v):  # the group axis in front of the kv heads: the same tiling as .repeat
    B, h, _, d_k = q.shape
    h_kv, m = k.shape[1], k.shape[2]
    k = k[:, None].expand(B, h // h_kv, h_kv, m, d_k).reshape(B, h, m, d_k)
    v = v[:, None].expand(B, h // h_kv, h_kv, m, v.shape[-1]).reshape(B, h, m, v.shape[-1])
    return F.scaled_dot_product_attention(q, k, v)


def first_head(q, k, v):
    return F.scaled_dot_product_attention(q, k[:, 0:1], v[:, 0:1])


def averaged(q, k, v):
    return F.scaled_dot_product_attention(q, k.mean(1, keepdim=True), v.mean(1, keepdim=True))


def grouped_unscaled(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=1.0)


def grouped_by_d_v(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=1 / math.sqrt(v.shape[-1]))


def grouped_softmax_over_queries(q, k, v):
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=2) @ v


def not_repeated(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


GROUPED_MISTAKES = {
    tiled_repeat: ("key/value heads tiled", "query heads 0, 2, 4, 6 share key/value head 0"),
    tiled_expand: ("key/value heads tiled", "i % h_kv"),
    first_head: ("only the first key/value head", "every query head uses key/value head 0"),
    averaged: ("key/value heads averaged", "averaged"),
    grouped_unscaled: ("no scaling", "sqrt(d_k)"),
    grouped_by_d_v: ("scaled by sqrt(d_v)", "sqrt(d_v)"),
    not_repeated: ("key/value heads not shared out", "the 8 query heads met 2 key/value heads"),
    grouped_softmax_over_queries: ("softmax over queries", "dim=-1"),
}


NAMED = [(ex.check_cached_attention, answer, *named) for answer, named in CACHED_MISTAKES.items()] + [
    (ex.check_grouped_attention, answer, *named) for answer, named in GROUPED_MISTAKES.items()
]


@pytest.mark.parametrize(
    ("check", "answer", "key", "words"), NAMED, ids=[f"{c.__name__}-{a.__name__}" for c, a, *_ in NAMED]
)
def test_cached_and_grouped_attention_name_each_mistake(check, answer, key, words):
    verdict = check(answer)
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == key, text
    assert "Likely mistake: " in text and words in text, text


def test_grouped_attention_wrong_shapes_and_types_get_clear_verdicts():
    text = str(ex.check_grouped_attention(lambda q, k, v: grouped_sdpa(q, k, v).transpose(1, 2)))
    assert "expected shape (2, 8, 3, 6), got (2, 3, 8, 6)" in text and "transpose" in text, text
    assert "Hint: grouped-query attention" in text, text  # the first failed attempt: the conceptual hint
    text = str(ex.check_grouped_attention(lambda q, k, v: grouped_sdpa(q, k, v).transpose(1, 2)))
    assert "Hint in code: give each query head its key/value head" in text, text
    verdict = ex.check_grouped_attention(lambda q, k, v: (grouped_sdpa(q, k, v), None))
    assert verdict.mistake == "wrong return type" and "return one tensor" in str(verdict), str(verdict)
    verdict = ex.check_grouped_attention(lambda q, k, v: grouped_sdpa(q, k, v).numpy())
    assert verdict.mistake == "wrong return type" and "torch.as_tensor" in str(verdict), str(verdict)


def test_a_wrong_group_is_located():
    text = str(ex.check_grouped_attention(first_head))
    assert "only in query heads 4-7, the group of key/value head 1" in text, text
    text = str(ex.check_online_softmax_update(unguarded))
    assert "only in row 0, which has seen only -inf entries" in text, text


def test_one_max_over_all_rows_is_named():
    def one_max(running_max, running_sum, block):
        new_max = torch.maximum(running_max, block.max())
        shift = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)
        return new_max, running_sum * torch.exp(running_max - shift) + torch.exp(block - shift[:, None]).sum(-1)

    assert ex.check_online_softmax_update(one_max).mistake == "one max for all rows"


def test_the_rescale_factor_inverted_with_both_maxima_guarded_is_named():
    def inverted_guarded(running_max, running_sum, block):  # the student review's a5: exp(new - old), no NaN
        new_max = torch.maximum(running_max, block.max(dim=-1).values)
        safe_new = torch.where(new_max == -math.inf, 0.0, new_max)
        safe_old = torch.where(running_max == -math.inf, 0.0, running_max)
        rescaled = running_sum * torch.exp(safe_new - safe_old)
        return new_max, rescaled + torch.exp(block - safe_new[..., None]).sum(-1)

    verdict = ex.check_online_softmax_update(inverted_guarded)
    assert verdict.mistake == "rescaled the wrong way" and "exp(old_max - new_max)" in str(verdict), str(verdict)


def test_keys_transposed_twice_are_told_so_in_11_3():
    def transposed_twice(q, k, v):  # the student review's a6: k.mT.mT is k
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        return torch.softmax(q @ k.mT.mT / math.sqrt(q.shape[-1]), dim=-1) @ v

    verdict = ex.check_grouped_attention(transposed_twice)
    assert verdict.mistake == "keys not transposed" and "q @ k.transpose(-2, -1)" in str(verdict), str(verdict)


def test_no_mask_for_one_query_and_is_causal_for_a_chunk_is_named_top_left():
    def switching(q_new, k_new, v_new, cache_k, cache_v):
        cache_k, cache_v = torch.cat([cache_k, k_new], -2), torch.cat([cache_v, v_new], -2)
        out = F.scaled_dot_product_attention(q_new, cache_k, cache_v, is_causal=q_new.shape[-2] > 1)
        return out, cache_k, cache_v

    assert ex.check_cached_attention(switching).mistake == "causal mask aligned top-left"


def test_the_off_by_one_cache_masks_and_the_inverted_convention_are_named_in_11_2():
    def masked(mask_of):  # the reader's cached attention with a hand-made boolean mask
        def answer(q, k, v, cache_k, cache_v):
            keys, values = torch.cat([cache_k, k], dim=-2), torch.cat([cache_v, v], dim=-2)
            t, n = cache_k.shape[-2], q.shape[-2]
            mask = mask_of(n, t)
            return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask), keys, values

        return answer

    ones = lambda n, t: torch.ones(n, t + n, dtype=torch.bool)  # noqa: E731
    named = {
        "own key excluded": masked(lambda n, t: ones(n, t).tril(t - 1)),  # keys j < t + i
        "causal mask one key ahead": masked(lambda n, t: ones(n, t).tril(t + 1)),  # keys j <= t + i + 1
        "causal mask inverted": masked(lambda n, t: ~ones(n, t).tril(t)),  # PyTorch's True = masked out
    }
    for key, answer in named.items():
        verdict = ex.check_cached_attention(answer)
        assert verdict.mistake == key, (key, str(verdict))
    assert "j <= t + i" in str(ex.check_cached_attention(named["causal mask one key ahead"]))
    assert ex.check_cached_attention(masked(lambda n, t: ones(n, t).tril(t))).passed  # right, another way


def test_softmax_over_queries_is_named_in_11_3_and_an_explicit_group_loop_passes():
    def over_queries(q, k, v):
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        return torch.softmax(q @ k.mT / math.sqrt(q.shape[-1]), dim=-2) @ v

    verdict = ex.check_grouped_attention(over_queries)
    assert verdict.mistake == "softmax over queries" and "dim=-1" in str(verdict), str(verdict)
    assert ex.check_grouped_attention(grouped_head_loop).passed


def test_heads_repeated_along_the_positions_are_told_so_in_11_3():
    """The student review: `repeat_interleave(g, dim=2)` was called "not repeated"; the reader had repeated, along
    the wrong axis. The diagnosis names both and the axis to use."""

    def along_positions(q, k, v):
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
        return torch.softmax(q @ k.mT / math.sqrt(q.shape[-1]), dim=-1) @ v

    verdict = ex.check_grouped_attention(along_positions)
    text = str(verdict)
    assert verdict.mistake == "key/value heads not shared out", text
    assert "repeat_interleave(..., dim=2) multiplies the positions" in text and "dim=1" in text, text
