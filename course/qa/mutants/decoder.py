"""Mutants of `helpers/decoder.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/decoder.py"
TESTS = [
    "tests/helpers/test_decoder.py",
    "tests/helpers/test_efficient.py",
    "tests/helpers/test_gqa_decoder_only.py",
    "tests/test_notebook_code.py",
]

MUTANTS = [
    Mutant(
        "decoder-01",
        'k = torch.cat([cache["self_k"], k], dim=-2)',
        'k = torch.cat([k, cache["self_k"]], dim=-2)',
        "cache: new keys put before the cached ones (the values after)",
    ),
    Mutant(
        "decoder-02",
        'cache["cross_k"], cache["cross_v"] = self.cross_attn.project_kv(memory, memory)',
        'cache["cross_k"], cache["cross_v"] = self.self_attn.project_kv(memory, memory)',
        "cache: encoder keys projected with the self-attention's weights",
    ),
    Mutant(
        "decoder-03",
        "entry[name] = t.index_select(0, index.to(t.device))",
        "entry[name] = t[: len(index)]",
        "cache: reorder keeps the first rows instead of the given ones",
    ),
    Mutant(
        "decoder-04",
        "while len(self.layers) <= index:",
        "while len(self.layers) < index:",
        "KVCache.layer: off by one, layer i's dict not created",
    ),
    Mutant("decoder-05", '["self_k"].shape[-2]', '["self_k"].shape[-1]', "KVCache.length reads the feature axis"),
    Mutant("decoder-06", "t.numel() * t.element_size()", "t.numel()", "KVCache.nbytes counts elements, not bytes"),
    Mutant(
        "decoder-07",
        'v = torch.cat([cache["self_v"], v], dim=-2)',
        'v = torch.cat([cache["self_k"], v], dim=-2)',
        "cache: new values appended to the cached keys",
    ),
    Mutant(
        "decoder-08",
        "self.self_attn.attend(x, k, v, mask=mask,",
        "self.self_attn.attend(x, k, v, mask=None,",
        "cached self-attention ignores the causal mask",
    ),
    Mutant(
        "decoder-09",
        'cache["cross_k"], cache["cross_v"], mask=mask,',
        'cache["cross_k"], cache["cross_v"], mask=None,',
        "cached cross-attention drops the source padding mask",
    ),
    Mutant("decoder-10", "cache.layer(i)", "cache.layer(0)", "every decoder layer reads and extends layer 0's cache"),
]
