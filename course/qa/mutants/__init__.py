"""The mutation check's mutants: data, one TOML file per mutated file (read by `course/qa/mutate.py`).

Each `NAME.toml` holds `file` (the file it edits, relative to the repository root), `tests` (the unit tests that
run for it) and a list of `[[mutant]]` tables, each with `id` (named by the file: `attention-03`), `old` (text that
occurs exactly once in the file), `new`, `what` (the bug in words) and, for an edit that cannot change behaviour,
`equivalent` (why). A new mutated file gets a new TOML file here; nothing else needs to list it.
"""
