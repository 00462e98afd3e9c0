"""Mutation check: do the unit tests notice small, plausible bugs in `helpers`?

A maintainer tool, not run by `pytest`. From the repository root, in the activated environment:

    python -m course.qa.mutate               # every mutant (several minutes on 2 cores)
    python -m course.qa.mutate A03 E08       # only these mutants
    python -m course.qa.mutate --list        # list the mutants, run nothing
    python -m course.qa.mutate T02 -k reverse_targets_itself   # does this one test catch T02?

Each mutant is a one-line edit of `helpers/attention.py`, `encoder.py`, `masks.py`, `reference.py`,
`tasks.py`, `efficient.py`, `decoder.py`, `transformer.py`, `decoding.py`, `training.py`, `explorer.py` or
`exercises/_core.py`, `nb09.py`, `nb10.py`, `nb11.py` (a wrong softmax axis, a flipped mask, a dropped residual, a
running sum not rescaled, a cache reordered wrongly, a misspelt word, a checker that compares an answer with itself, ...). The script copies
`helpers/`, `tests/`, `notebooks/data/` (the saved model a test decodes), `conftest.py` and `pyproject.toml` into
a temporary folder once, then for each mutant writes
the edited module into that copy, runs only the unit tests of the edited module there
(`pytest -x -q`, one thread, a fixed Hypothesis seed, `PYTHONPATH` pointing at the copy so that
`import helpers` finds the mutant and not the editable install), and restores the module. The
working tree is never written to, so other processes importing `helpers` meanwhile are unaffected.

A mutant is *caught* when the tests fail (or error, or time out) and *survives* when they pass. The
script first checks that the unedited copy passes and that each mutant's text occurs exactly once
in its module (so an edit that no longer applies is reported, not silently skipped). Mutants marked
`equivalent` change nothing observable (the reason is given); they are run and reported but left
out of the score. The exit status is 1 when the caught share is below `--threshold` (default 0.95).

Which tests run for which module (the module's own unit tests, plus the file that exercises it
most directly where it has no test file of its own):
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = {
    "attention.py": ["tests/helpers/test_attention.py", "tests/helpers/test_efficient.py"],
    "masks.py": [
        "tests/helpers/test_masks_plotting.py",
        "tests/helpers/test_attention.py",
        "tests/helpers/test_efficient.py",
    ],
    "encoder.py": ["tests/helpers/test_encoder.py", "tests/helpers/test_efficient.py"],
    "reference.py": ["tests/helpers/test_attention.py", "tests/helpers/test_encoder.py"],
    "tasks.py": ["tests/helpers/test_tasks.py"],
    "efficient.py": ["tests/helpers/test_efficient.py"],
    "decoder.py": [
        "tests/helpers/test_decoder.py",
        "tests/helpers/test_efficient.py",
        "tests/helpers/test_gqa_decoder_only.py",
    ],
    "transformer.py": [
        "tests/helpers/test_transformer.py",
        "tests/helpers/test_efficient.py",
        "tests/helpers/test_gqa_decoder_only.py",
    ],
    "decoding.py": ["tests/helpers/test_decoding.py", "tests/helpers/test_efficient.py"],
    "training.py": ["tests/helpers/test_training.py"],
    "explorer.py": ["tests/course/explorer/test_explorer.py"],
    "explorer.js": ["tests/course/explorer/test_explorer.py"],
    "pretrained.py": ["tests/helpers/test_pretrained.py"],
    "modern.py": ["tests/helpers/test_modern.py"],
    "exercises/_core.py": [
        "tests/course/exercises/test_engine.py",
        "tests/course/exercises/test_nb01.py",
        "tests/course/exercises/test_nb02.py",
        "tests/course/exercises/test_nb03.py",
        "tests/course/exercises/test_nb10.py",
        "tests/course/exercises/test_nb11.py",
    ],
    "exercises/nb09.py": [
        "tests/course/exercises/test_nb09.py",
        "tests/course/exercises/test_engine.py",
    ],
    "exercises/nb10.py": [
        "tests/course/exercises/test_nb10.py",
        "tests/course/exercises/test_engine.py",
        "tests/helpers/test_decoding.py",
        "tests/helpers/test_training.py",
    ],
    "exercises/nb11.py": [
        "tests/course/exercises/test_nb11.py",
        "tests/course/exercises/test_engine.py",
    ],
}
__doc__ += "".join(f"\n    helpers/{module:<18} {' '.join(tests)}" for module, tests in TESTS.items()) + "\n"


@dataclass(frozen=True)
class Mutant:
    id: str
    module: str
    old: str
    new: str
    what: str
    equivalent: str = ""  # why the edit cannot change behaviour, if it cannot
    from_review: bool = False  # an edit of a review (§9 of the first; N01-N45: turn 3's), kept as regression checks


M = Mutant
MUTANTS = [
    # --- helpers/attention.py ---------------------------------------------------------------
    M(
        "A01",
        "attention.py",
        "torch.softmax(scores, dim=-1)  #",
        "torch.softmax(scores, dim=-2)  #",
        "softmax over the queries (no mask)",
    ),
    M(
        "A02",
        "attention.py",
        "torch.softmax(scores, dim=-1).masked_fill",
        "torch.softmax(scores, dim=-2).masked_fill",
        "softmax over the queries (with a mask)",
    ),
    M("A03", "attention.py", "/ math.sqrt(d_k)  #", "/ d_k  #", "scores divided by d_k, not sqrt(d_k)"),
    M("A04", "attention.py", "d_k = query.shape[-1]\n", "d_k = query.shape[-2]\n", "d_k read from the positions axis"),
    M(
        "A05",
        "attention.py",
        "scores.masked_fill(~mask, torch.finfo",
        "scores.masked_fill(mask, torch.finfo",
        "mask meaning flipped (True = ignore)",
    ),
    M(
        "A06",
        "attention.py",
        "torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)",
        "torch.softmax(scores, dim=-1)",
        "fully masked rows not zeroed (uniform weights)",
    ),
    M("A07", "attention.py", "torch.finfo(scores.dtype).min)", 'float("-inf"))', "fill with -inf (NaN rows)"),
    M("A08", "attention.py", "torch.finfo(scores.dtype).min)", "-1e9)", "fill with -1e9", from_review=True),
    M(
        "A09",
        "attention.py",
        "attn_mask=mask, dropout_p=dropout_p)",
        "attn_mask=mask, dropout_p=dropout_p, scale=self.d_model**-0.5)",
        "fused path scaled by sqrt(d_model) instead of sqrt(d_k)",
    ),
    M(
        "A10",
        "attention.py",
        "if query is key and key is value:",
        "if query is key:",
        "self-attention shortcut when only query is key",
        from_review=True,
    ),
    M(
        "A11",
        "attention.py",
        "q, k, v = F.linear(query, weight, bias).split([h * d_k, h_kv * d_k, h_kv * d_v], dim=-1)",
        "q, v, k = F.linear(query, weight, bias).split([h * d_k, h_kv * d_k, h_kv * d_v], dim=-1)",
        "stacked projection split in the wrong order",
    ),
    M(
        "A12",
        "attention.py",
        "torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])",
        "torch.cat([self.w_q.bias, self.w_v.bias, self.w_k.bias])",
        "stacked biases in the wrong order",
    ),
    M(
        "A13",
        "attention.py",
        "self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=bias)",
        "self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=True)",
        "bias=False ignored for W^K",
    ),
    M(
        "A14",
        "attention.py",
        "dropout_p = self.dropout if self.training else 0.0",
        "dropout_p = self.dropout",
        "attention dropout also in eval mode",
    ),
    M(
        "A15",
        "attention.py",
        "return x.view(B, n, num_heads, d_model // num_heads).transpose(1, 2)",
        "return x.view(B, num_heads, n, d_model // num_heads)",
        "heads split without the transpose",
    ),
    M(
        "A16",
        "attention.py",
        "return x.transpose(1, 2).reshape(B, n, h * d_k)",
        "return x.reshape(B, n, h * d_k)",
        "heads concatenated in the wrong order (no transpose back)",
    ),
    M(
        "A17",
        "attention.py",
        "mask = mask.unsqueeze(-3)",
        "mask = mask.unsqueeze(-2)",
        "mask given a head axis in the wrong place",
    ),
    M(
        "A18",
        "attention.py",
        "mask = mask | empty_rows",
        "mask = mask",
        "fused path's guard for empty rows removed",
        from_review=True,
    ),
    M(
        "A19",
        "attention.py",
        "empty_rows = ~mask.any(dim=-1, keepdim=True)",
        "empty_rows = ~mask.all(dim=-1, keepdim=True)",
        "empty rows detected with all() instead of any()",
    ),
    M(
        "A20",
        "attention.py",
        "heads = heads.masked_fill(empty_rows, 0.0)",
        "heads = heads",
        "fused path leaves empty rows attending everywhere",
    ),
    M(
        "A21",
        "attention.py",
        "weights = F.dropout(weights, dropout_p)\n                heads = weights @ v",
        "heads = F.dropout(weights, dropout_p) @ v",
        "pre-dropout weights returned in training (the old behaviour)",
    ),
    M(
        "A22",
        "attention.py",
        "v = split_heads(self.w_v(value), self.num_kv_heads)",
        "v = split_heads(self.w_k(value), self.num_kv_heads)",
        "values projected with W^K",
    ),
    M("A23", "attention.py", "v = split_heads(v, h_kv)", "v = split_heads(k, h_kv)", "keys used as values"),
    M(
        "A24",
        "attention.py",
        "return self.w_o(concat), weights",
        "return concat, weights",
        "output projection W^O skipped",
    ),
    M(
        "A25",
        "attention.py",
        "if key.shape[-2] != value.shape[-2]:",
        "if key.shape[-1] != value.shape[-1]:",
        "key/value check on the feature axis instead of positions",
    ),
    M(
        "A26",
        "attention.py",
        "check_mask(mask, (B, self.num_heads, n, m))\n        else:\n            check_mask(mask, (B, n, m))\n\n    def forward",
        "check_mask(mask, (B, 1, n, m))\n        else:\n            check_mask(mask, (B, n, m))\n\n    def forward",
        "per-head masks rejected",
    ),
    M(
        "A27",
        "attention.py",
        "query @ key.transpose(-2, -1)",
        "query @ key.transpose(-2, -1).flip(-1)",
        "keys taken in reverse order in the scores",
    ),
    # --- helpers/masks.py -------------------------------------------------------------------
    M("K01", "masks.py", ".tril(diagonal=past)", ".triu(diagonal=past)", "causal mask of the future"),
    M("K02", "masks.py", ".tril(diagonal=past)", ".tril(diagonal=past - 1)", "causal mask without the diagonal"),
    M("K03", "masks.py", ".tril(diagonal=past)", ".tril(diagonal=past + 1)", "causal mask showing one future key"),
    M("K04", "masks.py", "positions < lengths[:, None]", "positions <= lengths[:, None]", "padding mask < vs <="),
    M("K05", "masks.py", ".unsqueeze(1)  #", ".unsqueeze(-1)  #", "padding mask over queries instead of keys"),
    M(
        "K06",
        "masks.py",
        "max_len = int(lengths.max())\n",
        "max_len = int(lengths.max()) + 1\n",
        "default max_len one too long",
    ),
    M("K07", "masks.py", "int(lengths.min()) < 0", "int(lengths.min()) < 1", "length 0 rejected"),
    M(
        "K08",
        "masks.py",
        "if int(lengths.min()) < 0 or int(lengths.max()) > max_len:",
        "if int(lengths.min()) < 0:",
        "lengths above max_len accepted",
    ),
    # --- helpers/encoder.py -----------------------------------------------------------------
    M(
        "E01",
        "encoder.py",
        "pe[:, 0::2] = torch.sin(angle)",
        "pe[:, 0::2] = torch.cos(angle)",
        "cos in the even dimensions",
    ),
    M(
        "E02",
        "encoder.py",
        "pe[:, 1::2] = torch.cos(angle)",
        "pe[:, 1::2] = torch.sin(angle)",
        "sin in the odd dimensions",
    ),
    M(
        "E03",
        "encoder.py",
        "angle = position / 10000.0 **",
        "angle = position / 1000.0 **",
        "base 1000 instead of 10000",
    ),
    M(
        "E04",
        "encoder.py",
        "torch.arange(0, d_model, 2, dtype=torch.float64)",
        "torch.arange(0, d_model // 2, dtype=torch.float64)",
        "exponent i / d_model instead of 2i / d_model",
    ),
    M(
        "E05",
        "encoder.py",
        "angle = position / 10000.0 **",
        "angle = position * 10000.0 **",
        "frequency multiplied, not divided",
    ),
    M(
        "E06",
        "encoder.py",
        "x + self.pe[start : start + n])",
        "x + self.pe[start + 1 : start + n + 1])",
        "positions start at 1",
    ),
    M(
        "E07",
        "encoder.py",
        "return self.dropout(x + self.pe[start : start + n])",
        "return x + self.pe[start : start + n]",
        "positional-encoding dropout dropped",
    ),
    M(
        "E08",
        "encoder.py",
        'ACTIVATIONS = {"relu": torch.relu,',
        'ACTIVATIONS = {"relu": F.gelu,',
        "GELU instead of ReLU",
    ),
    M(
        "E09",
        "encoder.py",
        "return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))",
        "return self.dropout(self.linear2(ACTIVATIONS[self.activation](self.linear1(x))))",
        "feed-forward dropout after linear2",
        from_review=True,
    ),
    M(
        "E10",
        "encoder.py",
        "return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))",
        "return self.linear2(ACTIVATIONS[self.activation](self.dropout(self.linear1(x))))",
        "feed-forward dropout before the ReLU",
        equivalent="relu(dropout(z)) == dropout(relu(z)): dropout zeroes or scales by 1/(1-p) > 0, and the mask "
        "is drawn on a tensor of the same shape in the same order",
    ),
    M(
        "E11",
        "encoder.py",
        "d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads",
        "d_model, num_heads, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads",
        "attention dropout not passed to the block's attention",
    ),
    M(
        "E12",
        "encoder.py",
        "x = self.norm1(x + attended)",
        "x = self.norm1(attended)",
        "post-norm attention residual dropped",
    ),
    M(
        "E13",
        "encoder.py",
        "x = self.norm2(x + self.dropout2(self.feed_forward(x)))",
        "x = self.norm2(self.dropout2(self.feed_forward(x)))",
        "post-norm feed-forward residual dropped",
    ),
    M(
        "E14",
        "encoder.py",
        "x = self.norm1(x + attended)",
        "x = self.norm2(x + attended)",
        "post-norm norm1/norm2 swapped",
        from_review=True,
    ),
    M(
        "E15",
        "encoder.py",
        "self.feed_forward(self.norm2(x))",
        "self.feed_forward(self.norm1(x))",
        "pre-norm uses norm1 twice",
    ),
    M("E16", "encoder.py", "x = x + attended", "x = attended", "pre-norm attention residual dropped"),
    M("E17", "encoder.py", "if self.norm_first:", "if not self.norm_first:", "norm_first inverted"),
    M(
        "E18",
        "encoder.py",
        "return self.dropout1(out), weights",
        "return out, weights",
        "residual dropout after attention dropped",
    ),
    M(
        "E19",
        "encoder.py",
        "x = x + self.dropout2(self.feed_forward(self.norm2(x)))",
        "x = x + self.feed_forward(self.norm2(x))",
        "pre-norm residual dropout after the feed-forward dropped",
    ),
    M(
        "E20",
        "encoder.py",
        "nn.LayerNorm(d_model, eps=eps) if norm_first else None",
        "nn.LayerNorm(d_model, eps=eps) if not norm_first else None",
        "final LayerNorm on the wrong variant",
    ),
    M(
        "E21",
        "encoder.py",
        "x, weights = layer(x, mask, need_weights=need_weights)",
        "x, weights = layer(x, None, need_weights=need_weights)",
        "mask not passed down the stack",
    ),
    M(
        "E22",
        "encoder.py",
        "norm_first=norm_first,\n                d_k=d_k,",
        "d_k=d_k,",
        "norm_first not passed to the stack's blocks",
    ),
    M(
        "E23",
        "encoder.py",
        "self._attend(self.norm1(x), mask, need_weights)",
        "self._attend(x, mask, need_weights)",
        "pre-norm attends to the un-normalised input",
    ),
    M(
        "E24",
        "encoder.py",
        "mask=mask, need_weights=need_weights)",
        "mask=mask, need_weights=True)",
        "need_weights ignored in the block",
    ),
    M("E25", "encoder.py", "x = self.norm(x)", "x = x", "final pre-norm LayerNorm not applied"),
    M(
        "E26",
        "encoder.py",
        "angle = position / 10000.0 ** (two_i / d_model)",
        "angle = position / 10000.0 ** (two_i / (d_model - 1))",
        "exponent divided by d_model - 1",
    ),
    # --- helpers/reference.py ---------------------------------------------------------------
    M(
        "R01",
        "reference.py",
        "return ref.train(mha.training)",
        "return ref",
        "attention copy always in training mode",
        from_review=True,
    ),
    M(
        "R02",
        "reference.py",
        "ref.norm2.load_state_dict(block.norm2.state_dict())\n    return ref.train(block.training)",
        "ref.norm2.load_state_dict(block.norm2.state_dict())\n    return ref",
        "encoder-layer copy always in training mode",
    ),
    M(
        "R03",
        "reference.py",
        "torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight])",
        "torch.cat([ours.w_k.weight, ours.w_q.weight, ours.w_v.weight])",
        "W^Q and W^K stacked in the wrong order",
    ),
    M("R04", "reference.py", "ref.out_proj.bias.copy_(ours.w_o.bias)", "pass", "output bias not copied"),
    M(
        "R05",
        "reference.py",
        "ref.norm2.load_state_dict(block.norm2.state_dict())",
        "ref.norm2.load_state_dict(block.norm1.state_dict())",
        "norm2 copied from norm1",
    ),
    M("R06", "reference.py", "dropout=attn.dropout,", "dropout=0.0,", "dropout not copied to the encoder layer"),
    M("R07", "reference.py", "bias=mha.w_q.bias is not None", "bias=True", "reference always has biases"),
    M(
        "R08",
        "reference.py",
        "norm_first=block.norm_first,\n    )\n    _copy_attention(attn",
        "norm_first=False,\n    )\n    _copy_attention(attn",
        "norm_first not copied",
    ),
    M(
        "R09",
        "reference.py",
        "torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias])",
        "torch.cat([ours.w_q.bias, ours.w_v.bias, ours.w_k.bias])",
        "stacked biases copied in the wrong order",
    ),
    # --- helpers/tasks.py -------------------------------------------------------------------
    M("T01", "tasks.py", "(lengths[:, None] - 1 - positions)", "(lengths[:, None] - positions)", "reverse off by one"),
    M(
        "T02",
        "tasks.py",
        "positions >= lengths[:, None], PAD_ID",
        "positions > lengths[:, None], PAD_ID",
        "reverse_targets leaves the first padded position unfilled",
    ),
    M(
        "T03",
        "tasks.py",
        "tokens.masked_fill(~real, vocab_size).sort",
        "tokens.masked_fill(~real, PAD_ID).sort",
        "sort puts padding first",
    ),
    M(
        "T04",
        "tasks.py",
        "torch.randint(min_len, seq_len + 1,",
        "torch.randint(min_len, seq_len,",
        "lengths never reach seq_len",
    ),
    M(
        "T05",
        "tasks.py",
        "torch.randint(1, vocab_size, (batch_size, seq_len)",
        "torch.randint(0, vocab_size, (batch_size, seq_len)",
        "PAD drawn as a real token",
    ),
    M(
        "T06",
        "tasks.py",
        "targets = targets.masked_fill(~real, PAD_ID)",
        "targets = targets",
        "padded targets not set to PAD",
    ),
    M(
        "T07",
        "tasks.py",
        "self.embedding(tokens) * math.sqrt(self.d_model)",
        "self.embedding(tokens)",
        "embedding not scaled by sqrt(d_model)",
        from_review=True,
    ),
    M(
        "T08",
        "tasks.py",
        "self.embedding(tokens) * math.sqrt(self.d_model)",
        "self.embedding(tokens) * self.d_model",
        "embedding scaled by d_model",
    ),
    M("T09", "tasks.py", "std=d_model**-0.5", "std=d_model**0.5", "embedding initialised far too large"),
    M("T10", "tasks.py", "if use_positions else None", "if not use_positions else None", "use_positions inverted"),
    M(
        "T11",
        "tasks.py",
        "Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)",
        "Encoder(num_layers, d_model, num_heads, d_ff)",
        "norm_first not passed to the encoder",
    ),
    M(
        "T12",
        "tasks.py",
        "self.encoder(x, mask, need_weights=need_weights)",
        "self.encoder(x, None, need_weights=need_weights)",
        "mask not passed to the encoder",
    ),
    M("T13", "tasks.py", "tokens.max(dim=1, keepdim=True)", "tokens.max(dim=0, keepdim=True)", "max over the batch"),
    M(
        "T14",
        "tasks.py",
        "same.sum(dim=-1)",
        "same.sum(dim=-2)",
        "count summed over the other axis",
        equivalent="PAD never equals a real token, so the masked equality matrix is symmetric on real positions, "
        "and padded targets are overwritten with PAD",
    ),
    # --- issue 13: grouped-query attention, lower-right causal masks, positions from an offset ----------
    M(
        "A28",
        "attention.py",
        "k = k.repeat_interleave(h // h_kv, dim=1)  # (B, h_kv, m, d_k) -> (B, h, m, d_k)\n"
        "            v = v.repeat_interleave(h // h_kv, dim=1)",
        "k = k.repeat(1, h // h_kv, 1, 1)  # (B, h_kv, m, d_k) -> (B, h, m, d_k)\n"
        "            v = v.repeat(1, h // h_kv, 1, 1)",
        "GQA: kv heads tiled (repeat), not each repeated in place (repeat_interleave)",
    ),
    M("K09", "masks.py", ".tril(diagonal=past)", ".tril()", "causal mask with past aligned top-left"),
    M("E27", "encoder.py", "self.pe[start : start + n])  #", "self.pe[:n])  #", "positional encoding ignores start"),
    # --- helpers/efficient.py ---------------------------------------------------------------
    M(
        "F01",
        "efficient.py",
        "new_sum = running_sum * rescale + torch.exp(",
        "new_sum = running_sum + torch.exp(",
        "online softmax: old sum not rescaled to the new max",
    ),
    M(
        "F02",
        "efficient.py",
        "rescale = torch.exp(running_max - shift)  # exp(old_max - new_max)",
        "rescale = torch.exp(shift - running_max)  # exp(old_max - new_max)",
        "online softmax: rescaled by exp(new_max - old_max)",
    ),
    M(
        "F03",
        "efficient.py",
        "out = out * rescale + weights @",
        "out = out + weights @",
        "tiled attention: running output not rescaled",
    ),
    M(
        "F04",
        "efficient.py",
        "q = query * (1.0 / math.sqrt(query.shape[-1]))",
        "q = query",
        "tiled attention: scores not scaled by 1/sqrt(d_k)",
    ),
    M(
        "F05",
        "efficient.py",
        "stop = min(start + block_size, m)",
        "stop = min(start + block_size - 1, m)",
        "tiled attention: last key of every block skipped (off by one)",
    ),
    M(
        "F06",
        "efficient.py",
        "return running_max.masked_fill(running_max == -math.inf, 0.0)",
        "return running_max",
        "no safe shift: -inf - (-inf) = NaN on fully masked rows",
    ),
    M(
        "F07",
        "efficient.py",
        "torch.arange(start, stop, device=q.device) > rows",
        "torch.arange(start, stop, device=q.device) >= rows",
        "tiled attention: is_causal hides the diagonal",
    ),
    M("F08", "efficient.py", "current -= size", "pass", "peak_memory: releases not subtracted (total, not peak)"),
    # --- the KV cache: helpers/decoder.py, transformer.py, decoding.py -----------------------------------
    M(
        "C01",
        "decoder.py",
        'k = torch.cat([cache["self_k"], k], dim=-2)',
        'k = torch.cat([k, cache["self_k"]], dim=-2)',
        "cache: new keys put before the cached ones (the values after)",
    ),
    M(
        "C02",
        "decoder.py",
        'cache["cross_k"], cache["cross_v"] = self.cross_attn.project_kv(memory, memory)',
        'cache["cross_k"], cache["cross_v"] = self.self_attn.project_kv(memory, memory)',
        "cache: encoder keys projected with the self-attention's weights",
    ),
    M(
        "C03",
        "decoder.py",
        "entry[name] = t.index_select(0, index.to(t.device))",
        "entry[name] = t[: len(index)]",
        "cache: reorder keeps the first rows instead of the given ones",
    ),
    M(
        "C04",
        "transformer.py",
        "self.embed(tgt, self.tgt_embedding, start=past)",
        "self.embed(tgt, self.tgt_embedding, start=0)",
        "cache: new positions embedded from position 0",
    ),
    M(
        "C05",
        "transformer.py",
        "else causal_mask(n, past=past, device=tgt.device)",
        "else causal_mask(past + n, device=tgt.device)[:n]",
        "cache: causal mask of several new positions aligned top-left",
    ),
    M(
        "C06",
        "decoding.py",
        "model.decode(tgt[:, -1:], memory, src_mask, cache=cache)",
        "model.decode(tgt[:, :1], memory, src_mask, cache=cache)",
        "cache: <bos> fed at every step instead of the newest token",
    ),
    M(
        "C07",
        "decoding.py",
        "parents.append(row + h)",
        "parents.append(h)",
        "beam search: parent row counted within the sentence, not the batch",
    ),
    # --- turn 3's mutation review (reviews/turn3-mutation.md, N01-N45): notebooks 09-11's helpers ------------
    M(
        "N01",
        "decoder.py",
        "while len(self.layers) <= index:",
        "while len(self.layers) < index:",
        "KVCache.layer: off by one, layer i's dict not created",
        from_review=True,
    ),
    M(
        "N02",
        "decoder.py",
        '["self_k"].shape[-2]',
        '["self_k"].shape[-1]',
        "KVCache.length reads the feature axis",
        from_review=True,
    ),
    M(
        "N03",
        "decoder.py",
        "t.numel() * t.element_size()",
        "t.numel()",
        "KVCache.nbytes counts elements, not bytes",
        from_review=True,
    ),
    M(
        "N04",
        "decoder.py",
        'v = torch.cat([cache["self_v"], v], dim=-2)',
        'v = torch.cat([cache["self_k"], v], dim=-2)',
        "cache: new values appended to the cached keys",
        from_review=True,
    ),
    M(
        "N05",
        "decoder.py",
        "self.self_attn.attend(x, k, v, mask=mask,",
        "self.self_attn.attend(x, k, v, mask=None,",
        "cached self-attention ignores the causal mask",
        from_review=True,
    ),
    M(
        "N06",
        "decoder.py",
        'cache["cross_k"], cache["cross_v"], mask=mask,',
        'cache["cross_k"], cache["cross_v"], mask=None,',
        "cached cross-attention drops the source padding mask",
        from_review=True,
    ),
    M(
        "N07",
        "decoder.py",
        "cache.layer(i)",
        "cache.layer(0)",
        "every decoder layer reads and extends layer 0's cache",
        from_review=True,
    ),
    M(
        "N08",
        "transformer.py",
        "torch.cat([bos, targets[:, :-1]], dim=1)",
        "torch.cat([bos, targets[:, 1:]], dim=1)",
        "shift_right drops the first target, not the last",
        from_review=True,
    ),
    M(
        "N09",
        "transformer.py",
        "self.encoder(self.embed(src, self.src_embedding),",
        "self.encoder(self.positional(self.src_embedding(src)),",
        "encode: sqrt(d_model) scale dropped on the source path only",
        from_review=True,
    ),
    M(
        "N10",
        "transformer.py",
        "self.projection.weight = self.src_embedding.weight",
        "self.projection.weight.data.copy_(self.src_embedding.weight)",
        "tied projection untied: a copy of the values, not the shared Parameter",
        from_review=True,
    ),
    M(
        "N11",
        "transformer.py",
        "for embedding in [self.src_embedding] + ([] if share_embeddings else [self.tgt_embedding]):",
        "for embedding in [self.src_embedding]:",
        "share_embeddings=False: target embedding keeps N(0, 1)",
        from_review=True,
    ),
    M(
        "N12",
        "transformer.py",
        "past = cache.length",
        "past = len(cache.layers)",
        "decode: positions already fed read as the number of cached layers",
        from_review=True,
    ),
    M(
        "N13",
        "transformer.py",
        "None if past > 0 and n == 1",
        "None if past > 0 or n == 1",
        "decode: a cached chunk of several positions gets no causal mask",
        from_review=True,
    ),
    M(
        "N14",
        "decoding.py",
        "((5 + length) / 6) ** alpha",
        "((5 + length) / 5) ** alpha",
        "GNMT length penalty: 6 replaced by 5",
        from_review=True,
    ),
    M(
        "N15",
        "decoding.py",
        "total / length_penalty(len(ids), alpha)",
        "total / length_penalty(len(ids) + 1, alpha)",
        "beam search: |Y| counts <bos> too",
        from_review=True,
    ),
    M(
        "N16",
        "decoding.py",
        "key=lambda i: (finished[b][i][2], -i)",
        "key=lambda i: (finished[b][i][1], -i)",
        "beam search: best finished picked by raw sum(log p)",
        from_review=True,
    ),
    M(
        "N17",
        "decoding.py",
        "k = min(beam_size - len(finished[b]), ",
        "k = min(beam_size, ",
        "beam search: finished hypotheses take no place in the beam",
        from_review=True,
    ),
    M(
        "N18",
        "decoding.py",
        "row += len(hyps)",
        "row += 1",
        "beam search: row offset advances by one per sentence",
        from_review=True,
    ),
    M(
        "N19",
        "decoding.py",
        "hyps[h][0] + [token], float(candidates[flat])",
        "hyps[h][0] + [token], float(log_probs[row + h, token])",
        "beam search: score is the last token's log p, not the running sum",
        from_review=True,
    ),
    M(
        "N20",
        "decoding.py",
        "if all(done):",
        "if any(done):",
        "greedy: the whole batch stops at the first <eos>",
        from_review=True,
    ),
    M(
        "N21",
        "efficient.py",
        "    block_size: int = 128,\n",
        "    block_size: int = 4096,\n",
        "tiled_attention: default block size 4096, nothing tiled",
        from_review=True,
    ),
    M(
        "N22",
        "efficient.py",
        "new_max = torch.maximum(running_max, block.amax(dim=-1))",
        "new_max = block.amax(dim=-1)",
        "online_softmax_update: running max not carried over",
        from_review=True,
    ),
    M(
        "N23",
        "efficient.py",
        "        running_max = new_max\n",
        "",
        "tiled_attention: running max never updated",
        from_review=True,
    ),
    M(
        "N24",
        "efficient.py",
        "torch.arange(start, stop, device=q.device) > rows",
        "torch.arange(stop - start, device=q.device) > rows",
        "tiled_attention is_causal: block-local key indices",
        from_review=True,
    ),
    M(
        "N25",
        "efficient.py",
        "weights = torch.exp(scores - shift)",
        "weights = torch.exp(scores - new_max)",
        "tiled_attention: shifted by the raw max (NaN on a masked block)",
        from_review=True,
    ),
    M(
        "N26",
        "efficient.py",
        "q = query * (1.0 / math.sqrt(query.shape[-1]))",
        "q = query * (1.0 / math.sqrt(value.shape[-1]))",
        "tiled_attention: scaled by sqrt(d_v), not sqrt(d_k)",
        from_review=True,
    ),
    M(
        "N27",
        "efficient.py",
        "return result, peak",
        "return result, current",
        "peak_memory returns the bytes held at the end",
        from_review=True,
    ),
    M(
        "N28",
        "efficient.py",
        "if round_ >= warmup:",
        "if round_ > warmup:",
        "interleaved_timings: first measured round dropped too",
        from_review=True,
    ),
    M(
        "N29",
        "training.py",
        "step * warmup_steps**-1.5",
        "step * warmup_steps**-0.5",
        "Eq. 3: warm-up term uses warmup_steps^-0.5",
        from_review=True,
    ),
    M("N30", "training.py", '"fourteen"', '"forteen"', "'fourteen' misspelt", from_review=True),
    M(
        "N31",
        "training.py",
        "low = 0 if digits == 1 else 10 ** (digits - 1)",
        "low = 10 ** (digits - 1)",
        "sample_numbers never draws 0",
        from_review=True,
    ),
    M(
        "N32",
        "training.py",
        "if VOCAB[i] == EOS:\n            break",
        "if VOCAB[i] == EOS:\n            continue",
        "to_tokens skips <eos> instead of stopping",
        from_review=True,
    ),
    M(
        "N33",
        "training.py",
        "VOCAB: list[str] = [PAD, BOS, EOS,",
        "VOCAB: list[str] = [PAD, EOS, BOS,",
        "VOCAB: <bos> and <eos> swapped (the saved model's ids)",
        from_review=True,
    ),
    M(
        "N34",
        "explorer.py",
        "if sequence is None and batch > 1:",
        "if sequence is None and batch > 2:",
        "explorer: a batch of 2 without sequence= shows sequence 0",
        from_review=True,
    ),
    M(
        "N35",
        "explorer.py",
        "mk = lead[index]",
        "mk = lead[0]",
        "explorer: sequence 0's mask drawn over the sequence shown",
        from_review=True,
    ),
    M(
        "N36",
        "explorer.py",
        "TOLERANCE = 1e-5",
        "TOLERANCE = 1e-3",
        "explorer: tolerance outside [0, 1] and on masked keys loosened 100x",
        from_review=True,
    ),
    M(
        "N37",
        "explorer.js",
        "W[((l * H + h) * N + q) * M + k]",
        "W[((l * H + h) * M + q) * N + k]",
        "explorer script: weights indexed with N and M swapped (n != m)",
        from_review=True,
    ),
    M(
        "N38",
        "exercises/nb09.py",
        "        shift_right,\n        transformer.shift_right,\n        _shift_cases(),",
        "        shift_right,\n        shift_right,\n        _shift_cases(),",
        "check_shift_right compares the answer with itself",
        from_review=True,
    ),
    M(
        "N39",
        "exercises/nb09.py",
        "if norms != (0, 1, 2)",
        "if norms != (0, 1, 1)",
        "check_decoder_block: right norm order kept as a 'norms swapped' variant, (0, 1, 1) left out",
        from_review=True,
    ),
    M(
        "N40",
        "exercises/nb10.py",
        "torch.arange(1, 30001, 37,",
        "torch.arange(1, 3001, 37,",
        "check_rate: first case stops before the warm-up ends",
        from_review=True,
    ),
    M(
        "N41",
        "exercises/nb10.py",
        "(4 + lengths) / 6",
        "(6 + lengths) / 6",
        "check_length_penalty: '<eos> not counted' variant never matches",
        from_review=True,
    ),
    M(
        "N42",
        "exercises/nb11.py",
        "_folded(efficient.online_softmax_update),",
        "_folded(fn),",
        "check_online_softmax_update compares the answer with itself",
        from_review=True,
    ),
    M(
        "N43",
        "exercises/nb11.py",
        "2, 2, 2, 3, 8, 5),",
        "2, 2, 2, 3, 8, 8),",
        "check_cached_attention: the only d_k != d_v case made d_v = d_k",
        from_review=True,
    ),
    M(
        "N44",
        "exercises/nb11.py",
        "k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)",
        "k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)",
        "check_grouped_attention: 'tiled' variant equals the right one",
        from_review=True,
    ),
    M(
        "N45",
        "exercises/_core.py",
        "RTOL, ATOL = 1e-4, 1e-5",
        "RTOL, ATOL = 1e-2, 1e-5",
        "checkers' relative tolerance loosened 100x",
        from_review=True,
    ),
    M(
        "Q01",
        "transformer.py",
        "self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, **layer)",
        "self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, **layer, num_kv_heads=num_kv_heads)",
        "grouped-query attention applied to the encoder too",
    ),
    # --- helpers/modern.py (notebook 14) ---------------------------------------------------------
    M(
        "Y01",
        "modern.py",
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight",
        "(x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps) * self.weight",
        "RMSNorm re-centres: LayerNorm with no bias",
    ),
    M(
        "Y02",
        "modern.py",
        "base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)",
        "base ** (-torch.arange(0, d // 2, dtype=torch.float64, device=device) / d)",
        "RoPE's frequencies as base ** (-i / d), not base ** (-2i / d)",
    ),
    M(
        "Y03",
        "modern.py",
        "rotated_first = first * cos - second * sin",
        "rotated_first = first * cos + second * sin",
        "RoPE's rotation is not a rotation (sign of one sin flipped)",
    ),
    M(
        "Y04",
        "modern.py",
        "first, second = x[..., 0::2], x[..., 1::2]  #",
        "first, second = x[..., : d // 2], x[..., d // 2 :]  #",
        "RoPE's interleaved pairing silently half-split",
    ),
    M(
        "Y05",
        "modern.py",
        "slopes += [2.0 ** (-4.0 * (2 * k + 1) / c) for k in range(num_heads - c)]",
        "slopes += [2.0 ** (-8.0 * (k + 1 + c) / num_heads) for k in range(num_heads - c)]",
        "ALiBi's extra slopes for h not a power of 2 continue the sequence instead of interleaving",
    ),
    M(
        "Y06",
        "modern.py",
        "return (offset >= 0) & (offset < window)",
        "return (offset >= 0) & (offset <= window)",
        "sliding window one key too wide",
    ),
    M(
        "Y07",
        "modern.py",
        "return self.w2(F.silu(self.w1(x)) * self.w3(x))",
        "return self.w2(F.silu(self.w1(x) * self.w3(x)))",
        "SwiGLU's gate applied after the product",
    ),
    M(
        "Y08",
        "modern.py",
        "q, k = apply_rotary(q, base=self.rope_base), apply_rotary(k, base=self.rope_base)",
        "q = apply_rotary(q, base=self.rope_base)",
        "RoPE on the queries only",
    ),
    M(
        "Y09",
        "modern.py",
        "scores = scores + alibi_bias(self.num_heads, n).to(scores.dtype)",
        "scores = scores - alibi_bias(self.num_heads, n).to(scores.dtype)",
        "ALiBi's bias rewards distance instead of penalising it",
    ),
    M(
        "Y10",
        "modern.py",
        "attended, weights = self.attention(self.norm1(x), mask)",
        "attended, weights = self.attention(x, mask)",
        "pre-norm block without its first norm",
    ),
]


PYTEST_ARGS = ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:nbval", "-p", "no:xdist",
               "-o", "addopts=", "--hypothesis-seed=0", "--no-header", "--tb=no", "-rfE"]  # fmt: skip


def preload() -> None:
    """Import the heavy libraries once, in this process, so that each forked test run skips that cost.

    `helpers` itself must not be imported here: each fork imports the mutated copy afresh.
    """
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    import hypothesis  # noqa: F401
    import matplotlib
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch
    import torch.nn.functional

    matplotlib.use("Agg")
    import matplotlib.pyplot

    torch.set_num_threads(1)
    assert "helpers" not in sys.modules


def _forked(workdir: Path, log: Path, timeout: float, body) -> tuple[int | None, float]:
    """Run ``body()`` (returning an exit code) in a forked child inside ``workdir``; its output goes to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's code
        code = 70
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(workdir)
            sys.path.insert(0, str(workdir))  # before the editable install's finder
            code = int(body())
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, time.perf_counter() - start
        time.sleep(0.05)


def run_tests(workdir: Path, tests: list[str], timeout: float, fork: bool, keyword: str | None = None):
    """Run `tests` in `workdir`; return ("pass" | "fail" | "timeout", seconds, a summary line)."""
    tests = [*tests, "-k", keyword] if keyword else tests
    shutil.rmtree(workdir / ".hypothesis", ignore_errors=True)  # no replay of an earlier mutant's failures
    log = workdir / "pytest.log"
    if fork:
        import pytest

        code, seconds = _forked(workdir, log, timeout, lambda: pytest.main([*tests, *PYTEST_ARGS]))
    else:
        env = {**os.environ, "PYTHONPATH": str(workdir), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        start = time.perf_counter()
        with log.open("w") as out:
            try:
                command = [sys.executable, "-m", "pytest", *tests, *PYTEST_ARGS]
                code = subprocess.run(command, cwd=workdir, env=env, stdout=out, stderr=out, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = None
        seconds = time.perf_counter() - start
    if code is None:
        return "timeout", seconds, ""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    # The first failing test's summary line, else the last line (e.g. "3 passed in 2.00s").
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    summary = (failed or lines or [""])[0 if failed else -1]
    return ("pass" if code == 0 else "fail"), seconds, summary[:160]


def imports_the_copy(workdir: Path, fork: bool) -> bool:
    """Whether `import helpers`, as the test runs will do it, finds the copy in `workdir`."""
    if fork:

        def check() -> int:
            import helpers

            return 0 if Path(helpers.__file__).is_relative_to(workdir) else 1

        return _forked(workdir, workdir / "import.log", 300, check)[0] == 0
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    command = [sys.executable, "-c", "import helpers; print(helpers.__file__)"]
    found = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    return found.stdout.startswith(str(workdir))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="run only these mutants (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant's test run")
    parser.add_argument("--threshold", type=float, default=0.95, help="fail below this caught share")
    parser.add_argument("-k", dest="keyword", help="run only the tests matching this pytest -k expression")
    parser.add_argument(
        "--no-fork", action="store_true", help="start a fresh Python per run instead of forking a preloaded one"
    )
    args = parser.parse_args()

    mutants = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    if args.ids and len(mutants) != len(set(args.ids)):
        parser.error(f"unknown mutant ids: {sorted(set(args.ids) - {m.id for m in MUTANTS})}")
    if args.list:
        for m in mutants:
            flag = " [equivalent]" if m.equivalent else (" [review]" if m.from_review else "")
            print(f"{m.id}  helpers/{m.module:<18} {m.what}{flag}")
        return 0

    originals = {module: (ROOT / "helpers" / module).read_text() for module in TESTS}
    for m in mutants:  # every edit must apply, exactly once, to the current source
        count = originals[m.module].count(m.old)
        if count != 1:
            print(f"{m.id}: {m.old!r} occurs {count} times in helpers/{m.module}; update the mutant")
            return 2

    with tempfile.TemporaryDirectory(prefix="mutation_check_") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "helpers", work / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "notebooks" / "data", work / "notebooks" / "data")
        for notebook in (ROOT / "notebooks").glob(
            "*.ipynb"
        ):  # tests/helpers/test_modern.py runs notebook 14's inline code
            shutil.copy2(notebook, work / "notebooks" / notebook.name)
        for name in ("conftest.py", "pyproject.toml"):
            shutil.copy2(ROOT / name, work / name)
        fork = hasattr(os, "fork") and not args.no_fork
        if fork:
            preload()
        if not imports_the_copy(work, fork):
            print(f"`import helpers` does not find the copy in {work}")
            return 2
        needed = sorted({t for m in mutants for t in TESTS[m.module]})
        status, seconds, summary = run_tests(work, needed, args.timeout, fork, args.keyword)
        print(f"unmutated copy: {' '.join(needed)}: {status} ({seconds:.0f} s)")
        if status != "pass":
            print(f"the unmutated tests must pass first: {summary}")
            return 2

        results = []
        for m in mutants:
            path = work / "helpers" / m.module
            try:
                path.write_text(originals[m.module].replace(m.old, m.new, 1))
                status, seconds, summary = run_tests(work, TESTS[m.module], args.timeout, fork, args.keyword)
            finally:
                path.write_text(originals[m.module])
            caught = status != "pass"
            results.append((m, caught))
            flag = " [equivalent]" if m.equivalent else (" [review]" if m.from_review else "")
            verdict = "caught  " if caught else "SURVIVED"
            print(f"{m.id} {verdict} {seconds:5.1f} s  helpers/{m.module:<18} {m.what}{flag}", flush=True)
            if caught and summary:
                print(f"      {summary}")

    scored = [(m, caught) for m, caught in results if not m.equivalent]
    n_caught = sum(caught for _, caught in scored)
    new = [(m, caught) for m, caught in scored if not m.from_review]
    print(
        f"\ncaught {n_caught}/{len(scored)} ({n_caught / max(len(scored), 1):.1%}); "
        f"new mutants only: {sum(c for _, c in new)}/{len(new)}; "
        f"{len(results) - len(scored)} equivalent mutants left out of the score"
    )
    turn3 = [(m, caught) for m, caught in scored if m.id.startswith("N")]
    if turn3:
        print(f"turn 3's review (N01-N45): {sum(c for _, c in turn3)}/{len(turn3)}")
    for m, caught in results:
        if not caught:
            print(f"  survivor {m.id} ({m.what})" + (f": equivalent, {m.equivalent}" if m.equivalent else ""))
    return 0 if n_caught >= args.threshold * len(scored) else 1


if __name__ == "__main__":
    sys.exit(main())
