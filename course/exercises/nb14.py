"""Notebook 14, the modern block: the checkers of exercises 14.1 to 14.3 (RMSNorm, RoPE, ALiBi's slopes) and their
classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from helpers.modern import alibi_slopes, apply_rotary

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator

# --- 14.1 RMSNorm -------------------------------------------------------------------------------------------------


def _rms_reference(x, weight, eps):
    """``F.rms_norm`` over the last axis: ``x / sqrt(mean(x ** 2) + eps) * weight``."""
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def _rms_variant(x, weight, eps, *, centred=False, eps_outside=False, total=False, root=True, scaled=True, axis=-1):
    """The reference with one step changed: the mean subtracted first (LayerNorm without its bias), ``eps`` added
    after the square root, the sum instead of the mean, no square root, no weight, or the mean over another axis."""
    if centred:
        x = x - x.mean(-1, keepdim=True)
    dims = tuple(range(x.dim())) if axis is None else (axis,)
    square = x.pow(2).sum(dims, keepdim=True) if total else x.pow(2).mean(dims, keepdim=True)
    if not root:
        scale = square + eps
    elif eps_outside:
        scale = square.sqrt() + eps
    else:
        scale = (square + eps).sqrt()
    y = x / scale
    return y * weight if scaled else y


RMS_MISTAKES = [
    Mistake(
        "mean subtracted",
        lambda x, w, eps: _rms_variant(x, w, eps, centred=True),
        "you subtracted the mean first: that is LayerNorm (without its bias). RMSNorm keeps the mean and divides by "
        "the root mean square of x itself, sqrt(mean(x ** 2) + eps).",
    ),
    Mistake(
        "eps outside the sqrt",
        lambda x, w, eps: _rms_variant(x, w, eps, eps_outside=True),
        "eps was added after the square root, x / (sqrt(mean(x ** 2)) + eps). It goes inside: "
        "x / sqrt(mean(x ** 2) + eps), as in nn.RMSNorm (torch.rsqrt(... + eps)). The two differ most for small x.",
    ),
    Mistake(
        "sum instead of mean",
        lambda x, w, eps: _rms_variant(x, w, eps, total=True),
        "you divided by the root of the *sum* of squares (the norm), not of their mean: the result is sqrt(d_model) "
        "times too small. Use x.pow(2).mean(-1, keepdim=True).",
    ),
    Mistake(
        "no square root",
        lambda x, w, eps: _rms_variant(x, w, eps, root=False),
        "you divided by the mean square, not by its square root: the root mean square is sqrt(mean(x ** 2) + eps).",
    ),
    Mistake(
        "weight left out",
        lambda x, w, eps: _rms_variant(x, w, eps, scaled=False),
        "the normalised x was not multiplied by weight, the learned scale (one gain per feature, shape (d_model,)).",
    ),
    Mistake(
        "eps not used",
        lambda x, w, eps: _rms_reference(x, w, 1e-6),
        "the eps you were given was not used (1e-6 written in its place?): on small x, where eps matters, the "
        "result is off. Add the argument eps inside the square root, sqrt(mean(x ** 2) + eps).",
    ),
    Mistake(
        "nn.RMSNorm's default eps",
        lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, None),
        "this is nn.RMSNorm / F.rms_norm with their default eps (None: the dtype's machine epsilon, about 1.2e-7 in "
        "float32), not the eps you were given: pass eps=eps.",
    ),
    Mistake(
        "divided by the standard deviation",
        lambda x, w, eps: x / torch.sqrt(x.var(-1, keepdim=True) + eps) * w,
        "you divided by the standard deviation, which measures the spread around the mean. RMSNorm divides by the "
        "root mean square of x itself, sqrt(mean(x ** 2) + eps): for x around 2 the two differ a lot.",
    ),
    Mistake(
        "d - 1 in the mean",
        lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) / (x.shape[-1] - 1) + eps) * w,
        "the squares were divided by d - 1, as an unbiased variance would be (torch.std's default), not by d: "
        "RMSNorm takes their plain mean, x.pow(2).mean(-1, keepdim=True). The result is a little too small, most "
        "for short vectors.",
    ),
    Mistake(
        "eps squared",
        lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps**2) * w,
        "eps was squared before it was added, sqrt(mean(x ** 2) + eps ** 2): it goes in as given, "
        "sqrt(mean(x ** 2) + eps). The two differ where eps matters, for small x.",
    ),
    Mistake(
        "mean over the first axis",
        lambda x, w, eps: _rms_variant(x, w, eps, axis=0),
        "the mean of the squares was taken over dim 0, across the vectors of the batch, not over each vector's own "
        "features. RMSNorm normalises every vector on its own: the mean runs over the last axis, "
        "x.pow(2).mean(-1, keepdim=True).",
    ),
    Mistake(
        "mean over every axis",
        lambda x, w, eps: _rms_variant(x, w, eps, axis=None),
        "the mean of the squares was taken over the whole tensor. Each vector is normalised on its own: the mean "
        "runs over the last axis only, keepdim=True so that it broadcasts back.",
    ),
]


def _rms_cases() -> list[Case]:
    g = seeded_generator(141)
    return [
        Case(
            "x (2, 3, 8) around 2, a random weight, eps 1e-6",
            (torch.randn(2, 3, 8, generator=g) + 2.0, torch.randn(8, generator=g), 1e-6),
        ),
        Case(
            "small x (4, 16), eps 1e-2",
            (torch.randn(4, 16, generator=g) * 0.05, torch.rand(16, generator=g) + 0.5, 1e-2),
        ),
        Case(
            "one vector (12,) of large values, eps 1e-5",
            (torch.randn(12, generator=g) * 30, torch.randn(12, generator=g), 1e-5),
        ),
    ]


_RMS_HINTS = register_hints(
    "14.1",
    "RMSNorm (Zhang and Sennrich, 2019) divides each vector, along its last axis, by its root mean square, "
    "sqrt(mean(x ** 2) + eps), and multiplies by the learned gain weight. Unlike LayerNorm it subtracts no mean and "
    "adds no bias. To see a difference, pass a weight of ones: your output's mean of squares along the last "
    "axis must then be 1 (a little less for tiny x, where eps matters).",
    "x.pow(2).mean(-1, keepdim=True) is (..., 1); add eps, then torch.rsqrt (or 1 / sqrt); multiply x by it and by "
    "weight, which broadcasts over the last axis.",
    "return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight",
)


@counts_attempts
def check_rms_norm(rms_norm: Callable) -> Verdict:
    """Exercise 14.1: ``rms_norm(x (..., d), weight (d,), eps) -> (..., d)``, ``x / sqrt(mean(x ** 2) + eps) *
    weight`` over the last axis (``helpers.modern.RMSNorm``, ``torch.nn.functional.rms_norm``)."""
    return run_checks(
        "Exercise 14.1 RMSNorm",
        rms_norm,
        reference=_rms_reference,
        cases=_rms_cases(),
        mistakes=RMS_MISTAKES,
        hints=_RMS_HINTS,
        input_names=("x", "weight", "eps"),
    )


# --- 14.2 RoPE ----------------------------------------------------------------------------------------------------


def _rotary_variant(
    x, positions, *, exponent="2i", sign=1.0, read="pairs", write="pairs", own_positions=True, swap=False, shift=0
):
    """Interleaved RoPE with one step changed: the exponent ``-i / d`` (``"i"``), ``-2 (2i) / d`` (``"4i"``) or
    ``-(2i + 1) / d`` (``"2i+1"``), the
    angle's sign flipped (``sign=-1``: rotated the other way), the pairs read or written as halves, ``arange(n)``
    in place of the given positions, cos and sin swapped, or the positions shifted by ``shift``."""
    n, d = x.shape[-2], x.shape[-1]
    index = torch.arange(d // 2, dtype=torch.float64)
    power = {"2i": 2 * index, "i": index, "4i": 4 * index, "2i+1": 2 * index + 1}[exponent]
    theta = 10000.0 ** (-power / d)  # (d/2,)
    p = (positions if own_positions else torch.arange(n)) + shift
    angle = sign * p.to(torch.float64)[:, None] * theta  # (n, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    if swap:
        cos, sin = sin, cos
    first, second = (x[..., 0::2], x[..., 1::2]) if read == "pairs" else (x[..., : d // 2], x[..., d // 2 :])
    a, b = first * cos - second * sin, first * sin + second * cos
    return torch.stack((a, b), dim=-1).flatten(-2) if write == "pairs" else torch.cat((a, b), dim=-1)


ROTARY_MISTAKES = [
    Mistake(
        "halves instead of pairs",
        lambda x, p: _rotary_variant(x, p, read="halves", write="halves"),
        "you rotated the features (i, i + d/2), the half-split layout of GPT-NeoX and Hugging Face's Llama. This "
        "exercise is the interleaved layout of Su et al.: pair i is the features (2i, 2i + 1), x[..., 0::2] and "
        "x[..., 1::2]. The two are the same rotation up to a permutation of the features, not the same function.",
    ),
    Mistake(
        "pairs read, halves written",
        lambda x, p: _rotary_variant(x, p, write="halves"),
        "each pair (2i, 2i + 1) was rotated right, but the results were put back as two halves (torch.cat): the "
        "rotated pair i must go back to features 2i and 2i + 1, torch.stack((a, b), dim=-1).flatten(-2).",
    ),
    Mistake(
        "sin sign flipped",
        lambda x, p: _rotary_variant(x, p, sign=-1.0),
        "the pairs were rotated the wrong way (the sine's sign is flipped): a rotation by the angle t takes (a, b) to "
        "(a cos t - b sin t, a sin t + b cos t). Scores still depend only on the offset, which is why this slips "
        "through; a checkpoint trained the other way would not.",
    ),
    Mistake(
        "exponent -i/d instead of -2i/d",
        lambda x, p: _rotary_variant(x, p, exponent="i"),
        "pair i turned at base ** (-i / d); its frequency is base ** (-2i / d), §3.5's with 2i the even feature "
        "index: torch.arange(0, d, 2) / d.",
    ),
    Mistake(
        "2 counted twice",
        lambda x, p: _rotary_variant(x, p, exponent="4i"),
        "the exponent counts the 2 twice: torch.arange(0, d, 2) already is 2i, so its frequency is "
        "base ** (-arange(0, d, 2) / d), not base ** (-2 * arange(0, d, 2) / d).",
    ),
    Mistake(
        "exponent -(2i + 1)/d",
        lambda x, p: _rotary_variant(x, p, exponent="2i+1"),
        "pair i turned at base ** (-(2i + 1) / d), the exponent of the pair's odd feature: it is base ** (-2i / d), "
        "2i the even feature index, so pair 0 turns one radian per position. Use torch.arange(0, d, 2) / d.",
    ),
    Mistake(
        "cos and sin swapped",
        lambda x, p: _rotary_variant(x, p, swap=True),
        "cos and sin are swapped: a turn by the angle t takes (a, b) to (a cos t - b sin t, a sin t + b cos t). With "
        "them swapped, position 0 is no longer left unchanged (cos 0 = 1, sin 0 = 0): print your result at position 0.",
    ),
    Mistake(
        "positions counted from 1",
        lambda x, p: _rotary_variant(x, p, shift=1),
        "every row was turned by the angle of the next position: positions count from 0, and the row at position 0 "
        "is not turned at all. Use the positions as given, not positions + 1.",
    ),
    Mistake(
        "positions ignored",
        lambda x, p: _rotary_variant(x, p, own_positions=False),
        "the rows were rotated by the angles of positions 0 .. n - 1, not by the positions given: use the angle "
        "positions[:, None] * frequency, one row per entry of positions (a cache's new rows sit at later positions).",
    ),
]


def _rotary_reference(x, positions):
    return apply_rotary(x, positions)


def _rotary_cases() -> list[Case]:
    g = seeded_generator(142)
    return [
        Case("x (5, 8), positions 0 .. 4", (torch.randn(5, 8, generator=g), torch.arange(5))),
        Case(
            "x (2, 3, 6, 16), heads and a batch, positions 0 .. 5",
            (torch.randn(2, 3, 6, 16, generator=g), torch.arange(6)),
        ),
        Case(
            "x (4, 12) at positions 3, 10, 50 and 200",
            (torch.randn(4, 12, generator=g), torch.tensor([3, 10, 50, 200])),
        ),
    ]


_ROTARY_HINTS = register_hints(
    "14.2",
    "RoPE (Su et al., 2021) splits the d features into d/2 pairs, here the interleaved pairs (2i, 2i + 1), and turns "
    "pair i of the row at position p by the angle p * 10000 ** (-2i / d), the frequency of §3.5. A turn by t takes "
    "(a, b) to (a cos t - b sin t, a sin t + b cos t). To see a difference, check that the row at position 0 comes "
    "back unchanged and that every row keeps its norm.",
    "torch.arange(0, d, 2) / d gives the exponents (d/2,); positions[:, None] times the frequencies is the "
    "(n, d/2) table of angles; x[..., 0::2] and x[..., 1::2] are the two members of each pair, (..., n, d/2); "
    "torch.stack((a, b), dim=-1).flatten(-2) puts the rotated pairs back in place.",
    "d = x.shape[-1]\n"
    "frequency = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)\n"
    "angle = positions.double()[:, None] * frequency  # (n, d/2)\n"
    "cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)\n"
    "a, b = x[..., 0::2], x[..., 1::2]  # the pairs (2i, 2i + 1)\n"
    "return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)",
)


@counts_attempts
def check_rotary(rotary: Callable) -> Verdict:
    """Exercise 14.2: ``rotary(x (..., n, d), positions (n,)) -> (..., n, d)``, interleaved RoPE with base 10,000
    (``helpers.modern.apply_rotary``)."""
    return run_checks(
        "Exercise 14.2 rotary positions",
        rotary,
        reference=_rotary_reference,
        cases=_rotary_cases(),
        mistakes=ROTARY_MISTAKES,
        hints=_ROTARY_HINTS,
        input_names=("x", "positions"),
    )


# --- 14.3 ALiBi's slopes ------------------------------------------------------------------------------------------


def power_of_two_slopes(h: int) -> list[float]:
    return [2.0 ** (-8.0 * (k + 1) / h) for k in range(h)]


def _rounded_up(h: int) -> torch.Tensor:
    c = 1 << (h - 1).bit_length()  # the smallest power of 2 >= h
    return torch.tensor(power_of_two_slopes(c)[:h])


def _extra_from_the_start(h: int) -> torch.Tensor:
    c = 1 << (h.bit_length() - 1)
    return torch.tensor(power_of_two_slopes(c) + power_of_two_slopes(2 * c)[: h - c])


def _even_extra_terms(h: int) -> torch.Tensor:
    c = 1 << (h.bit_length() - 1)
    return torch.tensor(power_of_two_slopes(c) + power_of_two_slopes(2 * c)[1::2][: h - c])


def _from_one_in_both_parts(h: int) -> torch.Tensor:
    """Press et al.'s construction written with a power-of-2 sequence that starts at 2 ** 0."""

    def from_one(c: int) -> list[float]:
        return [2.0 ** (-8.0 * k / c) for k in range(c)]

    c = 1 << (h.bit_length() - 1)
    return torch.tensor(from_one(c) + from_one(2 * c)[0::2][: h - c])


SLOPE_MISTAKES = [
    Mistake(
        "rounded up to a power of 2",
        _rounded_up,
        "for h not a power of 2 you took the first h slopes of the next power of 2 (16 for 12 heads). Press et al.'s "
        "code takes all the slopes of the power of 2 below (8 for 12 heads), then fills up with every other slope of "
        "the sequence for twice as many heads: 2 ** (-4 (2k + 1) / c), the odd terms, which interleave with the c slopes.",
    ),
    Mistake(
        "one geometric sequence for any h",
        lambda h: torch.tensor(power_of_two_slopes(h)),
        "2 ** (-8 (k + 1) / h) is the rule for h a power of 2 only. For another h, Press et al. take the c slopes of "
        "the largest power of 2 c < h and then the first h - c odd terms of the sequence for 2c heads, "
        "2 ** (-4 (2k + 1) / c), which interleave with them.",
    ),
    Mistake(
        "slopes reversed",
        lambda h: alibi_slopes(h).flip(0),
        "the slopes run the wrong way: head 0 has the largest slope, 2 ** (-8 / h) (1/2 for 8 heads), and each next "
        "head a smaller one.",
    ),
    Mistake(
        "sequence starts at 1",
        lambda h: torch.tensor([2.0 ** (-8.0 * k / h) for k in range(h)]),
        "the sequence starts at 2 ** 0 = 1. Its first term is the ratio itself, 2 ** (-8 / h): 2 ** (-8 (k + 1) / h) "
        "for k = 0 .. h - 1.",
    ),
    Mistake(
        "sequence starts at 1",
        _from_one_in_both_parts,
        "the sequences start at k = 0, so the first slope is 2 ** 0 = 1 (and, for h not a power of 2, the extra slopes "
        "repeat ones you already have). Count from k = 1: 2 ** (-8 k / c) for k = 1 .. c, and for the extra slopes the "
        "odd terms 2 ** (-4 (2k + 1) / c).",
    ),
    Mistake(
        "slopes sorted",
        lambda h: alibi_slopes(h).sort(descending=True).values,
        "the slopes are right but sorted. For h not a power of 2, Press et al.'s code keeps the c slopes of the power "
        "of 2 first and appends the h - c extra ones after them, unsorted: head k's slope is the k-th of that list.",
    ),
    Mistake(
        "even terms for the extra slopes",
        _even_extra_terms,
        "the extra h - c slopes were the even terms of the sequence for 2c heads ([1::2] counts from its second "
        "slope), and those are the c slopes you already have. Take the odd terms, [0::2]: 2 ** (-4 (2k + 1) / c).",
    ),
    Mistake(
        "extra slopes from the start",
        _extra_from_the_start,
        "the extra h - c slopes were the first h - c of the sequence for 2c heads, so half of them repeat slopes you "
        "already have. Take every other one, the odd terms 2 ** (-4 (2k + 1) / c), which interleave with the c slopes.",
    ),
]


_SLOPE_HINTS = register_hints(
    "14.3",
    "Press et al. (2022, §3) give head k (from 0) the slope 2 ** (-8 (k + 1) / h) when h is a power of 2: for 8 "
    "heads 1/2, 1/4, ..., 1/256. For another h their code takes the slopes of the largest power of 2 c below h, then "
    "the h - c missing ones from the sequence for 2c heads, every other one. Print your slopes for 8 and for 12 "
    "heads and compare them with those rules.",
    "c = 2 ** floor(log2(h)) (h.bit_length() - 1 gives the exponent); a list comprehension over range(c) gives "
    "the first c slopes; the extra ones are the terms 2 ** (-8 (2k + 1) / (2c)) for k in range(h - c); "
    "torch.tensor(list) of the two lists joined.",
    "c = 1 << (num_heads.bit_length() - 1)  # the largest power of 2 <= num_heads\n"
    "slopes = [2.0 ** (-8.0 * (k + 1) / c) for k in range(c)]\n"
    "slopes += [2.0 ** (-4.0 * (2 * k + 1) / c) for k in range(num_heads - c)]  # odd terms for 2c heads\n"
    "return torch.tensor(slopes)",
)


@counts_attempts
def check_alibi_slopes(slopes: Callable) -> Verdict:
    """Exercise 14.3: ``slopes(num_heads) -> (num_heads,)``, ALiBi's slope per head for any number of heads
    (``helpers.modern.alibi_slopes``)."""
    cases = [Case(f"num_heads={h}", (h,)) for h in (8, 4, 12, 6, 1, 20)]
    return run_checks(
        "Exercise 14.3 ALiBi slopes",
        slopes,
        reference=alibi_slopes,
        cases=cases,
        mistakes=SLOPE_MISTAKES,
        hints=_SLOPE_HINTS,
        input_names=("num_heads",),
    )
