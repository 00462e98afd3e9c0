"""The seed-sweep benchmarks train exactly what the notebooks train live.

Notebook 10 prints the stored table of `benchmarks/warmup_ablation.py` next to its own `toy_run`, and notebook 14
(section 7) that of `benchmarks/extrapolation.py` after its own 200-step study; each says the benchmark runs the
same training over more seeds (and, for notebook 14, more steps). These run both for a few steps, from the same
seed, and require the same numbers, so that neither can drift from the other unnoticed.
"""

import json
import math
import re
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
        "math": math,
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


def _notebook_14_text() -> str:
    cells = json.loads((ROOT / "notebooks" / "14_modern_attention_blocks.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return " ".join(text.split())  # line breaks inside a quoted range do not matter


def _stored(name):
    record = json.loads(extrapolation.OUT.with_name(name).read_text(encoding="utf-8"))
    return record, {(r["positions"], r["seed"]): r for r in record["runs"]}


def _range(values, digits=2):
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def test_the_200_step_table_holds_what_notebook_14_quotes_from_it():
    """Section 7's prose, its optional part and section 8 quote ranges over seeds 0-9 of `extrapolation.py --steps
    200` (the notebook prints the table itself; the prose must say what it shows): each quoted number is the stored
    one."""
    record, runs = _stored("extrapolation_200_steps.json")
    assert record["steps"] == 200
    for positions in (*extrapolation.SCHEMES, "paper", "paper-rope"):
        assert sorted(seed for p, seed in runs if p == positions) == list(range(10))

    def acc(positions, span):
        return [runs[positions, seed]["accuracy"][span] for seed in range(10)]

    text = _notebook_14_text()
    quoted = {
        "learned at L": f"({_range(acc('learned', 'L'))} at $L$)",
        "learned at 4L": f"at $4L$ ({_range(acc('learned', '4L'))})",
        "ALiBi": f"at a lower level ({_range(acc('alibi', 'L'))})",
        "sinusoids": f"slower to learn ({_range(acc('sinusoidal', 'L'))} at $L$)",
    }
    learned_rope = [s for s in range(10) if runs["rope", s]["accuracy"]["L"] > 0.8]  # RoPE learned the task
    assert (
        f"learns the task on {['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'][len(learned_rope)]} seeds of ten"
        in text
    )
    ntk = [runs["rope", s]["extensions"]["NTK x4"]["4L"] for s in learned_rope]
    plain = [runs["rope", s]["accuracy"]["4L"] for s in learned_rope]
    quoted["NTK after 200 steps"] = f"({_range(ntk)} at $4L$ against {_range(plain)} as trained)"
    for what, phrase in quoted.items():
        assert phrase in text, (what, phrase)

    def effect(a, b):  # the 2x2 of section 8: mean change at L, seed by seed
        return sum(x - y for x, y in zip(acc(*a), acc(*b), strict=True)) / 10

    assert f"by {effect(('paper-rope', 'L'), ('paper', 'L')):.2f} at $L$ on average for the 2017 block" in text
    assert f"by {effect(('rope', 'L'), ('sinusoidal', 'L')):.2f} for the Llama-style one" in text


def test_the_1000_step_table_holds_what_notebook_14_quotes_from_it():
    """The ranges that section 7 quotes from the stored 1000-step benchmark, and the NTK-aware bound it states."""
    record, runs = _stored("extrapolation.json")
    assert record["steps"] == extrapolation.STEPS == 1000

    def acc(positions, span):
        return [runs[positions, seed]["accuracy"][span] for seed in range(10)]

    def drop(positions):
        return [a - b for a, b in zip(acc(positions, "L"), acc(positions, "4L"), strict=True)]

    text = _notebook_14_text()
    assert re.search(r"they lose (\S+) to (\S+) and (\S+) to (\S+)", text).groups() == tuple(
        f"{v:.2f}"
        for v in (min(drop("sinusoidal")), max(drop("sinusoidal")), min(drop("learned")), max(drop("learned")))
    )
    assert f"({_range(acc('sinusoidal', 'L'))} and {_range(acc('learned', 'L'))} at $L$)" in text
    gain = [-d for d in drop("alibi")]
    assert (
        f"ALiBi is {min(gain):.2f} to {max(gain):.2f} higher at $4L$ than at $L$ ({_range(acc('alibi', '4L'))} at $4L$)"
        in text
    )
    assert f"the best at $L$ ({_range(acc('rope', 'L'))}), falls to {_range(acc('rope', '4L'))}" in text
    ntk = [abs(runs["rope", s]["extensions"]["NTK x4"]["4L"] - runs["rope", s]["accuracy"]["4L"]) for s in range(10)]
    assert "within 0.07 of the model as trained, on every seed" in text and max(ntk) < 0.07


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
