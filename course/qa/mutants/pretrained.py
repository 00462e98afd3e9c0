"""Mutants of `helpers/pretrained.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/pretrained.py"
TESTS = ["tests/helpers/test_pretrained.py"]

MUTANTS = [
    Mutant(
        "pretrained-01",
        '"self_attn.w_v": "attention.self.value",',
        '"self_attn.w_v": "attention.self.key",',
        "name map: the value projection loaded from the key's weights",
    ),
    Mutant("pretrained-02", "found = _sha256(path)", "found = sha256", "checksum never computed: any file is accepted"),
    Mutant(
        "pretrained-03",
        'activation=c["hidden_act"],',
        'activation="relu",',
        "feed-forward ReLU instead of the checkpoint's GELU",
    ),
    Mutant(
        "pretrained-04",
        "self.norm = nn.LayerNorm(d_model, eps=eps)",
        "self.norm = nn.LayerNorm(d_model)",
        "embedding LayerNorm with PyTorch's eps 1e-5, not the checkpoint's 1e-12",
    ),
    Mutant(
        "pretrained-05",
        "summed = (hidden * mask).sum(dim=1)",
        "summed = hidden.sum(dim=1)",
        "mean pooling sums the padding's hidden states too",
    ),
    Mutant(
        "pretrained-06",
        "attention_mask = attention_mask == 1",
        "attention_mask = attention_mask == 0",
        "a 0/1 attention mask read with its meaning flipped",
    ),
]
