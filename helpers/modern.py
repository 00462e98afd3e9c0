"""What changed in the Transformer block after 2017: RMSNorm, rotary positions, ALiBi, SwiGLU, sliding windows.

None of this is in Vaswani et al. (2017); each piece replaces one of the paper's choices, and notebook 14 builds it
inline first:

- :class:`RMSNorm` (Zhang and Sennrich, 2019) replaces LayerNorm (§3.1): it rescales by the root mean square and
  neither subtracts the mean nor adds a bias.
- :func:`apply_rotary` (RoPE; Su et al., 2021) replaces the sinusoids added to the input (§3.5): it rotates each
  query and key instead, so that their dot product depends on the offset between the two positions only.
- :func:`alibi_slopes` and :func:`alibi_bias` (ALiBi; Press et al., 2022) add a penalty to the scores that grows with
  the distance, and no position vectors at all.
- :class:`SwiGLU` (Shazeer, 2020) replaces the ReLU feed-forward (§3.3, Eq. 2) by a gated one.
- :func:`sliding_window_mask` limits each query to its last ``window`` keys (as Mistral 7B does).
- :func:`train_decoder_lm` trains one on notebook 13's repeated sequences, and :func:`accuracy_by_position` scores
  it query by query, for the length-extrapolation study.
- :class:`DecoderLM` puts them together: a causal decoder-only model in which the paper's block (post-norm,
  sinusoids, ReLU) and a Llama-style block (pre-norm RMSNorm, RoPE, SwiGLU, grouped-query attention) are both
  settings.

Masks follow the series' convention: boolean, ``True`` means "this query may attend to this key".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import combine_heads, split_heads
from helpers.checks import is_int, positive_int, shape_text
from helpers.encoder import positional_encoding
from helpers.induction import adam_on_repeated_sequences, check_periods, predictable_positions, repeated_sequences

__all__ = [
    "DecoderLM",
    "RMSNorm",
    "SwiGLU",
    "accuracy_by_position",
    "alibi_bias",
    "alibi_slopes",
    "apply_rotary",
    "extend_rope",
    "sliding_window_mask",
    "train_decoder_lm",
]

NORMS = ("layer", "rms")
FFNS = ("relu", "swiglu")
POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "none")


def _choice(name: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


def _positive_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axis (Zhang and Sennrich, 2019).

    LayerNorm (§3.1, Ba et al., 2016) subtracts the mean, divides by the standard deviation, then scales and shifts;
    RMSNorm keeps only the division (by the root mean square) and the scale. ``weight`` starts at ones. Equal to
    ``nn.RMSNorm(d_model, eps=eps)`` given the same weight.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.d_model = positive_int("d_model", d_model)
        self.eps = _positive_float("eps", eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != self.d_model:
            raise ValueError(f"RMSNorm expects (..., d_model={self.d_model}), got {shape_text(x)}")
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotary_angles(n: int, d: int, positions, base: float, device, frequency_scale=None) -> torch.Tensor:
    """``(n, d / 2)``: the angle ``position * base ** (-2i / d)`` of pair ``i`` at each position, in float64, each
    pair's frequency times ``frequency_scale`` (a positive float or ``(d / 2,)`` tensor) when given."""
    if positions is None:
        positions = torch.arange(n, device=device)
    if not isinstance(positions, torch.Tensor) or positions.shape != (n,) or positions.is_floating_point():
        raise ValueError(
            f"positions must be an integer tensor of shape (n,) = ({n},), one position per row of x, "
            f"got {shape_text(positions)}"
        )
    inverse_frequency = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)  # (d/2,)
    if frequency_scale is not None:
        scale = torch.as_tensor(frequency_scale, dtype=torch.float64, device=device)
        if scale.shape not in ((), (d // 2,)) or not bool((scale > 0).all()) or not bool(scale.isfinite().all()):
            raise ValueError(
                f"frequency_scale must be a positive float or a tensor of shape (d/2,) = ({d // 2},) of positive "
                f"values, got {shape_text(frequency_scale) if isinstance(frequency_scale, torch.Tensor) else frequency_scale!r}"
            )
        inverse_frequency = inverse_frequency * scale
    return positions.to(torch.float64)[:, None] * inverse_frequency[None, :]  # (n, d/2)


def apply_rotary(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
    interleaved: bool = True,
    frequency_scale: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """Rotary position embedding (RoPE; Su et al., 2021, Eq. 34): rotate each pair of features by its angle.

    ``x (..., n, d)`` with ``d`` even; ``positions (n,)`` integer, by default ``arange(n)``. Pair ``i`` (of ``d / 2``)
    is rotated by the angle ``position * base ** (-2i / d)``: the sinusoids' frequencies of §3.5, now angles.

    - ``interleaved=True`` pairs the features ``(2i, 2i + 1)``, as Su et al. and GPT-J do;
    - ``interleaved=False`` pairs ``(i, i + d / 2)``, the two halves, as GPT-NeoX and Hugging Face's Llama do.

    The two are the same rotation up to a fixed permutation of the ``d`` features, not the same function: a
    checkpoint trained with one needs its query and key weights permuted to run with the other. Returns a tensor of
    ``x``'s shape and dtype.

    ``frequency_scale`` (a positive float, or one per pair, ``(d / 2,)``) multiplies each pair's frequency: how
    :func:`extend_rope` stretches a trained model to longer inputs (1 / s for every pair is position interpolation).
    """
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
        raise ValueError(f"x must be a floating tensor of shape (..., n, d), got {shape_text(x)}")
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"apply_rotary rotates pairs of features: d must be even, got x of shape {tuple(x.shape)}")
    base = _positive_float("base", base)
    angles = _rotary_angles(n, d, positions, base, x.device, frequency_scale)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (n, d/2) each
    if interleaved:
        first, second = x[..., 0::2], x[..., 1::2]  # (..., n, d/2): features 2i and 2i + 1
    else:
        first, second = x[..., : d // 2], x[..., d // 2 :]  # features i and i + d/2
    rotated_first = first * cos - second * sin
    rotated_second = first * sin + second * cos
    if interleaved:
        return torch.stack((rotated_first, rotated_second), dim=-1).flatten(-2)  # back to 2i, 2i + 1
    return torch.cat((rotated_first, rotated_second), dim=-1)


class SwiGLU(nn.Module):
    """The gated feed-forward ``w2(silu(w1(x)) * w3(x))`` (Shazeer, 2020), with no biases, as in Llama.

    It replaces Eq. 2's ``max(0, x W_1 + b_1) W_2 + b_2``: ``w3`` makes a second projection that multiplies the
    activated one feature by feature (a gate). Three matrices instead of two, so at equal parameters ``d_ff`` is
    two thirds of the ReLU network's (``8/3 d_model`` for the paper's ``4 d_model``).
    """

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.d_model = positive_int("d_model", d_model)
        positive_int("d_ff", d_ff)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # activated
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != self.d_model:
            raise ValueError(f"SwiGLU expects (..., d_model={self.d_model}), got {shape_text(x)}")
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """``(h,)``: ALiBi's slope for each head (Press et al., 2022, §3), float32.

    For ``h`` a power of 2 the slopes are the geometric sequence ``2 ** (-8 (k + 1) / h)``, ``k = 0 .. h - 1``: for 8
    heads 1/2, 1/4, ..., 1/256. For another ``h``, their code takes the ``c`` slopes of the largest power of two
    ``c < h`` and then the first ``h - c`` odd-numbered terms of the sequence for ``2c`` heads,
    ``2 ** (-4 (2k + 1) / c)``, which interleave with them (for 12 heads: 2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5).
    """
    positive_int("num_heads", num_heads)
    c = 1 << (num_heads.bit_length() - 1)  # the largest power of 2 <= h
    slopes = [2.0 ** (-8.0 * (k + 1) / c) for k in range(c)]
    slopes += [2.0 ** (-4.0 * (2 * k + 1) / c) for k in range(num_heads - c)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(num_heads: int, n: int, m: int | None = None) -> torch.Tensor:
    """``(h, n, m)``: the bias ALiBi adds to the scores, ``-slope * (i - j)`` for query position i and key position j.

    ``m`` keys (default ``n``) sit at positions ``0 .. m - 1`` and the ``n`` queries are the last ``n`` of them,
    positions ``m - n .. m - 1`` (the decoding-with-a-cache layout; with ``m = n`` row i is position i). The bias is 0
    on a query's own position and falls by ``slope`` per step back. Keys after the query get a positive value: the
    causal mask removes them.
    """
    positive_int("n", n)
    m = n if m is None else positive_int("m", m)
    if m < n:
        raise ValueError(f"alibi_bias places the n={n} queries at the last n of m={m} key positions: m must be >= n")
    query_positions = torch.arange(m - n, m)[:, None]  # (n, 1)
    key_positions = torch.arange(m)[None, :]  # (1, m)
    distance = (query_positions - key_positions).to(torch.float32)  # (n, m): i - j
    return -alibi_slopes(num_heads)[:, None, None] * distance  # (h, n, m)


def sliding_window_mask(n: int, window: int) -> torch.Tensor:
    """``(n, n)`` bool: True where ``0 <= i - j < window``, each query sees itself and the ``window - 1`` before it.

    ``window >= n`` is the plain causal mask. Stacked layers widen the reach: after ``L`` layers information can
    travel ``L (window - 1)`` positions back (Beltagy et al., 2020, §3.1; Mistral 7B, Jiang et al., 2023, §2).
    """
    positive_int("n", n)
    positive_int("window", window, "the number of keys each query may see, itself included")
    offset = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # (n, n): i - j
    return (offset >= 0) & (offset < window)


class _Attention(nn.Module):
    """Causal multi-head (or grouped-query) self-attention with the position scheme of :class:`DecoderLM`."""

    def __init__(self, d_model, num_heads, num_kv_heads, positions, rope_base):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.positions = num_heads, num_kv_heads, positions
        self.d_k = d_model // num_heads
        self.rope_base = rope_base
        self.rope_frequency_scale: torch.Tensor | None = None  # set by extend_rope
        self.score_scale = 1.0  # YaRN's temperature (extend_rope)
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = x.shape[1]
        q = split_heads(self.w_q(x), self.num_heads)  # (B, n, d_model) -> (B, h, n, d_k)
        k = split_heads(self.w_k(x), self.num_kv_heads)  # (B, n, h_kv d_k) -> (B, h_kv, n, d_k)
        v = split_heads(self.w_v(x), self.num_kv_heads)
        if self.positions == "rope":  # rotate queries and keys, never values
            rope = dict(base=self.rope_base, frequency_scale=self.rope_frequency_scale)
            q, k = apply_rotary(q, **rope), apply_rotary(k, **rope)
        group = self.num_heads // self.num_kv_heads  # query heads per key/value head
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, n, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, n, n)
        if self.score_scale != 1.0:  # YaRN's temperature (extend_rope)
            scores = scores * self.score_scale
        if self.positions == "alibi":
            scores = scores + alibi_bias(self.num_heads, n).to(scores.dtype)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # every row keeps its own key
        weights = torch.softmax(scores, dim=-1)
        return self.w_o(combine_heads(weights @ v)), weights  # (B, n, d_model), (B, h, n, n)


class _Block(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, norm, ffn, pre_norm, positions, rope_base):
        super().__init__()
        self.pre_norm = pre_norm
        self.attention = _Attention(d_model, num_heads, num_kv_heads, positions, rope_base)
        self.feed_forward = SwiGLU(d_model, d_ff) if ffn == "swiglu" else _relu_ffn(d_model, d_ff)
        make_norm = (lambda: RMSNorm(d_model)) if norm == "rms" else (lambda: nn.LayerNorm(d_model))
        self.norm1, self.norm2 = make_norm(), make_norm()

    def forward(self, x, mask):
        if self.pre_norm:  # x + Sublayer(Norm(x))
            attended, weights = self.attention(self.norm1(x), mask)
            x = x + attended
            return x + self.feed_forward(self.norm2(x)), weights
        attended, weights = self.attention(x, mask)  # Norm(x + Sublayer(x)), the paper's §3.1
        x = self.norm1(x + attended)
        return self.norm2(x + self.feed_forward(x)), weights


def _relu_ffn(d_model: int, d_ff: int) -> nn.Sequential:
    """Eq. 2: ``max(0, x W_1 + b_1) W_2 + b_2``."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class DecoderLM(nn.Module):
    """A causal decoder-only language model whose block is the paper's or a modern one, setting by setting.

    Args:
        vocab_size, d_model, num_heads, num_layers, d_ff: as in the paper (``d_model`` divisible by ``num_heads``).
        num_kv_heads: grouped-query attention (notebook 11); ``None`` is one key/value head per query head.
        norm: ``"layer"`` (LayerNorm, §3.1) or ``"rms"`` (:class:`RMSNorm`).
        ffn: ``"relu"`` (Eq. 2) or ``"swiglu"`` (:class:`SwiGLU`, no biases).
        positions: ``"sinusoidal"`` (§3.5, added to the input), ``"learned"`` (a table added to the input, as BERT
            and GPT-2 do), ``"rope"`` (queries and keys rotated in every layer), ``"alibi"`` (a distance penalty on the
            scores in every layer) or ``"none"`` (the causal mask alone tells positions apart).
        window: ``None`` for full causal attention, or each query sees its last ``window`` keys.
        pre_norm: where the norms sit. ``None`` (default) follows the norm: post-norm for ``"layer"`` (the paper),
            pre-norm for ``"rms"`` (as in Llama). A pre-norm model ends with one more norm before the output layer.
        max_len: the longest sequence for ``"sinusoidal"`` and ``"learned"``; the other schemes take any length.
        rope_base: RoPE's base (10,000 as in Su et al.).

    The paper's block is ``DecoderLM(..., norm="layer", ffn="relu", positions="sinusoidal")``; a Llama-style block is
    ``DecoderLM(..., num_kv_heads=h_kv, norm="rms", ffn="swiglu", positions="rope")``. Whatever the positions, the
    token embeddings are drawn with std ``d_model ** -0.5`` and multiplied by ``sqrt(d_model)`` (§3.4, as notebook
    09's ``Transformer`` does), so every setting starts from token vectors of std 1, the size of the sinusoids, and
    only the block or the positions differ between two models. ``forward(tokens (B, n)) -> (logits (B, n, V), [weights
    (B, h, n, n) per layer])``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_layers: int,
        d_ff: int,
        num_kv_heads: int | None = None,
        norm: str = "layer",
        ffn: str = "relu",
        positions: str = "sinusoidal",
        window: int | None = None,
        pre_norm: bool | None = None,
        max_len: int = 512,
        rope_base: float = 10000.0,
    ):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("num_heads", num_heads)):
            positive_int(name, value)
        positive_int("num_layers", num_layers)
        positive_int("d_ff", d_ff)
        positive_int("max_len", max_len)
        self.norm, self.ffn = _choice("norm", norm, NORMS), _choice("ffn", ffn, FFNS)
        self.positions = _choice("positions", positions, POSITIONS)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if not is_int(num_kv_heads) or num_kv_heads < 1 or num_heads % num_kv_heads:
            raise ValueError(
                f"num_kv_heads must be None or a positive divisor of num_heads={num_heads}, got {num_kv_heads!r}"
            )
        if positions == "rope" and (d_model // num_heads) % 2:
            raise ValueError(
                f"RoPE rotates pairs of features: d_k = d_model / num_heads = {d_model // num_heads} is odd"
            )
        if window is not None:
            positive_int("window", window, "or None for full causal attention")
        if pre_norm is not None and not isinstance(pre_norm, bool):
            raise ValueError(f"pre_norm must be True, False or None, got {pre_norm!r}")
        self.vocab_size, self.d_model, self.max_len, self.window = vocab_size, d_model, max_len, window
        self.rope_base = _positive_float("rope_base", rope_base)
        self.pre_norm = (norm == "rms") if pre_norm is None else pre_norm
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)  # times sqrt(d_model) in forward: std 1
        if positions == "learned":
            self.position_embedding = nn.Embedding(max_len, d_model)
        if positions == "sinusoidal":
            self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.layers = nn.ModuleList(
            _Block(d_model, num_heads, num_kv_heads, d_ff, norm, ffn, self.pre_norm, positions, rope_base)
            for _ in range(num_layers)
        )
        if self.pre_norm:
            self.final_norm = RMSNorm(d_model) if norm == "rms" else nn.LayerNorm(d_model)
        self.output = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.int64:
            raise ValueError(f"tokens must be an int64 tensor of shape (B, n), got {shape_text(tokens)}")
        n = tokens.shape[1]
        if n == 0:
            raise ValueError("tokens must hold at least one position, got shape (B, 0)")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}), got min {tokens.min().item()} max {tokens.max().item()}"
            )
        if self.positions in ("sinusoidal", "learned") and n > self.max_len:
            raise ValueError(f"{self.positions} positions cover max_len={self.max_len} positions, got n={n}")
        x = self.embedding(tokens) * math.sqrt(self.d_model)  # (B, n, d_model), std about 1 at initialisation
        if self.positions == "sinusoidal":
            x = x + self.pe[:n]
        elif self.positions == "learned":
            x = x + self.position_embedding(torch.arange(n, device=tokens.device))
        mask = sliding_window_mask(n, self.window) if self.window is not None else sliding_window_mask(n, n)
        mask = mask.to(tokens.device)
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask)
            all_weights.append(weights)
        if self.pre_norm:
            x = self.final_norm(x)
        return self.output(x), all_weights


ROPE_EXTENSIONS = ("base", "interpolation", "ntk", "yarn")


def extend_rope(
    model: DecoderLM,
    method: str | None,
    factor: float = 1.0,
    original_length: int | None = None,
    base: float | None = None,
) -> None:
    """Stretch a trained RoPE :class:`DecoderLM` to inputs ``factor`` times longer than it was trained on, at test
    time, with no training: every layer's rotation changes in place. ``method``:

    - ``None``: the rotation it was trained with;
    - ``"base"``: RoPE's base raised to ``base``, so every pair but the first turns more slowly (Code Llama, Rozière
      et al., 2023, raise it from 10,000 to 1,000,000, and then train on long inputs);
    - ``"interpolation"``: positions divided by ``factor`` (Chen et al., 2023), so an input ``factor`` times longer
      spans only the angles training saw; neighbours come ``factor`` times closer;
    - ``"ntk"``: "NTK-aware" scaling, the base times ``factor ** (d / (d - 2))`` (d the head width): the slowest pair
      is interpolated by ``factor``, the fastest is left as it was (Peng et al., 2023, §3.1);
    - ``"yarn"``: YaRN (Peng et al., 2023, §3.2-3.4): each pair interpolated by how many turns it makes over the
      ``original_length`` training saw (fewer than 1: by ``factor``; more than 32: not at all; a linear ramp between),
      and every score multiplied by ``(0.1 ln(factor) + 1) ** 2``.
    """
    if not isinstance(model, DecoderLM) or model.positions != "rope":
        raise ValueError(f"extend_rope needs a DecoderLM with positions='rope', got {type(model).__name__}")
    if method is not None and method not in ROPE_EXTENSIONS:
        raise ValueError(f"method must be None or one of {ROPE_EXTENSIONS}, got {method!r}")
    factor = _positive_float("factor", factor)
    d_k = model.d_model // model.layers[0].attention.num_heads
    trained = model.rope_base
    new_base, frequency_scale, score_scale = trained, None, 1.0
    if method == "base":
        new_base = _positive_float("base", base)
    elif method == "interpolation":
        frequency_scale = torch.full((d_k // 2,), 1 / factor, dtype=torch.float64)
    elif method == "ntk":
        new_base = trained * factor ** (d_k / (d_k - 2))
    elif method == "yarn":
        positive_int("original_length", original_length, "(the length the model was trained on)")
        frequency = trained ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # (d_k/2,), radians per position
        turns = original_length * frequency / (2 * math.pi)  # how many times each pair turns over the trained length
        keep = ((turns - 1) / (32 - 1)).clamp(0, 1)  # 0: interpolate fully, 1: leave as it was
        frequency_scale = keep + (1 - keep) / factor
        score_scale = (0.1 * math.log(factor) + 1) ** 2
    for layer in model.layers:
        layer.attention.rope_base = new_base
        layer.attention.rope_frequency_scale = frequency_scale
        layer.attention.score_scale = score_scale


def train_decoder_lm(
    model: nn.Module,
    steps: int = 200,
    seed: int = 0,
    *,
    length: int = 32,
    min_period: int = 4,
    max_period: int = 12,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
) -> list[float]:
    """Train ``model`` (a :class:`DecoderLM`) in place on notebook 13's repeated sequences; return each step's loss.

    Each step draws a fresh batch of :func:`helpers.induction.repeated_sequences` of ``length`` tokens from the
    model's vocabulary, a period per row in ``min_period .. max_period``, and takes one Adam step on the
    cross-entropy of every next token. The rule (copy the token that followed the current one a period ago) is the
    same at every length, so a model trained at one length can be tested at longer ones. ``seed`` fixes the batches
    (seed the model's initial weights yourself, before building it). The model is left in ``eval()`` mode.
    """
    if not isinstance(model, DecoderLM):
        raise ValueError(f"model must be a DecoderLM, got {type(model).__name__}")
    positive_int("steps", steps)
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    positive_int("batch_size", batch_size)
    learning_rate = _positive_float("learning_rate", learning_rate)
    if model.positions in ("sinusoidal", "learned") and length > model.max_len:
        raise ValueError(f"length={length} exceeds the model's max_len={model.max_len} for {model.positions} positions")
    generator = torch.Generator().manual_seed(seed)
    # repeated_sequences checks length and the periods (max_period < length) before any step is taken
    repeated_sequences(1, length, model.vocab_size, min_period, max_period, torch.Generator().manual_seed(seed))
    model.train()
    losses = adam_on_repeated_sequences(
        model,
        steps,
        generator,
        length=length,
        min_period=min_period,
        max_period=max_period,
        batch_size=batch_size,
        learning_rate=learning_rate,
    )
    model.eval()
    return losses


@torch.no_grad()
def accuracy_by_position(
    model: nn.Module, tokens: torch.Tensor, periods: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(accuracy (n - 1,), counted (n - 1,))``: next-token accuracy at each query position, over the rows where it
    is predictable.

    The logits at query ``i`` predict token ``i + 1``; row ``b`` counts at ``i`` when ``i >= periods[b]`` (the current
    token occurred before, as in :func:`helpers.induction.predictable_positions`). ``counted[i]`` is how many rows
    count there, and ``accuracy[i]`` is 0 where none does (never NaN).
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.int64:
        raise ValueError(f"tokens must be an int64 tensor of shape (B, n), got {shape_text(tokens)}")
    B, n = tokens.shape
    if n < 2:
        raise ValueError(f"tokens must hold at least 2 positions (one query and its next token), got shape {(B, n)}")
    check_periods(periods, B, n)
    logits, _ = model(tokens)
    correct = (logits[:, :-1].argmax(-1) == tokens[:, 1:]).float()  # (B, n - 1): query i against token i + 1
    valid = predictable_positions(periods, n).float()  # (B, n - 1)
    counted = valid.sum(0)
    return (correct * valid).sum(0) / counted.clamp(min=1), counted.long()
