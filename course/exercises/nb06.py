"""Notebook 06, the encoder block: the checkers of exercises 06.x and their classic mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.encoder import EncoderBlock
from helpers.masks import padding_mask

from .engine import Case, Mistake, Verdict, counts_attempts, register_hints, run_checks, seeded_generator


class SelfAttention(nn.Module):
    """``attention(x, mask)``: the block's multi-head self-attention, its output only."""

    def __init__(self, attention: MultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, x, mask=None):
        return self.attention(x, x, x, mask)[0]


def _block_parts(block: EncoderBlock):
    return SelfAttention(block.self_attn), block.feed_forward, block.norm1, block.norm2


def _post_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = norm1(x + attention(x, mask))
    return norm2(x + feed_forward(x))


def _pre_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = x + attention(norm1(x), mask)
    return x + feed_forward(norm2(x))


def _norm_inside(x, mask, a, f, n1, n2):
    x = x + n1(a(x, mask))
    return x + n2(f(x))


def _residual_from_normalised(x, mask, a, f, n1, n2):
    h = n1(x)
    x = h + a(h, mask)
    h = n2(x)
    return h + f(h)


def _block_mistakes(norm_first: bool, reference: Callable) -> list[Mistake]:
    same_norm = [
        Mistake(
            "same norm twice",
            lambda x, mask, a, f, n1, n2, pick=pick: reference(x, mask, a, f, pick(n1, n2), pick(n1, n2)),
            "the same LayerNorm is used for both sub-layers: norm1 goes with the attention sub-layer, norm2 with the "
            "feed-forward one (each has its own gain and bias).",
        )
        for pick in (lambda n1, n2: n1, lambda n1, n2: n2)
    ]
    norm_inside = Mistake(
        "norm inside the residual",
        _norm_inside,
        "x + LayerNorm(Sublayer(x)): the norm is applied to the sub-layer's output only. "
        + (
            "Pre-norm normalises the sub-layer's input, x + Sublayer(LayerNorm(x))."
            if norm_first
            else "Post-norm normalises the sum, LayerNorm(x + Sublayer(x)) (§3.1)."
        ),
    )
    mistakes = [
        Mistake(
            "post-norm and pre-norm swapped",
            _post_norm if norm_first else _pre_norm,
            "this is the pre-norm block, x + Sublayer(LayerNorm(x)); the paper's post-norm is LayerNorm(x + Sublayer(x))."
            if not norm_first
            else "this is the post-norm block, LayerNorm(x + Sublayer(x)); pre-norm is x + Sublayer(LayerNorm(x)).",
        ),
        Mistake(
            "mask ignored",
            lambda x, mask, *parts: reference(x, None, *parts),
            "the mask is not passed on to attention(x, mask), so padded keys still receive attention.",
        ),
        Mistake(
            "norm1 and norm2 swapped",
            lambda x, mask, a, f, n1, n2: reference(x, mask, a, f, n2, n1),
            "norm1 belongs to the attention sub-layer and norm2 to the feed-forward one; yours are swapped.",
        ),
        Mistake(
            "no residual",
            (lambda x, mask, a, f, n1, n2: n2(f(n1(a(x, mask)))))
            if not norm_first
            else (lambda x, mask, a, f, n1, n2: f(n2(a(n1(x), mask)))),
            "the residual connections are missing: each sub-layer's input must be added back (x + ...).",
        ),
        Mistake(
            "sub-layers in the wrong order",
            lambda x, mask, a, f, n1, n2: reference(x, mask, lambda y, mask: f(y), lambda y: a(y, mask), n1, n2),
            "the feed-forward sub-layer comes first: in the encoder layer (§3.1) self-attention comes first (with "
            "norm1), then the feed-forward network (with norm2).",
        ),
        *same_norm,
        norm_inside,
        Mistake(
            "second sub-layer reads the block's input",
            (lambda x, mask, a, f, n1, n2: n2(x + f(n1(x + a(x, mask)))))
            if not norm_first
            else (lambda x, mask, a, f, n1, n2: x + a(n1(x), mask) + f(n2(x))),
            "the second sub-layer reads the block's input x instead of the first sub-layer's result: "
            + (
                "the feed-forward sub-layer must take y = norm1(x + attention(x, mask)) and add y back, "
                "norm2(y + feed_forward(y))."
                if not norm_first
                else "the feed-forward sub-layer must normalise y = x + attention(norm1(x), mask), "
                "y + feed_forward(norm2(y))."
            ),
        ),
    ]
    if norm_first:
        mistakes.append(
            Mistake(
                "residual from the normalised x",
                _residual_from_normalised,
                "the residual adds the normalised x, LayerNorm(x) + Sublayer(LayerNorm(x)): pre-norm keeps the "
                "un-normalised x on the residual path, x + Sublayer(LayerNorm(x)). Normalise only the sub-layer's "
                "input.",
            )
        )
        for final in (
            lambda x, n1, n2: n1(x),
            lambda x, n1, n2: n2(x),
            lambda x, n1, n2: F.layer_norm(x, x.shape[-1:]),
        ):
            mistakes.append(
                Mistake(
                    "final LayerNorm in the block",
                    lambda x, mask, a, f, n1, n2, final=final: final(_pre_norm(x, mask, a, f, n1, n2), n1, n2),
                    "the block ends with a LayerNorm: in pre-norm the final LayerNorm belongs to the stack, once "
                    "after the last layer, not to each block. Return x + feed_forward(norm2(x)) as it is.",
                )
            )
    return mistakes


POST_NORM_MISTAKES = _block_mistakes(False, _post_norm)
PRE_NORM_MISTAKES = _block_mistakes(True, _pre_norm)

_POST_NORM_HINTS = register_hints(
    "06.1",
    "§3.1: the output of each sub-layer is LayerNorm(x + Sublayer(x)): the sub-layer's input is added to its "
    "output (the residual) and then the sum is normalised. Self-attention, with the mask, goes with norm1 and "
    "comes first; the feed-forward network reads its result and goes with norm2. To see a difference, print "
    "your output for a padded case next to the helper block's (section 4 compares them): a difference at the "
    "real positions only points at the attention sub-layer, one everywhere at a norm or a residual.",
    "one line per sub-layer, each normalising a sum: attention(x, mask) with norm1, then feed_forward with norm2; "
    "the second line reads the result of the first, not the block's input.",
    "x = norm1(x + attention(x, mask))\nreturn norm2(x + feed_forward(x))",
)
_PRE_NORM_HINTS = register_hints(
    "06.2",
    "pre-norm (section 5) normalises each sub-layer's input, not the sum: x + Sublayer(LayerNorm(x)), so the "
    "residual path carries the un-normalised x. norm1 goes before the attention (with the mask), norm2 before "
    "the feed-forward network, and nothing normalises the block's output. To see a difference, print the "
    "standard deviation of each position of your output: after a final norm every position has about the "
    "same one, and pre-norm's output keeps the spread of its input.",
    "one line per sub-layer, each adding to x: the attention reads norm1 of x (with the mask), the feed-forward "
    "network norm2 of the new x; no norm is applied to the sums.",
    "x = x + attention(norm1(x), mask)\nreturn x + feed_forward(norm2(x))",
)


@counts_attempts
def check_encoder_block(encoder_block: Callable, norm_first: bool = False) -> Verdict:
    """Exercise 06.1/06.2: ``encoder_block(x, mask, attention, feed_forward, norm1, norm2) -> (B, n, d_model)``.

    ``attention(x, mask)`` is multi-head self-attention's output; the other
    three are modules (from an ``EncoderBlock`` in ``eval()`` mode). With
    ``norm_first=False`` the answer must be the paper's post-norm layer (§3.1),
    with ``True`` the pre-norm one.
    """
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(10)
        block = EncoderBlock(16, 4, 32, norm_first=norm_first).eval()
        with torch.no_grad():  # distinct gains and biases, so swapping norm1 and norm2 shows
            for norm in (block.norm1, block.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.5)
    parts = _block_parts(block)
    g = seeded_generator(11)
    cases = [
        Case("B=2, n=5, no mask", (torch.randn(2, 5, 16, generator=g), None, *parts)),
        Case("B=2, n=5, padding mask", (torch.randn(2, 5, 16, generator=g), padding_mask([5, 3], 5), *parts)),
    ]

    def reference(x, mask, *_parts):  # the helper itself; the cases hand the answer copies of this block's parts
        return block(x, mask)[0]

    name = "Exercise 06.2 pre-norm block" if norm_first else "Exercise 06.1 post-norm block"
    with torch.no_grad():
        return run_checks(
            name,
            encoder_block,
            reference=reference,
            cases=cases,
            mistakes=PRE_NORM_MISTAKES if norm_first else POST_NORM_MISTAKES,
            hints=_PRE_NORM_HINTS if norm_first else _POST_NORM_HINTS,
            input_names=("x", "mask", "attention", "feed_forward", "norm1", "norm2"),
        )
