"""Mutants of `helpers/modern.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/modern.py"
TESTS = ["tests/helpers/test_modern.py", "tests/test_notebook_code.py"]

MUTANTS = [
    Mutant(
        "modern-01",
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight",
        "(x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps) * self.weight",
        "RMSNorm re-centres: LayerNorm with no bias",
    ),
    Mutant(
        "modern-02",
        "base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)",
        "base ** (-torch.arange(0, d // 2, dtype=torch.float64, device=device) / d)",
        "RoPE's frequencies as base ** (-i / d), not base ** (-2i / d)",
    ),
    Mutant(
        "modern-03",
        "rotated_first = first * cos - second * sin",
        "rotated_first = first * cos + second * sin",
        "RoPE's rotation is not a rotation (sign of one sin flipped)",
    ),
    Mutant(
        "modern-04",
        "first, second = x[..., 0::2], x[..., 1::2]  #",
        "first, second = x[..., : d // 2], x[..., d // 2 :]  #",
        "RoPE's interleaved pairing silently half-split",
    ),
    Mutant(
        "modern-05",
        "slopes += [2.0 ** (-4.0 * (2 * k + 1) / c) for k in range(num_heads - c)]",
        "slopes += [2.0 ** (-8.0 * (k + 1 + c) / num_heads) for k in range(num_heads - c)]",
        "ALiBi's extra slopes for h not a power of 2 continue the sequence instead of interleaving",
    ),
    Mutant(
        "modern-06",
        "return (offset >= 0) & (offset < window)",
        "return (offset >= 0) & (offset <= window)",
        "sliding window one key too wide",
    ),
    Mutant(
        "modern-07",
        "return self.w2(F.silu(self.w1(x)) * self.w3(x))",
        "return self.w2(F.silu(self.w1(x) * self.w3(x)))",
        "SwiGLU's gate applied after the product",
    ),
    Mutant(
        "modern-08",
        "q, k = apply_rotary(q, base=self.rope_base), apply_rotary(k, base=self.rope_base)",
        "q = apply_rotary(q, base=self.rope_base)",
        "RoPE on the queries only",
    ),
    Mutant(
        "modern-09",
        "scores = scores + alibi_bias(self.num_heads, n).to(scores.dtype)",
        "scores = scores - alibi_bias(self.num_heads, n).to(scores.dtype)",
        "ALiBi's bias rewards distance instead of penalising it",
    ),
    Mutant(
        "modern-10",
        "attended, weights = self.attention(self.norm1(x), mask)",
        "attended, weights = self.attention(x, mask)",
        "pre-norm block without its first norm",
    ),
]
