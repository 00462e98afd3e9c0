"""Length extrapolation of five position schemes, trained five times longer than notebook 14, over seeds 0-9.

Trains the five Llama-style models of notebook 14, section 7 (RMSNorm pre-norm, SwiGLU d_ff 96, 4 query heads and
2 key/value heads, d_model 32, 2 layers, positions sinusoidal, learned, rope, alibi or none) exactly as the notebook
does, with `helpers.modern.train_decoder_lm` on notebook 13's repeated sequences at length L = 32 (learning rate
0.01, batches of 32), but for 1000 steps instead of 200: at 200 steps sinusoidal, learned and no positions have not
learned the task, so their curves say nothing about extrapolation. Each run is tested as the notebook tests it, on 64
sequences of 4L = 128 tokens (generator seed 1000 + seed, so seed 0 is the notebook's test set), counting only the
predictable positions. For each run it records the accuracy on the notebook's three spans of query positions (up
to L, from L to 2L, from 2L to 4L), the accuracy at each query position (3 decimals, for a figure), the final
training loss (the mean of the last 20 steps) and the seconds it took. Notebook 14 (section 7) prints the stored table
(means and spreads over seeds) and asserts its properties.

    python -m benchmarks.extrapolation                  # seeds 0-9: 50 runs, about 7 minutes on one idle core
    python -m benchmarks.extrapolation --seeds 0 1 2    # other seeds
    python -m benchmarks.extrapolation --steps 200      # the notebook's 200 steps, plus section 8's 2017 block

With `--steps 200` it trains as the notebook does, and adds section 8's 2017 block (post-norm LayerNorm, ReLU at
d_ff 128, sinusoids, 4 key/value heads; "paper" in the table) to the five, so that the notebook's prose can quote
ranges over seeds for both sections; that run writes benchmarks/results/extrapolation_200_steps.json (about 2
minutes).

Runs with one thread, as the notebooks do. Another CPU's kernels give another trajectory for every seed, so read
the table by its means and spreads. Writes benchmarks/results/extrapolation.json.
"""

import pathlib
import time

import torch

from benchmarks.common import save, seed_parser, sweep
from helpers.induction import repeated_sequences
from helpers.modern import DecoderLM, accuracy_by_position, extend_rope, train_decoder_lm

V, D_MODEL, HEADS, LAYERS, L = 32, 32, 4, 2, 32  # as notebook 14, section 7
D_FF = 96  # with 2 key/value heads
SCHEMES = ("sinusoidal", "learned", "rope", "alibi", "none")
STEPS = 1000  # the notebook trains 200
SPANS = {"L": slice(0, L - 1), "2L": slice(L, 2 * L - 1), "4L": slice(2 * L, 4 * L - 1)}  # query positions
# RoPE stretched to 4L at test time, with no training (helpers.modern.extend_rope): as notebook 14's optional part
EXTENSIONS = {
    "base 1e6": dict(method="base", base=1e6),
    "NTK x4": dict(method="ntk", factor=4),
    "interpolation x4": dict(method="interpolation", factor=4),
    "YaRN x4": dict(method="yarn", factor=4, original_length=L),
}
OUT = pathlib.Path(__file__).parent / "results" / "extrapolation.json"


def run(seed, positions, steps=STEPS):
    start = time.perf_counter()
    torch.manual_seed(seed)  # as the notebook's sections 7 and 8, with its seed 0 replaced
    if positions.startswith("paper"):  # section 8's 2017 block, with sinusoids ("paper") or RoPE ("paper-rope")
        scheme = "rope" if positions == "paper-rope" else "sinusoidal"
        model = DecoderLM(
            V, D_MODEL, HEADS, LAYERS, 4 * D_MODEL, norm="layer", ffn="relu", positions=scheme, max_len=4 * L
        )
    else:
        model = DecoderLM(
            V,
            D_MODEL,
            HEADS,
            LAYERS,
            D_FF,
            num_kv_heads=2,
            norm="rms",
            ffn="swiglu",
            positions=positions,
            max_len=4 * L,
        )
    losses = train_decoder_lm(model, steps=steps, seed=seed, length=L)
    test_tokens, test_periods = repeated_sequences(64, 4 * L, V, 4, 12, torch.Generator().manual_seed(1000 + seed))
    accuracy, counted = accuracy_by_position(model, test_tokens, test_periods)  # (4L - 1,) each
    by_span = {name: float((accuracy[s] * counted[s]).sum() / counted[s].sum()) for name, s in SPANS.items()}
    extensions = {}
    if positions in ("rope", "paper-rope"):  # the optional part of section 7: RoPE stretched at test time
        for name, how in EXTENSIONS.items():
            extend_rope(model, **how)
            stretched, _ = accuracy_by_position(model, test_tokens, test_periods)
            extensions[name] = {
                k: float((stretched[s] * counted[s]).sum() / counted[s].sum()) for k, s in SPANS.items()
            }
        extend_rope(model, None)
    return {
        "seed": seed,
        "positions": positions,
        "steps": steps,
        "accuracy": by_span,
        "extensions": extensions,
        "accuracy_by_position": [round(a, 3) for a in accuracy.tolist()],
        "final_loss": sum(losses[-20:]) / len(losses[-20:]),
        "seconds": round(time.perf_counter() - start, 1),
    }


def _without_curve(row: dict) -> dict:
    """A run's record as printed while the sweep goes on: without its accuracy at every position."""
    return {k: v for k, v in row.items() if k not in ("accuracy_by_position", "extensions")}


def main():
    parser = seed_parser(__doc__, 10)
    parser.add_argument("--steps", type=int, default=STEPS, help=f"training steps (default: {STEPS})")
    args = parser.parse_args()
    schemes = SCHEMES if args.steps == STEPS else (*SCHEMES, "paper", "paper-rope")
    out = OUT if args.steps == STEPS else OUT.with_name(f"extrapolation_{args.steps}_steps.json")
    start = time.perf_counter()
    rows, _ = sweep(args.seeds, [(positions, args.steps) for positions in schemes], run, show=_without_curve)
    script = "extrapolation" if args.steps == STEPS else f"extrapolation --steps {args.steps}"
    save(out, script, args.seeds, rows, time.perf_counter() - start, steps=args.steps, length=L)


if __name__ == "__main__":
    main()
