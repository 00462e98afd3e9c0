"""The machinery that teaches the series, kept apart from what it teaches (``helpers``).

Subpackages:
    exercises  checkers for the notebooks' exercises: seeded cases, named mistakes, hints in tiers
    explorer   the interactive attention view (offline HTML and JavaScript, with a PNG fallback)
    publish    the static HTML site and the reveal.js slide decks built from the notebooks
    qa         maintainer tools: the mutation check, the platform check, reading time, notebook re-execution
"""
