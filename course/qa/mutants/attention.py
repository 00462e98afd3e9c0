"""Mutants of `helpers/attention.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/attention.py"
TESTS = ["tests/helpers/test_attention.py", "tests/helpers/test_efficient.py"]

MUTANTS = [
    Mutant(
        "attention-01",
        "torch.softmax(scores, dim=-1)  #",
        "torch.softmax(scores, dim=-2)  #",
        "softmax over the queries (no mask)",
    ),
    Mutant(
        "attention-02",
        "torch.softmax(scores, dim=-1).masked_fill",
        "torch.softmax(scores, dim=-2).masked_fill",
        "softmax over the queries (with a mask)",
    ),
    Mutant("attention-03", "/ math.sqrt(d_k)  #", "/ d_k  #", "scores divided by d_k, not sqrt(d_k)"),
    Mutant("attention-04", "d_k = query.shape[-1]\n", "d_k = query.shape[-2]\n", "d_k read from the positions axis"),
    Mutant(
        "attention-05",
        "scores.masked_fill(~mask, torch.finfo",
        "scores.masked_fill(mask, torch.finfo",
        "mask meaning flipped (True = ignore)",
    ),
    Mutant(
        "attention-06",
        "torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)",
        "torch.softmax(scores, dim=-1)",
        "fully masked rows not zeroed (uniform weights)",
    ),
    Mutant("attention-07", "torch.finfo(scores.dtype).min)", 'float("-inf"))', "fill with -inf (NaN rows)"),
    Mutant("attention-08", "torch.finfo(scores.dtype).min)", "-1e9)", "fill with -1e9"),
    Mutant(
        "attention-09",
        "attn_mask=mask, dropout_p=dropout_p)",
        "attn_mask=mask, dropout_p=dropout_p, scale=self.d_model**-0.5)",
        "fused path scaled by sqrt(d_model) instead of sqrt(d_k)",
    ),
    Mutant(
        "attention-10",
        "if query is key and key is value:",
        "if query is key:",
        "self-attention shortcut when only query is key",
    ),
    Mutant(
        "attention-11",
        "q, k, v = F.linear(query, weight, bias).split([h * d_k, h_kv * d_k, h_kv * d_v], dim=-1)",
        "q, v, k = F.linear(query, weight, bias).split([h * d_k, h_kv * d_k, h_kv * d_v], dim=-1)",
        "stacked projection split in the wrong order",
    ),
    Mutant(
        "attention-12",
        "torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])",
        "torch.cat([self.w_q.bias, self.w_v.bias, self.w_k.bias])",
        "stacked biases in the wrong order",
    ),
    Mutant(
        "attention-13",
        "self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=bias)",
        "self.w_k = nn.Linear(d_model, h_kv * self.d_k, bias=True)",
        "bias=False ignored for W^K",
    ),
    Mutant(
        "attention-14",
        "dropout_p = self.dropout if self.training else 0.0",
        "dropout_p = self.dropout",
        "attention dropout also in eval mode",
    ),
    Mutant(
        "attention-15",
        "return x.view(B, n, num_heads, d_model // num_heads).transpose(1, 2)",
        "return x.view(B, num_heads, n, d_model // num_heads)",
        "heads split without the transpose",
    ),
    Mutant(
        "attention-16",
        "return x.transpose(1, 2).reshape(B, n, h * d_k)",
        "return x.reshape(B, n, h * d_k)",
        "heads concatenated in the wrong order (no transpose back)",
    ),
    Mutant(
        "attention-17",
        "mask = mask.unsqueeze(-3)",
        "mask = mask.unsqueeze(-2)",
        "mask given a head axis in the wrong place",
    ),
    Mutant("attention-18", "mask = mask | empty_rows", "mask = mask", "fused path's guard for empty rows removed"),
    Mutant(
        "attention-19",
        "empty_rows = ~mask.any(dim=-1, keepdim=True)",
        "empty_rows = ~mask.all(dim=-1, keepdim=True)",
        "empty rows detected with all() instead of any()",
    ),
    Mutant(
        "attention-20",
        "heads = heads.masked_fill(empty_rows, 0.0)",
        "heads = heads",
        "fused path leaves empty rows attending everywhere",
    ),
    Mutant(
        "attention-21",
        "weights = F.dropout(weights, dropout_p)\n                heads = weights @ v",
        "heads = F.dropout(weights, dropout_p) @ v",
        "pre-dropout weights returned in training",
    ),
    Mutant(
        "attention-22",
        "v = split_heads(self.w_v(value), self.num_kv_heads)",
        "v = split_heads(self.w_k(value), self.num_kv_heads)",
        "values projected with W^K",
    ),
    Mutant("attention-23", "v = split_heads(v, h_kv)", "v = split_heads(k, h_kv)", "keys used as values"),
    Mutant(
        "attention-24", "return self.w_o(concat), weights", "return concat, weights", "output projection W^O skipped"
    ),
    Mutant(
        "attention-25",
        "if key.shape[-2] != value.shape[-2]:",
        "if key.shape[-1] != value.shape[-1]:",
        "key/value check on the feature axis instead of positions",
    ),
    Mutant(
        "attention-26",
        "check_mask(mask, (B, self.num_heads, n, m))\n        else:\n            check_mask(mask, (B, n, m))\n\n    def forward",
        "check_mask(mask, (B, 1, n, m))\n        else:\n            check_mask(mask, (B, n, m))\n\n    def forward",
        "per-head masks rejected",
    ),
    Mutant(
        "attention-27",
        "query @ key.transpose(-2, -1)",
        "query @ key.transpose(-2, -1).flip(-1)",
        "keys taken in reverse order in the scores",
    ),
    Mutant(
        "attention-28",
        "k = k.repeat_interleave(h // h_kv, dim=1)  # (B, h_kv, m, d_k) -> (B, h, m, d_k)\n            v = v.repeat_interleave(h // h_kv, dim=1)",
        "k = k.repeat(1, h // h_kv, 1, 1)  # (B, h_kv, m, d_k) -> (B, h, m, d_k)\n            v = v.repeat(1, h // h_kv, 1, 1)",
        "GQA: kv heads tiled (repeat), not each repeated in place (repeat_interleave)",
    ),
]
