"""The seed-sweep benchmarks train exactly what the notebooks train live.

Notebook 10 prints the stored table of `benchmarks/warmup_ablation.py` next to its own `toy_run`, and notebook 14
(section 7) that of `benchmarks/extrapolation.py` after its own 200-step study; each says the benchmark runs the
same training over more seeds (and, for notebook 14, more steps). These run both for a few steps, from the same
seed, and require the same numbers, so that neither can drift from the other unnoticed.
"""

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from benchmarks import extrapolation, warmup_ablation
from benchmarks.common import seed_parser, sweep
from helpers.decoding import greedy_decode
from helpers.induction import repeated_sequences
from helpers.modern import DecoderLM, accuracy_by_position, train_decoder_lm
from helpers.training import BOS, EOS, VOCAB, make_translation_batch, number_to_words, rate, sample_numbers, to_tokens
from helpers.transformer import Transformer, shift_right

ROOT = Path(__file__).resolve().parent.parent


def _notebook_toy_run():
    cells = json.loads((ROOT / "notebooks" / "10_training_and_decoding.ipynb").read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "def toy_run" in "".join(c["source"]))
    source = source[: source.index("\nlive = ")]  # the definitions, not the two full live runs
    namespace = {
        "torch": torch,
        "F": F,
        "Transformer": Transformer,
        "rate": rate,
        "sample_numbers": sample_numbers,
        "make_translation_batch": make_translation_batch,
        "number_to_words": number_to_words,
        "shift_right": shift_right,
        "greedy_decode": greedy_decode,
        "to_tokens": to_tokens,
        "V": len(VOCAB),
        "bos_id": VOCAB.index(BOS),
        "eos_id": VOCAB.index(EOS),
    }
    exec(source, namespace)
    return namespace["toy_run"]


@pytest.mark.parametrize(("schedule", "norm"), [("no warm-up", "post-norm"), ("no decay", "pre-norm")])
def test_the_benchmark_trains_what_the_notebook_trains(schedule, norm):
    toy_run = _notebook_toy_run()
    exact, perplexity = toy_run(seed=3, schedule=schedule, norm_first=warmup_ablation.NORMS[norm], steps=8)
    stored = warmup_ablation.run(3, schedule, norm, steps=8)
    assert (exact, perplexity) == (stored["exact"], stored["perplexity"])
    assert set(warmup_ablation.SCHEDULES) == {"recipe", "no warm-up", "no decay", "constant peak"}


def _notebook_14_runs(steps):
    """Notebook 14, section 7's live study, its 200 steps replaced by ``steps``: the namespace it leaves."""
    cells = json.loads((ROOT / "notebooks" / "14_modern_attention_blocks.ipynb").read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if "SCHEMES = (" in "".join(c["source"]))
    assert source.count("steps=200") == 1
    namespace = {
        "torch": torch,
        "repeated_sequences": repeated_sequences,
        "DecoderLM": DecoderLM,
        "train_decoder_lm": train_decoder_lm,
        "accuracy_by_position": accuracy_by_position,
    }
    exec(source.replace("steps=200", f"steps={steps}"), namespace)
    return namespace


def test_the_extrapolation_benchmark_trains_what_notebook_14_trains():
    notebook = _notebook_14_runs(steps=8)
    for name in ("V", "D_MODEL", "HEADS", "LAYERS", "L", "SCHEMES"):
        assert notebook[name] == getattr(extrapolation, name), name
    assert notebook["spans"] == extrapolation.SPANS
    for positions in extrapolation.SCHEMES:  # seed 0, as the notebook trains
        assert extrapolation.run(0, positions, steps=8)["accuracy"] == notebook["runs"][positions]["by_span"]


def test_the_stored_extrapolation_table_is_the_one_notebook_14_describes():
    record = json.loads(extrapolation.OUT.read_text(encoding="utf-8"))
    assert record["steps"] == extrapolation.STEPS and record["length"] == extrapolation.L
    for positions in extrapolation.SCHEMES:
        assert sorted(r["seed"] for r in record["runs"] if r["positions"] == positions) == list(range(10))
    assert all(r["steps"] == extrapolation.STEPS for r in record["runs"])
    assert all(len(r["accuracy_by_position"]) == 4 * extrapolation.L - 1 for r in record["runs"])
    assert all(set(r["accuracy"]) == set(extrapolation.SPANS) for r in record["runs"])
    notebook = (ROOT / "notebooks" / "14_modern_attention_blocks.ipynb").read_text(encoding="utf-8")
    assert f"{extrapolation.STEPS} steps" in notebook and "benchmarks/extrapolation.py" in notebook


def test_the_200_step_table_holds_what_notebook_14_quotes_from_it():
    """Sections 7 and 8 quote ranges over seeds 0-9 of `extrapolation.py --steps 200`: each quoted range is the stored one."""
    record = json.loads(extrapolation.OUT.with_name("extrapolation_200_steps.json").read_text(encoding="utf-8"))
    assert record["steps"] == 200
    runs = {(r["positions"], r["seed"]): r for r in record["runs"]}
    for positions in (*extrapolation.SCHEMES, "paper"):
        assert sorted(seed for p, seed in runs if p == positions) == list(range(10))

    def span(positions, name):
        values = [runs[positions, seed]["accuracy"][name] for seed in range(10)]
        return f"{min(values):.2f}-{max(values):.2f}"

    def loss(positions, digits):
        values = [runs[positions, seed]["final_loss"] for seed in range(10)]
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"

    notebook = "".join(
        "".join(cell["source"])
        for cell in json.loads((ROOT / "notebooks" / "14_modern_attention_blocks.ipynb").read_text(encoding="utf-8"))[
            "cells"
        ]
    )
    notebook = " ".join(notebook.split())  # line breaks inside a quoted range do not matter
    names = {"rope": "RoPE", "alibi": "ALiBi", "learned": "learned", "none": "none", "sinusoidal": "sinusoidal"}
    for positions, name in names.items():
        assert f"{name} {span(positions, 'L')} / {span(positions, '4L')}" in notebook, positions
    assert f"{loss('rope', 1)} against {loss('paper', 2)}" in notebook


def test_a_sweep_runs_every_setting_for_every_seed_in_order_on_one_thread(capsys):
    """benchmarks.common.sweep: seeds outside, settings inside, each result printed as it comes; the seeds' default
    is 0 .. n-1 and --seeds replaces it."""
    calls = []
    rows, seconds = sweep(
        [3, 7], [("a", 1), ("b", 2)], lambda seed, name, k: calls.append((seed, name, k)) or {"seed": seed}
    )
    assert calls == [(3, "a", 1), (3, "b", 2), (7, "a", 1), (7, "b", 2)] and len(rows) == 4 and seconds >= 0
    assert torch.get_num_threads() == 1 and capsys.readouterr().out.count("{'seed'") == 4
    assert seed_parser("doc", 10).parse_args([]).seeds == list(range(10))
    assert seed_parser("doc", 20).parse_args(["--seeds", "4", "5"]).seeds == [4, 5]


def test_a_timing_benchmark_records_the_command_that_reproduces_it(tmp_path, monkeypatch):
    """benchmarks.common.command names the module form and the thread count that set the timings; write stores JSON."""
    from benchmarks.common import command, write

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert (
        command("decoding", ["--beam", "--rounds", "5"])
        == "OMP_NUM_THREADS=1 python -m benchmarks.decoding --beam --rounds 5"
    )
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert command("attention_memory", []) == "python -m benchmarks.attention_memory"
    write(tmp_path / "results" / "x.json", {"command": "c", "rows": [1, 2]})
    assert json.loads((tmp_path / "results" / "x.json").read_text(encoding="utf-8")) == {"command": "c", "rows": [1, 2]}
