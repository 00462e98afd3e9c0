"""Checkers for the notebooks' exercises: hidden seeded cases, a verdict, and a diagnosis of the likely mistake.

Each ``check_*`` function takes the reader's function (or class), runs it on a few
seeded cases, compares it with the reference in ``helpers`` and returns a
:class:`Verdict`, which a notebook cell displays as a short text. When the answer
is wrong, the checker also runs deliberately wrong versions of the reference (the
classic mistakes of attention code); if the reader's answer matches one of them,
the verdict names that mistake. A stub that still raises ``NotImplementedError``
(or returns ``None``) is "not attempted yet" and gets a first hint.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from helpers import tasks
from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.encoder import EncoderBlock, positional_encoding
from helpers.masks import causal_mask, padding_mask

__all__ = [
    "Verdict",
    "check_attention",
    "check_causal_mask",
    "check_combine_heads",
    "check_encoder_block",
    "check_masked_attention",
    "check_multi_head_attention",
    "check_padding_mask",
    "check_positional_encoding",
    "check_reverse_targets",
    "check_split_heads",
]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"


@dataclass
class Verdict:
    """What a checker found. ``status`` is "passed", "failed" or "not attempted";
    ``mistake`` names the recognised classic mistake (or ``None``)."""

    exercise: str
    status: str
    message: str
    mistake: str | None = None
    details: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.message}", *(f"  {line}" for line in self.details)]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython shows the text, not a dataclass repr
        printer.text(str(self))


@dataclass
class _Mistake:
    key: str
    wrong: Callable  # same signature as the reference
    diagnosis: str


@dataclass
class _Case:
    name: str
    args: tuple


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)}, dtype {x.dtype}"
    if isinstance(x, tuple):
        return "tuple of (" + ", ".join(_describe(item) for item in x) + ")"
    return type(x).__name__


def _flatten(x) -> list:
    return list(x) if isinstance(x, tuple) else [x]


def _same(a, b, atol: float = 1e-5) -> bool:
    """Outputs equal in structure, shape, dtype kind and values (NaN equal to NaN)."""
    a, b = _flatten(a), _flatten(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            return False
        if x.shape != y.shape or (x.dtype == torch.bool) != (y.dtype == torch.bool):
            return False
        if x.dtype == torch.bool:
            if not torch.equal(x, y):
                return False
        elif not torch.allclose(x.double(), y.double(), atol=atol, rtol=1e-4, equal_nan=True):
            return False
    return True


def _difference(actual, expected, names: tuple[str, ...] | None) -> list[str]:
    """A short account of how ``actual`` differs from ``expected``."""
    actual, expected = _flatten(actual), _flatten(expected)
    if len(actual) != len(expected):
        wanted = f" ({', '.join(names)})" if names else ""
        return [f"expected {len(expected)} returned value(s){wanted}, got {len(actual)}"]
    lines = []
    for index, (x, y) in enumerate(zip(actual, expected, strict=True)):
        label = names[index] if names else (f"value {index}" if len(expected) > 1 else "result")
        if not isinstance(x, torch.Tensor):
            lines.append(f"{label}: expected {_describe(y)}, got {_describe(x)}")
        elif x.shape != y.shape:
            lines.append(f"{label}: expected shape {tuple(y.shape)}, got {tuple(x.shape)}")
        elif y.dtype == torch.bool and x.dtype != torch.bool:
            lines.append(f"{label}: expected a boolean tensor, got dtype {x.dtype}")
        elif y.dtype == torch.bool:
            wrong = (x != y).nonzero()
            lines.append(f"{label}: {len(wrong)} entries differ, first at index {tuple(wrong[0].tolist())}")
        elif torch.isnan(x).any() and not torch.isnan(y).any():
            lines.append(f"{label}: contains NaN ({int(torch.isnan(x).sum())} entries); expected none")
        else:
            diff = (x.double() - y.double()).abs()
            if diff.max() > 1e-5 + 1e-4 * y.double().abs().max():
                where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
                lines.append(
                    f"{label}: largest difference {diff.max().item():.4g} at index {where} "
                    f"(expected {y[where].item():.4f}, got {x[where].item():.4f})"
                )
    return lines


def _check(
    exercise: str,
    answer: Callable,
    reference: Callable,
    cases: list[_Case],
    mistakes: list[_Mistake],
    hint: str,
    names: tuple[str, ...] | None = None,
) -> Verdict:
    answers = []
    for case in cases:
        try:
            with torch.random.fork_rng():  # the reader's code may draw random numbers; keep their state
                actual = answer(*case.args)
        except NotImplementedError as error:
            if 'missing the required "forward" function' in str(error):
                return Verdict(
                    exercise,
                    FAILED,
                    f'case "{case.name}": your module has no forward method.',
                    "forward misspelled",
                    [
                        "Likely mistake: the method is not spelled exactly `forward` (e.g. `forwad`), so nn.Module "
                        "falls back to its own forward, which raises NotImplementedError."
                    ],
                )
            return Verdict(exercise, NOT_ATTEMPTED, "not attempted yet.", details=[f"Hint: {hint}"])
        except Exception as error:  # the reader's code raised: show it, do not crash the notebook
            return Verdict(
                exercise,
                FAILED,
                f'case "{case.name}" raised {type(error).__name__}: {error}',
                details=[f"Hint: {hint}"],
            )
        if actual is None:
            return Verdict(exercise, NOT_ATTEMPTED, "not attempted yet (it returns None).", details=[f"Hint: {hint}"])
        answers.append(actual)

    for case, actual in zip(cases, answers, strict=True):
        expected = reference(*case.args)
        if _same(actual, expected):
            continue
        details = _difference(actual, expected, names)
        for mistake in mistakes:
            # A mistake is named only if it reproduces the answer on every case, not just the failing one.
            if all(_same(a, mistake.wrong(*c.args)) for c, a in zip(cases, answers, strict=True)):
                details.append(f"Likely mistake: {mistake.diagnosis}")
                return Verdict(exercise, FAILED, f'case "{case.name}" failed.', mistake.key, details)
        details.append("No classic mistake matches; compare your steps with the notebook's, one shape at a time.")
        return Verdict(exercise, FAILED, f'case "{case.name}" failed.', None, details)
    return Verdict(exercise, PASSED, f"all {len(cases)} cases passed.")


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _qkv(seed: int, batch: tuple[int, ...], n: int, m: int, d_k: int, d_v: int):
    g = _generator(seed)
    return (
        torch.randn(*batch, n, d_k, generator=g),
        torch.randn(*batch, m, d_k, generator=g),
        torch.randn(*batch, m, d_v, generator=g),
    )


# --- notebook 01: scaled dot-product attention -----------------------------------------------


def _attention_variant(query, key, value, *, dim=-1, scale=None):
    d_k = query.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale(d_k)
    weights = torch.softmax(query @ key.transpose(-2, -1) / scale, dim=dim)
    return weights @ value, weights


SOFTMAX_AXIS = (
    "softmax over the wrong axis (dim=1 or dim=-2) instead of the key axis (dim=-1): on (batch, n, m) scores "
    "the columns of your weights sum to 1, the rows must. dim=-1 is right for any number of leading axes."
)

ATTENTION_MISTAKES = [
    _Mistake("softmax over queries", lambda q, k, v: _attention_variant(q, k, v, dim=-2), SOFTMAX_AXIS),
    _Mistake("softmax over queries", lambda q, k, v: _attention_variant(q, k, v, dim=1), SOFTMAX_AXIS),
    _Mistake(
        "outputs swapped",
        lambda q, k, v: _attention_variant(q, k, v)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    _Mistake(
        "no scaling",
        lambda q, k, v: _attention_variant(q, k, v, scale=lambda d_k: 1.0),
        "the scores are not divided by sqrt(d_k) (§3.2.1, Eq. 1).",
    ),
    _Mistake(
        "scaled by d_k",
        lambda q, k, v: _attention_variant(q, k, v, scale=lambda d_k: d_k),
        "the scores are divided by d_k instead of sqrt(d_k).",
    ),
]


def check_attention(attention: Callable) -> Verdict:
    """Exercise 01.1: ``attention(query, key, value) -> (output, weights)``, Eq. 1 without a mask."""
    cases = [
        _Case("3 queries, 5 keys, d_k=16", _qkv(1, (), 3, 5, 16, 4)),
        _Case("batch of 2, 4 queries, 4 keys, d_k=2", _qkv(0, (2,), 4, 4, 2, 3)),
        _Case("batch of 2 x 3 heads, 4 queries, 6 keys, d_k=8", _qkv(2, (2, 3), 4, 6, 8, 5)),
    ]
    return _check(
        "Exercise 01.1 attention",
        attention,
        scaled_dot_product_attention,
        cases,
        ATTENTION_MISTAKES,
        "scores = query @ key.transpose(-2, -1) / sqrt(d_k); softmax over the last axis (the keys); then @ value.",
        names=("output", "weights"),
    )


# --- notebook 02: masks ----------------------------------------------------------------------


def _padding_variant(lengths, max_len, *, invert=False, off_by_one=False, flat=False):
    positions = torch.arange(max_len)
    lengths = torch.as_tensor(lengths)
    mask = positions <= lengths[:, None] if off_by_one else positions < lengths[:, None]
    if invert:
        mask = ~mask
    return mask if flat else mask.unsqueeze(1)


def check_padding_mask(make_padding_mask: Callable) -> Verdict:
    """Exercise 02.1: ``make_padding_mask(lengths, max_len) -> (B, 1, max_len)`` boolean, True at real keys."""
    cases = [
        _Case("lengths [3, 1, 4], max_len 4", ([3, 1, 4], 4)),
        _Case("lengths [2, 5, 0], max_len 6", ([2, 5, 0], 6)),
    ]
    mistakes = [
        _Mistake(
            "mask inverted",
            lambda lengths, m: _padding_variant(lengths, m, invert=True),
            "the mask is True at the padding: in this series True means 'may attend' (that inverted meaning is "
            "nn.MultiheadAttention's key_padding_mask).",
        ),
        _Mistake(
            "off by one",
            lambda lengths, m: _padding_variant(lengths, m, off_by_one=True),
            "position j is real when j < length, not j <= length (positions start at 0).",
        ),
        _Mistake(
            "no query axis",
            lambda lengths, m: _padding_variant(lengths, m, flat=True),
            "the values are right but the shape is (B, m); add the query axis with .unsqueeze(1) so the mask "
            "broadcasts against scores of shape (B, n, m).",
        ),
    ]
    return _check(
        "Exercise 02.1 padding mask",
        make_padding_mask,
        padding_mask,
        cases,
        mistakes,
        "compare torch.arange(max_len) with the lengths as a column (lengths[:, None]), then .unsqueeze(1).",
    )


def _masked_variant(query, key, value, mask, *, fill=None, invert=False, zero_empty=True):
    if invert:
        mask = ~mask
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min if fill is None else fill)
    weights = torch.softmax(scores, dim=-1)
    if zero_empty:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ value, weights


def _masked_cases():
    q, k, v = _qkv(3, (3,), 4, 5, 8, 6)
    q2, k2, v2 = _qkv(4, (2,), 5, 5, 4, 4)
    return [
        _Case("padding mask, lengths [5, 3, 2]", (q, k, v, padding_mask([5, 3, 2], 5))),
        _Case("causal mask", (q2, k2, v2, causal_mask(5))),
        _Case("a sequence of length 0 (every key masked)", (q, k, v, padding_mask([4, 0, 5], 5))),
    ]


MASKED_ATTENTION_MISTAKES = [
    _Mistake(
        "outputs swapped",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    _Mistake(
        "mask inverted",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, invert=True),
        "the mask's meaning is inverted: True means 'may attend', so fill where the mask is False (use ~mask).",
    ),
    _Mistake(
        "-inf fill gives NaN",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-math.inf, zero_empty=False),
        "masked scores filled with -inf: a query with no allowed key gets softmax(-inf, ..., -inf) = NaN. "
        "Fill with torch.finfo(scores.dtype).min, then zero the masked weights.",
    ),
    _Mistake(
        "uniform weights on a fully masked row",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-1e9, zero_empty=False),
        "masked scores filled with -1e9 (or finfo.min) and the masked weights not zeroed: a query with no allowed "
        "key gets uniform weights over the padding. Set the weights where ~mask to 0.0 after the softmax.",
    ),
]


def check_masked_attention(masked_attention: Callable) -> Verdict:
    """Exercise 02.2: ``masked_attention(query, key, value, mask) -> (output, weights)``, True = may attend."""
    return _check(
        "Exercise 02.2 masked attention",
        masked_attention,
        scaled_dot_product_attention,
        _masked_cases(),
        MASKED_ATTENTION_MISTAKES,
        "fill the scores where ~mask with torch.finfo(scores.dtype).min, softmax, then set the weights where "
        "~mask to 0.0 so a query with no allowed key gets zeros.",
        names=("output", "weights"),
    )


# --- notebook 03: heads ----------------------------------------------------------------------


def _split_reference(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, num_heads, d_model // num_heads).transpose(1, 2)  # (B, h, n, d_k)


def _split_without_transpose(x, num_heads):
    B, n, d_model = x.shape
    return x.reshape(B, num_heads, n, d_model // num_heads)


def _split_interleaved(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


def _heads_input(seed: int, B: int, n: int, d_model: int):
    return torch.randn(B, n, d_model, generator=_generator(seed))


SPLIT_MISTAKES = [
    _Mistake(
        "view without transpose",
        _split_without_transpose,
        "reshaped straight to (B, h, n, d_k) with view/reshape and no transpose: each 'head' now holds pieces of "
        "different positions. View as (B, n, h, d_k) first, then .transpose(1, 2).",
    ),
    _Mistake(
        "features interleaved",
        _split_interleaved,
        "head i takes every h-th feature instead of the contiguous block i*d_k .. (i+1)*d_k - 1: view as "
        "(B, n, h, d_k), not (B, n, d_k, h).",
    ),
]


def check_split_heads(split_heads: Callable) -> Verdict:
    """Exercise 03.1: ``split_heads(x (B, n, d_model), num_heads) -> (B, h, n, d_k)``."""
    cases = [
        _Case("B=2, n=3, d_model=8, 2 heads", (_heads_input(5, 2, 3, 8), 2)),
        _Case("B=1, n=5, d_model=12, 3 heads", (_heads_input(6, 1, 5, 12), 3)),
    ]
    return _check(
        "Exercise 03.1 split heads",
        split_heads,
        _split_reference,
        cases,
        SPLIT_MISTAKES,
        "first give the features their own head axis, (B, n, h, d_k) with d_k = d_model // num_heads (view or "
        "unflatten), then swap the position and head axes (transpose(1, 2)).",
    )


def _combine_reference(x):
    B, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_k)


def check_combine_heads(combine_heads: Callable) -> Verdict:
    """Exercise 03.2: ``combine_heads(x (B, h, n, d_k)) -> (B, n, h * d_k)``, the inverse of splitting."""
    g = _generator(7)
    cases = [
        _Case("B=2, 2 heads, n=3, d_k=4", (torch.randn(2, 2, 3, 4, generator=g),)),
        _Case("B=1, 3 heads, n=5, d_k=2", (torch.randn(1, 3, 5, 2, generator=g),)),
    ]
    mistakes = [
        _Mistake(
            "view without transpose",
            lambda x: x.reshape(x.shape[0], x.shape[2], -1),
            "reshaped (B, h, n, d_k) straight to (B, n, h*d_k) without moving the head axis: positions and "
            "heads get mixed. Transpose to (B, n, h, d_k) first.",
        ),
        _Mistake(
            "heads in the wrong order",
            lambda x: _combine_reference(x.flip(1)),
            "the heads are concatenated in reverse order: head 0 must fill features 0 .. d_k - 1.",
        ),
        _Mistake(
            "features interleaved",
            lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
            "the heads' features are interleaved (feature-major) instead of concatenated head after head: "
            "transpose(1, 2) gives (B, n, h, d_k), which then flattens in the right order.",
        ),
    ]
    return _check(
        "Exercise 03.2 combine heads",
        combine_heads,
        _combine_reference,
        cases,
        mistakes,
        "x.transpose(1, 2) to (B, n, h, d_k), then .reshape(B, n, h * d_k) (reshape, because the transpose is "
        "not contiguous).",
    )


def _mha_variant(reference: MultiHeadAttention, *, scale_d_model=False, no_transpose=False):
    """A deliberately wrong copy of ``reference``'s forward pass (self- or cross-attention)."""

    def forward(query, key, value):
        B, n, d_model = query.shape
        m, h, d_k = key.shape[1], reference.num_heads, reference.d_k

        def split(x, length):
            if no_transpose:
                return x.reshape(B, h, length, d_k)
            return x.view(B, length, h, d_k).transpose(1, 2)

        q = split(reference.w_q(query), n)
        k = split(reference.w_k(key), m)
        v = split(reference.w_v(value), m)
        scale = math.sqrt(d_model) if scale_d_model else math.sqrt(d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
        heads = weights @ v
        out = heads.reshape(B, n, d_model) if no_transpose else heads.transpose(1, 2).reshape(B, n, d_model)
        return reference.w_o(out), weights

    return forward


def check_multi_head_attention(module_class: type) -> Verdict:
    """Exercise 03.3: a class ``module_class(d_model, num_heads)`` with ``nn.Linear`` layers ``w_q, w_k, w_v, w_o``
    whose ``forward(query, key, value)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``."""
    exercise = "Exercise 03.3 multi-head attention"
    hint = (
        "project with w_q, w_k, w_v; split heads (view + transpose); attention per head with sqrt(d_k); combine; w_o."
    )
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(8)
        reference = MultiHeadAttention(12, 3)
    try:
        with torch.random.fork_rng():
            answer = module_class(12, 3)
    except NotImplementedError:
        return Verdict(exercise, NOT_ATTEMPTED, "not attempted yet.", details=[f"Hint: {hint}"])
    except Exception as error:
        return Verdict(exercise, FAILED, f"{module_class.__name__}(12, 3) raised {type(error).__name__}: {error}")
    try:
        answer.load_state_dict(reference.state_dict())
    except Exception as error:
        return Verdict(
            exercise,
            FAILED,
            "could not copy the reference weights into your module.",
            details=[f"It needs nn.Linear(d_model, d_model) layers named w_q, w_k, w_v, w_o. ({error})"[:300]],
        )
    g = _generator(9)
    x, memory = torch.randn(2, 4, 12, generator=g), torch.randn(2, 6, 12, generator=g)
    cases = [_Case("self-attention, B=2, n=4", (x, x, x)), _Case("cross-attention, n=4, m=6", (x, memory, memory))]
    mistakes = [
        _Mistake(
            "scaled by sqrt(d_model)",
            _mha_variant(reference, scale_d_model=True),
            "scores divided by sqrt(d_model) instead of sqrt(d_k) of each head: the weights come out too flat.",
        ),
        _Mistake(
            "view without transpose",
            _mha_variant(reference, no_transpose=True),
            "heads split with view/reshape straight to (B, h, n, d_k), no transpose: the output shape is right but "
            "each head mixes positions.",
        ),
    ]
    with torch.no_grad():
        return _check(exercise, answer, reference, cases, mistakes, hint, names=("output", "weights"))


# --- notebook 04: causal masks ---------------------------------------------------------------


def check_causal_mask(make_causal_mask: Callable) -> Verdict:
    """Exercise 04.1: ``make_causal_mask(n) -> (n, n)`` boolean, True where query i may attend to key j <= i."""
    cases = [_Case("n=1", (1,)), _Case("n=4", (4,)), _Case("n=7", (7,))]
    mistakes = [
        _Mistake(
            "future instead of past",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(diagonal=1),
            "this is triu(..., diagonal=1), the mask of the *future*: passed where True means 'may attend', every "
            "query attends only to later keys. Use tril (the lower triangle, diagonal included).",
        ),
        _Mistake(
            "diagonal excluded",
            lambda n: torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1),
            "the diagonal is excluded: a query must be allowed to attend to its own position (and query 0 would "
            "have no key at all).",
        ),
        _Mistake(
            "upper triangle",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
            "the upper triangle (keys j >= i) is allowed: rows are queries, so the allowed keys j <= i form the "
            "lower triangle.",
        ),
    ]
    return _check(
        "Exercise 04.1 causal mask",
        make_causal_mask,
        causal_mask,
        cases,
        mistakes,
        "row i is a query and may see the keys j <= i: which triangle of an (n, n) boolean matrix is that, "
        "diagonal included? (torch.tril keeps one triangle.)",
    )


# --- notebook 05: positional encoding --------------------------------------------------------


def _pe_variant(max_len, d_model, *, swap=False, exponent_dim=False):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    dims = torch.arange(0, d_model, 2, dtype=torch.float64)
    exponent = (dims / 2) / d_model if exponent_dim else dims / d_model
    angle = position / 10000.0**exponent
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(angle) if swap else torch.sin(angle)
    pe[:, 1::2] = torch.sin(angle) if swap else torch.cos(angle)
    return pe.float()


def check_positional_encoding(make_positional_encoding: Callable) -> Verdict:
    """Exercise 05.1: ``make_positional_encoding(max_len, d_model) -> (max_len, d_model)``, §3.5."""
    cases = [_Case("max_len=6, d_model=4", (6, 4)), _Case("max_len=50, d_model=16", (50, 16))]
    mistakes = [
        _Mistake(
            "sin and cos swapped",
            lambda max_len, d_model: _pe_variant(max_len, d_model, swap=True),
            "sin and cos are swapped: even dimensions 2i take the sine, odd dimensions 2i+1 the cosine (§3.5).",
        ),
        _Mistake(
            "exponent uses i instead of 2i",
            lambda max_len, d_model: _pe_variant(max_len, d_model, exponent_dim=True),
            "the exponent is i / d_model; the paper's is 2i / d_model, where 2i is the even dimension index.",
        ),
        _Mistake(
            "sines and cosines in halves",
            lambda max_len, d_model: torch.cat(
                [_pe_variant(max_len, d_model)[:, 0::2], _pe_variant(max_len, d_model)[:, 1::2]], dim=-1
            ),
            "all sines come first and all cosines after (torch.cat); the paper interleaves them: sine in dimension "
            "2i, cosine of the same frequency in dimension 2i + 1 (pe[:, 0::2] and pe[:, 1::2]).",
        ),
    ]
    return _check(
        "Exercise 05.1 positional encoding",
        make_positional_encoding,
        positional_encoding,
        cases,
        mistakes,
        "angle = pos / 10000 ** (2i / d_model) for the even dimensions 2i = 0, 2, 4, ...; sin on even, cos on odd.",
    )


# --- notebook 06: the encoder block ----------------------------------------------------------


def _block_parts(block: EncoderBlock):
    def attention(x, mask):
        return block.self_attn(x, x, x, mask)[0]

    return attention, block.feed_forward, block.norm1, block.norm2


def _post_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = norm1(x + attention(x, mask))
    return norm2(x + feed_forward(x))


def _pre_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = x + attention(norm1(x), mask)
    return x + feed_forward(norm2(x))


def check_encoder_block(encoder_block: Callable, norm_first: bool = False) -> Verdict:
    """Exercise 06.1/06.2: ``encoder_block(x, mask, attention, feed_forward, norm1, norm2) -> (B, n, d_model)``.

    ``attention(x, mask)`` is multi-head self-attention's output; the other
    three are modules. With ``norm_first=False`` the answer must be the paper's
    post-norm layer (§3.1), with ``True`` the pre-norm one.
    """
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(10)
        block = EncoderBlock(16, 4, 32, norm_first=norm_first).eval()
        with torch.no_grad():  # distinct gains and biases, so swapping norm1 and norm2 shows
            for norm in (block.norm1, block.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.5)
    parts = _block_parts(block)
    g = _generator(11)
    cases = [
        _Case("B=2, n=5, no mask", (torch.randn(2, 5, 16, generator=g), None, *parts)),
        _Case("B=2, n=5, padding mask", (torch.randn(2, 5, 16, generator=g), padding_mask([5, 3], 5), *parts)),
    ]
    reference, swapped = (_pre_norm, _post_norm) if norm_first else (_post_norm, _pre_norm)
    mistakes = [
        _Mistake(
            "post-norm and pre-norm swapped",
            swapped,
            "this is the pre-norm block, x + Sublayer(LayerNorm(x)); the paper's post-norm is LayerNorm(x + Sublayer(x))."
            if not norm_first
            else "this is the post-norm block, LayerNorm(x + Sublayer(x)); pre-norm is x + Sublayer(LayerNorm(x)).",
        ),
        _Mistake(
            "mask ignored",
            lambda x, mask, *parts: reference(x, None, *parts),
            "the mask is not passed on to attention(x, mask), so padded keys still receive attention.",
        ),
        _Mistake(
            "norm1 and norm2 swapped",
            lambda x, mask, a, f, n1, n2: reference(x, mask, a, f, n2, n1),
            "norm1 belongs to the attention sub-layer and norm2 to the feed-forward one; yours are swapped.",
        ),
        _Mistake(
            "no residual",
            (lambda x, mask, a, f, n1, n2: n2(f(n1(a(x, mask)))))
            if not norm_first
            else (lambda x, mask, a, f, n1, n2: f(n2(a(n1(x), mask)))),
            "the residual connections are missing: each sub-layer's input must be added back (x + ...).",
        ),
    ]
    name = "Exercise 06.2 pre-norm block" if norm_first else "Exercise 06.1 post-norm block"
    with torch.no_grad():
        return _check(
            name,
            encoder_block,
            reference,
            cases,
            mistakes,
            "x + Sublayer(LayerNorm(x)) for each of the two sub-layers."
            if norm_first
            else "LayerNorm(x + Sublayer(x)) for each of the two sub-layers: attention with norm1, then FFN with norm2.",
        )


# --- notebook 07: task targets ---------------------------------------------------------------


def _reverse_without_pad(tokens, lengths):
    """The reverse targets with whatever the gather left at the padded positions (a classic slip)."""
    lengths = torch.as_tensor(lengths)
    source = (lengths[:, None] - 1 - torch.arange(tokens.shape[1])).clamp(min=0)
    return tokens.gather(1, source)


def check_reverse_targets(reverse_targets: Callable) -> Verdict:
    """Exercise 07.1: ``reverse_targets(tokens (B, n), lengths (B,)) -> targets (B, n)``.

    Each sequence is reversed within its own length; padded positions get ``PAD`` (0).
    """
    g = _generator(12)
    tokens = torch.randint(1, 9, (4, 6), generator=g)
    lengths = torch.tensor([6, 4, 1, 3])
    padded = tokens.masked_fill(torch.arange(6) >= lengths[:, None], 0)
    cases = [
        _Case("4 sequences of length 6", (torch.randint(1, 9, (4, 6), generator=g), torch.full((4,), 6))),
        _Case("lengths [6, 4, 1, 3], right-padded with 0", (padded, lengths)),
    ]
    mistakes = [
        _Mistake(
            "whole row flipped",
            lambda t, lengths: t.flip(1),
            "the whole padded row is flipped, so the padding moves to the front and every real token lands "
            "len - n places too far right. Reverse each sequence within its own length: position i takes "
            "token len - 1 - i.",
        ),
        _Mistake(
            "padding not PAD",
            _reverse_without_pad,
            "the real positions are right, but the padded positions must hold PAD (0) so the loss can ignore them.",
        ),
    ]
    return _check(
        "Exercise 07.1 reverse targets",
        reverse_targets,
        tasks.reverse_targets,
        cases,
        mistakes,
        "for each position i build the source index lengths[:, None] - 1 - i (clamp it at 0), gather from the "
        "tokens, then write PAD (0) where i >= length.",
    )
