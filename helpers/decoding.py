"""Decoding a trained encoder-decoder: greedy search, beam search with the GNMT length penalty, and sampling.

Vaswani et al., 2017, §6.1: beam search with beam size 4 and length penalty alpha = 0.6, the
penalty of Wu et al. (2016, GNMT), ``lp(Y) = ((5 + |Y|) / 6) ** alpha``; the output may run to
the input length + 50 tokens, with early termination when possible.

Both functions reach the model only through two methods, so any module with this interface can
be decoded (a hand-built one in a test, a cached one later in the series):

- ``model.encode(src, src_mask) -> (memory, weights)``, ``src (B, m)`` ids;
- ``model.decode(tgt, memory, src_mask) -> (logits, self_weights, cross_weights)``, ``tgt (B, n)``
  ids, ``logits (B, n, vocab)``; position ``i``'s logits predict token ``i + 1``.

With ``use_cache=True`` they also need ``model.decode(tgt, memory, src_mask, cache=cache)`` to accept a
:class:`helpers.decoder.KVCache` (``Transformer`` does): each step then feeds only the newest token, and the
decoder attends to the keys and values it kept from earlier steps instead of recomputing them (notebook 11).
The ids returned are the same as without the cache.

``src_mask`` is the source's key-padding mask ``(B, 1, m)`` (``True`` = a real token), as
``helpers.masks.padding_mask(src_lengths)`` returns it, or ``None`` for an unpadded batch.
Both functions run the model in ``eval()`` under ``torch.no_grad()`` (and put back the mode
they found), decode all sentences of the batch together, and return one list of generated ids
per sentence: without ``<bos>``, ending with ``<eos>`` (included) or after ``max_len`` tokens.
Every token of the vocabulary is a candidate at every step.

Sampling (:func:`sample_decode`) draws each next token from the model's distribution instead of taking the most
probable one, after three optional changes to that distribution (:func:`sampling_probs`), in this order:
``temperature`` divides the logits (:func:`apply_temperature`; 0 is greedy), ``top_k`` keeps the ``k`` most
probable tokens (:func:`top_k_filter`; Fan et al., 2018) and ``top_p`` keeps the smallest set of most probable
tokens whose probability reaches ``p`` (:func:`top_p_filter`: nucleus sampling, Holtzman et al., 2020, §3.1).
A filter sets the logits it removes to ``-inf``, so the softmax gives them probability 0.
"""

from __future__ import annotations

import inspect
import math

import torch

from helpers.checks import non_negative_int, positive_int, shape_text
from helpers.decoder import KVCache

__all__ = [
    "apply_temperature",
    "beam_search",
    "greedy_decode",
    "length_penalty",
    "sample_decode",
    "sampling_probs",
    "top_k_filter",
    "top_p_filter",
]


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ``lp(Y) = ((5 + |Y|) / 6) ** alpha`` (§6.1; Wu et al., 2016), ``|Y|`` generated tokens incl. ``<eos>``.

    A finished hypothesis scores ``sum(log p) / lp(Y)``: ``alpha = 0`` ranks by the plain sum of log
    probabilities (which favours short outputs, as every token adds a negative term); a larger ``alpha``
    divides long hypotheses' sums by more, so it favours longer outputs.
    """
    positive_int("length", length, "generated tokens, <eos> included")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or alpha < 0:
        raise ValueError(f"alpha must be a non-negative number, got {alpha!r}")
    return ((5 + length) / 6) ** alpha


def _check_decoding_args(model, src, bos_id, eos_id, max_len, src_mask) -> None:
    """Raise ``ValueError`` unless the model, ``src``, the token ids, ``max_len`` and ``src_mask`` suit decoding."""
    for method in ("encode", "decode"):
        if not callable(getattr(model, method, None)):
            raise ValueError(f"model must have encode(src, src_mask) and decode(tgt, memory, src_mask); no {method}")
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or src.is_floating_point() or src.dtype == torch.bool:
        raise ValueError(f"src must be integer token ids of shape (B, m), got {shape_text(src)}")
    if src.shape[0] == 0 or src.shape[1] == 0:
        raise ValueError(f"src must hold at least one sentence and one position, got shape {tuple(src.shape)}")
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        non_negative_int(name, value, "a token id")
    positive_int("max_len", max_len, "generated tokens")
    if src_mask is not None and (
        not isinstance(src_mask, torch.Tensor)
        or src_mask.dtype != torch.bool
        or tuple(src_mask.shape) != (src.shape[0], 1, src.shape[1])
    ):
        got = f"{src_mask.dtype} {tuple(src_mask.shape)}" if isinstance(src_mask, torch.Tensor) else src_mask
        raise ValueError(
            f"src_mask must be a boolean key-padding mask of shape (B, 1, m) = {(src.shape[0], 1, src.shape[1])}, "
            f"got {got}"
        )


def _set_eval(model) -> bool | None:
    """Put an ``nn.Module`` in eval mode (no dropout) and return the mode it was in; other objects: ``None``."""
    if isinstance(model, torch.nn.Module):
        was_training = model.training
        model.eval()
        return was_training
    return None


def _restore(model, was_training: bool | None) -> None:
    if was_training is not None:
        model.train(was_training)


def _next_log_probs(model, tgt, memory, src_mask, cache=None) -> torch.Tensor:
    """``tgt (N, t)`` -> log-probabilities of the next token ``(N, vocab)``, checked for NaN.

    With a ``cache``, only the last token of ``tgt`` is fed; the cache holds the rest.
    """
    if cache is None:
        logits, _, _ = model.decode(tgt, memory, src_mask)  # (N, t, vocab)
    else:
        logits, _, _ = model.decode(tgt[:, -1:], memory, src_mask, cache=cache)  # (N, 1, vocab)
    log_probs = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (N, vocab)
    if torch.isnan(log_probs).any():
        raise ValueError("the model's logits hold NaN; decoding cannot rank the candidates")
    return log_probs


def _check_use_cache(model, use_cache) -> None:
    if not isinstance(use_cache, bool):
        raise ValueError(f"use_cache must be True or False, got {use_cache!r}")
    if use_cache:
        parameters = inspect.signature(model.decode).parameters
        if "cache" not in parameters and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            raise ValueError(
                f"use_cache=True needs model.decode(tgt, memory, src_mask, cache=...); "
                f"{type(model).__name__}.decode takes no cache"
            )


def greedy_decode(
    model,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
    src_mask: torch.Tensor | None = None,
    use_cache: bool = False,
) -> list[list[int]]:
    """Greedy search: at each step append the most probable next token, one decoder pass per token.

    ``src (B, m)`` ids -> ``B`` lists of generated ids (no ``<bos>``; ends at ``<eos>``, included, or after
    ``max_len`` tokens). A sentence that has emitted ``<eos>`` stays in the batch (its later tokens are
    dropped) until every sentence has, so one decoder call serves the whole batch at each step. With
    ``use_cache=True`` each step feeds only the newest token (a :class:`helpers.decoder.KVCache` keeps the
    keys and values of the earlier ones); the ids are the same.
    """
    _check_decoding_args(model, src, bos_id, eos_id, max_len, src_mask)
    _check_use_cache(model, use_cache)
    was_training = _set_eval(model)
    try:
        with torch.no_grad():
            memory, _ = model.encode(src, src_mask)  # (B, m, d_model)
            B = src.shape[0]
            tgt = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1): <bos>
            total = torch.zeros(B, device=src.device)  # sum of log p so far (the beam's score, for equal ties)
            out: list[list[int]] = [[] for _ in range(B)]
            done = [False] * B
            cache = KVCache() if use_cache else None
            for _ in range(max_len):
                log_probs = _next_log_probs(model, tgt, memory, src_mask, cache)  # (B, vocab)
                candidates = total[:, None] + log_probs  # (B, vocab)
                next_ids = candidates.argmax(dim=-1)  # (B,): first index on a tie
                total = candidates.gather(1, next_ids[:, None])[:, 0]
                for b, token in enumerate(next_ids.tolist()):
                    if not done[b]:
                        out[b].append(token)
                        done[b] = token == eos_id
                if all(done):
                    break
                tgt = torch.cat([tgt, next_ids[:, None]], dim=1)  # (B, t) -> (B, t + 1)
    finally:
        _restore(model, was_training)
    return out


def beam_search(
    model,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
    beam_size: int = 4,
    alpha: float = 0.6,
    src_mask: torch.Tensor | None = None,
    trace: list | None = None,
    use_cache: bool = False,
) -> list[list[int]]:
    """Beam search (§6.1): keep the ``beam_size`` most probable partial outputs, return the best finished one.

    ``src (B, m)`` ids -> ``B`` lists of generated ids, in the format of :func:`greedy_decode`.

    For each sentence, every live hypothesis is extended by every token of the vocabulary, and the best
    ``k`` extensions by ``sum(log p)`` are kept, where ``k = beam_size`` minus the hypotheses already
    finished. An extension ending in ``<eos>`` is finished, and so is one that reaches ``max_len`` tokens;
    the search for a sentence stops when ``beam_size`` hypotheses are finished or none is live. The answer
    is the finished hypothesis with the best ``sum(log p) / lp(Y)``, ``lp(Y) = ((5 + |Y|) / 6) ** alpha``
    (:func:`length_penalty`; §6.1 uses ``alpha = 0.6``). Hence ``beam_size=1`` is greedy search, and a
    ``beam_size`` at least the number of possible outputs prunes nothing: the answer is then the exact best.
    Ties are broken towards the earlier hypothesis and the smaller token id, as in greedy search.

    Every sentence's live hypotheses go through the decoder together, one call per step. If ``trace`` is a
    list, one entry per step is appended for each sentence: ``(sentence, step, live, finished)`` where
    ``live`` holds ``(ids, sum_log_p)`` of the hypotheses kept and ``finished`` holds
    ``(ids, sum_log_p, score)`` of those finished so far (a picture of the beam, for teaching).

    With ``use_cache=True`` each step feeds only the newest token of every live hypothesis. Row ``r`` of the
    :class:`helpers.decoder.KVCache` belongs to the hypothesis in row ``r`` of the previous step, so after each
    step the cache is reordered to the kept hypotheses' parents (a parent with two kept extensions gives its
    row twice). The ids returned are the same as without the cache.
    """
    _check_decoding_args(model, src, bos_id, eos_id, max_len, src_mask)
    _check_use_cache(model, use_cache)
    positive_int("beam_size", beam_size)
    length_penalty(1, alpha)  # raises on a negative or non-numeric alpha
    if trace is not None and not isinstance(trace, list):
        raise ValueError(f"trace must be a list to append to, or None, got {type(trace).__name__}")
    was_training = _set_eval(model)
    try:
        with torch.no_grad():
            memory, _ = model.encode(src, src_mask)  # (B, m, d_model)
            B = src.shape[0]
            # live[b]: list of (ids, sum_log_p); finished[b]: list of (ids, sum_log_p, score)
            live: list[list[tuple[list[int], float]]] = [[([], 0.0)] for _ in range(B)]
            finished: list[list[tuple[list[int], float, float]]] = [[] for _ in range(B)]
            cache = KVCache() if use_cache else None
            parents = list(range(B))  # the row of the previous step each live hypothesis extends
            for step in range(1, max_len + 1):
                owners = [b for b in range(B) for _ in live[b]]  # sentence of each live hypothesis
                if not owners:
                    break
                index = torch.tensor(owners, device=src.device)
                if cache is not None and step > 1:
                    cache.reorder(torch.tensor(parents, device=src.device))  # row r <- its parent's row
                tgt = torch.tensor(
                    [[bos_id, *ids] for b in range(B) for ids, _ in live[b]], dtype=torch.long, device=src.device
                )  # (N, step): every live hypothesis of every sentence, <bos> first
                mask = None if src_mask is None else src_mask[index]  # (N, 1, m)
                log_probs = _next_log_probs(model, tgt, memory[index], mask, cache)  # (N, vocab)
                vocab = log_probs.shape[-1]
                row = 0
                parents = []
                for b in range(B):
                    hyps = live[b]
                    if not hyps:
                        continue
                    sums = torch.tensor([s for _, s in hyps], dtype=log_probs.dtype, device=log_probs.device)  # (H,)
                    candidates = (sums[:, None] + log_probs[row : row + len(hyps)]).flatten()  # (H * vocab,)
                    k = min(beam_size - len(finished[b]), candidates.numel())
                    order = torch.sort(candidates, descending=True, stable=True).indices[:k]  # ties: lower index first
                    kept = []
                    for flat in order.tolist():
                        h, token = divmod(flat, vocab)
                        ids, total = hyps[h][0] + [token], float(candidates[flat])
                        if token == eos_id or step == max_len:
                            finished[b].append((ids, total, total / length_penalty(len(ids), alpha)))
                        else:
                            kept.append((ids, total))
                            parents.append(row + h)
                    row += len(hyps)
                    live[b] = kept
                    if trace is not None:
                        trace.append((b, step, list(kept), list(finished[b])))
            out = []
            for b in range(B):
                best = max(range(len(finished[b])), key=lambda i: (finished[b][i][2], -i))  # first on a tie
                out.append(finished[b][best][0])
    finally:
        _restore(model, was_training)
    return out


def _check_logits(logits) -> None:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() == 0:
        raise ValueError(f"logits must be a floating-point tensor (..., vocab), got {shape_text(logits)}")
    if logits.shape[-1] == 0:
        raise ValueError(f"logits must hold at least one token, got shape {tuple(logits.shape)}")


def _real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits (..., vocab) / temperature``: above 1 flattens the distribution, below 1 sharpens it.

    The softmax of ``logits / T`` is ``p_i ** (1 / T)`` renormalised, ``p`` the softmax of ``logits``. As ``T``
    goes to 0 it puts all the mass on the most probable token, so ``temperature=0`` is greedy decoding: the
    result is 0 at each row's largest logit (the first on a tie, as ``argmax``) and ``-inf`` elsewhere.
    ``temperature=1`` returns the logits unchanged. Raises ``ValueError`` for a negative or non-finite one.
    """
    _check_logits(logits)
    t = _real("temperature", temperature)
    if t < 0 or math.isinf(t):
        raise ValueError(f"temperature must be a finite number >= 0 (0 is greedy), got {temperature!r}")
    if t == 0:
        best = logits.argmax(dim=-1, keepdim=True)  # (..., 1)
        out = torch.full_like(logits, -math.inf)
        return out.scatter(-1, best, 0.0)
    return logits / t


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the others to ``-inf`` (top-k sampling; Fan et al., 2018).

    ``logits (..., vocab)`` -> the same shape. Ties at the ``k``-th place go to the smaller token id, so exactly
    ``min(k, vocab)`` tokens stay; ``k=1`` keeps the argmax alone (greedy), ``k >= vocab`` keeps every token.
    Raises ``ValueError`` unless ``k`` is an integer >= 1.
    """
    _check_logits(logits)
    positive_int("top_k", k, "tokens kept")
    k = min(k, logits.shape[-1])
    order = torch.sort(logits, dim=-1, descending=True, stable=True).indices  # (..., vocab): ties, smaller id first
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order[..., :k], True)
    return logits.masked_fill(~keep, -math.inf)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filtering (Holtzman et al., 2020, §3.1): keep the smallest set of most probable tokens whose
    probabilities sum to at least ``p``, set the other logits to ``-inf``.

    ``logits (..., vocab)`` -> the same shape. Tokens are ranked by probability (ties: the smaller id first)
    and a token is kept while the mass of the tokens ranked above it is still below ``p``: the most probable
    token always stays, and how many follow depends on how sure the model is (one token when its probability
    alone reaches ``p``). ``p=1`` keeps every token. Raises ``ValueError`` unless ``0 < p <= 1``.
    """
    _check_logits(logits)
    p = _real("top_p", p)
    if not 0 < p <= 1:
        raise ValueError(f"top_p must be in (0, 1], the probability mass kept, got {p!r}")
    if p == 1:
        return logits.clone()
    probs = torch.softmax(logits.double(), dim=-1)  # (..., vocab), float64 so that the running sums are exact enough
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    above = sorted_p.cumsum(dim=-1) - sorted_p  # mass of the tokens ranked above each one
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order, above < p)
    return logits.masked_fill(~keep, -math.inf)


def sampling_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The distribution a sampler draws the next token from: ``logits (..., vocab)`` -> probabilities (same shape).

    Temperature first (:func:`apply_temperature`), then top-k (:func:`top_k_filter`), then top-p on what is
    left (:func:`top_p_filter`); ``None`` skips a filter. The softmax of the result gives every removed token
    probability 0 and renormalises the rest.
    """
    scaled = apply_temperature(logits, temperature)
    if top_k is not None:
        scaled = top_k_filter(scaled, top_k)
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)
    return torch.softmax(scaled.float(), dim=-1)


def sample_decode(
    model,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
    src_mask: torch.Tensor | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = False,
) -> list[list[int]]:
    """Sampling: at each step draw the next token from :func:`sampling_probs` of the model's logits.

    ``src (B, m)`` ids -> ``B`` lists of generated ids, in the format of :func:`greedy_decode`, which it equals
    for ``temperature=0`` or ``top_k=1``. Each step draws one number ``u`` per sentence, uniform in ``[0, 1)``,
    from ``generator`` (a CPU ``torch.Generator``; ``None``: PyTorch's global one), and takes the first token
    whose cumulative probability exceeds ``u`` (ids in vocabulary order). The same generator state and the
    same probabilities give the same tokens; probabilities that differ in their last digits (another CPU's
    kernels) may move a cumulative boundary across a ``u`` and change the token, and with it the rest of the
    sentence. To draw ``N`` samples per sentence, repeat the rows of ``src`` (and ``src_mask``).
    """
    _check_decoding_args(model, src, bos_id, eos_id, max_len, src_mask)
    _check_use_cache(model, use_cache)
    probe = torch.zeros(1, 1)
    sampling_probs(probe, temperature, top_k, top_p)  # raises on a bad temperature, top_k or top_p
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    was_training = _set_eval(model)
    try:
        with torch.no_grad():
            memory, _ = model.encode(src, src_mask)  # (B, m, d_model)
            B = src.shape[0]
            tgt = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1): <bos>
            out: list[list[int]] = [[] for _ in range(B)]
            done = [False] * B
            cache = KVCache() if use_cache else None
            for _ in range(max_len):
                log_probs = _next_log_probs(model, tgt, memory, src_mask, cache)  # (B, vocab)
                probs = sampling_probs(log_probs, temperature, top_k, top_p).double()  # (B, vocab)
                cumulative = probs.cumsum(dim=-1)  # (B, vocab)
                u = torch.rand(B, 1, dtype=torch.float64, generator=generator).to(probs.device)  # (B, 1) in [0, 1)
                u = u * cumulative[:, -1:]  # the total is 1 up to rounding
                next_ids = torch.searchsorted(cumulative, u, right=True)[:, 0]  # first index with cumulative > u
                vocab = probs.shape[-1]
                last = vocab - 1 - (probs > 0).flip(-1).int().argmax(dim=-1)  # (B,) the last token that may be drawn
                next_ids = torch.where(next_ids < vocab, next_ids, last)  # u rounded up to the total: rare
                for b, token in enumerate(next_ids.tolist()):
                    if not done[b]:
                        out[b].append(token)
                        done[b] = token == eos_id
                if sum(done) == B:  # every sentence has emitted <eos>
                    break
                tgt = torch.cat([tgt, next_ids[:, None]], dim=1)  # (B, t) -> (B, t + 1)
    finally:
        _restore(model, was_training)
    return out
