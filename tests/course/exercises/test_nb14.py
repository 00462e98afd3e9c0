"""The checkers of notebook 14, the modern block (``course.exercises.nb14``): right answers written other ways pass,
the classic mistakes of RMSNorm, RoPE and ALiBi's slopes are named."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course import exercises as ex
from course.exercises import nb14

# --- 14.1 RMSNorm -------------------------------------------------------------------------------------------------


def rms_module(x, weight, eps):  # PyTorch's module, given the weight
    norm = nn.RMSNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
    return norm(x)


RMS_RIGHT = {
    "rsqrt": lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w,
    "F.rms_norm": lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps),
    "nn.RMSNorm": rms_module,
    "the norm over sqrt(d)": lambda x, w, eps: (
        x / torch.sqrt(x.norm(dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps) * w
    ),
    "float64": lambda x, w, eps: x.double() / (x.double().square().mean(-1, keepdim=True) + eps).sqrt() * w,
    "einsum for the squares": lambda x, w, eps: (
        x / torch.sqrt(torch.einsum("...d,...d->...", x, x)[..., None] / x.shape[-1] + eps) * w
    ),
}


RMS_WRONG_BY_HAND = {  # written as a reader would, not as the checker's own variants
    "mean subtracted": lambda x, w, eps: F.layer_norm(x, (x.shape[-1],), w, None, eps),
    "eps outside the sqrt": lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w,
    "sum instead of mean": lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w,
    "weight left out": lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps),
    "mean over the first axis": lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + eps) * w,
    "eps not used": lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    "nn.RMSNorm's default eps": lambda x, w, eps: _rms_module_default(x, w),
    "divided by the standard deviation": lambda x, w, eps: x / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) * w,
}


def _rms_module_default(x, w):
    norm = torch.nn.RMSNorm(x.shape[-1])  # eps left at its default
    with torch.no_grad():
        norm.weight.copy_(w)
        return norm(x)


def test_rms_the_std_is_not_accepted():
    verdict = ex.check_rms_norm(lambda x, w, eps: x / x.std(-1, keepdim=True) * w)
    assert verdict.status == "failed"


# --- 14.2 RoPE ----------------------------------------------------------------------------------------------------


def rotary_complex(x, positions):
    d = x.shape[-1]
    frequency = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    turn = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64), positions.double()[:, None] * frequency)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).reshape(x.shape).to(x.dtype)


def rotary_matrices(x, positions):  # one 2 x 2 rotation matrix per pair, applied with einsum
    d = x.shape[-1]
    frequency = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.double()[:, None] * frequency  # (n, d/2)
    c, s = angle.cos(), angle.sin()
    rotation = torch.stack((torch.stack((c, -s), -1), torch.stack((s, c), -1)), -2)  # (n, d/2, 2, 2)
    pairs = x.double().reshape(*x.shape[:-1], d // 2, 2)  # (..., n, d/2, 2)
    return torch.einsum("npij,...npj->...npi", rotation, pairs).reshape(x.shape).float()


def rotary_loops(x, positions):
    out = x.clone()
    n, d = x.shape[-2], x.shape[-1]
    for row in range(n):
        for i in range(d // 2):
            t = float(positions[row]) * 10000.0 ** (-2 * i / d)
            a, b = x[..., row, 2 * i], x[..., row, 2 * i + 1]
            out[..., row, 2 * i] = a * math.cos(t) - b * math.sin(t)
            out[..., row, 2 * i + 1] = a * math.sin(t) + b * math.cos(t)
    return out


def rotary_through_halves(x, positions):  # the half-split layout, with the features permuted in and out
    from helpers.modern import apply_rotary

    d = x.shape[-1]
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    return apply_rotary(x[..., perm], positions, interleaved=False)[..., torch.argsort(perm)]


ROTARY_RIGHT = {
    "complex exponentials": rotary_complex,
    "rotation matrices": rotary_matrices,
    "loops": rotary_loops,
    "half-split with a permutation": rotary_through_halves,
}


def _pairs(x, positions, exponent=2, sign=1.0, halves=False):
    d = x.shape[-1]
    frequency = 10000.0 ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = sign * positions.double()[:, None] * frequency
    cos, sin = angle.cos().float(), angle.sin().float()
    a, b = (x[..., : d // 2], x[..., d // 2 :]) if halves else (x[..., 0::2], x[..., 1::2])
    first, second = a * cos - b * sin, a * sin + b * cos
    return torch.cat((first, second), -1) if halves else torch.stack((first, second), -1).flatten(-2)


ROTARY_WRONG_BY_HAND = {
    "halves instead of pairs": lambda x, p: _pairs(x, p, halves=True),
    "sin sign flipped": lambda x, p: _pairs(x, p, sign=-1.0),
    "exponent -i/d instead of -2i/d": lambda x, p: _pairs(x, p, exponent=1),
    "positions ignored": lambda x, p: _pairs(x, torch.arange(x.shape[-2])),
    "positions counted from 1": lambda x, p: _pairs(x, p + 1),
    "cos and sin swapped": lambda x, p: _swapped(x, p),
}


def _swapped(x, positions):
    d = x.shape[-1]
    angle = positions.double()[:, None] * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack(
        (a * angle.sin().float() - b * angle.cos().float(), a * angle.cos().float() + b * angle.sin().float()), -1
    ).flatten(-2)


# --- 14.3 ALiBi's slopes ------------------------------------------------------------------------------------------


def slopes_press(num_heads):  # the recursion of Press et al.'s code
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(num_heads).is_integer():
        return torch.tensor(power_of_2(num_heads))
    c = 2 ** math.floor(math.log2(num_heads))
    return torch.tensor(power_of_2(c) + power_of_2(2 * c)[0::2][: num_heads - c])


def slopes_from_zero(num_heads):  # Press et al.'s recursion with the powers counted from 0
    def power_of_2(n):
        start = 2 ** (-8 / n)
        return [start**i for i in range(n)]

    c = 1 << (num_heads.bit_length() - 1)
    return torch.tensor(power_of_2(c) + power_of_2(2 * c)[0::2][: num_heads - c])


def slopes_logspace(num_heads):
    c = 1 << (num_heads.bit_length() - 1)
    first = torch.logspace(-8 / c, -8, c, base=2)
    extra = torch.logspace(-4 / c, -4 / c * (2 * (num_heads - c) - 1), num_heads - c, base=2)
    return torch.cat([first, extra])


def slopes_float64_loop(num_heads):
    c = 1
    while 2 * c <= num_heads:
        c *= 2
    out = [2.0 ** (-8.0 * k / c) for k in range(1, c + 1)]
    k = 1
    while len(out) < num_heads:
        out.append(2.0 ** (-8.0 * k / (2 * c)))
        k += 2
    return torch.tensor(out, dtype=torch.float64)


SLOPES_RIGHT = {"Press et al.'s recursion": slopes_press, "logspace": slopes_logspace, "loops": slopes_float64_loop}


SLOPES_WRONG_BY_HAND = {
    "sequence starts at 1": slopes_from_zero,
    "rounded up to a power of 2": lambda h: torch.tensor(
        [2 ** (-8 * (k + 1) / 2 ** math.ceil(math.log2(h))) for k in range(h)]
    ),
    "slopes reversed": lambda h: torch.tensor(list(reversed(slopes_press(h).tolist()))),
    "one geometric sequence for any h": lambda h: 2.0 ** (-8.0 * torch.arange(1, h + 1) / h),
    "slopes sorted": lambda h: torch.tensor(sorted(slopes_press(h).tolist(), reverse=True)),
}


def test_slopes_only_c_slopes_fail_on_the_shape():
    verdict = ex.check_alibi_slopes(lambda h: torch.tensor(nb14.power_of_two_slopes(1 << (h.bit_length() - 1))))
    assert verdict.status == "failed" and "12" in str(verdict), str(verdict)


def test_the_notebook_describes_the_cases():
    seen = []

    def records(num_heads):
        seen.append(num_heads)
        return slopes_press(num_heads)

    assert ex.check_alibi_slopes(records).passed
    assert sorted(seen) == [1, 4, 6, 8, 12, 20]  # exercise 14.3 lists them
