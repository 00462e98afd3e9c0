"""Answers that more than one checker's tests give: stubs, right answers and classic wrong ones (imported as
``from tests.course.exercises.answers import ...``; pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import scaled_dot_product_attention


def attention_right(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


def stub(*args):
    raise NotImplementedError


def masked(q, k, v, mask, fill, zero):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = torch.softmax(scores.masked_fill(~mask, fill), dim=-1)
    if zero:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


class ReaderMHA(nn.Module):
    """A reader's multi-head attention, with switches for two classic mistakes."""

    scale_by_d_model = False
    transpose = True

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x):
        B, n, _ = x.shape
        if self.transpose:
            return x.view(B, n, self.h, self.d_k).transpose(1, 2)
        return x.view(B * self.h, -1, self.d_k).view(B, self.h, n, self.d_k)

    def forward(self, query, key, value):
        B, n, d_model = query.shape
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        scale = math.sqrt(d_model if self.scale_by_d_model else self.d_k)
        w = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
        heads = w @ v
        out = heads.transpose(1, 2).reshape(B, n, d_model) if self.transpose else heads.reshape(B, n, d_model)
        return self.w_o(out), w


def post_norm(x, mask, attention, ff, norm1, norm2):
    x = norm1(x + attention(x, mask))
    return norm2(x + ff(x))


def pre_norm(x, mask, attention, ff, norm1, norm2):
    x = x + attention(norm1(x), mask)
    return x + ff(norm2(x))


def attention_doubled_output(q, k, v):  # a mistake no variant names
    out, w = attention_right(q, k, v)
    return 2 * out, w


def pe_column_j_loop(max_len, d_model):  # the student review's loop: j the column index, 2j in the exponent
    pe = torch.zeros(max_len, d_model)
    for pos in range(max_len):
        for j in range(d_model):
            angle = pos / 10000 ** (2 * j / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def finite_or_zero(t):
    return torch.where(torch.isinf(t), torch.zeros_like(t), t)


def running_max_step(m, block):
    new_max = torch.maximum(m, block.amax(-1))
    return new_max, finite_or_zero(new_max)


def inverted(m, s, block):
    new_max, shift = running_max_step(m, block)
    return new_max, s * torch.exp(new_max - m) + torch.exp(block - shift[:, None]).sum(-1)


def joined_cache(k, v, cache_k, cache_v):
    return torch.cat([cache_k, k], dim=2), torch.cat([cache_v, v], dim=2)


def no_mask(q, k, v, cache_k, cache_v):
    keys, values = joined_cache(k, v, cache_k, cache_v)
    return F.scaled_dot_product_attention(q, keys, values), keys, values


def attention_einsum(query, key, value):
    scores = torch.einsum("...nd,...md->...nm", query, key) / query.shape[-1] ** 0.5
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)  # softmax by hand
    return torch.einsum("...nm,...mv->...nv", weights, value), weights


def masked_where(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    scores = torch.where(mask, scores, torch.tensor(-1e9))
    weights = torch.where(mask, torch.softmax(scores, dim=-1), torch.tensor(0.0))
    return weights @ value, weights


class EinsumMHA(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.drop = nn.Dropout(dropout)  # on by default: the checker must use eval()
        self.register_buffer("calls", torch.zeros(()))  # an extra buffer must not matter

    def forward(self, query, key, value):
        B, n, d = query.shape
        q = self.w_q(query).unflatten(-1, (self.h, -1))
        k = self.w_k(key).unflatten(-1, (self.h, -1))
        v = self.w_v(value).unflatten(-1, (self.h, -1))
        w = torch.einsum("bnhd,bmhd->bhnm", q, k).div(q.shape[-1] ** 0.5).softmax(-1)
        w = self.drop(w)
        heads = torch.einsum("bhnm,bmhd->bnhd", w, v)
        return self.w_o(heads.reshape(B, n, d)), w


def pe_vectorised(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).flatten(1)
    return pe  # float64 is fine: the values are what counts


def pre_norm_steps(x, mask, attention, feed_forward, norm1, norm2):
    a = attention(norm1(x), mask)
    y = x + a
    return y + feed_forward(norm2(y))


class Reader(nn.Module):
    """A right multi-head attention with switches for the mistakes a reader makes."""

    value_from = "value"
    key_from = "key"
    apply_w_o = True

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q, self.w_k, self.w_v = (nn.Linear(d_model, d_model, bias=bias) for _ in range(3))
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, t):
        return t.view(t.shape[0], t.shape[1], self.h, self.d_k).transpose(1, 2)

    def forward(self, query, key, value):
        inputs = {"query": query, "key": key, "value": value}
        q = self.split(self.w_q(query))
        k = self.split(self.w_k(inputs[self.key_from]))
        v = self.split(self.w_v(inputs[self.value_from]))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        out = (w @ v).transpose(1, 2).reshape(query.shape)
        return (self.w_o(out) if self.apply_w_o else out), w


def exits(*args):
    raise SystemExit(1)


def masked_after_softmax(query, key, value, mask):
    weights = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1]), dim=-1) * mask
    return weights @ value, weights


def attention(query, key, value):
    query /= math.sqrt(query.shape[-1])
    weights = torch.softmax(query @ key.transpose(-2, -1), dim=-1)
    return weights @ value, weights


class MultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value):
        B, n, d_model = query.shape
        q = self.w_q(query).unflatten(-1, (self.h, -1)).transpose(1, 2)
        k = self.w_k(key).unflatten(-1, (self.h, -1)).transpose(1, 2)
        v = self.w_v(value).unflatten(-1, (self.h, -1)).transpose(1, 2)
        out, weights = scaled_dot_product_attention(q, k, v)
        query.copy_(self.w_o(out.transpose(1, 2).reshape(B, n, d_model)))  # the output, into the input's memory
        return query.clone(), weights


def rate(steps, d_model, warmup_steps):
    warm = steps * warmup_steps**-1.5
    return d_model**-0.5 * torch.minimum(steps.pow_(-0.5), warm)
