"""Mutants of `helpers/encoder.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/encoder.py"
TESTS = ["tests/helpers/test_encoder.py", "tests/helpers/test_efficient.py"]

MUTANTS = [
    Mutant(
        "encoder-01", "pe[:, 0::2] = torch.sin(angle)", "pe[:, 0::2] = torch.cos(angle)", "cos in the even dimensions"
    ),
    Mutant(
        "encoder-02", "pe[:, 1::2] = torch.cos(angle)", "pe[:, 1::2] = torch.sin(angle)", "sin in the odd dimensions"
    ),
    Mutant("encoder-03", "angle = position / 10000.0 **", "angle = position / 1000.0 **", "base 1000 instead of 10000"),
    Mutant(
        "encoder-04",
        "torch.arange(0, d_model, 2, dtype=torch.float64)",
        "torch.arange(0, d_model // 2, dtype=torch.float64)",
        "exponent i / d_model instead of 2i / d_model",
    ),
    Mutant(
        "encoder-05",
        "angle = position / 10000.0 **",
        "angle = position * 10000.0 **",
        "frequency multiplied, not divided",
    ),
    Mutant(
        "encoder-06",
        "x + self.pe[start : start + n])",
        "x + self.pe[start + 1 : start + n + 1])",
        "positions start at 1",
    ),
    Mutant(
        "encoder-07",
        "return self.dropout(x + self.pe[start : start + n])",
        "return x + self.pe[start : start + n]",
        "positional-encoding dropout dropped",
    ),
    Mutant(
        "encoder-08", 'ACTIVATIONS = {"relu": torch.relu,', 'ACTIVATIONS = {"relu": F.gelu,', "GELU instead of ReLU"
    ),
    Mutant(
        "encoder-09",
        "return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))",
        "return self.dropout(self.linear2(ACTIVATIONS[self.activation](self.linear1(x))))",
        "feed-forward dropout after linear2",
    ),
    Mutant(
        "encoder-10",
        "return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))",
        "return self.linear2(ACTIVATIONS[self.activation](self.dropout(self.linear1(x))))",
        "feed-forward dropout before the ReLU",
        equivalent="relu(dropout(z)) == dropout(relu(z)): dropout zeroes or scales by 1/(1-p) > 0, and the mask is drawn on a tensor of the same shape in the same order",
    ),
    Mutant(
        "encoder-11",
        "d_model, num_heads, dropout=dropout, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads",
        "d_model, num_heads, d_k=d_k, d_v=d_v, num_kv_heads=num_kv_heads",
        "attention dropout not passed to the block's attention",
    ),
    Mutant(
        "encoder-12", "x = self.norm1(x + attended)", "x = self.norm1(attended)", "post-norm attention residual dropped"
    ),
    Mutant(
        "encoder-13",
        "x = self.norm2(x + self.dropout2(self.feed_forward(x)))",
        "x = self.norm2(self.dropout2(self.feed_forward(x)))",
        "post-norm feed-forward residual dropped",
    ),
    Mutant(
        "encoder-14", "x = self.norm1(x + attended)", "x = self.norm2(x + attended)", "post-norm norm1/norm2 swapped"
    ),
    Mutant(
        "encoder-15",
        "self.feed_forward(self.norm2(x))",
        "self.feed_forward(self.norm1(x))",
        "pre-norm uses norm1 twice",
    ),
    Mutant("encoder-16", "x = x + attended", "x = attended", "pre-norm attention residual dropped"),
    Mutant("encoder-17", "if self.norm_first:", "if not self.norm_first:", "norm_first inverted"),
    Mutant(
        "encoder-18",
        "return self.dropout1(out), weights",
        "return out, weights",
        "residual dropout after attention dropped",
    ),
    Mutant(
        "encoder-19",
        "x = x + self.dropout2(self.feed_forward(self.norm2(x)))",
        "x = x + self.feed_forward(self.norm2(x))",
        "pre-norm residual dropout after the feed-forward dropped",
    ),
    Mutant(
        "encoder-20",
        "nn.LayerNorm(d_model, eps=eps) if norm_first else None",
        "nn.LayerNorm(d_model, eps=eps) if not norm_first else None",
        "final LayerNorm on the wrong variant",
    ),
    Mutant(
        "encoder-21",
        "x, weights = layer(x, mask, need_weights=need_weights)",
        "x, weights = layer(x, None, need_weights=need_weights)",
        "mask not passed down the stack",
    ),
    Mutant(
        "encoder-22",
        "norm_first=norm_first,\n                d_k=d_k,",
        "d_k=d_k,",
        "norm_first not passed to the stack's blocks",
    ),
    Mutant(
        "encoder-23",
        "self._attend(self.norm1(x), mask, need_weights)",
        "self._attend(x, mask, need_weights)",
        "pre-norm attends to the un-normalised input",
    ),
    Mutant(
        "encoder-24",
        "mask=mask, need_weights=need_weights)",
        "mask=mask, need_weights=True)",
        "need_weights ignored in the block",
    ),
    Mutant("encoder-25", "x = self.norm(x)", "x = x", "final pre-norm LayerNorm not applied"),
    Mutant(
        "encoder-26",
        "angle = position / 10000.0 ** (two_i / d_model)",
        "angle = position / 10000.0 ** (two_i / (d_model - 1))",
        "exponent divided by d_model - 1",
    ),
    Mutant("encoder-27", "self.pe[start : start + n])  #", "self.pe[:n])  #", "positional encoding ignores start"),
]
