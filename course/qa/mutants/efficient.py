"""Mutants of `helpers/efficient.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/efficient.py"
TESTS = ["tests/helpers/test_efficient.py"]

MUTANTS = [
    Mutant(
        "efficient-01",
        "new_sum = running_sum * rescale + torch.exp(",
        "new_sum = running_sum + torch.exp(",
        "online softmax: old sum not rescaled to the new max",
    ),
    Mutant(
        "efficient-02",
        "rescale = torch.exp(running_max - shift)  # exp(old_max - new_max)",
        "rescale = torch.exp(shift - running_max)  # exp(old_max - new_max)",
        "online softmax: rescaled by exp(new_max - old_max)",
    ),
    Mutant(
        "efficient-03",
        "out = out * rescale + weights @",
        "out = out + weights @",
        "tiled attention: running output not rescaled",
    ),
    Mutant(
        "efficient-04",
        "q = query * (1.0 / math.sqrt(query.shape[-1]))",
        "q = query",
        "tiled attention: scores not scaled by 1/sqrt(d_k)",
    ),
    Mutant(
        "efficient-05",
        "stop = min(start + block_size, m)",
        "stop = min(start + block_size - 1, m)",
        "tiled attention: last key of every block skipped (off by one)",
    ),
    Mutant(
        "efficient-06",
        "return running_max.masked_fill(running_max == -math.inf, 0.0)",
        "return running_max",
        "no safe shift: -inf - (-inf) = NaN on fully masked rows",
    ),
    Mutant(
        "efficient-07",
        "torch.arange(start, stop, device=q.device) > rows",
        "torch.arange(start, stop, device=q.device) >= rows",
        "tiled attention: is_causal hides the diagonal",
    ),
    Mutant("efficient-08", "current -= size", "pass", "peak_memory: releases not subtracted (total, not peak)"),
    Mutant(
        "efficient-09",
        "    block_size: int = 128,\n",
        "    block_size: int = 4096,\n",
        "tiled_attention: default block size 4096, nothing tiled",
    ),
    Mutant(
        "efficient-10",
        "new_max = torch.maximum(running_max, block.amax(dim=-1))",
        "new_max = block.amax(dim=-1)",
        "online_softmax_update: running max not carried over",
    ),
    Mutant("efficient-11", "        running_max = new_max\n", "", "tiled_attention: running max never updated"),
    Mutant(
        "efficient-12",
        "torch.arange(start, stop, device=q.device) > rows",
        "torch.arange(stop - start, device=q.device) > rows",
        "tiled_attention is_causal: block-local key indices",
    ),
    Mutant(
        "efficient-13",
        "weights = torch.exp(scores - shift)",
        "weights = torch.exp(scores - new_max)",
        "tiled_attention: shifted by the raw max (NaN on a masked block)",
    ),
    Mutant(
        "efficient-14",
        "q = query * (1.0 / math.sqrt(query.shape[-1]))",
        "q = query * (1.0 / math.sqrt(value.shape[-1]))",
        "tiled_attention: scaled by sqrt(d_v), not sqrt(d_k)",
    ),
    Mutant(
        "efficient-15", "return result, peak", "return result, current", "peak_memory returns the bytes held at the end"
    ),
    Mutant(
        "efficient-16",
        "if round_ >= warmup:",
        "if round_ > warmup:",
        "interleaved_timings: first measured round dropped too",
    ),
]
