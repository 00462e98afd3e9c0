"""Mutants of `course/explorer/explorer.js`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "course/explorer/explorer.js"
TESTS = ["tests/course/explorer/test_explorer.py"]

MUTANTS = [
    Mutant(
        "explorer_js-01",
        "W[((l * H + h) * N + q) * M + k]",
        "W[((l * H + h) * M + q) * N + k]",
        "explorer script: weights indexed with N and M swapped (n != m)",
    ),
    Mutant(
        "explorer_js-02",
        "Math.min(1, v / TOP)) * (VIRIDIS.length - 1)",
        "Math.min(1, v)) * (VIRIDIS.length - 1)",
        "colour scale ignores vmax: weights coloured on 0-1 whatever TOP is",
    ),
    Mutant(
        "explorer_js-03",
        "channel(VIRIDIS[i], c) * (1 - f) + channel(VIRIDIS[i + 1], c) * f",
        "channel(VIRIDIS[i], c) * f + channel(VIRIDIS[i + 1], c) * (1 - f)",
        "colour interpolated the wrong way between two viridis stops",
    ),
    Mutant(
        "explorer_js-04",
        "parseInt(hex.substr(1 + 2 * i, 2), 16)",
        "parseInt(hex.substr(2 * i, 2), 16)",
        "hex colour channels read one character early",
    ),
    Mutant(
        "explorer_js-05",
        '.replace(/</g, "&lt;")',
        '.replace(/</, "&lt;")',
        "only the first < of a token escaped",
    ),
    Mutant(
        "explorer_js-06",
        "return HEAD_COLOURS[h % HEAD_COLOURS.length];",
        "return HEAD_COLOURS[h];",
        "heads past the eighth get no colour",
    ),
]
