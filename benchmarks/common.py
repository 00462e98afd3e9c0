"""What the seed-sweep benchmarks share: the held-out perplexity they score, and the record they store.

Each benchmark runs from the repository root as `python -m benchmarks.NAME` and imports this module as `benchmarks.common`.
A stored result names the command that made it and the machine it ran on (torch version, the CPU's kernel
level, threads): a trained number is a fact about that run only, and the notebooks assert the table's own
properties, never its digits (CONTRIBUTING, "Determinism").
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from helpers.training import make_translation_batch, sample_numbers
from helpers.transformer import shift_right


def held_out_perplexity(model, batch: dict, bos_id: int) -> float:
    """exp of the mean cross-entropy per target token, teacher-forced, padding ignored (model left in eval mode)."""
    model.eval()
    with torch.no_grad():
        logits = model(batch["src"], shift_right(batch["tgt"], bos_id), batch["src_mask"])
        nll = F.cross_entropy(logits.flatten(0, 1), batch["tgt"].flatten(), ignore_index=0)
    return nll.exp().item()


def section_10_start(seed: int) -> tuple[list[int], dict, torch.Generator]:
    """What a run of notebook 10's section 10 starts from: its 200 held-out 3-digit numbers and their batch (fixed
    data, not a seed to vary), torch's global generator seeded with ``seed`` (the model's initial weights), and a
    generator for the training batches seeded likewise."""
    test = sample_numbers(200, torch.Generator().manual_seed(999), min_digits=3, max_digits=3)
    test_batch = make_translation_batch(test)
    torch.manual_seed(seed)
    return test, test_batch, torch.Generator().manual_seed(seed)


def train_section_10(model, steps: int, generator: torch.Generator, held_out: list[int], bos_id: int, lr) -> None:
    """Notebook 10's section-10 training of ``model``: ``steps`` Adam steps (the paper's betas and eps) at the rate
    ``lr(step, ...)`` gives for steps counted from 1, on fresh batches of 64 numbers up to 3 digits (none of
    ``held_out``), label smoothing 0.1."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr(s + 1))  # LambdaLR counts from 0
    for _ in range(steps):
        batch = make_translation_batch(sample_numbers(64, generator, exclude=frozenset(held_out), max_digits=3))
        model.train()
        logits = model(batch["src"], shift_right(batch["tgt"], bos_id), batch["src_mask"])
        loss = F.cross_entropy(logits.flatten(0, 1), batch["tgt"].flatten(), ignore_index=0, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


def seed_parser(doc: str, seeds: int) -> argparse.ArgumentParser:
    """The command line of a seed sweep: its docstring as the help, and ``--seeds`` (default ``0 .. seeds - 1``)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=list(range(seeds)), help=f"seeds (default: 0-{seeds - 1})"
    )
    return parser


def sweep(
    seeds: list[int], settings: list[tuple], run: Callable[..., dict], show=lambda row: row
) -> tuple[list[dict], float]:
    """``run(seed, *setting)`` for every seed, then every setting, on one thread, each result printed as it comes
    (through ``show``); returns the results in that order and the seconds they took."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = []
    for seed in seeds:
        for setting in settings:
            rows.append(run(seed, *setting))
            print(show(rows[-1]), flush=True)
    return rows, time.perf_counter() - start


def sweep_and_save(doc: str, seeds: int, settings: list[tuple], run, summary, out: pathlib.Path, **fields) -> None:
    """A whole seed-sweep benchmark: its command line (``seed_parser``), the runs (``sweep``), ``summary(runs)``
    printed, and the record saved to ``out`` (``save``, with ``fields``)."""
    args = seed_parser(doc, seeds).parse_args()
    runs, seconds = sweep(args.seeds, settings, run)
    print(f"\n{summary(runs)}\n\n{len(runs)} runs in {seconds:.0f} s")
    save(out, out.stem, args.seeds, runs, seconds, **fields)


def save(out: pathlib.Path, script: str, seeds: list[int], runs: list[dict], seconds: float, **fields) -> None:
    """Write ``runs`` to ``out`` as JSON, with the command and the machine that made them."""
    record = {
        "command": f"python -m benchmarks.{script} --seeds " + " ".join(map(str, seeds)),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        **fields,
        "runtime_s": round(seconds, 1),
        "runs": runs,
    }
    write(out, record)


def write(out: pathlib.Path, record: dict) -> None:
    """Write a benchmark's record to ``out`` as indented JSON, and say where."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("wrote", out)


def parse_timing_args(parser: argparse.ArgumentParser, out: pathlib.Path) -> tuple[argparse.Namespace, int]:
    """A timing benchmark's command line, with ``--threads`` (set before timing), ``--out`` and ``--no-save`` added;
    returns the arguments and the number of threads torch uses."""
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--out", type=pathlib.Path, default=out)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args, torch.get_num_threads()


def record_header(name: str, arguments: list[str], threads: int) -> dict:
    """What a timing benchmark's record opens with: the command that made it, torch's version and the threads."""
    return {"command": command(name, arguments), "torch": torch.__version__, "threads": threads}


def command(name: str, arguments: list[str]) -> str:
    """The command that ran benchmark ``name`` with ``arguments``, led by ``OMP_NUM_THREADS=k`` when that variable is
    set (it sets torch's thread count, so a timing depends on it)."""
    threads = os.environ.get("OMP_NUM_THREADS")
    return (f"OMP_NUM_THREADS={threads} " if threads else "") + " ".join(
        ["python -m", f"benchmarks.{name}", *arguments]
    )
