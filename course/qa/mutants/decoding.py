"""Mutants of `helpers/decoding.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/decoding.py"
TESTS = ["tests/helpers/test_decoding.py", "tests/helpers/test_efficient.py"]

MUTANTS = [
    Mutant(
        "decoding-01",
        "model.decode(tgt[:, -1:], memory, src_mask, cache=cache)",
        "model.decode(tgt[:, :1], memory, src_mask, cache=cache)",
        "cache: <bos> fed at every step instead of the newest token",
    ),
    Mutant(
        "decoding-02",
        "parents.append(row + h)",
        "parents.append(h)",
        "beam search: parent row counted within the sentence, not the batch",
    ),
    Mutant(
        "decoding-03",
        "((5 + length) / 6) ** alpha",
        "((5 + length) / 5) ** alpha",
        "GNMT length penalty: 6 replaced by 5",
    ),
    Mutant(
        "decoding-04",
        "total / length_penalty(len(ids), alpha)",
        "total / length_penalty(len(ids) + 1, alpha)",
        "beam search: |Y| counts <bos> too",
    ),
    Mutant(
        "decoding-05",
        "key=lambda i: (finished[b][i][2], -i)",
        "key=lambda i: (finished[b][i][1], -i)",
        "beam search: best finished picked by raw sum(log p)",
    ),
    Mutant(
        "decoding-06",
        "k = min(beam_size - len(finished[b]), ",
        "k = min(beam_size, ",
        "beam search: finished hypotheses take no place in the beam",
    ),
    Mutant("decoding-07", "row += len(hyps)", "row += 1", "beam search: row offset advances by one per sentence"),
    Mutant(
        "decoding-08",
        "hyps[h][0] + [token], float(candidates[flat])",
        "hyps[h][0] + [token], float(log_probs[row + h, token])",
        "beam search: score is the last token's log p, not the running sum",
    ),
    Mutant("decoding-09", "if all(done):", "if any(done):", "greedy: the whole batch stops at the first <eos>"),
]
