"""The checkers of notebook 09, the whole Transformer (``course.exercises.nb09``): right answers pass, classic mistakes are
named."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course import exercises as ex
from course.exercises import engine, nb09
from tests.course.exercises.answers import stub


def test_shift_right_checker():
    def right(targets, bos_id):
        out = torch.empty_like(targets)
        out[:, 0] = bos_id
        out[:, 1:] = targets[:, :-1]
        return out

    assert ex.check_shift_right(right).passed
    assert ex.check_shift_right(stub).status == "not attempted"
    bos_first = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    wrong = {
        "shifted left": lambda t, b: torch.cat([t[:, 1:], torch.zeros_like(t[:, :1])], dim=1),
        "rolled": lambda t, b: torch.roll(t, shifts=1, dims=1),
        "first token overwritten": lambda t, b: torch.cat([bos_first(t, b), t[:, 1:]], dim=1),
        "last position kept": lambda t, b: torch.cat([bos_first(t, b), t], dim=1),
        "no <bos>": lambda t, b: torch.cat([torch.zeros_like(t[:, :1]), t[:, :-1]], dim=1),
        "bos hard-coded": lambda t, b: torch.cat([torch.ones_like(t[:, :1]), t[:, :-1]], dim=1),
        "result equals the targets": lambda t, b: torch.cat([bos_first(t, b), t], dim=1)[:, 1:],
        "<eos> replaced by <pad>": lambda t, b: torch.cat([bos_first(t, b), torch.where(t == 2, 0, t)[:, :-1]], 1),
    }
    for mistake, answer in wrong.items():
        verdict = ex.check_shift_right(answer)
        assert verdict.mistake == mistake, (mistake, str(verdict))

    def in_place(targets, bos_id):  # right values, but the caller's targets are shifted too
        targets[:, 1:] = targets[:, :-1].clone()
        targets[:, 0] = bos_id
        return targets

    verdict = ex.check_shift_right(in_place)
    assert verdict.status == "failed" and verdict.mistake == "targets changed in place", str(verdict)
    assert "changed `targets` in place" in str(verdict)

    def in_place_and_left(targets, bos_id):  # wrong values and in place: both named
        targets[:, :-1] = targets[:, 1:].clone()
        targets[:, -1] = 0
        return targets

    verdict = ex.check_shift_right(in_place_and_left)
    assert verdict.mistake == "shifted left" and "changed `targets` in place" in str(verdict), str(verdict)
    assert ex.check_shift_right(lambda t, b: right(t, b).float()).status == "failed"  # token ids stay integers


def test_shift_right_checker_names_every_spelling_of_the_left_shift():
    bos = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    for answer in (
        lambda t, b: torch.cat([t[:, 1:], bos(t, b)], dim=1),  # <bos> appended at the end
        lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([t.shape[1] - 1]), b),
        lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([0]), b),
    ):
        verdict = ex.check_shift_right(answer)
        assert verdict.mistake == "shifted left" and "Shift right" in str(verdict), str(verdict)


def test_shift_right_checker_wants_the_targets_dtype():
    def right(targets, bos_id):
        return torch.cat([torch.full_like(targets[:, :1], bos_id), targets[:, :-1]], dim=1)

    verdict = ex.check_shift_right(lambda t, b: right(t, b).int())  # the right ids, as int32
    text = str(verdict)
    assert verdict.status == "failed" and verdict.mistake == "wrong dtype", text
    assert "dtype torch.int32, expected torch.int64, the dtype of `targets`" in text and "Hint:" not in text, text

    # <bos> made in the default dtype: right for int64 targets, and int64 again (by type promotion in torch.cat)
    # for int32 ones. The checker's int32 case catches each (the student review's false pass).
    def bos_from_a_list(targets, bos_id):
        bos = torch.tensor([[bos_id]] * targets.shape[0])
        return torch.cat([bos, targets[:, :-1]], dim=1)

    def bos_from_full(targets, bos_id):
        return torch.cat([torch.full((targets.shape[0], 1), bos_id), targets[:, :-1]], dim=1)

    def rows_as_lists(targets, bos_id):
        return torch.tensor([[bos_id, *row[:-1]] for row in targets.tolist()])

    for default_dtype in (bos_from_a_list, bos_from_full, rows_as_lists):
        verdict = ex.check_shift_right(default_dtype)
        text = str(verdict)
        assert verdict.mistake == "wrong dtype" and "int32 targets" in text, text
        assert "dtype torch.int64, expected torch.int32, the dtype of `targets`" in text, text
    assert ex.check_shift_right(lambda t, b: rows_as_lists(t, b).to(t.dtype)).passed
    assert ex.check_shift_right(lambda t, b: F.pad(t[:, :-1], (1, 0), value=b)).passed
    verdict = ex.check_shift_right(lambda t, b: torch.cat([t[:, 1:], torch.zeros_like(t[:, :1])], 1).int())
    assert verdict.mistake == "shifted left" and "the dtype of `targets`" in str(verdict), str(verdict)


def decoder_right(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
    x = n1(x + sa(x, self_mask))
    x = n2(x + ca(x, memory, memory_mask))
    return n3(x + ff(x))


def test_decoder_block_checker():
    assert ex.check_decoder_block(decoder_right).passed
    assert ex.check_decoder_block(stub).status == "not attempted"

    def cross_first(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + ca(x, memory, mm))
        x = n2(x + sa(x, sm))
        return n3(x + ff(x))

    def queries_from_memory(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(memory, x, mm))
        return n3(x + ff(x))

    def masks_swapped(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, mm))
        x = n2(x + ca(x, memory, sm))
        return n3(x + ff(x))

    def keys_from_x(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, x, mm))
        return n3(x + ff(x))

    def no_causal(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, None, mm, sa, ca, ff, n1, n2, n3)

    def no_memory_mask(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm, None, sa, ca, ff, n1, n2, n3)

    def stale_queries(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        y = n1(x + sa(x, sm))
        y = n2(y + ca(x, memory, mm))
        return n3(y + ff(y))

    def pre_norm(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = x + sa(n1(x), sm)
        x = x + ca(n2(x), memory, mm)
        return x + ff(n3(x))

    def no_residual(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return n3(ff(n2(ca(n1(sa(x, sm)), memory, mm))))

    def norms_swapped(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm, mm, sa, ca, ff, n1, n3, n2)

    def pytorch_masks(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, ~sm, ~mm, sa, ca, ff, n1, n2, n3)

    def no_norm3(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return x + ff(x)

    def residual_after_norm(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(sa(x, sm)) + x
        x = n2(ca(x, memory, mm)) + x
        return n3(ff(x)) + x

    def residuals_from_input(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        h = n1(x + sa(x, sm))
        h = n2(x + ca(h, memory, mm))
        return n3(x + ff(h))

    def causal_transposed(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, sm.T, mm, sa, ca, ff, n1, n2, n3)

    def no_masks(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, None, None, sa, ca, ff, n1, n2, n3)

    def norm2_twice(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return n2(x + ff(x))  # norm2 again instead of norm3

    def norm2_first(x, memory, sm, mm, sa, ca, ff, n1, n2, n3):
        x = n2(x + sa(x, sm))
        x = n2(x + ca(x, memory, mm))
        return n3(x + ff(x))

    expected = {
        cross_first: "cross-attention first",
        queries_from_memory: "queries from memory",
        masks_swapped: "masks swapped or keys from x",
        keys_from_x: "masks swapped or keys from x",
        no_causal: "causal mask ignored",
        no_memory_mask: "memory mask ignored",
        stale_queries: "cross-attention reads the block's input",
        pre_norm: "pre-norm",
        no_residual: "no residual",
        norms_swapped: "norms swapped",
        pytorch_masks: "masks inverted",
        no_norm3: "no norm3",
        residual_after_norm: "residual added after the norm",
        residuals_from_input: "residuals from the block's input",
        causal_transposed: "causal mask transposed",
        no_masks: "both masks ignored",
        norm2_twice: "norms swapped",
        norm2_first: "norms swapped",
    }
    for answer, mistake in expected.items():
        verdict = ex.check_decoder_block(answer)
        assert verdict.status == "failed" and verdict.mistake == mistake, (answer.__name__, str(verdict))
    text = str(ex.check_decoder_block(norm2_twice))
    assert "yours has norm2 after the feed-forward network (norm2 used more than once" in text, text
    text = str(ex.check_decoder_block(norm2_first))
    assert "norm2 after the self-attention (norm2 used more than once" in text, text
    text = str(ex.check_decoder_block(norms_swapped))
    assert "norm3 after the cross-attention and norm2 after the feed-forward network." in text, text


def test_decoder_block_checker_does_not_change_the_readers_random_state():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    ex.check_decoder_block(decoder_right)
    torch.testing.assert_close(torch.rand(3), expected)


def test_every_spelling_of_a_wrong_shift_in_09_1_is_named_and_roll_with_bos_passes():
    bos = lambda t, b: torch.full_like(t[:, :1], b)  # noqa: E731
    named = {
        "shifted left": (
            lambda t, b: torch.cat([t[:, 1:], bos(t, b)], dim=1),  # a left shift with <bos> appended
            lambda t, b: torch.roll(t, -1, dims=1),  # rolled left, nothing fixed up
            lambda t, b: torch.roll(t, -1),  # rolled left without dims
            lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([0]), b),  # <bos> first
            lambda t, b: torch.roll(t, -1, dims=1).index_fill(1, torch.tensor([t.shape[1] - 1]), b),  # <bos> last
        ),
        "rolled": (
            lambda t, b: torch.roll(t, 1, dims=1),  # <eos> wraps round to the front
            lambda t, b: torch.roll(t, 1),  # without dims: the flattened tensor rolls
        ),
    }
    for key, answers in named.items():
        for answer in answers:
            verdict = ex.check_shift_right(answer)
            assert verdict.mistake == key, (key, str(verdict))
    assert "without dims rolls the flattened tensor" in str(ex.check_shift_right(lambda t, b: torch.roll(t, 1)))
    for right in (
        lambda t, b: torch.roll(t, 1, dims=1).index_fill(1, torch.tensor([0]), b),
        lambda t, b: torch.roll(t, 1).index_fill(1, torch.tensor([0]), b),  # flattened, but position 0 fixed up
    ):
        assert ex.check_shift_right(right).passed


def test_a_transposed_causal_mask_and_both_masks_dropped_are_named_in_09_2():
    def transposed(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
        return decoder_right(x, memory, self_mask.transpose(-2, -1), memory_mask, sa, ca, ff, n1, n2, n3)

    def no_masks(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, None))
        x = n2(x + ca(x, memory, None))
        return n3(x + ff(x))

    def with_keywords(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):  # right, another way
        for sub, norm in ((lambda y: sa(y, mask=self_mask), n1), (lambda y: ca(y, memory, mask=memory_mask), n2)):
            x = norm(x + sub(x))
        return n3(x + ff(x))

    assert ex.check_decoder_block(transposed).mistake == "causal mask transposed"
    verdict = ex.check_decoder_block(no_masks)
    assert verdict.mistake == "both masks ignored" and "neither mask" in str(verdict), str(verdict)
    assert ex.check_decoder_block(with_keywords).passed


def test_a_variant_equal_to_the_reference_would_be_caught():
    """The test above fails on a list that names the right answer a mistake, e.g. norms (0, 1, 2) of 09.2."""
    cases = nb09.decoder_cases()
    right = engine.Mistake("norms swapped", lambda *a: nb09.decoder_block_variant(*a, norms=(0, 1, 2)), "")
    with torch.no_grad():
        assert engine.agree(right.wrong, nb09.decoder_block_variant, cases)


def test_the_student_reviews_unnamed_mistakes_are_named_in_09():
    """Two mistakes the student review met without a name: rows rolled instead of positions (09.1), and a block
    with no residual around one sub-layer (09.2)."""

    def rolled_rows(targets, bos_id):
        shifted = targets.roll(1, dims=0).clone()
        shifted[:, 0] = bos_id
        return shifted

    verdict = ex.check_shift_right(rolled_rows)
    assert verdict.mistake == "rolled across rows" and "dims=1" in str(verdict), str(verdict)

    def no_ff_residual(x, memory, self_mask, memory_mask, sa, ca, ff, n1, n2, n3):
        x = n1(x + sa(x, self_mask))
        x = n2(x + ca(x, memory, memory_mask))
        return n3(ff(x))

    verdict = ex.check_decoder_block(no_ff_residual)
    assert verdict.mistake == "no residual around the feed-forward" and "LayerNorm(z + FFN(z))" in str(verdict)
