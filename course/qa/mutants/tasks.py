"""Mutants of `helpers/tasks.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/tasks.py"
TESTS = ["tests/helpers/test_tasks.py"]

MUTANTS = [
    Mutant("tasks-01", "(lengths[:, None] - 1 - positions)", "(lengths[:, None] - positions)", "reverse off by one"),
    Mutant(
        "tasks-02",
        "positions >= lengths[:, None], PAD_ID",
        "positions > lengths[:, None], PAD_ID",
        "reverse_targets leaves the first padded position unfilled",
    ),
    Mutant(
        "tasks-03",
        "tokens.masked_fill(~real, vocab_size).sort",
        "tokens.masked_fill(~real, PAD_ID).sort",
        "sort puts padding first",
    ),
    Mutant(
        "tasks-04",
        "torch.randint(min_len, seq_len + 1,",
        "torch.randint(min_len, seq_len,",
        "lengths never reach seq_len",
    ),
    Mutant(
        "tasks-05",
        "torch.randint(1, vocab_size, (batch_size, seq_len)",
        "torch.randint(0, vocab_size, (batch_size, seq_len)",
        "PAD drawn as a real token",
    ),
    Mutant(
        "tasks-06", "targets = targets.masked_fill(~real, PAD_ID)", "targets = targets", "padded targets not set to PAD"
    ),
    Mutant(
        "tasks-07",
        "self.embedding(tokens) * math.sqrt(self.d_model)",
        "self.embedding(tokens)",
        "embedding not scaled by sqrt(d_model)",
    ),
    Mutant(
        "tasks-08",
        "self.embedding(tokens) * math.sqrt(self.d_model)",
        "self.embedding(tokens) * self.d_model",
        "embedding scaled by d_model",
    ),
    Mutant("tasks-09", "std=d_model**-0.5", "std=d_model**0.5", "embedding initialised far too large"),
    Mutant("tasks-10", "if use_positions else None", "if not use_positions else None", "use_positions inverted"),
    Mutant(
        "tasks-11",
        "Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)",
        "Encoder(num_layers, d_model, num_heads, d_ff)",
        "norm_first not passed to the encoder",
    ),
    Mutant(
        "tasks-12",
        "self.encoder(x, mask, need_weights=need_weights)",
        "self.encoder(x, None, need_weights=need_weights)",
        "mask not passed to the encoder",
    ),
    Mutant("tasks-13", "tokens.max(dim=1, keepdim=True)", "tokens.max(dim=0, keepdim=True)", "max over the batch"),
    Mutant(
        "tasks-14",
        "same.sum(dim=-1)",
        "same.sum(dim=-2)",
        "count summed over the other axis",
        equivalent="PAD never equals a real token, so the masked equality matrix is symmetric on real positions, and padded targets are overwritten with PAD",
    ),
]
