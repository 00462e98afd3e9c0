"""A small decoder-only language model of our own, trained on real text, shipped with the series (notebook 15).

The block is notebook 14's Llama-style one: RMSNorm before each sub-layer, rotary positions on the queries and keys
(paired in halves, as Hugging Face's Llama pairs them), a SwiGLU feed-forward network and grouped-query attention,
with the output layer sharing the token embedding's matrix (tied, as in Vaswani et al., 2017, §3.4). It is notebook
09's decoder with the cross-attention taken out: one causal self-attention and one feed-forward network per layer.

- :class:`LanguageModel` computes next-token logits, with an optional key/value cache (:class:`KVCache`, notebook
  11) and the attention weights of every layer on request.
- :func:`load_pretrained` returns the shipped model and its tokenizer, each file checked by SHA-256 first;
  :func:`held_out_text` the text that training never saw. ``python -m course.qa.train_lm`` rebuilds them all.
- :func:`generate` continues a batch of prompts: greedy, or sampled with a temperature, top-k or top-p (nucleus)
  filter, with or without the cache (the same ids either way).

Shapes: ``B`` batch, ``n`` positions, ``V`` vocabulary, ``h`` query heads, ``h_kv`` key/value heads.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import combine_heads, split_heads
from helpers.checks import is_int, non_negative_int, positive_int, shape_text
from helpers.masks import causal_mask
from helpers.modern import RMSNorm, SwiGLU, apply_rotary

__all__ = [
    "DATA",
    "KVCache",
    "LMConfig",
    "LanguageModel",
    "Tokenizer",
    "filter_logits",
    "generate",
    "held_out_text",
    "load_pretrained",
    "manifest",
    "ngram_counts",
]

DATA = Path(__file__).resolve().parents[1] / "notebooks" / "data" / "lm"  # what course.qa.train_lm writes
MANIFEST = "manifest.json"  # each file's SHA-256, the configuration and the training record


@dataclass(frozen=True)
class LMConfig:
    """The model's sizes. ``max_len`` is the context it was trained on; RoPE itself takes any position, but
    :class:`LanguageModel` refuses positions past ``max_len``, where it was never trained."""

    vocab_size: int = 4096
    d_model: int = 192
    num_layers: int = 6
    num_heads: int = 6
    num_kv_heads: int = 2
    d_ff: int = 512
    max_len: int = 256
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "num_layers", "num_heads", "num_kv_heads", "d_ff", "max_len"):
            positive_int(name, getattr(self, name))
        if self.d_model % self.num_heads or (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model={self.d_model} must split into num_heads={self.num_heads} heads of an even width (RoPE)"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}")
        for name in ("rope_base", "norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")


class KVCache:
    """The keys and values of every layer for the positions processed so far (notebook 11), grown by ``append``.

    ``length`` is how many positions it holds; the next token's position is ``length``. Keys are stored after their
    rotation, so a cached key is never rotated again."""

    def __init__(self, num_layers: int):
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * positive_int("num_layers", num_layers)

    @property
    def length(self) -> int:
        first = self.layers[0]
        return 0 if first is None else first[0].shape[2]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``k, v (B, h_kv, n, d_k)`` to layer ``layer``; return all its keys and values so far."""
        held = self.layers[layer]
        if held is not None:
            k, v = torch.cat([held[0], k], dim=2), torch.cat([held[1], v], dim=2)
        self.layers[layer] = (k, v)
        return k, v


class _Attention(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        self.num_heads, self.num_kv_heads = config.num_heads, config.num_kv_heads
        self.d_k, self.rope_base = config.d_model // config.num_heads, config.rope_base
        self.w_q = nn.Linear(config.d_model, config.d_model, bias=False)
        self.w_k = nn.Linear(config.d_model, config.num_kv_heads * self.d_k, bias=False)
        self.w_v = nn.Linear(config.d_model, config.num_kv_heads * self.d_k, bias=False)
        self.w_o = nn.Linear(config.d_model, config.d_model, bias=False)

    def forward(self, x, positions, cache, index, need_weights, mask=None):
        n = x.shape[1]
        q = split_heads(self.w_q(x), self.num_heads)  # (B, n, d_model) -> (B, h, n, d_k)
        k = split_heads(self.w_k(x), self.num_kv_heads)  # (B, h_kv, n, d_k)
        v = split_heads(self.w_v(x), self.num_kv_heads)
        q = apply_rotary(q, positions, self.rope_base, interleaved=False)  # pairs (i, i + d_k/2), as Llama
        k = apply_rotary(k, positions, self.rope_base, interleaved=False)
        if cache is not None:
            k, v = cache.append(index, k, v)  # (B, h_kv, past + n, d_k)
        group = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, m, d_k)
        past = k.shape[2] - n
        if not need_weights:  # the fused kernel; a square causal mask is is_causal, a cache needs the explicit one
            if mask is None and past > 0:
                mask = causal_mask(n, x.device, past=past)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
            return self.w_o(combine_heads(out)), None
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, n, m)
        if mask is None:
            mask = causal_mask(n, x.device, past=past)
        scores = scores.masked_fill(~mask, float("-inf"))  # every row keeps at least its own key
        weights = torch.softmax(scores, dim=-1)
        return self.w_o(combine_heads(weights @ v)), weights


class _Block(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        self.norm1 = RMSNorm(config.d_model, eps=config.norm_eps)
        self.attention = _Attention(config)
        self.norm2 = RMSNorm(config.d_model, eps=config.norm_eps)
        self.feed_forward = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x, positions, cache, index, need_weights, mask=None):
        attended, weights = self.attention(self.norm1(x), positions, cache, index, need_weights, mask)
        x = x + attended  # x + Sublayer(Norm(x)): pre-norm (notebook 06)
        return x + self.feed_forward(self.norm2(x)), weights


class LanguageModel(nn.Module):
    """A causal decoder-only model: ``forward(tokens (B, n), cache=None, need_weights=False, mask=None) -> (logits
    (B, n, V), weights)``, where ``weights`` is one ``(B, h, n, m)`` tensor per layer when ``need_weights`` is true,
    else None. ``mask (n, past + n)``, boolean, True = may attend, narrows the causal mask in every layer (a sliding
    window, say); each query must keep its own key.

    With a :class:`KVCache` the ``n`` new tokens sit at positions ``cache.length ..``; their keys and values are
    added to the cache, and each attends to every cached position and to the new ones up to itself. The token
    embedding is not scaled by ``sqrt(d_model)`` (Llama's convention; the paper's §3.4 scales it) and is drawn with
    standard deviation 0.02, like every weight matrix; the output layer shares its matrix."""

    def __init__(self, config: LMConfig):
        super().__init__()
        if not isinstance(config, LMConfig):
            raise ValueError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(_Block(config) for _ in range(config.num_layers))
        self.final_norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.output.weight = self.embedding.weight  # tied: one (V, d_model) matrix in and out
        for name, parameter in self.named_parameters():
            if parameter.dim() == 2:
                std = 0.02
                if name.endswith(("w_o.weight", "w2.weight")):  # the two writes into the residual stream per layer
                    std /= math.sqrt(2 * config.num_layers)
                nn.init.normal_(parameter, std=std)

    def forward(
        self,
        tokens: torch.Tensor,
        cache: KVCache | None = None,
        need_weights: bool = False,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        config = self.config
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.int64:
            raise ValueError(f"tokens must be an int64 tensor of shape (B, n), got {shape_text(tokens)}")
        if tokens.shape[1] == 0:
            raise ValueError("tokens must hold at least one position, got shape (B, 0)")
        if tokens.min() < 0 or tokens.max() >= config.vocab_size:
            raise ValueError(
                f"token ids must be in [0, {config.vocab_size}), got min {tokens.min().item()} "
                f"max {tokens.max().item()}"
            )
        if cache is not None and not isinstance(cache, KVCache):
            raise ValueError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        past = 0 if cache is None else cache.length
        n = tokens.shape[1]
        if past + n > config.max_len:
            raise ValueError(
                f"positions {past}..{past + n - 1} go past the context of max_len={config.max_len} the model was "
                f"trained on ({past} cached, {n} new)"
            )
        if mask is not None:
            expected = causal_mask(n, tokens.device, past=past)
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != expected.shape:
                raise ValueError(
                    f"mask must be a bool tensor of shape (n, past + n) = {tuple(expected.shape)}, got {shape_text(mask)}"
                )
            if (mask & ~expected).any() or not mask.diagonal(offset=past).all():
                raise ValueError("mask may only remove keys from the causal mask, and each query must keep itself")
        positions = torch.arange(past, past + n, device=tokens.device)
        x = self.embedding(tokens)  # (B, n, d_model)
        all_weights = [] if need_weights else None
        for index, layer in enumerate(self.layers):
            x, weights = layer(x, positions, cache, index, need_weights, mask)
            if need_weights:
                all_weights.append(weights)
        return self.output(self.final_norm(x)), all_weights


class Tokenizer:
    """Byte-level BPE (the ``tokenizers`` package's), trained by ``course.qa.train_lm`` on the corpus.

    ``encode(text) -> list[int]`` and ``decode(ids) -> str``; every text encodes (byte-level: no unknown token) and
    ``decode(encode(text)) == text``."""

    def __init__(self, path: Path):
        from tokenizers import Tokenizer as _HFTokenizer  # pinned; only this class needs it

        self._tokenizer = _HFTokenizer.from_file(str(path))
        self.vocab_size = self._tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise ValueError(f"encode takes a str, got {type(text).__name__}")
        return self._tokenizer.encode(text).ids

    def decode(self, ids) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        bad = [i for i in ids if not is_int(i) or not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"ids must be integers in [0, {self.vocab_size}), got {bad[:5]}")
        return self._tokenizer.decode(ids, skip_special_tokens=False)  # the end-of-text token too

    def token(self, i: int) -> str:
        """One id as the text it stands for (a word piece, often with its leading space)."""
        return self.decode([i])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checked(data: Path, name: str) -> Path:
    manifest = json.loads((data / MANIFEST).read_text(encoding="utf-8"))
    path = data / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python -m course.qa.train_lm` to rebuild it")
    expected = manifest["files"][name]
    if _sha256(path) != expected:
        raise ValueError(
            f"{path.name} does not match its SHA-256 in {MANIFEST} ({expected[:12]}...): the file was changed or "
            "damaged; restore it from the repository or rebuild with `python -m course.qa.train_lm`"
        )
    return path


def manifest(data: Path = DATA) -> dict:
    """The training record stored beside the weights: files and their SHA-256, configuration, command, seed, corpus,
    tokens seen, losses and the final held-out loss."""
    return json.loads((data / MANIFEST).read_text(encoding="utf-8"))


def load_pretrained(data: Path = DATA) -> tuple[LanguageModel, Tokenizer]:
    """The shipped model (in ``eval()`` mode, float32) and its tokenizer, each file checked by SHA-256 first."""
    from safetensors.torch import load_file  # pinned

    config = LMConfig(**manifest(data)["config"])
    state = load_file(str(_checked(data, "model.safetensors")))
    model = LanguageModel(config)
    state = {name: tensor.to(torch.float32) for name, tensor in state.items()}  # stored in float16, run in float32
    state["output.weight"] = state["embedding.weight"]  # tied: stored once
    model.load_state_dict(state)
    return model.eval(), Tokenizer(_checked(data, "tokenizer.json"))


def held_out_text(data: Path = DATA) -> str:
    """Text from the corpus's source that training never saw (checked by SHA-256)."""
    return _checked(data, "held_out.txt").read_text(encoding="utf-8")


def ngram_counts(data: Path = DATA) -> dict[str, torch.Tensor]:
    """The training stream's counts (checked by SHA-256): ``unigram (V,)`` int64, and the bigrams as ``pairs (P,)``
    (the pair (a, b) as ``a * V + b``, sorted) with their ``counts (P,)``; for notebook 15's baselines."""
    from safetensors.torch import load_file  # pinned

    return load_file(str(_checked(data, "ngram_counts.safetensors")))


def filter_logits(logits: torch.Tensor, top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """``logits (..., V)`` with every token outside the top-k, or outside the smallest set whose probabilities add
    up to ``top_p`` (nucleus sampling, Holtzman et al., 2020), set to -inf. The most likely token always stays."""
    if top_k is not None:
        positive_int("top_k", top_k)
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]  # (..., 1): the k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
        ordered, order = logits.sort(dim=-1, descending=True)
        before = ordered.softmax(dim=-1).cumsum(dim=-1) - ordered.softmax(dim=-1)  # mass of the tokens ranked above
        drop = before >= top_p  # the nucleus: keep a token while the mass before it is under top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


@torch.no_grad()
def generate(
    model: LanguageModel,
    ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> torch.Tensor:
    """Continue each row of ``ids (B, n)`` by ``max_new_tokens`` tokens; return ``(B, n + max_new_tokens)``.

    ``temperature=0`` or ``top_k=1`` is greedy decoding; otherwise each token is drawn from the softmax of the last
    logits divided by ``temperature``, after :func:`filter_logits`, with ``generator`` (a seeded
    ``torch.Generator`` repeats a run on one machine). ``use_cache=True`` runs each new token alone against a
    :class:`KVCache`; ``False`` reruns the whole sequence every step: the same ids, more work."""
    if not isinstance(model, LanguageModel):
        raise ValueError(f"model must be a LanguageModel, got {type(model).__name__}")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype != torch.int64 or ids.shape[1] == 0:
        raise ValueError(f"ids must be an int64 tensor of shape (B, n) with n >= 1, got {shape_text(ids)}")
    non_negative_int("max_new_tokens", max_new_tokens)
    vocab, context = model.config.vocab_size, model.config.max_len
    if ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(f"ids must be in [0, {vocab}), got min {ids.min().item()} max {ids.max().item()}")
    if ids.shape[1] + max_new_tokens > context:
        raise ValueError(
            f"{ids.shape[1]} prompt tokens + max_new_tokens={max_new_tokens} exceed the model's context of {context}"
        )
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature < math.inf:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if top_k is not None:
        positive_int("top_k", top_k)
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    greedy = temperature == 0 or top_k == 1
    cache = KVCache(model.config.num_layers) if use_cache else None
    out, step_input = ids, ids
    for _ in range(max_new_tokens):
        logits, _ = model(step_input if use_cache else out, cache)
        last = logits[:, -1].float()  # (B, V)
        if greedy:
            token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
        else:
            shifted = last - last.max(dim=-1, keepdim=True).values  # <= 0, the best token at 0: no overflow below
            probs = filter_logits(shifted / temperature, top_k, top_p).softmax(dim=-1)
            token = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
        out = torch.cat([out, token], dim=1)
        step_input = token
    return out
