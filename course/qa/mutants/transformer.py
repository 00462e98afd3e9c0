"""Mutants of `helpers/transformer.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/transformer.py"
TESTS = [
    "tests/helpers/test_transformer.py",
    "tests/helpers/test_efficient.py",
    "tests/helpers/test_gqa_decoder_only.py",
]

MUTANTS = [
    Mutant(
        "transformer-01",
        "self.embed(tgt, self.tgt_embedding, start=past)",
        "self.embed(tgt, self.tgt_embedding, start=0)",
        "cache: new positions embedded from position 0",
    ),
    Mutant(
        "transformer-02",
        "else causal_mask(n, past=past, device=tgt.device)",
        "else causal_mask(past + n, device=tgt.device)[:n]",
        "cache: causal mask of several new positions aligned top-left",
    ),
    Mutant(
        "transformer-03",
        "torch.cat([bos, targets[:, :-1]], dim=1)",
        "torch.cat([bos, targets[:, 1:]], dim=1)",
        "shift_right drops the first target, not the last",
    ),
    Mutant(
        "transformer-04",
        "self.encoder(self.embed(src, self.src_embedding),",
        "self.encoder(self.positional(self.src_embedding(src)),",
        "encode: sqrt(d_model) scale dropped on the source path only",
    ),
    Mutant(
        "transformer-05",
        "self.projection.weight = self.src_embedding.weight",
        "self.projection.weight.data.copy_(self.src_embedding.weight)",
        "tied projection untied: a copy of the values, not the shared Parameter",
    ),
    Mutant(
        "transformer-06",
        "for embedding in [self.src_embedding] + ([] if share_embeddings else [self.tgt_embedding]):",
        "for embedding in [self.src_embedding]:",
        "share_embeddings=False: target embedding keeps N(0, 1)",
    ),
    Mutant(
        "transformer-07",
        "past = cache.length",
        "past = len(cache.layers)",
        "decode: positions already fed read as the number of cached layers",
    ),
    Mutant(
        "transformer-08",
        "None if past > 0 and n == 1",
        "None if past > 0 or n == 1",
        "decode: a cached chunk of several positions gets no causal mask",
    ),
    Mutant(
        "transformer-09",
        "self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, **layer)",
        "self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, **layer, num_kv_heads=num_kv_heads)",
        "grouped-query attention applied to the encoder too",
    ),
]
