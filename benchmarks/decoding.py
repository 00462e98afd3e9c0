"""Decoding speed with and without the KV cache: tokens per second of greedy search (and beam search).

The model is notebook 10's (Transformer(43, 43, d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.1)),
with the trained weights of notebooks/data/number_words_model.pt when that file exists, else random weights (a note
is printed; the time per token does not depend on the weights). It decodes, in eval mode, a batch of B held-out
numbers (notebook 10's test set, the first B) with helpers.decoding.greedy_decode(..., use_cache=False) and
(..., use_cache=True). eos_id is len(VOCAB), a token the model never emits, so every run generates exactly max_len
tokens per sentence: the lengths in the table are the numbers of tokens generated, not where the model would stop.

Without the cache, step t runs the decoder over all t positions again, so the time per token grows with the length;
with it, step t feeds only the newest token and attends to the keys and values kept from earlier steps. The two runs
of each length alternate in each round (helpers.efficient.interleaved_timings, after one short warm-up decode of
each); the table gives the medians, tokens per second = B * length / time, and ms per token = time / length (one
decoding step, the whole batch). The cached and uncached ids are compared in every run; a difference is an error.

--beam adds a table for beam search (beam size 4, length penalty 0.6), the same comparison. --base adds a table for
a randomly initialised Table-3 base model (d_model 512, 8 heads, 6 layers, d_ff 2048) at B=1, with a vocabulary of
1000 instead of 37000 to save memory (the embeddings and the output projection shrink; the layers do not).

Run from the repository root:
    OMP_NUM_THREADS=1 python -m benchmarks.decoding                 # about 1.5 minutes on one core (2-core machine, busy)
    OMP_NUM_THREADS=1 python -m benchmarks.decoding --beam --base   # about 40 s more
    python -m benchmarks.decoding --lengths 32 64 --rounds 1 --no-save

Writes benchmarks/results/decoding.json (settings, torch version, thread count, one list of rows per table) unless
--no-save. Times depend on the machine, its load and the thread count (printed and stored).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import torch

from benchmarks.common import parse_timing_args, record_header, write
from helpers.decoding import beam_search, greedy_decode
from helpers.efficient import interleaved_timings
from helpers.training import BOS, VOCAB, make_translation_batch, sample_numbers
from helpers.transformer import Transformer

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = ROOT / "notebooks" / "data" / "number_words_model.pt"
OUT = pathlib.Path(__file__).parent / "results" / "decoding.json"


def held_out_batch(B: int) -> dict[str, torch.Tensor]:
    """The first B numbers of notebook 10's held-out test set, as a padded batch."""
    numbers = list(dict.fromkeys(sample_numbers(500, torch.Generator().manual_seed(12345), min_digits=3, max_digits=4)))
    if not 1 <= B <= len(numbers):
        raise ValueError(f"--batch must be between 1 and {len(numbers)}, got {B}")
    return make_translation_batch(numbers[:B])


def bench(model, batch, lengths, rounds, decode) -> list[dict]:
    """Time decode(model, src, max_len, src_mask, use_cache) with and without the cache at each length."""
    src, src_mask = batch["src"], batch["src_mask"]
    B = src.shape[0]
    for use_cache in (False, True):  # warm-up: first calls allocate and initialise
        decode(model, src, 8, src_mask, use_cache)  # main() builds the models with max_len >= 9
    rows = []
    for L in lengths:
        outputs: dict[bool, list] = {False: [], True: []}

        def run(use_cache, L=L, outputs=outputs):
            outputs[use_cache].append(decode(model, src, L, src_mask, use_cache))

        times = interleaved_timings({"no_cache": lambda: run(False), "cache": lambda: run(True)}, rounds, warmup=0)
        for plain, cached in zip(outputs[False], outputs[True], strict=True):
            if plain != cached:
                raise RuntimeError(f"length {L}: the cached decode returned other ids than the uncached one")
            if any(len(ids) != L for ids in plain):
                raise RuntimeError(f"length {L}: a sentence stopped before {L} tokens; eos_id must be unreachable")
        t0, t1 = times["no_cache"], times["cache"]
        rows.append(
            {
                "length": L,
                "batch": B,
                "no_cache_s": t0,
                "cache_s": t1,
                "no_cache_tok_per_s": B * L / t0,
                "cache_tok_per_s": B * L / t1,
                "speedup": t0 / t1,
                "no_cache_ms_per_token": t0 / L * 1e3,
                "cache_ms_per_token": t1 / L * 1e3,
                "ids_identical": True,
            }
        )
    return rows


def print_table(title: str, rows: list[dict]) -> None:
    print(title)
    header = (
        f"{'length':>6} | {'no cache tok/s':>14} | {'cache tok/s':>11} | {'speedup':>7} | "
        f"{'no cache ms/token':>17} | {'cache ms/token':>14}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['length']:>6} | {r['no_cache_tok_per_s']:>14.0f} | {r['cache_tok_per_s']:>11.0f} | "
            f"{r['speedup']:>7.2f} | {r['no_cache_ms_per_token']:>17.2f} | {r['cache_ms_per_token']:>14.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256], help="tokens generated")
    parser.add_argument("--batch", type=int, default=32, help="B held-out numbers (default 32)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, medians (default 3)")
    parser.add_argument("--beam", action="store_true", help="add a beam-search table (beam size 4)")
    parser.add_argument("--beam-lengths", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--beam-batch", type=int, default=8, help="B for beam search (default 8, i.e. 32 beams)")
    parser.add_argument("--base", action="store_true", help="add a table for a random base-size model at B=1")
    parser.add_argument("--base-lengths", type=int, nargs="+", default=[32, 128])
    args, threads = parse_timing_args(parser, OUT)
    bos_id, eos_id, V = VOCAB.index(BOS), len(VOCAB), len(VOCAB)  # eos_id: never emitted, so exactly max_len steps

    def greedy(model, src, max_len, src_mask, use_cache):
        return greedy_decode(model, src, bos_id, eos_id, max_len, src_mask, use_cache=use_cache)

    def beam(model, src, max_len, src_mask, use_cache):
        return beam_search(model, src, bos_id, eos_id, max_len, beam_size=4, src_mask=src_mask, use_cache=use_cache)

    longest = max(
        [8, *args.lengths, *(args.beam_lengths if args.beam else []), *(args.base_lengths if args.base else [])]
    )
    config = {"src_vocab_size": V, "tgt_vocab_size": V, "d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 128}
    config["dropout"] = 0.1
    saved = torch.load(MODEL, map_location="cpu", weights_only=True) if MODEL.exists() else None
    if saved is not None and "state_dict" in saved:  # course/qa/number_words_model.py: {config, state_dict, ...}
        if saved.get("config", config) != config:
            raise ValueError(f"{MODEL} holds a model of config {saved['config']}, not notebook 10's {config}")
        saved = saved["state_dict"]
    torch.manual_seed(0)
    model = Transformer(**config, max_len=longest + 1)
    if saved is not None:
        model.load_state_dict(saved)  # strict: the positional table is not stored, so any max_len loads
        weights = f"trained ({MODEL.relative_to(ROOT)})"
    else:
        weights = "random (no notebooks/data/number_words_model.pt; time per token does not depend on the weights)"
    model.eval()
    print(f"torch {torch.__version__}, {threads} thread(s), CPU, eval mode; notebook-10 model, weights: {weights}")
    print(f"eos_id = {eos_id} (never emitted): every run generates exactly `length` tokens per sentence")

    start = time.perf_counter()
    tables = {}
    tables["greedy"] = bench(model, held_out_batch(args.batch), args.lengths, args.rounds, greedy)
    print_table(f"\ngreedy search, B={args.batch}, median of {args.rounds} interleaved rounds", tables["greedy"])
    if args.beam:
        tables["beam"] = bench(model, held_out_batch(args.beam_batch), args.beam_lengths, args.rounds, beam)
        print_table(
            f"\nbeam search (beam 4), B={args.beam_batch} ({4 * args.beam_batch} hypotheses), tok/s counts the B "
            f"returned outputs, median of {args.rounds} interleaved rounds",
            tables["beam"],
        )
    if args.base:
        torch.manual_seed(0)
        base = Transformer(1000, 1000, max_len=longest + 1).eval()  # Table 3 base: 512, 8 heads, 6 layers, 2048
        params = sum(p.numel() for p in base.parameters())
        tables["base_greedy"] = bench(base, held_out_batch(1), args.base_lengths, args.rounds, greedy)
        print_table(
            f"\nbase-size model (random weights, vocabulary 1000, {params / 1e6:.1f}M parameters), greedy, B=1, "
            f"median of {args.rounds} interleaved rounds",
            tables["base_greedy"],
        )
    runtime = time.perf_counter() - start
    print(f"total {runtime:.0f} s")

    if not args.no_save:
        result = record_header("decoding", sys.argv[1:], threads) | {
            "weights": weights,
            "settings": {
                "model": "Transformer(43, 43, d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.1), eval",
                "batch": args.batch,
                "rounds": args.rounds,
                "eos_id": eos_id,
                "beam": {"beam_size": 4, "length_penalty": 0.6, "batch": args.beam_batch} if args.beam else None,
                "base": {"vocab": 1000, "batch": 1} if args.base else None,
            },
            "runtime_s": round(runtime, 1),
            "tables": tables,
        }
        write(args.out, result)


if __name__ == "__main__":
    main()
