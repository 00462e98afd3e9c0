"""Training the whole Transformer: the learning-rate schedule (Eq. 3) and a toy translation task.

Vaswani et al., 2017: §5.3 and Eq. 3 (Adam with beta_1 = 0.9, beta_2 = 0.98, eps = 1e-9, and
``lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)``), §5.4 (label smoothing),
§5.1 (one vocabulary shared by source and target).

The task translates a number written in digits into English number words,
``4 0 7 -> four hundred seven``, ``1 2 0 1 5 -> twelve thousand fifteen``: lengths differ, and the
alignment is neither the identity nor a reversal (two digits can make one word, "hundred" and
"thousand" come from no single digit, a zero digit makes no word). Sentences are generated on the
fly; no download.
"""

from __future__ import annotations

import torch

from helpers.checks import is_int
from helpers.masks import padding_mask

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "VOCAB",
    "make_translation_batch",
    "number_alignment",
    "number_to_words",
    "rate",
    "sample_numbers",
    "to_ids",
    "to_tokens",
]


def rate(step: int, d_model: int, warmup_steps: int = 4000) -> float:
    """Eq. 3 (§5.3): ``d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`` for ``step >= 1``.

    It rises linearly for ``warmup_steps`` steps, peaks at ``(d_model * warmup_steps)^-0.5`` at
    ``step == warmup_steps``, then decays like ``step^-0.5``. Steps count from 1: at step 0 the
    formula gives 0 (and ``0^-0.5`` is undefined), so ``step < 1`` raises. ``LambdaLR`` calls its
    function with 0 before the first update, so shift by one and use a base learning rate of 1:
    ``LambdaLR(optimizer, lambda s: rate(s + 1, d_model, warmup_steps))`` with ``Adam(..., lr=1.0)``.
    """
    for name, value in (("step", step), ("d_model", d_model), ("warmup_steps", warmup_steps)):
        if not is_int(value) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1 (Eq. 3 counts steps from 1), got {value!r}")
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


# --- the task: digits -> English number words ---------------------------------------------------

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
# One vocabulary for both sides (as §5.1 shares one for English-German): padding is id 0.
VOCAB: list[str] = [PAD, BOS, EOS, *"0123456789", *_ONES, *_TEENS, *_TENS[2:], "hundred", "thousand"]
_ID = {token: i for i, token in enumerate(VOCAB)}
MAX_NUMBER = 999_999


def _below_thousand(n: int) -> list[str]:
    words = []
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
        if n:
            words.append(_ONES[n])
    elif n >= 10:
        words.append(_TEENS[n - 10])
    elif n:
        words.append(_ONES[n])
    return words


def number_to_words(n: int) -> list[str]:
    """``407 -> ['four', 'hundred', 'seven']``, for ``0 <= n <= 999_999`` (no "and", no hyphens)."""
    if not is_int(n) or not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be an integer in [0, {MAX_NUMBER}], got {n!r}")
    if n == 0:
        return ["zero"]
    words = []
    if n >= 1000:
        words += [*_below_thousand(n // 1000), "thousand"]
    return words + _below_thousand(n % 1000)


def _chunk_alignment(v: int, end: int) -> list[set[int] | None]:
    """Source positions spelled by each word of ``_below_thousand(v)``, its last digit at position ``end``."""
    spelled: list[set[int] | None] = []
    if v >= 100:
        spelled += [{end - 2}, None]  # "four" <- the hundreds digit; "hundred" spells no single digit
        v %= 100
    if v >= 20:
        spelled.append({end - 1})  # "forty" <- the tens digit
        if v % 10:
            spelled.append({end})  # "five" <- the units digit
    elif v >= 10:
        spelled.append({end - 1, end})  # "seventeen" <- both digits
    elif v:
        spelled.append({end})
    return spelled


def number_alignment(n: int) -> list[set[int] | None]:
    """For each word of ``number_to_words(n)``, the source positions (digits of ``str(n)``) it spells.

    ``407 -> [{0}, None, {2}]`` (four <- "4", hundred <- no single digit, seven <- "7");
    ``12015 -> [{0, 1}, None, {3, 4}]`` (a teen spells two digits); a zero digit spells no word.
    The reference for asserting that cross-attention aligns words with digits.
    """
    words = number_to_words(n)  # checks n
    if n == 0:
        return [{0}]
    last = len(str(n)) - 1
    spelled: list[set[int] | None] = []
    if n >= 1000:
        spelled += [*_chunk_alignment(n // 1000, last - 3), None]  # "thousand": no single digit
    spelled += _chunk_alignment(n % 1000, last)
    assert len(spelled) == len(words)
    return spelled


def to_ids(tokens: list[str]) -> list[int]:
    """Tokens -> ids in :data:`VOCAB`."""
    unknown = [t for t in tokens if t not in _ID]
    if unknown:
        raise ValueError(f"tokens {unknown} are not in the vocabulary")
    return [_ID[t] for t in tokens]


def to_tokens(ids) -> list[str]:
    """Ids (a list or a 1-D tensor) -> tokens, stopping before ``<eos>`` and skipping ``<pad>``."""
    ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
    tokens = []
    for i in ids:
        if not is_int(i) or not 0 <= i < len(VOCAB):
            raise ValueError(f"id {i!r} is outside the vocabulary [0, {len(VOCAB)})")
        if VOCAB[i] == EOS:
            break
        if VOCAB[i] != PAD:
            tokens.append(VOCAB[i])
    return tokens


def sample_numbers(
    count: int, generator: torch.Generator, exclude=frozenset(), min_digits: int = 1, max_digits: int = 6
) -> list[int]:
    """``count`` numbers: a digit count uniform in ``min_digits..max_digits``, then a number uniform among those.

    Numbers in ``exclude`` (a held-out test set) are drawn again, so training never sees them. A held-out
    set should use ``min_digits=3``: there are only 100 numbers of one or two digits, and training needs
    every one of them (a held-out "seven" would never be seen alone).
    """
    if (
        not is_int(count)
        or count < 1
        or not all(map(is_int, (min_digits, max_digits)))
        or not 1 <= min_digits <= max_digits <= 6
    ):
        raise ValueError(
            f"count must be >= 1 and 1 <= min_digits <= max_digits <= 6, got {count!r}, {min_digits!r}, {max_digits!r}"
        )
    numbers: list[int] = []
    while len(numbers) < count:
        digits = int(torch.randint(min_digits, max_digits + 1, (1,), generator=generator))
        low = 0 if digits == 1 else 10 ** (digits - 1)
        n = int(torch.randint(low, 10**digits, (1,), generator=generator))
        if n not in exclude:
            numbers.append(n)
    return numbers


def make_translation_batch(numbers: list[int]) -> dict[str, torch.Tensor]:
    """Numbers -> a padded batch: ``src (B, m)`` digit ids, ``tgt (B, n)`` word ids ending with ``<eos>``.

    Both are padded with id 0 at the end. Also returns ``src_mask (B, 1, m)`` (``True`` at real source
    tokens, :func:`helpers.masks.padding_mask`), ``src_lengths (B,)`` and ``tgt_lengths (B,)`` (``<eos>``
    counted). The decoder's input is ``shift_right(tgt, bos_id)``; the loss ignores ``tgt == 0``.
    """
    if not numbers:
        raise ValueError("numbers must not be empty")
    sources = [to_ids(list(str(n))) for n in numbers]
    targets = [to_ids([*number_to_words(n), EOS]) for n in numbers]
    m, n = max(map(len, sources)), max(map(len, targets))
    src = torch.tensor([s + [0] * (m - len(s)) for s in sources])  # (B, m)
    tgt = torch.tensor([t + [0] * (n - len(t)) for t in targets])  # (B, n)
    src_lengths = torch.tensor([len(s) for s in sources])
    return {
        "src": src,
        "tgt": tgt,
        "src_mask": padding_mask(src_lengths, m),
        "src_lengths": src_lengths,
        "tgt_lengths": torch.tensor([len(t) for t in targets]),
    }
