"""course.explorer: the inlined data round-trips to the weights, the output is deterministic and offline, and
bad input gets a clear ValueError. The views are driven in a real browser in tests/test_browser.py (JupyterLab,
the untrusted fallback), tests/course/publish/test_site.py (the HTML site) and tests/course/publish/test_slides.py (a deck)."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from PIL import Image

from course.explorer import (
    CSS,
    MARKER,
    MAX_HEIGHT,
    SCALE,
    SCRIPT_SHIPPED,
    decode_payload,
    distinct_labels,
    explore_attention,
    read_payload,
)
from helpers.encoder import Encoder
from helpers.masks import causal_mask, padding_mask
from tests.support import javascript_engine

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _softmax(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(*shape, generator=g), dim=-1)


@pytest.fixture(scope="module")
def encoded():
    """A padded batch through a 3-layer encoder: a list of (B, h, n, n) weights and its (B, 1, m) mask."""
    torch.manual_seed(0)
    encoder = Encoder(3, 16, 4, 32).eval()
    mask = padding_mask([5, 3])
    with torch.no_grad():
        _, weights = encoder(torch.randn(2, 5, 16), mask)
    return weights, mask


def test_inlined_weights_round_trip(encoded):
    weights, mask = encoded
    tokens = ["birds", "sing", "loudly", "<pad>", "<pad>"]
    view = explore_attention(weights, tokens, mask=mask, sequence=1, title="padded")
    [data] = read_payload(view.html)
    expected = torch.stack([w[1] for w in weights]).double().numpy()  # (layers, h, n, m) of sequence 1
    assert data["weights"].shape == expected.shape == (3, 4, 5, 5)
    np.testing.assert_allclose(data["weights"], expected, atol=0.5 / SCALE + 1e-9, rtol=0)
    np.testing.assert_array_equal(data["weights"], np.rint(expected * SCALE) / SCALE)  # rounded, not truncated
    np.testing.assert_array_equal(data["mask"], np.broadcast_to(mask[1].numpy(), (5, 5)))
    assert data["queries"] == data["keys"] == tokens and data["title"] == "padded"
    np.testing.assert_array_equal(view.weights, data["weights"])


def test_cross_attention_and_one_layer():
    weights = _softmax(2, 3, 4)  # (h, n, m): 3 queries, 4 keys
    view = explore_attention(weights, list("abcd"), query_tokens=["x", "y", "z"])
    [data] = read_payload(view.html)
    assert data["weights"].shape == (1, 2, 3, 4) and data["mask"] is None
    np.testing.assert_allclose(data["weights"][0], weights.numpy(), atol=0.005)
    assert data["queries"] == ["x", "y", "z"] and data["keys"] == ["a", "b", "c", "d"]


def test_the_script_reads_each_weight_where_the_payload_put_it():
    """The page's own weight() and masked() functions, run in Node.js on a cross-attention view (n = 2 queries,
    m = 3 keys, so that swapping N and M in the index shows), read back every stored weight and mask bit."""
    node = javascript_engine()
    if node is None:
        pytest.skip("no JavaScript engine (Playwright's Node.js or node)")
    g = torch.Generator().manual_seed(3)
    weights = [torch.softmax(3 * torch.randn(2, 2, 3, generator=g), -1) for _ in range(2)]  # 2 layers of (h, n, m)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    weights = [w.masked_fill(~mask, 0) / w.masked_fill(~mask, 0).sum(-1, keepdim=True) for w in weights]
    view = explore_attention(weights, list("abc"), query_tokens=["x", "y"], mask=mask)
    data = decode_payload(json.dumps(view.payload()))  # what the page holds, without drawing its figure
    lines = SCRIPT_SHIPPED.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("var L = D.layers"))
    last = next(i for i, line in enumerate(lines) if line.startswith("function masked("))
    program = "\n".join(
        [
            f"var D = {json.dumps(view.payload())};",
            *lines[first : last + 1],
            "var w = [], m = [];",
            "for (var l = 0; l < L; l++) for (var h = 0; h < H; h++) for (var q = 0; q < N; q++)",
            "  for (var k = 0; k < M; k++) w.push(weight(l, h, q, k));",
            "for (var q = 0; q < N; q++) for (var k = 0; k < M; k++) m.push(!masked(q, k));",
            "console.log(JSON.stringify({w: w, m: m}));",
        ]
    )
    result = subprocess.run([node, "-e", program], capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)
    np.testing.assert_allclose(np.array(read["w"]).reshape(2, 2, 2, 3), data["weights"], atol=1e-12, rtol=0)
    np.testing.assert_array_equal(np.array(read["m"]).reshape(2, 3), mask.numpy())


def test_a_single_batched_tensor_and_a_causal_mask():
    mask = causal_mask(4)
    weights = _softmax(2, 2, 4, 4).masked_fill(~mask, 0)
    weights = weights / weights.sum(-1, keepdim=True)
    view = explore_attention(weights, list("abcd"), mask=mask, sequence=1)
    [data] = read_payload(view.html)
    np.testing.assert_allclose(data["weights"][0], weights[1].numpy(), atol=0.005)
    np.testing.assert_array_equal(data["mask"], mask.numpy())
    assert (data["weights"][:, :, ~mask.numpy()] == 0).all()


def test_output_is_deterministic_offline_and_carries_its_fallback(encoded):
    weights, mask = encoded
    weights = [w[:, :2] for w in weights[:2]]  # 2 layers x 2 heads: a small figure to draw twice
    first = explore_attention(weights, list("abcde"), mask=mask, sequence=1)._repr_mimebundle_()
    second = explore_attention(weights, list("abcde"), mask=mask, sequence=1)._repr_mimebundle_()
    assert first == second  # nbval compares text/html: no random id, no timestamp
    page = first["text/html"]
    assert not re.search(r"\sid=", page), "no element ids: each script finds its view as the element before it"
    assert not re.search(r"https?:|require\(|import\(|fetch\(|XMLHttpRequest|\bsrc=\"(?!data:)", page)
    assert page.count("<script>") == 1 and MARKER in page
    png = base64.b64decode(first["image/png"])
    assert png.startswith(PNG_SIGNATURE)
    assert f'src="data:image/png;base64,{first["image/png"]}"' in page  # the same figure inside the HTML
    assert "2 layers x 2 heads, 5 queries x 5 keys" in first["text/plain"]


def test_a_large_view_stays_small():
    weights = [_softmax(1, 8, 16, 16, seed=s) for s in range(6)]  # 6 layers x 8 heads x 16 x 16
    view = explore_attention(weights, [f"t{i}" for i in range(16)])
    assert len(json.dumps(view.payload())) < 17_000  # 12,288 weights, one byte each in base64
    # the same in every view (model view, head toggles and colour range included); the figure on top
    assert len(SCRIPT_SHIPPED) + len(CSS) < 26_000


def test_two_views_are_independent():
    one = explore_attention(_softmax(2, 3, 3, seed=1), list("abc")).html
    two = explore_attention(_softmax(2, 3, 3, seed=2), list("abc")).html
    views = read_payload(one + "<p>text</p>" + two)
    assert len(views) == 2 and not np.array_equal(views[0]["weights"], views[1]["weights"])


def test_float_error_within_the_tolerance_is_accepted_and_cleaned():
    """Weights off by float error (1e-6 above one, 1e-6 on a masked key) are drawn as 1 and 0; 1e-4 is an error (the
    bad-input table below), so a mask or a scale that is wrong is never hidden by clipping."""
    mask = causal_mask(3)
    weights = (torch.eye(3) * (1 + 1e-6)).masked_fill(~mask, 1e-6)[None]  # (h=1, n, m)
    np.testing.assert_array_equal(explore_attention(weights, list("abc"), mask=mask).weights[0, 0], np.eye(3))


HELPERS = Path(__file__).resolve().parents[3] / "course" / "explorer"


def test_the_script_and_style_ship_as_files_and_are_inlined():
    """course/explorer/explorer.js and course/explorer/explorer.css are the package's data (pyproject.toml), read at import and
    inlined into each view: the page needs no file beside it."""
    html = explore_attention(_softmax(2, 3, 3), list("abc")).html
    assert f"<style>{CSS}</style>" in html and f"<script>{SCRIPT_SHIPPED}</script>" in html
    assert "attn-x-side" in (HELPERS / "explorer.css").read_text(encoding="utf-8") and "attn-x-side" in CSS
    assert (
        "function distinct(" in (HELPERS / "explorer.js").read_text(encoding="utf-8")
        and "function distinct(" in SCRIPT_SHIPPED
    )
    assert "/*" not in CSS and not any(line.startswith("//") for line in SCRIPT_SHIPPED.splitlines())
    pyproject = (HELPERS.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"explorer.css"' in pyproject and '"explorer.js"' in pyproject


def test_the_shipped_script_parses(tmp_path):
    """A syntax error in course/explorer/explorer.js (or one made by stripping its comments) fails here, not in a browser."""
    node = javascript_engine()
    if node is None:
        pytest.skip("no JavaScript engine (Playwright's Node.js or node)")
    for name, text in {
        "source.js": (HELPERS / "explorer.js").read_text(encoding="utf-8"),
        "shipped.js": SCRIPT_SHIPPED,
    }.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        result = subprocess.run(
            [node, "--check", str(path)], capture_output=True, text=True, encoding="utf-8", timeout=60
        )
        assert result.returncode == 0, f"{name}: {result.stderr}"
    broken = tmp_path / "broken.js"
    broken.write_text(SCRIPT_SHIPPED.replace("function render() {", "function render( {", 1), encoding="utf-8")
    assert subprocess.run([node, "--check", str(broken)], capture_output=True, timeout=60).returncode != 0


def _css_errors(text: str) -> list[str]:
    tinycss2 = pytest.importorskip("tinycss2")  # nbconvert's bleach[css] installs it
    errors = []
    rules = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    for rule in rules:
        if rule.type == "error":
            errors.append(f"{rule.message} at line {rule.source_line}")
        elif rule.type == "qualified-rule":
            for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True):
                if item.type == "error":
                    errors.append(f"{item.message} at line {item.source_line}")
                elif item.type == "declaration" and not item.value:
                    errors.append(f"empty value for {item.name} at line {item.source_line}")
                elif item.type not in ("declaration",):
                    errors.append(f"{item.type} inside a rule at line {item.source_line}")
        elif rule.type != "at-rule":
            errors.append(f"{rule.type} at line {rule.source_line}")
    return errors


def test_the_shipped_style_parses():
    assert _css_errors((HELPERS / "explorer.css").read_text(encoding="utf-8")) == []
    assert _css_errors(CSS) == []
    assert len(re.findall(r"\{", CSS)) >= 20  # every rule survived the comments' removal
    assert _css_errors(CSS.replace("}", "", 1).replace(";", "{", 1))  # and a broken one is caught


def test_the_view_opens_on_the_layer_and_head_given():
    weights = [_softmax(3, 4, 4, seed=s) for s in range(2)]  # 2 layers x 3 heads
    assert read_payload(explore_attention(weights, list("abcd")).html)[0]["start"] == {"layer": 0, "head": 0}
    [data] = read_payload(explore_attention(weights, list("abcd"), layer=1, head=2).html)
    assert data["start"] == {"layer": 1, "head": 2}
    [data] = read_payload(explore_attention(weights, list("abcd"), layer=np.int64(1), head="all").html)
    assert data["start"] == {"layer": 1, "head": -1}  # -1: all heads overlaid, as the script numbers it
    assert "var start = D.start || {layer: 0, head: 0};" in SCRIPT_SHIPPED  # views stored before still open


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": 2}, r"layer=2 is out of range: the weights have 2 layers, so layer is 0 to 1$"),
        ({"layer": -1}, r"layer=-1 is out of range"),
        ({"head": 3}, r'head=3 is out of range: the weights have 3 heads, so head is 0 to 2, or "all"'),
        ({"head": True}, r"head must be an integer, 0 to 2, or \"all\"; got True"),
        ({"layer": False}, r"layer must be an integer, 0 to 1; got False"),
        ({"layer": 1.0}, r"layer must be an integer, 0 to 1; got 1\.0"),
        ({"head": "2"}, r"head must be an integer.*got '2'"),
        ({"cross": "yes"}, r"cross must be True or False, got 'yes'"),
    ],
    ids=[
        "layer-too-big",
        "layer-negative",
        "head-too-big",
        "head-true",
        "layer-false",
        "layer-float",
        "head-str",
        "cross",
    ],
)
def test_layer_and_head_are_checked(kwargs, message):
    weights = [_softmax(3, 4, 4, seed=s) for s in range(2)]
    with pytest.raises(ValueError, match=message):
        explore_attention(weights, list("abcd"), **kwargs)


def test_one_layer_out_of_range_says_there_is_one():
    with pytest.raises(ValueError, match=r"layer is 0 \(there is one\)"):
        explore_attention(_softmax(2, 3, 3), list("abc"), layer=1)


def test_repeated_labels_are_told_apart_by_position():
    assert distinct_labels(["the", "cat", "sat", "on", "the", "mat"]) == ["0·the", "cat", "sat", "on", "4·the", "mat"]
    assert distinct_labels(["→9"] * 3) == ["0·→9", "1·→9", "2·→9"]
    assert distinct_labels(["a", "b"]) == ["a", "b"]
    view = explore_attention(_softmax(1, 3, 3), ["x", "y", "x"])
    assert read_payload(view.html)[0]["keys"] == ["x", "y", "x"]  # the data keeps the labels as given


def test_the_script_tells_repeated_labels_apart_as_python_does():
    node = javascript_engine()
    if node is None:
        pytest.skip("no JavaScript engine (Playwright's Node.js or node)")
    lines = SCRIPT_SHIPPED.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("function distinct("))
    cases = [["the", "cat", "the"], ["→9"] * 4, ["PAD", "1", "PAD", "__proto__", "__proto__"], ["a"]]
    program = "\n".join([*lines[first : first + 5], f"console.log(JSON.stringify({json.dumps(cases)}.map(distinct)));"])
    result = subprocess.run([node, "-e", program], capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [distinct_labels(c) for c in cases]


def test_sides_are_named_queries_and_keys_or_target_and_source():
    [self_] = read_payload(explore_attention(_softmax(2, 3, 3), list("abc")).html)
    assert self_["sides"] == ["queries", "keys"]
    cross = explore_attention(_softmax(2, 2, 3), list("abc"), query_tokens=["x", "y"], cross=True)
    assert read_payload(cross.html)[0]["sides"] == ["target (queries)", "source (keys)"] and cross.cross
    # n != m alone does not make it cross-attention: the caller says so
    assert read_payload(explore_attention(_softmax(2, 2, 3), list("abc"), ["x", "y"]).html)[0]["sides"][0] == "queries"
    assert 'var SIDES = D.sides || ["queries", "keys"];' in SCRIPT_SHIPPED
    assert 'class="attn-x-scale"' in SCRIPT_SHIPPED  # the colour scale under the heatmap


def test_one_layer_has_no_layer_group_and_a_deck_gets_its_help_line():
    assert 'var markLayer = L > 1 ? group("Layer"' in SCRIPT_SHIPPED
    assert "Esc returns to the slides." in SCRIPT_SHIPPED and 'root.closest(".reveal")' in SCRIPT_SHIPPED


def test_a_click_moves_the_focus_to_the_clicked_token():
    """In JupyterLab a click left the focus on the cell: the view's arrow keys then moved the notebook."""
    assert "button.focus(); });" in SCRIPT_SHIPPED
    assert "if (again) again.focus();" in SCRIPT_SHIPPED


def _image(view) -> Image.Image:
    return Image.open(io.BytesIO(view.png)).convert("RGB")


def test_the_fallback_is_white_and_fits_a_1080p_screen():
    mask = padding_mask([6, 3])
    layers = [_softmax(2, 4, 6, 6, seed=s).masked_fill(~mask[:, None], 0) for s in range(6)]
    layers = [w / w.sum(-1, keepdim=True) for w in layers]  # 6 layers x 4 heads, as notebook 06
    tokens = ["birds", "sing", "loudly", "<pad>", "<pad>", "<pad>"]
    tall = _image(explore_attention(layers, tokens, mask=mask, sequence=1, title="six layers"))
    assert tall.height <= MAX_HEIGHT and tall.width < 1920, tall.size
    small = _image(explore_attention(_softmax(2, 3, 3), list("abc")))
    for image in (tall, small):
        corners = {image.getpixel(xy) for xy in [(0, 0), (image.width - 1, 0), (0, image.height - 1)]}
        assert corners == {(255, 255, 255)}, corners  # white, not the #fcfcfc of PIL's own quantize
    # 16 layers: smaller panels are not enough, the image is scaled (one head, 4 tokens: 12 x 8 would draw the same
    # way in 17 s instead of 2.5)
    many = _image(explore_attention([_softmax(1, 1, 4, 4, seed=s) for s in range(16)], [f"t{i}" for i in range(4)]))
    assert many.height == MAX_HEIGHT, many.size


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: explore_attention(torch.rand(4, 4), list("abcd")), r"\(B, h, n, m\) or \(h, n, m\).*\(4, 4\)"),
        (lambda: explore_attention(torch.rand(1, 1, 1, 4, 4), list("abcd")), r"got \(1, 1, 1, 4, 4\)"),
        (lambda: explore_attention([], list("abcd")), "empty list"),
        (lambda: explore_attention([_softmax(2, 4, 4), _softmax(2, 3, 3)], list("abcd")), r"same \(h, n, m\)"),
        (lambda: explore_attention(_softmax(2, 4, 4), list("abc")), "tokens has 3 labels but the weights have 4 keys"),
        (lambda: explore_attention(_softmax(2, 3, 4), list("abcd")), "pass query_tokens with 3 labels"),
        (
            lambda: explore_attention(_softmax(2, 3, 4), list("abcd"), query_tokens=list("xy")),
            "query_tokens has 2 labels but the weights have 3 queries",
        ),
        (lambda: explore_attention(_softmax(2, 4, 4), "abcd"), "not one string"),
        (lambda: explore_attention(_softmax(2, 4, 4) * 2, list("abcd")), r"must lie in \[0, 1\]"),
        (lambda: explore_attention(torch.randn(2, 4, 4), list("abcd")), r"must lie in \[0, 1\]"),
        (
            lambda: explore_attention(torch.full((2, 4, 4), float("nan")), list("abcd")),
            "NaN or infinite.*layer 0, head 0, query 0, key 0",
        ),
        (lambda: explore_attention(_softmax(3, 2, 4, 4), list("abcd")), "batch of 3 sequences: pass sequence="),
        (lambda: explore_attention(_softmax(2, 2, 4, 4), list("abcd")), "batch of 2 sequences: pass sequence="),
        (lambda: explore_attention(torch.eye(4).expand(2, 4, 4) * (1 + 1e-4), list("abcd")), r"must lie in \[0, 1\]"),
        (
            lambda: explore_attention(
                _softmax(1, 2, 2).masked_fill(~causal_mask(2), 1e-4), list("ab"), mask=causal_mask(2)
            ),
            r"the mask hides key 1 .* weight 0\.0001",
        ),
        (lambda: explore_attention(_softmax(3, 2, 4, 4), list("abcd"), sequence=3), "outside the batch of 3"),
        (lambda: explore_attention(_softmax(2, 4, 4), list("abcd"), mask=torch.ones(4, 4)), "must be boolean"),
        (
            lambda: explore_attention(_softmax(2, 4, 4), list("abcd"), mask=torch.ones(3, 3, dtype=torch.bool)),
            r"mask of shape \(3, 3\)",
        ),
        (
            lambda: explore_attention(_softmax(2, 4, 4), list("abcd"), mask=causal_mask(4)),
            r"the mask hides key \d .* weight 0\.\d+: pass the mask the model used",
        ),
    ],
    ids=[
        "rank-2",
        "rank-5",
        "empty-list",
        "layers-differ",
        "token-count",
        "cross-needs-queries",
        "query-count",
        "string-labels",
        "above-one",
        "negative",
        "nan",
        "batch-needs-sequence",
        "batch-of-two-needs-sequence",
        "1e-4-above-one",
        "1e-4-on-a-masked-key",
        "sequence-out-of-range",
        "float-mask",
        "mask-shape",
        "mask-hides-weight",
    ],
)
def test_bad_input_gets_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_model_view_draws_every_layer_and_head_as_a_thumbnail():
    """E1: a grid of L x H small heatmaps (buttons with data-layer and data-head); a click shows that layer and
    head. Driven in a browser in the scratch check; here: the script builds it, and a deck hides it."""
    assert 'thumb.className = "attn-x-thumb";' in SCRIPT_SHIPPED and "if (L * H > 1) {" in SCRIPT_SHIPPED
    assert "state.layer = l; state.head = h; state.shown = [h]; render(); button.focus();" in SCRIPT_SHIPPED
    assert ".reveal .attn-x-overview{display:none}" in CSS


def test_the_colour_range_is_one_by_default_or_the_largest_weight_shown():
    """F1: untrained heads' weights stay well under 1, and on a 0-1 scale they all look dark. vmax=None puts the top
    of the scale at the largest weight the view holds (over every layer and head); the default keeps 0-1, and its
    payload holds no "vmax", so views stored before it existed read the same."""
    weights = [0.8 * _softmax(2, 3, 3, seed=s) + 0.2 / 3 for s in range(2)]  # 2 layers x 2 heads, weights < 0.9
    largest = max(float(w.max()) for w in weights)
    default = explore_attention(weights, list("abc"))
    assert default.vmax == 1.0 and "vmax" not in default.payload()
    assert explore_attention(weights, list("abc"), vmax=1).payload() == default.payload()
    spread = explore_attention(weights, list("abc"), vmax=None)
    [data] = read_payload(spread.html)
    assert data["vmax"] == spread.vmax == round(largest, 2) == data["weights"].max() < 0.9
    assert explore_attention(weights, list("abc"), vmax=0.504).vmax == 0.5  # two decimals, as the weights
    # the static figure: the same scale
    for view in (default, spread):
        fig = view.figure()
        assert fig.axes[0].images[0].get_clim() == (0.0, view.vmax)
        plt.close(fig)
    assert _image(spread).tobytes() != _image(default).tobytes()
    masked_out = explore_attention(
        torch.zeros(1, 2, 2), list("ab"), mask=torch.zeros(2, 2, dtype=torch.bool), vmax=None
    )
    assert masked_out.vmax == 1.0  # nothing to scale to: the default scale


@pytest.mark.parametrize(
    ("vmax", "message"),
    [
        (0, r"vmax=0 is outside \(0, 1\]"),
        (1.5, r"vmax=1\.5 is outside \(0, 1\]"),
        (0.001, r"vmax=0\.001 is outside \(0, 1\]: .* at least 0\.01"),
        (float("nan"), r"vmax=nan is outside"),
        (True, r"vmax must be a number in \(0, 1\] or None"),
        ("max", r"vmax must be a number in \(0, 1\] or None .*got 'max'"),
    ],
    ids=["zero", "above-one", "under-two-decimals", "nan", "true", "str"],
)
def test_vmax_is_checked(vmax, message):
    with pytest.raises(ValueError, match=message):
        explore_attention(_softmax(2, 3, 3), list("abc"), vmax=vmax)


def test_the_script_colours_by_the_payloads_range():
    """The page's colour() in Node.js: the top colour (viridis' yellow) at vmax, clamped above it, and 0-1 when the
    payload holds no vmax; the colour scale's top label says the value."""
    node = javascript_engine()
    if node is None:
        pytest.skip("no JavaScript engine (Playwright's Node.js or node)")
    lines = SCRIPT_SHIPPED.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("var VIRIDIS"))
    last = next(i for i, line in enumerate(lines) if line.startswith("function headColour("))
    weights = 0.6 * _softmax(1, 3, 3)  # weights under 0.6
    results = []
    for vmax in (1.0, None):
        payload = explore_attention(weights, list("abc"), vmax=vmax).payload()
        program = "\n".join(
            [
                f"var D = {json.dumps(payload)};",
                "function fixed(v) { return v.toFixed(2); }",
                *lines[first:last],
                "console.log(JSON.stringify({top: TOP, at0: colour(0), atTop: colour(TOP), above: colour(1),",
                "  half: colour(TOP / 2), mid: colour(0.5)}));",
            ]
        )
        result = subprocess.run([node, "-e", program], capture_output=True, text=True, encoding="utf-8", timeout=60)
        assert result.returncode == 0, result.stderr
        results.append((payload, json.loads(result.stdout)))
    (default, one), (spread, top) = results
    assert "vmax" not in default
    yellow, purple = "rgb(253,231,37)", "rgb(68,1,84)"
    assert one["top"] == 1 and one["atTop"] == one["above"] == yellow and one["at0"] == top["at0"] == purple
    assert top["top"] == spread["vmax"] <= 0.6 and top["atTop"] == top["above"] == yellow
    assert top["half"] == one["mid"] != top["mid"]  # the same colours, spread over 0 .. vmax: 0.5 looks brighter
    assert '(TOP < 1 ? fixed(TOP) : "1")' in SCRIPT_SHIPPED  # the scale's top label


def test_heads_toggle_and_the_hovered_cell_is_outlined():
    """E6, E8: a head's colour square is a button of its own that adds the head to the heads shown or removes it (the
    last one stays); with several heads the readout is one entry per head; the hovered cell gets an outline. Driven in
    a browser by tests/test_browser.py's exercise_explorer (the site, a deck, JupyterLab)."""
    assert 'swatch.setAttribute("data-toggle", String(item.value));' in SCRIPT_SHIPPED
    assert "if (!next.length) return;" in SCRIPT_SHIPPED
    assert 'entry.className = "attn-x-entry";' in SCRIPT_SHIPPED
    assert 'class="attn-x-hovered"' in SCRIPT_SHIPPED and 'root.setAttribute("data-cell"' in SCRIPT_SHIPPED
    assert ".attn-x .attn-x-swatch{" in CSS


def test_a_grid_of_many_heads_is_drawn_as_one_mosaic_that_fits_the_screen():
    # 6 layers x 12 heads, as notebook 12's MiniLM: 72 panels would take 10 s and show unreadable labels
    from course.explorer import MOSAIC_PANELS

    layers = [_softmax(12, 9, 9, seed=s) for s in range(6)]
    view = explore_attention(layers, [f"t{i}" for i in range(9)], title="six layers, twelve heads")
    assert 6 * 12 > MOSAIC_PANELS
    image = _image(view)
    assert image.height <= MAX_HEIGHT and image.width < 1920, image.size
    corners = {image.getpixel(xy) for xy in [(0, 0), (image.width - 1, 0), (0, image.height - 1)]}
    assert corners == {(255, 255, 255)}, corners
    fig = view.mosaic()  # one image of every map, masked cells grey as in the panels
    try:
        [ax] = [a for a in fig.axes if a.get_images()]
        picture = ax.get_images()[0].get_array()
        assert picture.shape[:2] == (6 * 10 - 1, 12 * 10 - 1)
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(h) for h in range(12)]
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_the_script_colours_escapes_and_names_heads_as_python_would():
    """The page's colour(), esc() and headColour(), run in Node.js: the colour of a weight is matplotlib's viridis
    at weight / vmax (exactly at the 11 stops the script holds, within a few units of 255 between them), the top
    colour above vmax; every <, >, & and " of a token is escaped; heads past the eighth reuse the palette."""
    node = javascript_engine()
    if node is None:
        pytest.skip("no JavaScript engine (Playwright's Node.js or node)")
    lines = SCRIPT_SHIPPED.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("var VIRIDIS = ["))
    last = next(i for i, line in enumerate(lines) if line.startswith("function esc(")) + 2
    vmax = 0.4
    values = [vmax * k / 10 for k in range(11)] + [0.013, 0.137, 0.2222, 0.3561, 0.5, 1.0]
    text = 'a<b>c<d & "e" & f>'
    program = "\n".join(
        [
            f"var D = {{vmax: {vmax}}};",
            *lines[first : last + 1],
            f"var values = {json.dumps(values)};",
            "var heads = []; for (var h = 0; h < 20; h++) heads.push(headColour(h));",
            "console.log(JSON.stringify({colours: values.map(colour), heads: heads, "
            f"text: esc({json.dumps(text)})}}));",
        ]
    )
    result = subprocess.run([node, "-e", program], capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)
    got = np.array([[int(c) for c in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", s).groups()] for s in read["colours"]])
    expected = 255 * plt.get_cmap("viridis")(np.clip(np.array(values) / vmax, 0, 1))[:, :3]
    np.testing.assert_allclose(got[:11], expected[:11], atol=1)  # the stops themselves
    np.testing.assert_allclose(got, expected, atol=6)  # linear between the stops
    assert (got[-2:] == got[10]).all()  # above vmax: the top colour
    assert read["text"] == "a&lt;b&gt;c&lt;d &amp; &quot;e&quot; &amp; f&gt;"
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in read["heads"])
    assert len(set(read["heads"][:8])) == 8 and read["heads"][8:16] == read["heads"][:8]


def test_vmax_is_rounded_to_the_nearest_stored_step():
    """vmax is stored in steps of 1 / SCALE like the weights: the nearest step, never one below (0.29 * SCALE is
    28.999... in floating point)."""
    weights = _softmax(1, 3, 3)
    for hundredths in range(1, 101):
        vmax = hundredths / 100
        view = explore_attention(weights, list("abc"), vmax=vmax)
        assert abs(view.vmax - vmax) <= 0.5 / SCALE + 1e-12, vmax
