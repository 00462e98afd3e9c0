"""Rebuild notebook 15's language model from scratch: the corpus, the tokenizer and the weights.

Run from the repository root, in the project's environment (about 45 minutes on 2 idle CPU cores; no GPU needed,
nothing downloaded):

    python -m course.qa.train_lm                 # writes notebooks/data/lm/
    python -m course.qa.train_lm --out DIR       # somewhere else, to compare with the shipped files

1. **The corpus** is the Python standard library's own source, as the running Python ships it (PSF licence, whose
   notice is copied beside the data): every ``.py`` file of the standard library outside its tests, IDLE, Tk,
   lib2to3, the encodings' tables and a few generated data files, in sorted order. One file in HELD_OUT_EVERY is
   kept out of training; their text is ``held_out.txt``. A different Python version ships a slightly different
   library: the record keeps the version and the corpus's SHA-256, and the held-out loss lands within a few per cent.
2. **The tokenizer** is byte-level BPE (Sennrich et al., 2016, on bytes as GPT-2 does) trained on the training
   files with the pinned ``tokenizers``: every text encodes, there is no unknown token, and a vocabulary of 4,096
   keeps the embedding small while common words and Python keywords become one token each.
3. **The model** is ``helpers.lm.LanguageModel`` with ``helpers.lm.LMConfig``'s sizes, trained with AdamW on random
   windows of MAX_LEN + 1 tokens, the learning rate warmed up for WARMUP steps, then decayed along a cosine to a
   tenth. Files are joined with an end-of-text token between them.

It prints the losses as it goes and writes ``model.safetensors`` (float16, the tied output matrix stored once),
``tokenizer.json``, ``held_out.txt``, ``ngram_counts.safetensors`` (the training stream's unigram and bigram
counts, for notebook 15's baselines), the PSF licence and ``manifest.json``: each file's SHA-256, the
configuration, the command, the seed, the corpus's size and hash, the time taken, the loss curve and the final
held-out loss of the model as stored (its float16 weights run in float32).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import sys
import sysconfig
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

from helpers.lm import DATA, MANIFEST, LanguageModel, LMConfig

EOT = "<|endoftext|>"  # between two files, id 0
SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "encodings", "pydoc_data"}
SKIP_DIRS |= {"__phello__", "site-packages", "dist-packages", "__pycache__"}
SKIP_FILES = {"_pydecimal.py", "_pyio.py"}  # long duplicates in Python of C modules, which would weigh on the corpus
HELD_OUT_EVERY = 40  # files 7, 47, 87, ... of the sorted list are held out
HELD_OUT_OFFSET = 7
SEED = 0
STEPS = 1200
BATCH = 32
WARMUP = 100
PEAK_LR = 3e-3
WEIGHT_DECAY = 0.1
EVAL_EVERY = 100


def corpus_files(stdlib: Path | None = None) -> list[Path]:
    """The standard library's source files that make the corpus, in sorted order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]) if stdlib is None else stdlib
    found = []
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if set(parts[:-1]) & SKIP_DIRS or path.name in SKIP_FILES or path.name.startswith(("test_", "_sysconfigdata")):
            continue
        found.append(path)
    return found


def split(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """(training files, held-out files)."""
    held = [f for i, f in enumerate(files) if i % HELD_OUT_EVERY == HELD_OUT_OFFSET]
    return [f for f in files if f not in held], held


def read(files: list[Path]) -> list[str]:
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def stream(tokenizer, texts: list[str]) -> torch.Tensor:
    """Every text's ids, each followed by the end-of-text id: one long (N,) int64 tensor."""
    eot = tokenizer.token_to_id(EOT)
    ids = []
    for encoding in tokenizer.encode_batch(texts):
        ids += [*encoding.ids, eot]
    return torch.tensor(ids, dtype=torch.int64)


def ngram_counts(ids: torch.Tensor, vocab_size: int) -> dict[str, torch.Tensor]:
    """The training stream's unigram counts (V,) and its bigram counts as (pairs a * V + b, counts), sorted by pair:
    what notebook 15's baselines are fitted on, without shipping the corpus."""
    unigram = torch.bincount(ids, minlength=vocab_size)
    pairs, counts = torch.unique(ids[:-1] * vocab_size + ids[1:], return_counts=True)
    return {"unigram": unigram.to(torch.int64), "pairs": pairs.to(torch.int32), "counts": counts.to(torch.int32)}


def held_out_windows(ids: torch.Tensor, length: int) -> torch.Tensor:
    """The held-out stream cut into non-overlapping windows of ``length + 1`` tokens: (W, length + 1)."""
    count = (len(ids) - 1) // length
    return torch.stack([ids[i * length : i * length + length + 1] for i in range(count)])


@torch.no_grad()
def held_out_loss(model: LanguageModel, windows: torch.Tensor, batch: int = 64) -> float:
    """Mean next-token cross-entropy (nats) over every position of every window."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(windows), batch):
        chunk = windows[start : start + batch]
        logits, _ = model(chunk[:, :-1])
        total += F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
        count += chunk[:, 1:].numel()
    return total / count


def learning_rate(step: int, steps: int) -> float:
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP)
    return PEAK_LR * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (the budget is 2 cores)")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda where one is lent (never needed)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    config = LMConfig()

    files = corpus_files()
    training, held = split(files)
    train_texts, held_texts = read(training), read(held)
    corpus_bytes = sum(len(t.encode("utf-8")) for t in train_texts + held_texts)
    corpus_hash = sha256_bytes("\0".join(train_texts + held_texts).encode("utf-8"))
    print(
        f"corpus: {len(files)} files of the standard library of Python {platform.python_version()}, "
        f"{corpus_bytes / 1e6:.2f} MB; {len(held)} held out"
    )

    tokenizer = train_tokenizer(train_texts, config.vocab_size)
    assert tokenizer.get_vocab_size() == config.vocab_size and tokenizer.token_to_id(EOT) == 0
    train_ids, held_ids = stream(tokenizer, train_texts), stream(tokenizer, held_texts)
    print(
        f"tokenizer: byte-level BPE, {config.vocab_size} tokens; training stream {len(train_ids):,} tokens, "
        f"held-out {len(held_ids):,} ({corpus_bytes / (len(train_ids) + len(held_ids)):.2f} bytes a token)"
    )
    windows = held_out_windows(held_ids, config.max_len).to(args.device)

    torch.manual_seed(SEED)
    model = LanguageModel(config).to(args.device)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"model: {parameters:,} parameters ({config})")
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimiser = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
        lr=PEAK_LR,
        betas=(0.9, 0.95),
    )
    generator = torch.Generator().manual_seed(SEED)  # the windows drawn
    record = {"step": [], "train_loss": [], "held_out_loss": []}
    recent = []
    for step in range(args.steps):
        for group in optimiser.param_groups:
            group["lr"] = learning_rate(step, args.steps)
        starts = torch.randint(0, len(train_ids) - config.max_len - 1, (BATCH,), generator=generator)
        batch = torch.stack([train_ids[s : s + config.max_len + 1] for s in starts.tolist()]).to(args.device)
        model.train()
        logits, _ = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        recent.append(loss.item())
        if (step + 1) % EVAL_EVERY == 0 or step + 1 == args.steps:
            held_loss = held_out_loss(model, windows)
            record["step"].append(step + 1)
            record["train_loss"].append(round(sum(recent) / len(recent), 4))
            record["held_out_loss"].append(round(held_loss, 4))
            print(
                f"step {step + 1:5d}  train {record['train_loss'][-1]:.3f}  held-out {held_loss:.3f}  "
                f"{time.perf_counter() - started:6.0f} s",
                flush=True,
            )
            recent = []

    args.out.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    model = model.cpu().eval()
    state = {
        k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items() if k != "output.weight"
    }
    save_file(state, str(args.out / "model.safetensors"))
    tokenizer.save(str(args.out / "tokenizer.json"))
    (args.out / "held_out.txt").write_text(f"\n{EOT}\n".join(held_texts), encoding="utf-8", newline="\n")
    save_file(ngram_counts(train_ids, config.vocab_size), str(args.out / "ngram_counts.safetensors"))
    licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    (args.out / "PSF-LICENSE.txt").write_bytes(licence.read_bytes())

    # The model as stored: float16 weights, run in float32; its held-out loss is the number the record keeps
    from helpers.lm import load_pretrained

    names = ["model.safetensors", "tokenizer.json", "held_out.txt", "ngram_counts.safetensors", "PSF-LICENSE.txt"]
    files_hash = {name: sha256_bytes((args.out / name).read_bytes()) for name in names}
    manifest = {"files": files_hash, "config": asdict(config)}
    (args.out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    stored, _ = load_pretrained(args.out)
    final = held_out_loss(stored, windows.cpu())
    elapsed = time.perf_counter() - started
    manifest["training"] = {
        "command": "python -m course.qa.train_lm " + " ".join(argv),
        "seed": SEED,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": args.device,
        "threads": args.threads,
        "corpus": {
            "source": "the Python standard library's .py files (PSF licence), course/qa/train_lm.py's selection",
            "files": len(files),
            "held_out_files": [str(f.relative_to(sysconfig.get_paths()["stdlib"])) for f in held],
            "bytes": corpus_bytes,
            "sha256": corpus_hash,
            "training_tokens": len(train_ids),
            "held_out_tokens": len(held_ids),
        },
        "parameters": parameters,
        "steps": args.steps,
        "batch": BATCH,
        "tokens_seen": args.steps * BATCH * config.max_len,
        "optimiser": {"name": "AdamW", "peak_lr": PEAK_LR, "warmup": WARMUP, "weight_decay": WEIGHT_DECAY},
        "seconds": round(elapsed),
        "curve": record,
        "final_held_out_loss": round(final, 4),
    }
    (args.out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(
        f"stored model: held-out loss {final:.4f} nats (perplexity {math.exp(final):.1f}); "
        f"{elapsed / 60:.1f} min; written to {args.out}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
