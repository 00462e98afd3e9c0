"""Notebook 09, the whole Transformer: the checkers of exercises 09.x and their classic mistakes."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch
from torch import nn

from helpers import transformer
from helpers.attention import MultiHeadAttention
from helpers.decoder import DecoderBlock
from helpers.masks import causal_mask, padding_mask

from .engine import (
    Case,
    ErrorHint,
    Mistake,
    Verdict,
    counts_attempts,
    join_and,
    register_hints,
    run_checks,
    seeded_generator,
)
from .nb06 import SelfAttention


def _shift_variant(targets, bos_id, *, how="right"):
    bos = torch.full_like(targets[:, :1], bos_id)
    if how == "left":
        return torch.cat([targets[:, 1:], torch.zeros_like(bos)], dim=1)
    if how == "left, bos last":
        return torch.cat([targets[:, 1:], bos], dim=1)
    if how == "rolled left, bos first":  # torch.roll(targets, -1), then bos_id written into position 0
        return torch.cat([bos, targets.roll(-1, dims=1)[:, 1:]], dim=1)
    if how == "roll":
        return targets.roll(1, dims=1)
    if how == "rolled rows":  # torch.roll(targets, 1, dims=0), then bos_id written into position 0
        return torch.cat([bos, targets.roll(1, dims=0)[:, 1:]], dim=1)
    if how == "rolled left":  # torch.roll(targets, -1, dims=1): the first token wraps round to the end
        return targets.roll(-1, dims=1)
    if how == "rolled left flattened":  # torch.roll(targets, -1) without dims
        return targets.roll(-1)
    if how == "roll flattened":  # torch.roll(targets, 1) without dims rolls the flattened tensor
        return targets.roll(1)
    if how == "overwrite":
        return torch.cat([bos, targets[:, 1:]], dim=1)
    if how == "longer":
        return torch.cat([bos, targets], dim=1)
    if how == "no bos":
        return torch.cat([torch.zeros_like(bos), targets[:, :-1]], dim=1)
    if how == "bos 1":
        return torch.cat([torch.ones_like(bos), targets[:, :-1]], dim=1)
    if how == "identity":  # <bos> prepended, then the first position dropped instead of the last
        return targets.clone()
    if how == "no eos":  # <eos> (id 2 in the checker's cases) replaced by <pad> before the shift
        targets = torch.where(targets == 2, torch.zeros_like(targets), targets)
    return torch.cat([bos, targets[:, :-1]], dim=1)


def shift_cases() -> list[Case]:
    g = seeded_generator(13)
    full = torch.cat([torch.randint(5, 20, (2, 4), generator=g), torch.full((2, 1), 2)], dim=1)  # ... <eos>=2
    # int32 in the second case: an answer that builds <bos> in the default dtype (torch.full without dtype=,
    # torch.tensor of a list) returns int64 whatever the targets are, and only targets of another dtype show it.
    padded = torch.tensor([[7, 8, 9, 2, 0, 0], [11, 12, 13, 14, 15, 2], [6, 2, 0, 0, 0, 0]], dtype=torch.int32)
    return [
        Case("B=2, n=5, bos_id=1", (full, 1)),
        Case("B=3, n=6, right-padded with 0, int32 targets, bos_id=3", (padded, 3)),
    ]


_SHIFTED_LEFT = (
    "the targets are shifted left (targets[:, 1:]): position i then holds the token it must predict, "
    "i + 1 steps ahead of what it may know. Shift right: <bos> first, then targets[:, :-1]."
)


SHIFT_MISTAKES = [
    *(
        Mistake("shifted left", lambda t, b, how=how: _shift_variant(t, b, how=how), _SHIFTED_LEFT)
        for how in ("left", "left, bos last", "rolled left, bos first", "rolled left", "rolled left flattened")
    ),
    Mistake(
        "rolled",
        lambda t, b: _shift_variant(t, b, how="roll"),
        "torch.roll moves the last token (<eos> or <pad>) to the front instead of inserting <bos>: put bos_id "
        "first and drop the last position.",
    ),
    Mistake(
        "rolled",
        lambda t, b: _shift_variant(t, b, how="roll flattened"),
        "torch.roll(targets, 1) without dims rolls the flattened tensor, so position 0 of each row gets the "
        "last token of the row before (and no <bos>). Give the axis, dims=1, and then write bos_id into "
        "position 0; or build the result with torch.cat: <bos> first, then targets[:, :-1].",
    ),
    Mistake(
        "rolled across rows",
        lambda t, b: _shift_variant(t, b, how="rolled rows"),
        "torch.roll(targets, 1, dims=0) moves whole rows (each sequence takes the tokens of the one above it), "
        "not positions: roll along dims=1, the positions, then write bos_id into position 0; or build the result "
        "with torch.cat: <bos> first, then targets[:, :-1].",
    ),
    Mistake(
        "first token overwritten",
        lambda t, b: _shift_variant(t, b, how="overwrite"),
        "bos_id overwrites the first target token, and nothing moves: every other position then sees the token "
        "it must predict. Insert <bos> in front and drop the *last* position.",
    ),
    Mistake(
        "last position kept",
        lambda t, b: _shift_variant(t, b, how="longer"),
        "the result is one position longer than the targets: <bos> goes in front, and the last position must go, "
        "so that the decoder's input and the targets have the same length n.",
    ),
    Mistake(
        "no <bos>",
        lambda t, b: _shift_variant(t, b, how="no bos"),
        "position 0 holds 0 (<pad>) instead of bos_id: the decoder's first input is the begin-of-sequence token.",
    ),
    Mistake(
        "bos hard-coded",
        lambda t, b: _shift_variant(t, b, how="bos 1"),
        "position 0 holds 1 whatever bos_id is: use the bos_id argument.",
    ),
    Mistake(
        "result equals the targets",
        lambda t, b: _shift_variant(t, b, how="identity"),
        "the result equals the targets: each position would see the token it must predict. After putting "
        "<bos> in front, drop the *last* position, not the first.",
    ),
    Mistake(
        "<eos> replaced by <pad>",
        lambda t, b: _shift_variant(t, b, how="no eos"),
        "`<eos>` replaced by `<pad>` (0): the shift moves every token as it is. Only the last position is "
        "dropped; the <eos> of a shorter sequence stays in the input.",
    ),
]


_SHIFT_HINTS = register_hints(
    "09.1",
    "teacher forcing (§3.1): position i of the decoder's input must hold target token i - 1, so that the "
    "prediction at position i, which sees positions <= i only, is a prediction of target token i. What goes "
    "into position 0, and which target position no longer fits? The shift runs along the positions axis of "
    "every row, never across rows. To see a difference, print your input above the targets for one row: read "
    "diagonally, each target token must reappear one position to its right, behind bos_id.",
    "join two pieces along the positions, torch.cat(..., dim=1): a (B, 1) column of bos_id with the targets' "
    "dtype (torch.full_like), and the targets with one position dropped (which one, the first or the last?).",
    "bos = torch.full_like(targets[:, :1], bos_id)  # (B, 1), the targets' dtype\n"
    "return torch.cat([bos, targets[:, :-1]], dim=1)  # (B, n): <bos>, then targets 0 .. n - 2",
)


@counts_attempts
def check_shift_right(shift_right: Callable) -> Verdict:
    """Exercise 09.1: ``shift_right(targets (B, n), bos_id) -> decoder input (B, n)`` (§3.1, teacher forcing).

    The result must have the targets' dtype, and the targets must come back unchanged."""
    return run_checks(
        "Exercise 09.1 shift right",
        shift_right,
        reference=transformer.shift_right,
        cases=shift_cases(),
        mistakes=SHIFT_MISTAKES,
        hints=_SHIFT_HINTS,
        input_names=("targets", "bos_id"),
        in_place_why="the loss would then compare predictions with shifted tokens. Build a new tensor (e.g. torch.cat).",
        exact_dtype=True,
        dtype_name="targets",
    )


def decoder_block_variant(
    x,
    memory,
    self_mask,
    memory_mask,
    sa,
    ca,
    f,
    n1,
    n2,
    n3,
    *,
    order="self",
    stale=False,
    masks=(True, True),
    norms=(0, 1, 2),
    pre=False,
    residual=True,
    inverted=(False, False),
    last_norm=True,
    transposed=False,
    skip=(),
):
    """The post-norm decoder layer (§3.1), or one classic mistake of it.

    ``residual``: True (LayerNorm(x + Sublayer(x))), False (none), "after" (LayerNorm(Sublayer(x)) + x) or
    "input" (every residual taken from the block's input); ``inverted``: masks in PyTorch's True = ignore;
    ``transposed``: the causal mask's transpose (the future visible, the past hidden); ``skip``: the sub-layers
    (0, 1, 2: self, cross, feed-forward) whose residual alone is missing."""
    norm = [(n1, n2, n3)[i] for i in norms]
    self_mask = self_mask.transpose(-2, -1) if transposed else self_mask
    s_mask = (~self_mask if inverted[0] else self_mask) if masks[0] else None
    m_mask = (~memory_mask if inverted[1] else memory_mask) if masks[1] else None
    first = x

    def self_sub(y):
        return sa(y, s_mask)

    def cross_sub(y):
        return ca(first if stale else y, memory, m_mask)

    subs = [self_sub, cross_sub] if order == "self" else [cross_sub, self_sub]
    for i, sub in enumerate([*subs, f]):
        if pre:
            x = x + sub(norm[i](x))
        elif i == 2 and not last_norm:
            x = x + sub(x)
        elif residual == "after":
            x = norm[i](sub(x)) + x
        elif residual == "input":
            x = norm[i](first + sub(x))
        else:
            x = norm[i](x + sub(x) if residual and i not in skip else sub(x))
    return x


class _CrossAttention(nn.Module):
    """``cross_attention(queries, keys_and_values, mask)``: the block's cross-attention, its output only."""

    def __init__(self, attention: MultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, queries, keys_and_values, mask=None):
        return self.attention(queries, keys_and_values, keys_and_values, mask)[0]


def _shape_text(*dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def _decoder_block() -> DecoderBlock:
    """The checker's ``DecoderBlock(16, 4, 32)`` in ``eval()`` mode, its three LayerNorms given distinct random gains
    and biases (so that swapping two shows)."""
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(14)
        block = DecoderBlock(16, 4, 32).eval()
        with torch.no_grad():
            for norm in (block.norm1, block.norm2, block.norm3):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.5)
    return block


def decoder_cases(block: DecoderBlock | None = None) -> list[Case]:
    """Two cases, each with the parts of ``block`` (by default :func:`_decoder_block`)."""
    block = _decoder_block() if block is None else block
    parts = (SelfAttention(block.self_attn), _CrossAttention(block.cross_attn), block.feed_forward)
    parts = (*parts, block.norm1, block.norm2, block.norm3)
    g = seeded_generator(15)
    cases = []
    for B, n, m, lengths in ((2, 5, 7, [7, 4]), (3, 6, 4, [4, 1, 3])):
        queries_from_memory = ErrorHint(
            "queries from memory",
            lambda e, B=B, n=n, m=m: (
                f"attention scores of shape {_shape_text(B, m, n)}" in str(e)
                or f"mask of shape {_shape_text(n, n)} does not broadcast to the attention scores of shape "
                f"{_shape_text(B, m, n)}"
                in str(e)
            ),
            "the cross-attention takes its queries from the memory and its keys from x: cross_attention(queries, "
            "keys_and_values, mask) needs the decoder's x as queries and the encoder's memory as keys and values "
            "(§3.2.3), so the weights are (n target positions) x (m source tokens).",
        )
        masks_swapped = ErrorHint(
            "masks swapped or keys from x",
            lambda e, B=B, n=n, m=m: (
                f"mask of shape {_shape_text(B, 1, m)} does not broadcast to the attention "
                f"scores of shape {_shape_text(B, n, n)}"
                in str(e)
                or f"mask of shape {_shape_text(n, n)} does not broadcast to the attention scores of shape "
                f"{_shape_text(B, n, m)}"
                in str(e)
            ),
            "a mask met the wrong attention: the causal self_mask (n x n) belongs to the self-attention, the source "
            "memory_mask (B, 1, m) to the cross-attention. (The same error appears when the cross-attention reads "
            "its keys and values from x instead of memory.)",
        )
        cases.append(
            Case(
                f"B={B}, n={n} target positions, m={m} source positions, causal and padding masks",
                (
                    torch.randn(B, n, 16, generator=g),
                    torch.randn(B, m, 16, generator=g),
                    causal_mask(n),
                    padding_mask(lengths, m),
                    *parts,
                ),
                error_hints=(queries_from_memory, masks_swapped),
            )
        )
    return cases


_SUB_LAYERS = ("self-attention", "cross-attention", "feed-forward network")


def _norms_diagnosis(norms: tuple[int, ...]) -> str:
    """The words for a decoder block whose sub-layer i is normalised by norm ``norms[i] + 1``."""
    wrong = [f"norm{j + 1} after the {_SUB_LAYERS[i]}" for i, j in enumerate(norms) if j != i]
    twice = [f"norm{j + 1}" for j in sorted(set(norms)) if norms.count(j) > 1]
    used = f" ({join_and(twice)} used more than once: each has its own gain and bias)" if twice else ""
    return (
        f"the LayerNorms are mixed up: yours has {join_and(wrong)}{used}. norm1 goes with the self-attention, norm2 "
        "with the cross-attention, norm3 with the feed-forward network."
    )


DECODER_MISTAKES = [
    Mistake(
        "cross-attention first",
        lambda *a: decoder_block_variant(*a, order="cross"),
        "the cross-attention comes before the self-attention: §3.1 inserts the third sub-layer between the "
        "masked self-attention and the feed-forward network (self, cross, FFN, with norm1, norm2, norm3).",
    ),
    Mistake(
        "pre-norm",
        lambda *a: decoder_block_variant(*a, pre=True),
        "this is the pre-norm block, x + Sublayer(LayerNorm(x)); the paper's decoder is post-norm, "
        "LayerNorm(x + Sublayer(x)) (§3.1).",
    ),
    Mistake(
        "causal mask ignored",
        lambda *a: decoder_block_variant(*a, masks=(False, True)),
        "self_mask is not passed to the self-attention, so every target position sees the tokens after it: "
        "self_attention(x, self_mask).",
    ),
    Mistake(
        "memory mask ignored",
        lambda *a: decoder_block_variant(*a, masks=(True, False)),
        "memory_mask is not passed to the cross-attention, so padded source tokens receive attention: "
        "cross_attention(x, memory, memory_mask).",
    ),
    Mistake(
        "both masks ignored",
        lambda *a: decoder_block_variant(*a, masks=(False, False)),
        "neither mask is passed on: every target position sees the tokens after it, and padded source tokens "
        "receive attention. self_attention(x, self_mask), then cross_attention(x, memory, memory_mask).",
    ),
    Mistake(
        "causal mask transposed",
        lambda *a: decoder_block_variant(*a, transposed=True),
        "the causal mask is transposed (self_mask.T, or triu in place of tril): each target position sees the "
        "positions after it and none before. Pass self_mask as it is: row i, a query, may attend to the keys "
        "j <= i, the lower triangle.",
    ),
    Mistake(
        "cross-attention reads the block's input",
        lambda *a: decoder_block_variant(*a, stale=True),
        "the cross-attention's queries are the block's input x, not the output of the first sub-layer: each "
        "sub-layer reads the (normalised) result of the one before it.",
    ),
    Mistake(
        "no residual",
        lambda *a: decoder_block_variant(*a, residual=False),
        "the residual connections are missing: each sub-layer's input must be added back before the norm, "
        "LayerNorm(x + Sublayer(x)).",
    ),
    Mistake(
        "no residual around the feed-forward",
        lambda *a: decoder_block_variant(*a, skip=(2,)),
        "the feed-forward sub-layer has no residual: its input must be added back before the last norm, "
        "LayerNorm(z + FFN(z)), as for the two attention sub-layers (§3.1: every sub-layer has one).",
    ),
    Mistake(
        "no residual around the cross-attention",
        lambda *a: decoder_block_variant(*a, skip=(1,)),
        "the cross-attention sub-layer has no residual: its input must be added back before the second norm, "
        "LayerNorm(z + CrossAttention(z, memory)) (§3.1: every sub-layer has one).",
    ),
    *(
        Mistake(
            "masks inverted",
            lambda *a, inverted=inverted: decoder_block_variant(*a, inverted=inverted),
            "the masks are inverted: the series' masks mean True = may attend; `~mask` is PyTorch's convention "
            "(section 4). Pass self_mask and memory_mask as they are.",
        )
        for inverted in ((True, True), (True, False), (False, True))
    ),
    Mistake(
        "no norm3",
        lambda *a: decoder_block_variant(*a, last_norm=False),
        "the feed-forward sub-layer needs its Add & Norm too: norm3(x + feed_forward(x)).",
    ),
    Mistake(
        "residual added after the norm",
        lambda *a: decoder_block_variant(*a, residual="after"),
        "the residual is added after the norm, LayerNorm(Sublayer(x)) + x; the paper's post-norm block adds "
        "first and normalises the sum, LayerNorm(x + Sublayer(x)) (§3.1).",
    ),
    Mistake(
        "residuals from the block's input",
        lambda *a: decoder_block_variant(*a, residual="input"),
        "every residual adds the block's input x; each sub-layer must add back its own input, the output of "
        "the sub-layer before it: x = norm1(x + ...), then x = norm2(x + ...) with the new x, and so on.",
    ),
    *(  # every other assignment of the three norms to the three sub-layers, a norm used twice included
        Mistake(
            "norms swapped", lambda *a, norms=norms: decoder_block_variant(*a, norms=norms), _norms_diagnosis(norms)
        )
        for norms in itertools.product(range(3), repeat=3)
        if norms != (0, 1, 2)
    ),
]


_DECODER_HINTS = register_hints(
    "09.2",
    "§3.1 and Figure 1: the decoder layer is the encoder layer of 06.1 with a third sub-layer in the middle, "
    "each of the three wrapped as LayerNorm(x + Sublayer(x)). Ask of each sub-layer which tensor gives its "
    "queries and which its keys and values, which mask belongs to it (the causal one hides later target "
    "positions, the padding one the padded source tokens), and which norm closes it. Each sub-layer reads the "
    "result of the one before. To see a difference, hand your function the parts of a DecoderBlock in eval() "
    "mode (section 4 builds one) and print, position by position, the largest difference from the block's own "
    "output: a difference only at the padded source's sentence points at the cross-attention's mask.",
    "the post-norm encoder block of 06.1 with a third line between its two: self_attention(x, self_mask) with "
    "norm1; cross_attention(queries, keys_and_values, memory_mask), the queries from the decoder's x and the keys "
    "and values from memory, with norm2; feed_forward with norm3. Each line reads the x of the line before.",
    "x = norm1(x + self_attention(x, self_mask))\n"
    "x = norm2(x + cross_attention(x, memory, memory_mask))\n"
    "return norm3(x + feed_forward(x))",
)


@counts_attempts
def check_decoder_block(decoder_block: Callable) -> Verdict:
    """Exercise 09.2: the paper's post-norm decoder layer (§3.1) from its parts.

    ``decoder_block(x, memory, self_mask, memory_mask, self_attention, cross_attention, feed_forward, norm1, norm2,
    norm3) -> (B, n, d_model)`` with ``self_attention(x, mask)`` and ``cross_attention(queries, keys_and_values,
    mask)`` returning multi-head attention's output (from a ``DecoderBlock`` in ``eval()`` mode).
    """
    block = _decoder_block()

    def reference(x, memory, self_mask, src_mask, *_parts):  # the helper itself; the cases hand out its parts
        return block(x, memory, self_mask, src_mask)[0]

    with torch.no_grad():
        return run_checks(
            "Exercise 09.2 decoder block",
            decoder_block,
            reference=reference,
            cases=decoder_cases(block),
            mistakes=DECODER_MISTAKES,
            hints=_DECODER_HINTS,
            input_names=(
                "x",
                "memory",
                "self_mask",
                "memory_mask",
                "self_attention",
                "cross_attention",
                "feed_forward",
                "norm1",
                "norm2",
                "norm3",
            ),
        )
