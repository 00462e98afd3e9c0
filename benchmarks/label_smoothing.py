"""Label smoothing 0.1 against none on notebook 10's full recipe, over seeds 0-9.

Trains the model of notebook 10, section 5 (2 layers, d_model 64, 4 heads, 600 steps of 128 numbers, Eq. 3 with
warm-up 200) exactly as the notebook does, with the notebook's held-out test set and seeding, once with label
smoothing 0.1 and once without, for each seed. For each run it records greedy exact match of the last checkpoint and
of the average of the last 5 checkpoints, and the held-out perplexity (exp of the mean per-token unsmoothed
cross-entropy, eval mode) of the last checkpoint, and the seconds it took. Notebook 10 (section 10) prints the
stored table (means and spreads over seeds) and asserts its properties.

    python -m benchmarks.label_smoothing                  # seeds 0-9: 20 runs, about 10 minutes on one idle core
    python -m benchmarks.label_smoothing --seeds 0 1 2    # other seeds

Runs with one thread, as the notebooks do. On the machine that runs it, seed 0 with smoothing is notebook 10's
section 5 run; another CPU's kernels give another trajectory for every seed, so read the table by its means and
spreads. Writes benchmarks/results/label_smoothing.json.
"""

import copy
import pathlib
import time

import torch
import torch.nn.functional as F

import helpers
from benchmarks.common import held_out_perplexity, save, seed_parser, sweep
from helpers.decoding import greedy_decode
from helpers.training import BOS, EOS, VOCAB, make_translation_batch, number_to_words, rate, sample_numbers, to_tokens
from helpers.transformer import Transformer, shift_right

SMOOTHING = [0.1, 0.0]
OUT = pathlib.Path(__file__).parent / "results" / "label_smoothing.json"


def run(seed, label_smoothing, test_numbers, test_batch):
    start = time.perf_counter()
    bos_id, eos_id, V = VOCAB.index(BOS), VOCAB.index(EOS), len(VOCAB)
    held_out = frozenset(test_numbers)
    d_model, warmup_steps, num_steps = 64, 200, 600
    torch.manual_seed(seed)  # as the notebook's section 5, with its seed 0 replaced
    model = Transformer(V, V, d_model=d_model, num_heads=4, num_layers=2, d_ff=128, dropout=0.1, max_len=32)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: rate(s + 1, d_model, warmup_steps))
    g = torch.Generator().manual_seed(seed)
    checkpoints = []
    for step in range(1, num_steps + 1):
        batch = make_translation_batch(sample_numbers(128, g, exclude=held_out, max_digits=4))
        model.train()
        logits = model(batch["src"], shift_right(batch["tgt"], bos_id), batch["src_mask"])
        loss = F.cross_entropy(
            logits.flatten(0, 1), batch["tgt"].flatten(), ignore_index=0, label_smoothing=label_smoothing
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step > num_steps - 100 and step % 20 == 0:
            checkpoints.append(copy.deepcopy(model.state_dict()))
    averaged = copy.deepcopy(model)
    averaged.load_state_dict({k: sum(c[k] for c in checkpoints) / len(checkpoints) for k in checkpoints[0]})
    references = [number_to_words(n) for n in test_numbers]

    def exact(m):
        out = greedy_decode(m, test_batch["src"], bos_id, eos_id, 10, test_batch["src_mask"])
        return sum(to_tokens(ids) == ref for ids, ref in zip(out, references, strict=True)) / len(references)

    return {
        "seed": seed,
        "label_smoothing": label_smoothing,
        "exact_last": exact(model),
        "exact_averaged": exact(averaged),
        "perplexity": held_out_perplexity(model, test_batch, bos_id),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main():
    args = seed_parser(__doc__, 10).parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    helpers.set_seed(0)
    test_numbers = list(
        dict.fromkeys(sample_numbers(500, torch.Generator().manual_seed(12345), min_digits=3, max_digits=4))
    )
    test_batch = make_translation_batch(test_numbers)
    rows, _ = sweep(args.seeds, [(ls, test_numbers, test_batch) for ls in SMOOTHING], run)
    save(OUT, "label_smoothing", args.seeds, rows, time.perf_counter() - start)


if __name__ == "__main__":
    main()
