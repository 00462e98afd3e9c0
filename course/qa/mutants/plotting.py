"""Mutants of `helpers/plotting.py`, each a one-line bug its tests should catch."""

from course.qa.mutate import Mutant

FILE = "helpers/plotting.py"
TESTS = ["tests/helpers/test_masks_plotting.py"]

MUTANTS = [
    Mutant("plotting-01", "grey[~mask] = MASKED_COLOUR", "grey[mask] = MASKED_COLOUR", "the allowed cells greyed out"),
    Mutant(
        "plotting-02",
        "segments = [[(c - r, q - r), (c + r, q + r)] for q, c",
        "segments = [[(q - r, c - r), (q + r, c + r)] for q, c",
        "the crosses over masked cells drawn transposed",
    ),
    Mutant(
        "plotting-03",
        "return 1 if count <= 20 or count <= fits else -(-count // fits)",
        "return 1 if count <= 20 or count <= fits else count // fits",
        "label step rounded down: more labels than fit",
    ),
    Mutant(
        "plotting-04",
        'image = ax.imshow(weights, cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto"',
        'image = ax.imshow(weights.T, cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto"',
        "heatmap drawn transposed (keys down, queries across)",
    ),
    Mutant(
        "plotting-05",
        "high = float(np.nanmax(shown)) if vmax is None else float(vmax)",
        "high = float(np.nanmax(shown))",
        "vmax ignored",
    ),
    Mutant(
        "plotting-06",
        'colour = "black" if value > threshold else "white"',
        'colour = "white" if value > threshold else "black"',
        "annotation colours swapped: white text on the light cells",
    ),
    Mutant(
        "plotting-07",
        "rotate)\n    ylabel, xlabel = _axis_names(query_labels, key_labels)",
        "rotate)\n    xlabel, ylabel = _axis_names(query_labels, key_labels)",
        "one heatmap's axis titles swapped: the rows called keys, the columns queries",
    ),
]
