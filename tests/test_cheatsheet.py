"""The students' cheat sheet (CHEATSHEET.md) fits one printed page, cites only real sections and says what torch does.

It is printed on one A4 page (course/publish/handouts.py; tests/course/publish/test_handouts.py counts the printed
pages with Chromium), so it holds at most 450 words, a word being a run of non-space characters with a letter or a
digit in it (table rules and pipes do not count), and no line of a code block, which does not wrap, is longer than 90
characters (about the width of the page at the sheet's 9 pt). Every reference such as `02 §7` names a numbered
heading of that notebook (the check of tests/test_assessment.py), and the debugging checklist cites every bug of
notebook 08's lab. The mask conventions it tabulates are asserted against the installed torch, as 02 §7 does.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.masks import causal_mask, padding_mask
from helpers.reference import torch_multihead_attention
from tests.test_assessment import cited, notebook_sections, reference_problems

ROOT = Path(__file__).resolve().parent.parent
CHEATSHEET = ROOT / "CHEATSHEET.md"
MAX_WORDS = 450
MAX_CODE_LINE = 90
LAB = "08"


def words(text: str) -> int:
    return sum(1 for token in text.split() if re.search(r"\w", token))


def cheatsheet_problems(text: str) -> list[str]:
    problems = [] if words(text) <= MAX_WORDS else [f"{words(text)} words, more than {MAX_WORDS}"]
    problems += [
        f"a code line of {len(line)} characters, more than {MAX_CODE_LINE}: {line[:40]!r}"
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
        for line in block.splitlines()
        if len(line) > MAX_CODE_LINE
    ]
    problems += reference_problems(text, minimum=15)
    lab = next((ROOT / "notebooks").glob(f"{LAB}_*.ipynb"))
    bugs = {int(n) for n in notebook_sections(lab)} - {0}  # section 0 is the test bench
    missing = sorted(bugs - {section for notebook, section in cited(text) if notebook == LAB})
    if missing:
        problems.append(f"the checklist cites no {', '.join(f'{LAB} §{n}' for n in missing)}")
    problems += [
        f"no {heading!r} section"
        for heading in ("Names and shapes", "Masks", "Debugging checklist")
        if not re.search(rf"^## {heading}", text, flags=re.MULTILINE)
    ]
    return problems


def test_the_cheatsheet_is_short_and_cites_real_sections():
    assert CHEATSHEET.exists(), "CHEATSHEET.md is missing"
    problems = cheatsheet_problems(CHEATSHEET.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_checks_catch_a_long_sheet_a_wide_line_a_wrong_section_and_a_missing_bug():
    text = CHEATSHEET.read_text(encoding="utf-8")
    mutants = {
        "too long": text + "\nword " * (MAX_WORDS + 1 - words(text)),
        "a section that does not exist": text.replace("02 §7", "02 §17", 1),
        "a code line too wide": text.replace("```text\n", "```text\n" + "x" * (MAX_CODE_LINE + 1) + "\n", 1),
        "a lab bug left out": re.sub(r"^\|[^\n]*\(08 §11\)[^\n]*\n", "", text, count=1, flags=re.MULTILINE),
    }
    for name, mutant in mutants.items():
        assert mutant != text, f"{name}: the mutation changed nothing"
        assert cheatsheet_problems(mutant), f"{name}: no problem reported"


def test_the_mask_table_holds_in_this_torch():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)  # (B, n, d_model), self-attention
    pad, causal = padding_mask([4, 2], 4), causal_mask(4)  # (B, 1, m) and (n, n), True = may attend
    ours = scaled_dot_product_attention(x, x, x, pad & causal)[0]
    # F.scaled_dot_product_attention: a boolean mask as ours; a float mask is added to the scores
    torch.testing.assert_close(F.scaled_dot_product_attention(x, x, x, attn_mask=pad & causal), ours)
    bias = torch.randn(4, 4)
    added = torch.softmax(x @ x.transpose(-2, -1) / math.sqrt(8) + bias, dim=-1) @ x
    torch.testing.assert_close(F.scaled_dot_product_attention(x, x, x, attn_mask=bias), added)
    # nn.MultiheadAttention: True = must not attend, converted with ~; a float causal mask of 0 and -inf is added
    mha = MultiHeadAttention(8, num_heads=2).eval()
    torch_mha = torch_multihead_attention(mha)  # nn.MultiheadAttention(batch_first=True) with mha's weights
    with torch.no_grad():
        torch.testing.assert_close(
            torch_mha(x, x, x, key_padding_mask=~pad.squeeze(1), attn_mask=~causal)[0], mha(x, x, x, pad & causal)[0]
        )
        float_causal = nn.Transformer.generate_square_subsequent_mask(4)  # (n, n) float: 0 or -inf
        torch.testing.assert_close(torch_mha(x, x, x, attn_mask=float_causal)[0], mha(x, x, x, causal)[0])
    assert torch.equal(float_causal == 0, causal)
    # an integer attention_mask: .bool() converts it, ~ does not
    attention_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    assert torch.equal(attention_mask.bool()[:, None, :], pad) and (~attention_mask).bool().all()
    # is_causal=True refuses an attn_mask
    try:
        F.scaled_dot_product_attention(x, x, x, attn_mask=pad, is_causal=True)
        raised = False
    except RuntimeError:
        raised = True
    assert raised
    # a fully masked row: zeros from the series and from F.sdpa, NaN from nn.MultiheadAttention (need_weights=True)
    empty = padding_mask([4, 0], 4)
    out, weights = scaled_dot_product_attention(x, x, x, empty)
    assert (out[1] == 0).all() and (weights[1] == 0).all()
    assert (F.scaled_dot_product_attention(x, x, x, attn_mask=empty)[1] == 0).all()
    with torch.no_grad():
        assert torch_mha(x, x, x, key_padding_mask=~empty.squeeze(1))[0][1].isnan().all()
