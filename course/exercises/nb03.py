"""Notebook 03, heads: the checkers of exercises 03.x and their classic mistakes."""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable

import torch
from torch import nn

from helpers import attention  # the references of 03.1 and 03.2: attention.split_heads, attention.combine_heads
from helpers.attention import MultiHeadAttention

from .engine import (
    FAILED,
    Case,
    ErrorHint,
    Mistake,
    Verdict,
    answer_codes,
    counts_attempts,
    describe,
    register_hints,
    run_checks,
    run_once,
    seeded_generator,
    short_message,
)


def _split_without_transpose(x, num_heads):
    B, n, d_model = x.shape
    return x.reshape(B, num_heads, n, d_model // num_heads)


def _split_interleaved(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


def _split_not_moved(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, num_heads, d_model // num_heads)


def _heads_input(seed: int, B: int, n: int, d_model: int):
    return torch.randn(B, n, d_model, generator=seeded_generator(seed))


SPLIT_MISTAKES = [
    Mistake(
        "view without transpose",
        _split_without_transpose,
        "reshaped straight to (B, h, n, d_k) with view/reshape and no transpose: each 'head' now holds pieces of "
        "different positions. View as (B, n, h, d_k) first, then .transpose(1, 2).",
    ),
    Mistake(
        "features interleaved",
        _split_interleaved,
        "head i takes every h-th feature instead of the contiguous block i*d_k .. (i+1)*d_k - 1: view as "
        "(B, n, h, d_k), not (B, n, d_k, h).",
    ),
    Mistake(
        "unflatten without transpose",
        _split_not_moved,
        "the features have their head axis, but it is still after the positions: (B, n, h, d_k). Move it in front "
        "with .transpose(1, 2) to get (B, h, n, d_k).",
    ),
    Mistake(
        "transposed the wrong axes",
        lambda x, h: _split_not_moved(x, h).transpose(2, 3),
        "after the view to (B, n, h, d_k), transpose(2, 3) swapped heads and features, giving (B, n, d_k, h): the "
        "positions stay at axis 1 and the heads end last. Swap axes 1 and 2, .transpose(1, 2), for (B, h, n, d_k).",
    ),
    Mistake(
        "permuted the wrong axes",
        lambda x, h: _split_not_moved(x, h).permute(0, 2, 3, 1),
        "after the view to (B, n, h, d_k), permute(0, 2, 3, 1) gives (B, h, d_k, n): the heads are in front, but "
        "the positions end last, behind the features. permute(0, 2, 1, 3) (the same as transpose(1, 2)) gives "
        "(B, h, n, d_k).",
    ),
]


_SPLIT_HINTS = register_hints(
    "03.1",
    "head i takes the contiguous block of d_k = d_model // num_heads features i*d_k .. (i+1)*d_k - 1 "
    "(§3.2.2). First give the features their own head axis, then move the head axis in front of the "
    "positions, so each head is its own (n, d_k) matrix: (B, h, n, d_k). To see a difference, split a tensor "
    "whose features are numbered 0 .. d_model - 1 (like notebook 03's `tagged`): head 0 must hold features "
    "0 .. d_k - 1 of every position.",
    "which shape comes first? (B, n, h, d_k): the last axis split in two (view or unflatten); then which two axes "
    "to swap (transpose) to reach (B, h, n, d_k)?",
    "B, n, d_model = x.shape\n"
    "d_k = d_model // num_heads\n"
    "return x.view(B, n, num_heads, d_k).transpose(1, 2)  # (B, n, d_model) -> (B, n, h, d_k) -> (B, h, n, d_k)",
)


@counts_attempts
def check_split_heads(split_heads: Callable) -> Verdict:
    """Exercise 03.1: ``split_heads(x (B, n, d_model), num_heads) -> (B, h, n, d_k)``."""
    cases = [
        Case("B=2, n=3, d_model=8, 2 heads", (_heads_input(5, 2, 3, 8), 2)),
        Case("B=1, n=5, d_model=12, 3 heads", (_heads_input(6, 1, 5, 12), 3)),
    ]
    return run_checks(
        "Exercise 03.1 split heads",
        split_heads,
        reference=attention.split_heads,  # the reference is the helper (the parameter split_heads is the reader's)
        cases=cases,
        mistakes=SPLIT_MISTAKES,
        hints=_SPLIT_HINTS,
        input_names=("x", "num_heads"),
    )


COMBINE_MISTAKES = [
    Mistake(
        "view without transpose",
        lambda x: x.reshape(x.shape[0], x.shape[2], -1),
        "reshaped (B, h, n, d_k) straight to (B, n, h*d_k) without moving the head axis: positions and "
        "heads get mixed. Transpose to (B, n, h, d_k) first.",
    ),
    Mistake(
        "heads in the wrong order",
        lambda x: attention.combine_heads(x.flip(1)),
        "the heads are concatenated in reverse order: head 0 must fill features 0 .. d_k - 1.",
    ),
    Mistake(
        "features interleaved",
        lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
        "the heads' features are interleaved (feature-major) instead of concatenated head after head: "
        "permute(0, 2, 3, 1) gives (B, n, d_k, h), with the heads last, so merging the last two axes takes "
        "feature 0 of every head first. transpose(1, 2) gives (B, n, h, d_k), which then flattens in the right "
        "order.",
    ),
    *(
        Mistake(
            "transposed the wrong axes",
            wrong,
            "transpose(2, 3) swapped positions and features inside each head, giving (B, h, d_k, n): the heads "
            "stay at axis 1 and the positions end last, so merging mixes positions. Swap axes 1 and 2, "
            ".transpose(1, 2), for (B, n, h, d_k), then merge the last two.",
        )
        for wrong in (
            lambda x: x.transpose(2, 3).reshape(x.shape[0], x.shape[2], -1),
            lambda x: x.transpose(2, 3).flatten(2),
            lambda x: x.transpose(2, 3),
        )
    ),
    Mistake(
        "features interleaved",
        lambda x: x.permute(0, 2, 3, 1),
        "permute(0, 2, 3, 1) gives (B, n, d_k, h): the positions are back at axis 1, but the heads end last, "
        "behind the features. Use transpose(1, 2) for (B, n, h, d_k), then merge the last two axes, "
        ".flatten(2).",
    ),
    Mistake(
        "flatten without transpose",
        lambda x: x.flatten(2),
        "the last two axes of (B, h, n, d_k) were merged, giving (B, h, n*d_k): the head axis must first move "
        "behind the positions, .transpose(1, 2) to (B, n, h, d_k), and then .flatten(2) merges h and d_k.",
    ),
    Mistake(
        "not merged",
        lambda x: x.transpose(1, 2),
        "the axes are in the right order, (B, n, h, d_k), but h and d_k are not merged yet: .flatten(2) (or "
        ".reshape(B, n, h * d_k)).",
    ),
]


_COMBINE_HINTS = register_hints(
    "03.2",
    "the inverse of splitting, and the paper's Concat (§3.2.2): bring the positions back in front of the heads, "
    "(B, n, h, d_k), then merge the last two axes so head 0's d_k features come first, then head 1's. "
    "`flatten` or `reshape` can do the merge.",
    "(B, h, n, d_k) -> (B, n, h, d_k) swaps axes 1 and 2 (transpose); then .flatten(2), or .reshape with "
    "h * d_k, merges the last two (.view fails after a transpose, which is not contiguous).",
    "B, h, n, d_k = x.shape\n"
    "return x.transpose(1, 2).reshape(B, n, h * d_k)  # (B, h, n, d_k) -> (B, n, h, d_k) -> (B, n, h * d_k)",
)


@counts_attempts
def check_combine_heads(combine_heads: Callable) -> Verdict:
    """Exercise 03.2: ``combine_heads(x (B, h, n, d_k)) -> (B, n, h * d_k)``, the inverse of splitting."""
    g = seeded_generator(7)
    cases = [
        Case("B=2, 2 heads, n=3, d_k=4", (torch.randn(2, 2, 3, 4, generator=g),)),
        Case("B=1, 3 heads, n=5, d_k=2", (torch.randn(1, 3, 5, 2, generator=g),)),
    ]
    return run_checks(
        "Exercise 03.2 combine heads",
        combine_heads,
        reference=attention.combine_heads,  # the reference is the helper (the parameter combine_heads is the reader's)
        cases=cases,
        mistakes=COMBINE_MISTAKES,
        hints=_COMBINE_HINTS,
        input_names=("x",),
    )


@functools.cache
def mha_reference() -> MultiHeadAttention:
    """The checker's reference, MultiHeadAttention(12, 3) with seeded weights (the same on every call; never
    trained or changed, so one instance serves every attempt and every mistake)."""
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(8)
        return MultiHeadAttention(12, 3)


def _mha_variant(
    *,
    scale_d_model=False,
    no_transpose=False,
    no_w_o=False,
    key_for_value=False,
    value_for_key=False,
    mean_weights=False,
):
    """A deliberately wrong copy of the reference's forward pass (self- or cross-attention)."""

    def forward(query, key, value):
        reference = mha_reference()
        B, n, d_model = query.shape
        m, h, d_k = key.shape[1], reference.num_heads, reference.d_k

        def split(x, length):
            if no_transpose:
                return x.reshape(B, h, length, d_k)
            return x.view(B, length, h, d_k).transpose(1, 2)

        q = split(reference.w_q(query), n)
        k = split(reference.w_k(value if value_for_key else key), m)
        v = split(reference.w_v(key if key_for_value else value), m)
        scale = math.sqrt(d_model) if scale_d_model else math.sqrt(d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
        heads = weights @ v
        out = heads.reshape(B, n, d_model) if no_transpose else heads.transpose(1, 2).reshape(B, n, d_model)
        return (out if no_w_o else reference.w_o(out)), (weights.mean(1) if mean_weights else weights)

    return forward


MHA_MISTAKES = [
    Mistake(
        "outputs swapped",
        lambda query, key, value: mha_reference()(query, key, value)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    Mistake(
        "scaled by sqrt(d_model)",
        _mha_variant(scale_d_model=True),
        "scores divided by sqrt(d_model) instead of sqrt(d_k) of each head: the weights come out too flat.",
    ),
    Mistake(
        "view without transpose",
        _mha_variant(no_transpose=True),
        "heads split with view/reshape straight to (B, h, n, d_k), no transpose: the output shape is right but "
        "each head mixes positions.",
    ),
    Mistake(
        "no output projection",
        _mha_variant(no_w_o=True),
        "the heads are concatenated but w_o is never applied: W^O (§3.2.2) projects the concatenation, "
        "return self.w_o(concat), weights.",
    ),
    Mistake(
        "values projected from the keys",
        _mha_variant(key_for_value=True),
        "the values are computed from `key` (self.w_v(key)): in cross-attention key and value are different "
        "tensors; project the values from `value`.",
    ),
    Mistake(
        "keys projected from the values",
        _mha_variant(value_for_key=True),
        "the keys are computed from `value` (self.w_k(value)): in cross-attention key and value are different "
        "tensors; project the keys from `key`.",
    ),
    Mistake(
        "weights averaged over heads",
        _mha_variant(mean_weights=True),
        "the weights are averaged over the heads, (B, n, m): return one weight matrix per head, (B, h, n, m).",
    ),
]


_LAYERS = ("w_q", "w_k", "w_v", "w_o")


def _parameter_problems(answer: nn.Module, reference: nn.Module) -> tuple[list[str], str | None, list[str]]:
    """What stops the reference's weights from going into ``answer``, said from the student's side.

    Returns ``(problems, mistake_key, extra_parameter_names)``."""
    own = dict(answer.named_parameters())
    problems, absent = [], []
    for layer in _LAYERS:
        names = [f"{layer}.weight", f"{layer}.bias"]
        missing = [name for name in names if name not in own]
        if len(missing) == 2:
            problems.append(f"Your module has no parameter named {layer} (no layer `self.{layer}`).")
            absent.append(layer)
            continue
        if missing == [f"{layer}.bias"]:
            problems.append(
                f"Your module has no parameter named {layer}.bias: create the layer with a bias (the default)."
            )
        for name in names:
            if name in own and own[name].shape != reference.get_parameter(name).shape:
                problems.append(
                    f"Your {name} has shape {tuple(own[name].shape)}; expected {tuple(reference.get_parameter(name).shape)}, "
                    "as in nn.Linear(d_model, d_model)."
                )
    key = "no output projection" if absent == ["w_o"] else ("layer names" if absent else "layer shapes")
    extra = [name for name in own if name not in dict(reference.named_parameters())]
    return problems, key if problems else None, extra


_MHA_HINTS = register_hints(
    "03.3",
    "§3.2.2: project query, key and value with w_q, w_k, w_v (queries from `query`, keys from `key`, values "
    "from `value`); split each into h heads of d_k = d_model / h features; run Eq. 1 in every head at once, "
    "scaled by sqrt(d_k) of one head; concatenate the heads back to d_model features; project with w_o.",
    "each projection is (B, length, d_model), with length n for the queries and m = key.shape[1] for the keys "
    "and values; split it as in 03.1 to (B, h, length, d_k); scaled_dot_product_attention from helpers.attention "
    "runs Eq. 1 in every head at once; merge the heads as in 03.2 before w_o.",
    "class MyMultiHeadAttention(nn.Module):\n"
    "    def __init__(self, d_model, num_heads):\n"
    "        super().__init__()\n"
    "        self.num_heads, self.d_k = num_heads, d_model // num_heads\n"
    "        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "\n"
    "    def forward(self, query, key, value):\n"
    "        B, n, d_model = query.shape\n"
    "\n"
    "        def split(x):  # (B, length, d_model) -> (B, h, length, d_k)\n"
    "            return x.view(B, x.shape[1], self.num_heads, self.d_k).transpose(1, 2)\n"
    "\n"
    "        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))\n"
    "        out, weights = scaled_dot_product_attention(q, k, v)  # from helpers.attention\n"
    "        return self.w_o(out.transpose(1, 2).reshape(B, n, d_model)), weights",
)


@counts_attempts
def check_multi_head_attention(module_class: type) -> Verdict:
    """Exercise 03.3: a class ``module_class(d_model, num_heads)`` with ``nn.Linear`` layers ``w_q, w_k, w_v, w_o``
    whose ``forward(query, key, value)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``.

    The checker builds ``module_class(12, 3)``, copies the weights of ``MultiHeadAttention(12, 3)`` into it by
    parameter name (extra buffers or parameters are left alone), puts it in ``eval()`` mode (so dropout, if any,
    is off) and compares it on self-attention and on cross-attention with different key and value tensors. An
    instance passed instead of the class is accepted (a copy of it is checked)."""
    exercise = "Exercise 03.3 multi-head attention"
    reference = mha_reference()
    notes: list[str] = []
    if isinstance(module_class, nn.Module):
        try:
            answer = copy.deepcopy(module_class)
        except Exception:
            return Verdict(
                exercise,
                FAILED,
                "pass the class, not an instance.",
                "instance instead of class",
                ["e.g. check_multi_head_attention(MyMultiHeadAttention), without (d_model, num_heads)."],
            )
        notes.append("(You passed an instance; the checker used a copy of it. Passing the class is enough.)")
    elif isinstance(module_class, type):
        name = getattr(module_class, "__name__", "your class")
        codes = answer_codes(module_class.__init__)
        answer, verdict = run_once(exercise, module_class, f"{name}(12, 3)", (12, 3), codes, _MHA_HINTS, ())
        if verdict is not None:
            return verdict
        if not isinstance(answer, nn.Module):
            return Verdict(
                exercise,
                FAILED,
                f"{name}(12, 3) is not an nn.Module.",
                "not a module",
                ["Subclass nn.Module, class MyMultiHeadAttention(nn.Module), and call super().__init__() first."],
            )
    else:
        return Verdict(
            exercise,
            FAILED,
            f"expected your class, got {describe(module_class)}.",
            "instance instead of class",
            ["Pass the class, not an instance or a function: check_multi_head_attention(MyMultiHeadAttention)."],
        )
    problems, key, extra = _parameter_problems(answer, reference)
    if problems:
        expected_names = ", ".join(name for name, _ in reference.named_parameters())
        details = [*problems, f"The checker copies {expected_names}, each from an nn.Linear(12, 12), by name."]
        if key == "no output projection":
            details.append(
                "W^O (§3.2.2) projects the concatenated heads back: create self.w_o = nn.Linear(d_model, d_model) "
                "and apply it last."
            )
        own = [name for name, _ in answer.named_parameters()]
        if own:
            details.append(f"Your module's parameters: {', '.join(own)}.")
        return Verdict(exercise, FAILED, "could not copy the reference weights into your module.", key, details)
    reference_parameters = {name: p for name, p in reference.named_parameters()}
    try:
        answer.load_state_dict(reference_parameters, strict=False)  # extra buffers and parameters are left alone
    except Exception as error:
        return Verdict(
            exercise, FAILED, f"could not copy the reference weights into your module ({short_message(error)})."
        )
    answer.eval()  # dropout off: the comparison is deterministic
    if extra:
        notes.append(f"Your module also has parameters the checker does not fill: {', '.join(extra)}.")
    g = seeded_generator(9)
    x, memory = torch.randn(2, 4, 12, generator=g), torch.randn(2, 6, 12, generator=g)
    value = torch.randn(2, 6, 12, generator=g)  # not the keys: projecting values from keys must show
    cross_error = ErrorHint(
        "fails on cross-attention",
        lambda error: True,
        "your module runs on self-attention but raises on cross-attention, where query, key and value are three "
        "different tensors with n=4 and m=6 positions: project the keys from `key` and the values from `value`, and "
        "use m = key.shape[1] wherever the keys' length is meant (not n = query.shape[1]).",
    )
    cases = [
        Case("self-attention, B=2, n=4", (x, x, x)),
        Case("cross-attention, n=4, m=6", (x, memory, value), error_hints=(cross_error,)),
    ]
    with torch.no_grad():
        return run_checks(
            exercise,
            answer,
            reference=reference,
            cases=cases,
            mistakes=MHA_MISTAKES,
            hints=_MHA_HINTS,
            result_names=("output", "weights"),
            notes=tuple(notes),
            input_names=("query", "key", "value"),
        )
