"""Mutants of `helpers/reference.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/reference.py"
TESTS = ["tests/helpers/test_attention.py", "tests/helpers/test_encoder.py"]

MUTANTS = [
    Mutant("reference-01", "return ref.train(mha.training)", "return ref", "attention copy always in training mode"),
    Mutant(
        "reference-02",
        "ref.norm2.load_state_dict(block.norm2.state_dict())\n    return ref.train(block.training)",
        "ref.norm2.load_state_dict(block.norm2.state_dict())\n    return ref",
        "encoder-layer copy always in training mode",
    ),
    Mutant(
        "reference-03",
        "torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight])",
        "torch.cat([ours.w_k.weight, ours.w_q.weight, ours.w_v.weight])",
        "W^Q and W^K stacked in the wrong order",
    ),
    Mutant("reference-04", "ref.out_proj.bias.copy_(ours.w_o.bias)", "pass", "output bias not copied"),
    Mutant(
        "reference-05",
        "ref.norm2.load_state_dict(block.norm2.state_dict())",
        "ref.norm2.load_state_dict(block.norm1.state_dict())",
        "norm2 copied from norm1",
    ),
    Mutant("reference-06", "dropout=attn.dropout,", "dropout=0.0,", "dropout not copied to the encoder layer"),
    Mutant("reference-07", "bias=mha.w_q.bias is not None", "bias=True", "reference always has biases"),
    Mutant(
        "reference-08",
        "norm_first=block.norm_first,\n    )\n    _copy_attention(attn",
        "norm_first=False,\n    )\n    _copy_attention(attn",
        "norm_first not copied",
    ),
    Mutant(
        "reference-09",
        "torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias])",
        "torch.cat([ours.w_q.bias, ours.w_v.bias, ours.w_k.bias])",
        "stacked biases copied in the wrong order",
    ),
]
