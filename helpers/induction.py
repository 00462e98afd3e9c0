"""Induction heads (notebook 13): a repeated-sequence task, a 2-layer attention-only model, and how to find its heads.

An *induction head* (Elhage et al., 2021; Olsson et al., 2022) predicts the next token by looking back to where the
current token occurred before and copying the token that followed it there: "... A B ... A -> B". One attention
layer cannot do that, because a query can match a key only on what that key's position holds itself. With two
layers, a *previous-token head* in layer 0 writes "the token before me was A" into each position, and a layer-1 head
matches its query (A) against that information in the keys. This is *K-composition*: layer 1's keys read layer 0's
output.

- :func:`repeated_sequences` makes the task: a random block repeated, with a random period per row, so that no
  fixed position holds the answer.
- :class:`AttentionOnlyTransformer` is the model: embeddings, causal attention layers with residuals, no
  feed-forward layers. Any head can be removed (``head_mask``), or removed only from what later layers' keys,
  queries or values read (``key_head_mask``, ``query_head_mask``, ``value_head_mask``), to test the circuit.
- :func:`train_induction_model` trains one on the task (:func:`adam_on_repeated_sequences` is the loop, which
  notebook 14 trains with too); :func:`predictable_accuracy` scores it (:func:`next_token_accuracy` scores logits).
- :func:`previous_token_scores` and :func:`induction_scores` find the heads from their attention weights;
  :func:`in_context_score` measures how much the model gains from earlier context (Olsson et al., 2022);
  :func:`composition_scores` and :func:`copying_scores` read composition and copying from the weights of the model
  alone (Elhage et al., 2021).
"""

from __future__ import annotations

import torch
from torch import nn

from helpers.attention import combine_heads, scaled_dot_product_attention, split_heads
from helpers.checks import is_int, positive_int, shape_text
from helpers.masks import causal_mask

__all__ = [
    "AttentionOnlyTransformer",
    "adam_on_repeated_sequences",
    "check_periods",
    "composition_scores",
    "copying_scores",
    "in_context_score",
    "induction_scores",
    "next_token_accuracy",
    "predictable_accuracy",
    "previous_token_scores",
    "repeated_sequences",
    "train_induction_model",
]

# The notebook's defaults, used by train_induction_model.
DEFAULTS = dict(
    vocab_size=32,
    d_model=64,
    num_heads=4,
    length=32,
    min_period=4,
    max_period=16,
    batch_size=64,
    learning_rate=1e-2,
)


def repeated_sequences(
    batch_size: int,
    length: int,
    vocab_size: int,
    min_period: int,
    max_period: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens (B, length) int64, periods (B,) int64)``: each row a random block repeated to ``length``.

    Row ``b`` draws a period ``p`` uniformly from ``min_period .. max_period``, a block of ``p`` tokens uniformly
    from ``0 .. vocab_size - 1``, and repeats the block, the last copy cut at ``length``. So
    ``tokens[b, i] == tokens[b, i - p]`` for every ``i >= p``: from position ``p`` on, each next token has
    appeared before. ``min_period == max_period`` gives every row the same (fixed) period.
    """
    positive_int("batch_size", batch_size)
    positive_int("length", length)
    positive_int("vocab_size", vocab_size)
    positive_int("min_period", min_period)
    positive_int("max_period", max_period)
    if min_period > max_period:
        raise ValueError(f"min_period must be <= max_period, got min_period={min_period}, max_period={max_period}")
    if max_period >= length:
        raise ValueError(
            f"max_period={max_period} must be shorter than the sequence (length={length}): "
            f"a block of {max_period} tokens repeated to {length} would never repeat"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    periods = torch.randint(min_period, max_period + 1, (batch_size,), generator=generator)  # (B,)
    blocks = torch.randint(0, vocab_size, (batch_size, max_period), generator=generator)  # (B, max_period)
    positions = torch.arange(length)  # (length,)
    source = positions[None, :] % periods[:, None]  # (B, length): position i copies block position i mod p
    return blocks.gather(1, source), periods


def _check_head_mask(mask, name: str, num_layers: int, num_heads: int) -> torch.Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != (num_layers, num_heads):
        raise ValueError(
            f"{name} must be a boolean tensor of shape (num_layers, num_heads) = ({num_layers}, {num_heads}), "
            f"False where a head is removed, got {shape_text(mask)}"
        )
    return mask


class AttentionOnlyTransformer(nn.Module):
    """Token and learned position embeddings, ``num_layers`` causal attention layers with residuals, an unembedding.

    No feed-forward layers and no normalisation, as in Elhage et al. (2021): the residual stream is the embedding
    plus the sum of every head's output, so removing a head removes one term of that sum.

    ``forward(tokens (B, n), head_mask=None) -> (logits (B, n, vocab_size), [weights (B, h, n, n) per layer])``.
    The logits at position ``i`` predict token ``i + 1``.

    Each mask is an optional boolean ``(num_layers, num_heads)``; ``False`` removes that head's output:

    - ``head_mask``: from the residual stream (an ablation: nothing after the head sees it);
    - ``key_head_mask``, ``query_head_mask``, ``value_head_mask``: only from what later layers' keys (queries,
      values) are computed from, while everything else still reads it. Removing a layer-0 head from the keys
      alone tests K-composition.
    """

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, max_len: int):
        super().__init__()
        self.vocab_size = positive_int("vocab_size", vocab_size)
        self.d_model = positive_int("d_model", d_model)
        self.num_heads = positive_int("num_heads", num_heads)
        self.num_layers = positive_int("num_layers", num_layers)
        self.max_len = positive_int("max_len", max_len)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            nn.ModuleDict({name: nn.Linear(d_model, d_model) for name in ("query", "key", "value", "output")})
            for _ in range(num_layers)
        )
        self.unembedding = nn.Linear(d_model, vocab_size)
        for table in (self.embedding, self.position):
            nn.init.normal_(table.weight, std=d_model**-0.5)

    def head_outputs(self, layer: int, z: torch.Tensor) -> torch.Tensor:
        """``z (B, h, n, d_k)`` -> each head's own term of the layer's output, ``(B, h, n, d_model)``.

        The output projection W^O of §3.2.2 acts on the concatenated heads; split by rows, it is a sum of one
        ``(d_k, d_model)`` block per head, so each head adds ``z_h W^O_h`` to the residual stream. The bias is
        added once per layer, outside this sum.
        """
        d_k = self.d_model // self.num_heads
        weight = self.layers[layer]["output"].weight  # (d_model, h d_k): nn.Linear computes z @ weight.T
        blocks = weight.T.reshape(self.num_heads, d_k, self.d_model)  # (h, d_k, d_model)
        return torch.einsum("bhnk,hkd->bhnd", z, blocks)

    def forward(
        self,
        tokens: torch.Tensor,
        head_mask: torch.Tensor | None = None,
        key_head_mask: torch.Tensor | None = None,
        query_head_mask: torch.Tensor | None = None,
        value_head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
            raise ValueError(f"tokens must be an integer tensor of shape (B, n), got {shape_text(tokens)}")
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds max_len={self.max_len}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(
                f"tokens must lie in 0 .. {self.vocab_size - 1} (vocab_size={self.vocab_size}), "
                f"got values from {int(tokens.min())} to {int(tokens.max())}"
            )
        masks = {
            name: _check_head_mask(mask, name, self.num_layers, self.num_heads)
            for name, mask in (
                ("head_mask", head_mask),
                ("key_head_mask", key_head_mask),
                ("query_head_mask", query_head_mask),
                ("value_head_mask", value_head_mask),
            )
        }
        embedded = self.embedding(tokens) + self.position(torch.arange(n, device=tokens.device))  # (B, n, d_model)
        mask = causal_mask(n, device=tokens.device)  # (n, n), True = may attend
        # What each of q, k, v (and the unembedding, "stream") reads: the embedding plus the kept heads' outputs.
        # With no path mask all four read the same stream, computed once.
        paths = ("key", "query", "value")
        has_paths = any(masks[f"{path}_head_mask"] is not None for path in paths)
        names = ("stream", *paths) if has_paths else ("stream",)
        reads = dict.fromkeys(names, embedded)
        weights = []
        for layer, projections in enumerate(self.layers):
            q, k, v = (
                split_heads(projections[path](reads.get(path, reads["stream"])), self.num_heads)  # (B, h, n, d_k)
                for path in ("query", "key", "value")
            )
            z, w = scaled_dot_product_attention(q, k, v, mask)  # (B, h, n, d_k), (B, h, n, n)
            weights.append(w)
            for name in names:
                # W^O acts on the concatenated heads, so zeroing head h's z removes exactly its term z_h W^O_h
                # (head_outputs); the bias stays.
                kept = torch.ones(self.num_heads, dtype=z.dtype, device=z.device)
                for which in ("head_mask", f"{name}_head_mask"):
                    if masks.get(which) is not None:
                        kept = kept * masks[which][layer].to(z.dtype)
                reads[name] = reads[name] + projections["output"](combine_heads(z * kept[None, :, None, None]))
        return self.unembedding(reads["stream"]), weights


def check_periods(periods, batch: int, n: int) -> torch.Tensor:
    """``periods`` if it is an integer ``(batch,)`` tensor of periods in ``1 .. n - 1``; otherwise a ValueError."""
    if not isinstance(periods, torch.Tensor) or periods.shape != (batch,) or periods.is_floating_point():
        raise ValueError(f"periods must be an integer tensor of shape (B,) = ({batch},), got {shape_text(periods)}")
    if batch and (int(periods.min()) < 1 or int(periods.max()) >= n):
        raise ValueError(
            f"each period must lie in 1 .. {n - 1} for sequences of length {n} (a longer one never repeats), "
            f"got periods from {int(periods.min())} to {int(periods.max())}"
        )
    return periods


def train_induction_model(
    num_layers: int = 2,
    seed: int = 0,
    steps: int = 200,
    *,
    vocab_size: int = DEFAULTS["vocab_size"],
    d_model: int = DEFAULTS["d_model"],
    num_heads: int = DEFAULTS["num_heads"],
    length: int = DEFAULTS["length"],
    min_period: int = DEFAULTS["min_period"],
    max_period: int = DEFAULTS["max_period"],
    batch_size: int = DEFAULTS["batch_size"],
    learning_rate: float = DEFAULTS["learning_rate"],
    callback=None,
    every: int = 1,
) -> tuple[AttentionOnlyTransformer, list[float]]:
    """Train an :class:`AttentionOnlyTransformer` on :func:`repeated_sequences`; return ``(model, losses)``.

    Each step draws a fresh batch (so the model never sees the same sequence twice) and takes one Adam step on the
    cross-entropy of every next token, predictable or not. ``seed`` fixes the initial weights and the batches.
    ``losses`` holds each step's loss. The model is returned in ``eval()`` mode.

    ``callback(step, model)``, if given, watches the training: it is called under ``torch.no_grad()`` before the
    first step (``step == 0``) and after every ``every`` steps (``step`` = the number of steps taken). It changes
    nothing: the losses and the weights are those of a run without it.
    """
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    positive_int("steps", steps)
    positive_int("every", every)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {type(callback).__name__}")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = AttentionOnlyTransformer(vocab_size, d_model, num_heads, num_layers, max_len=length)
    losses = adam_on_repeated_sequences(
        model,
        steps,
        generator,
        length=length,
        min_period=min_period,
        max_period=max_period,
        batch_size=batch_size,
        learning_rate=learning_rate,
        callback=callback,
        every=every,
    )
    return model.eval(), losses


def adam_on_repeated_sequences(
    model: nn.Module,
    steps: int,
    generator: torch.Generator,
    *,
    length: int,
    min_period: int,
    max_period: int,
    batch_size: int,
    learning_rate: float,
    callback=None,
    every: int = 1,
) -> list[float]:
    """The training loop of notebooks 13 and 14: ``steps`` Adam steps on fresh batches; return each step's loss.

    Each step draws :func:`repeated_sequences` from ``generator`` over the model's vocabulary
    (``model.vocab_size``) and takes one Adam step on the cross-entropy of every next token: the logits at
    position ``i`` against token ``i + 1``. The caller checks the arguments and sets the model's mode.
    ``callback(step, model)``, if given, is called under ``torch.no_grad()`` at step 0 and after every ``every``
    steps (:func:`train_induction_model`).
    """
    optimiser = torch.optim.Adam(model.parameters(), lr=learning_rate)
    losses = []

    def watch(step):
        if callback is not None and step % every == 0:
            with torch.no_grad():
                callback(step, model)

    watch(0)
    for step in range(1, steps + 1):
        tokens, _ = repeated_sequences(batch_size, length, model.vocab_size, min_period, max_period, generator)
        logits, _ = model(tokens)  # (B, n, V): position i predicts token i + 1
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, model.vocab_size), tokens[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
        watch(step)
    return losses


def predictable_positions(periods: torch.Tensor, n: int) -> torch.Tensor:
    """``(B, n - 1)`` bool: True at the query positions ``i`` whose next token was seen before (``i >= period``).

    The logits at ``i`` predict token ``i + 1 = token (i + 1 - period)``. At ``i >= period`` the current token has
    occurred before, so an induction head can look up what followed it; before that the next token is a fresh draw.
    """
    return torch.arange(n - 1, device=periods.device)[None, :] >= periods[:, None]


def next_token_accuracy(logits: torch.Tensor, tokens: torch.Tensor, periods: torch.Tensor) -> torch.Tensor:
    """A 0-dim tensor: how often ``logits (B, n, V)`` predict the next token at the predictable positions.

    The logits at query ``i`` predict token ``i + 1``; only the queries ``i >= period`` of each row count (the
    current token occurred before), pooled over every row. :func:`predictable_accuracy` runs a model first.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(f"tokens must be an integer tensor of shape (B, n), got {shape_text(tokens)}")
    B, n = tokens.shape
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != (B, n):
        raise ValueError(f"logits must have shape (B, n, V) = ({B}, {n}, V) like tokens, got {shape_text(logits)}")
    check_periods(periods, B, n)
    correct = logits[:, :-1].argmax(-1) == tokens[:, 1:]  # (B, n - 1): the logits at i against token i + 1
    return correct[predictable_positions(periods, n)].float().mean()


def in_context_score(logits: torch.Tensor, tokens: torch.Tensor, early: int = 4, late: int = 24) -> torch.Tensor:
    """A 0-dim tensor: the loss late in the context minus the loss early in it (Olsson et al., 2022).

    The cross-entropy of the logits at the queries ``i >= late`` (against token ``i + 1``) minus that of the queries
    ``i < early``, each a mean over rows and queries. Negative when the model predicts better with more context;
    Olsson et al. take the 500th token's loss minus the 50th's. With periods from 4 to 16 on 32 positions, the
    defaults compare queries whose next token was never seen with queries whose next token always was.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(f"tokens must be an integer tensor of shape (B, n), got {shape_text(tokens)}")
    B, n = tokens.shape
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != (B, n):
        raise ValueError(f"logits must have shape (B, n, V) = ({B}, {n}, V) like tokens, got {shape_text(logits)}")
    if not (is_int(early) and is_int(late) and 1 <= early <= late <= n - 2):
        raise ValueError(f"need 1 <= early <= late <= n - 2 = {n - 2}, got early={early}, late={late}")
    losses = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, n-1)
    return losses[:, late:].mean() - losses[:, :early].mean()


@torch.no_grad()
def predictable_accuracy(model: nn.Module, tokens: torch.Tensor, periods: torch.Tensor, **masks) -> float:
    """Next-token accuracy over the predictable positions (query position ``i >= period``), as a float in [0, 1].

    ``masks`` go to the model's forward (``head_mask=...``, ``key_head_mask=...``) to score an ablated model.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(f"tokens must be an integer tensor of shape (B, n), got {shape_text(tokens)}")
    B, n = tokens.shape
    check_periods(periods, B, n)
    logits, _ = model(tokens, **masks)
    return next_token_accuracy(logits, tokens, periods).item()


def _check_weights(weights) -> torch.Tensor:
    if not isinstance(weights, torch.Tensor) or weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be one layer's attention, shape (B, h, n, n), got {shape_text(weights)}")
    if weights.shape[-1] < 2:
        raise ValueError(f"weights must cover at least 2 positions, got shape {tuple(weights.shape)}")
    return weights


def previous_token_scores(weights: torch.Tensor) -> torch.Tensor:
    """``(h,)``: each head's mean attention weight from position ``i`` on position ``i - 1`` (over ``i >= 1``).

    1 for a head that always looks one step back; ``1 / (i + 1)`` at position ``i`` for a uniform causal head.
    """
    weights = _check_weights(weights)
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # the diagonal just below the main one


def induction_scores(weights: torch.Tensor, periods: torch.Tensor, every_copy: bool = False) -> torch.Tensor:
    """``(h,)``: each head's mean weight from a position ``i >= period`` on ``i - period + 1``.

    ``i - period`` held the same token as ``i``; ``i - period + 1`` holds the token that followed it, the answer.
    A head that attends there is the "stripe one period back, plus one" of an induction head.

    ``every_copy=True`` counts the weight on the token after *every* earlier copy, ``i - k * period + 1`` for
    ``k = 1, 2, ...``: from the third copy of the block on, each earlier copy is followed by the same answer, and an
    induction head may spread its weight over all of them.
    """
    weights = _check_weights(weights)
    B, h, n, _ = weights.shape
    periods = check_periods(periods, B, n)
    queries = torch.arange(n, device=weights.device)  # (n,)
    valid = queries[None, :] >= periods[:, None]  # (B, n)
    if every_copy:
        back = queries[:, None] + 1 - queries[None, :]  # (n, n): i + 1 - j, how far key j lies behind query i + 1
        p = periods[:, None, None]
        after = queries[None, None, :] >= 1  # position 0 follows no token
        on = (back[None] >= p) & (back[None] % p == 0) & after  # (B, n, n): key j follows an earlier copy of token i
        picked = (weights * on[:, None].to(weights.dtype)).sum(-1)  # (B, h, n)
    else:
        keys = (queries[None, :] - periods[:, None] + 1).clamp(min=0)  # (B, n): the position after the earlier copy
        picked = weights.gather(-1, keys[:, None, :, None].expand(B, h, n, 1)).squeeze(-1)  # (B, h, n)
    valid = valid[:, None, :].to(picked.dtype)
    return (picked * valid).sum(dim=(0, 2)) / valid.sum(dim=(0, 2)).clamp(min=1)


def _head_matrices(model: AttentionOnlyTransformer, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W_QK (h, d, d), W_OV (h, d, d))`` of one layer, in the row-vector convention of the series.

    Head ``h`` scores query ``x_q`` against key ``x_k`` by ``x_q W_QK x_k^T`` (up to biases and the scale) and adds
    ``x W_OV`` to the residual stream for a key ``x`` it attends to.
    """
    d, h = model.d_model, model.num_heads
    d_k = d // h
    projections = model.layers[layer]

    def per_head(name):  # (h, d_model, d_k): x @ this gives head h's query, key or value
        return projections[name].weight.T.reshape(d, h, d_k).permute(1, 0, 2)

    w_q, w_k, w_v = per_head("query"), per_head("key"), per_head("value")
    w_o = projections["output"].weight.T.reshape(h, d_k, d)  # (h, d_k, d_model)
    return w_q @ w_k.transpose(1, 2), w_v @ w_o


@torch.no_grad()
def composition_scores(model: AttentionOnlyTransformer, kind: str = "key") -> torch.Tensor:
    """``(h0, h1)``: how much each layer-1 head's ``kind`` input reads each layer-0 head's output (Elhage et al.).

    The composition score of Elhage et al. (2021) is ``||A B||_F / (||A||_F ||B||_F)``, between 0 and 1: how much
    of what one matrix writes the other reads. For layer-0 head ``a`` and layer-1 head ``b``:

    - ``"key"``: ``A = W_QK^b``, ``B = (W_OV^a)^T``, layer 1's keys read head ``a``'s output;
    - ``"query"``: ``A = W_OV^a``, ``B = W_QK^b``;
    - ``"value"``: ``A = W_OV^a``, ``B = W_OV^b``.

    Random matrices of these shapes score about ``1 / sqrt(d_model)`` times a small factor; compare against such a
    baseline rather than against 0.
    """
    if not isinstance(model, AttentionOnlyTransformer) or model.num_layers < 2:
        raise ValueError("composition_scores needs an AttentionOnlyTransformer with at least 2 layers")
    if kind not in ("key", "query", "value"):
        raise ValueError(f"kind must be 'key', 'query' or 'value', got {kind!r}")
    _, ov0 = _head_matrices(model, 0)
    qk1, ov1 = _head_matrices(model, 1)
    h = model.num_heads
    scores = torch.empty(h, h)
    for a in range(h):
        for b in range(h):
            if kind == "key":
                first, second = qk1[b], ov0[a].T
            elif kind == "query":
                first, second = ov0[a], qk1[b]
            else:
                first, second = ov0[a], ov1[b]
            scores[a, b] = torch.linalg.matrix_norm(first @ second) / (
                torch.linalg.matrix_norm(first) * torch.linalg.matrix_norm(second)
            )
    return scores


@torch.no_grad()
def copying_scores(model: AttentionOnlyTransformer, layer: int) -> torch.Tensor:
    """``(h,)``: each head's copying score, ``sum(eigenvalues) / sum(|eigenvalues|)`` of its OV circuit (Elhage et al.).

    The OV circuit from token to logits is ``M = E W_OV U^T`` (``(V, V)``): row ``a`` is what attending to a key
    holding token ``a`` adds to each token's logit, through the token embedding ``E``, the head's ``W_OV`` and the
    unembedding ``U``. A head that copies raises the logit of the token it attends to: ``M`` has mostly positive
    eigenvalues and the score is near 1. Near -1 the head lowers it; a random ``M`` scores near 0. Elhage et al.
    (2021) read the eigenvalues rather than the diagonal alone because a map can copy in another basis.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise ValueError("copying_scores needs an AttentionOnlyTransformer")
    if not is_int(layer) or not 0 <= layer < model.num_layers:
        raise ValueError(f"layer must be an integer in 0 .. {model.num_layers - 1}, got {layer!r}")
    _, ov = _head_matrices(model, layer)  # (h, d, d)
    circuit = model.embedding.weight @ ov @ model.unembedding.weight.T  # (h, V, V): token -> logits
    eigenvalues = torch.linalg.eigvals(circuit.double())  # (h, V), complex
    return (eigenvalues.sum(-1).real / eigenvalues.abs().sum(-1)).float()
