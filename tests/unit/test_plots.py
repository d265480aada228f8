"""Figures and tables of vitviz.render.plots that no page test pins down on its own."""

from __future__ import annotations

import itertools
import json

import numpy as np
import plotly.graph_objects
import plotly.io

from tests.figure_reading import residual_skips
from vitviz.render import i18n, plots, tables


def test_the_recipe_shows_the_epochs_each_stage_ran_of_those_it_planned():
    recipes = [{"epochs": 28, "lr": 1e-3, "data": "somewhere"}, {"epochs": 6, "lr": 1e-4}, {"epochs": 40, "lr": 3e-4}]
    rows = dict(tables.recipe_rows(recipes, run_epochs=[10, 6, 2], cut_short="{run} of {planned}"))
    assert rows["epochs"] == ["10 of 28", "6", "2 of 40"]  # stopped early: says so; ran its plan: the number
    assert rows["lr"] == ["0.001", "0.0001", "0.0003"] and "data" not in rows
    assert dict(tables.recipe_rows(recipes))["epochs"] == ["28", "6", "40"]  # without run epochs: the plan


def test_stage_numbers_never_pile_up_and_every_stage_is_marked_in_every_panel():
    history = [{"epoch": e, "train_loss": 1.0, "train_accuracy": 0.5, "lr": 1e-3} for e in range(1, 241)]
    labels = {key: i18n.t(f"card.curve.{key}") for key in plots.CURVE_KEYS}
    starts = [11, 24, 60, 66, 68, 94, 112, 126, 156]  # the shipped ViT's ten stages
    fig = plots.training_curves(history, labels, stage_starts=starts, stage_names=[f"s{n}" for n in range(2, 11)])
    numbers = [a for a in fig.layout.annotations if a.xref == "x2"]  # the panel titles are the paper's
    assert [a.text for a in numbers] == ["1", "2", "3", "4", "6", "7", "8", "9", "10"]  # stage 5: 2 epochs, no room
    panel_px = 250  # a third of the page at 1280 pixels, the narrowest it gets
    edges = sorted(
        (a.x * panel_px / 240 - plots.ems(a.text) * 20 / 2, a.x * panel_px / 240 + plots.ems(a.text) * 20 / 2)
        for a in numbers  # centred, at presenter mode's 20 pixels
    )
    assert all(left_end < right_start for (_, left_end), (right_start, _) in itertools.pairwise(edges))  # apart
    assert all(a.y == numbers[0].y and not a.yshift for a in numbers)  # on one line, not stacked
    assert numbers[2].hovertext == "s3"
    bands = sorted((s.xref, s.x0, s.x1) for s in fig.layout.shapes)
    bounds = [1, *starts, 241]
    shaded = [(bounds[n - 1] - 0.5, bounds[n] - 0.5) for n in range(2, 11, 2)]  # stages 2, 4, 6, 8, 10
    assert bands == sorted((axis, *band) for band in shaded for axis in ("x", "x2", "x3"))
    assert fig.layout.yaxis.title.text == labels["loss_axis"]  # every panel says what its y axis is: the first
    titles = [a.text for a in fig.layout.annotations[:3]]  # the others in their titles, clear of their neighbours
    assert labels["accuracy_axis"] in titles[1] and labels["lr_axis"] in titles[2]


def test_a_patch_map_hover_counts_patches_rows_and_columns_from_one():
    picture = np.zeros((28, 28, 1), dtype=np.uint8)
    overlay = plots.heatmap_overlay(picture, np.arange(16.0).reshape(4, 4))
    patches = overlay.data[-1]
    assert patches.hovertemplate == plots.GRID_HOVER
    assert patches.customdata[0][0].tolist() == [1, 1, 1] and patches.customdata[3][1].tolist() == [4, 2, 14]
    pixels = plots.heatmap_overlay(picture, np.zeros((28, 28))).data[-1]  # Grad-CAM's size: per pixel
    assert pixels.customdata is None and pixels.hovertemplate.startswith("x=")
    maps = np.arange(30.0).reshape(2, 3, 5)
    heads = plots.small_multiples(maps, ["a", "b"])  # one mosaic: map b starts 5 + 1 columns on
    assert len(heads.data) == 1 and heads.data[0].hovertemplate == GRID_HOVER_OF_VALUE
    assert heads.data[0].customdata[2][6 + 4].tolist() == [3, 5, 15, maps[1, 2, 4]]  # its own row, column, value
    assert np.isnan(heads.data[0].z[0][5]) and [a.text for a in heads.layout.annotations] == ["a", "b"]


GRID_HOVER_OF_VALUE = plots.GRID_HOVER.replace("%{z", "%{customdata[3]")


def test_small_multiples_are_one_mosaic_with_each_maps_own_colours_and_values():
    maps = np.stack([np.arange(16.0).reshape(4, 4), 100 + 10 * np.arange(16.0).reshape(4, 4), np.full((4, 4), 3.0)])
    fig = plots.small_multiples(maps, ["Head 1", "Head 2", "Head 3"], columns=2)
    (trace,) = fig.data
    z, customdata = np.array(trace.z, dtype=float), np.array(trace.customdata, dtype=float)
    row_gap = 2  # at least two empty rows between rows of maps, for the titles
    assert z.shape == (4 + row_gap + 4, 4 + 1 + 4)
    np.testing.assert_allclose(z[:4, :4], maps[0] / 15)  # each map over its own range, as a subplot of its own
    np.testing.assert_allclose(z[:4, 5:], (maps[1] - 100) / 150)
    np.testing.assert_allclose(z[4 + row_gap :, :4], 0.5)  # a flat map: the middle colour
    assert np.isnan(z[:, 4]).all() and np.isnan(z[4 : 4 + row_gap]).all() and np.isnan(z[4 + row_gap :, 5:]).all()
    np.testing.assert_allclose(customdata[:4, 5:, 3], maps[1])  # the pointer reads the map's own values
    assert customdata[4 + row_gap + 3, 2, :3].tolist() == [4, 3, 15]  # row, column, patch number of head 3
    assert (trace.zmin, trace.zmax) == (0.0, 1.0) and trace.hoverongaps is False
    shared = plots.small_multiples(maps, ["a", "b", "c"], columns=2, shared_scale=True).data[0]
    np.testing.assert_allclose(np.array(shared.z, dtype=float)[:4, 5:], maps[1])
    assert (shared.zmin, shared.zmax) == (0.0, 250.0)
    titles = [(a.text, a.x, a.y) for a in fig.layout.annotations]
    assert titles == [("Head 1", 1.5, -0.5), ("Head 2", 6.5, -0.5), ("Head 3", 1.5, 5.5)]  # over each map


def test_a_large_picture_goes_as_a_lossless_png_and_a_small_one_as_numbers():
    import base64
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    photo = rng.integers(0, 256, size=(70, 90, 3), dtype=np.uint8)  # above 64 x 64 pixels
    trace = plots.image(photo, "a photo").data[0]
    assert trace.z is None and trace.source.startswith("data:image/png;base64,")
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(trace.source.split(",", 1)[1]))).convert("RGB"))
    np.testing.assert_array_equal(decoded, photo)  # every pixel as it was
    assert "RGB [%{color[0]}, %{color[1]}, %{color[2]}]" in trace.hovertemplate  # the PNG's pixel, without alpha
    small = plots.image(photo[:32, :32]).data[0]
    assert small.source is None and np.asarray(small.z).tolist() == photo[:32, :32].tolist()
    assert "RGB %{z}" in small.hovertemplate
    overlay = plots.heatmap_overlay(photo, np.zeros((7, 9))).data
    assert overlay[0].source is not None and overlay[0].hoverinfo == "skip"  # the map's hover speaks, not the photo's


def test_a_picture_larger_than_shown_goes_scaled_down_over_the_same_coordinates():
    """However large the picture a page passes, the figure carries at most SHOWN_SIDE pixels a
    side (a 6900 px upload made a 205 MB message), and draws them over the picture's own
    coordinates, so a patch map laid over it still lines up."""
    import base64
    import io

    from PIL import Image

    noise = np.random.default_rng(1).integers(0, 256, size=(1448, 2048, 3), dtype=np.uint8)  # the worst for PNG
    for fig in (plots.image(noise, "a photo"), plots.heatmap_overlay(noise, np.ones((14, 14)))):
        picture = fig.data[0]
        sent = Image.open(io.BytesIO(base64.b64decode(picture.source.split(",", 1)[1])))
        assert sent.size == (plots.SHOWN_SIDE, round(1448 * plots.SHOWN_SIDE / 2048)) == (800, 566)
        assert len(plotly.io.to_json(fig)) < 3_000_000  # a few MB at most, whatever the picture
        left, right = picture.x0 - picture.dx / 2, picture.x0 + (sent.width - 0.5) * picture.dx
        top, bottom = picture.y0 - picture.dy / 2, picture.y0 + (sent.height - 0.5) * picture.dy
        assert np.allclose([left, right, top, bottom], [-0.5, 2047.5, -0.5, 1447.5])
    assert "x=%{x:.0f}, y=%{y:.0f}" in plots.image(noise).data[0].hovertemplate  # a pixel of the picture given
    shown = plots.image(noise[:800, :600]).data[0]
    assert shown.dx is None and shown.x0 is None  # at most SHOWN_SIDE: pixel for pixel, as before


def test_a_skip_starts_at_the_output_of_the_box_it_names_and_ends_at_its_addition():
    boxes = [
        ("x", "(1, 5, 8)", "stream"),
        ("norm", "", "norm"),
        ("+ a", "", "add"),
        ("mlp", "", "mlp"),
        ("+ b", "", "add"),
    ]
    fig = plots.block_diagram(boxes, residuals=[(0, 2), (2, 4)])
    assert residual_skips(fig.to_dict()["layout"]) == [("x", "+ a"), ("+ a", "+ b")]
    other = plots.block_diagram(boxes, residuals=[(0, 2), (0, 4)])  # both from x: a post-LN drawing would read so
    assert residual_skips(other.to_dict()["layout"]) == [("x", "+ a"), ("x", "+ b")]


# ---- the theme: every figure readable from the back of a room, and on a projector ----

SCREEN_PX, PRESENTER_PX = 14, 18  # the smallest text a figure may have (issue 39), screen and presenter mode
AA = 4.5  # WCAG AA: text against its background


def _picture(h: int = 32, w: int = 32) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


# One call per figure function, with small arrays and the longest kind of text each one gets.
BUILDERS = {
    "image": lambda: plots.image(_picture(), "An image"),
    "patch_grid": lambda: plots.patch_grid(_picture(), 8, highlight=3, title="Patches", numbers=True),
    "patch_gallery": lambda: plots.patch_gallery(np.zeros((16, 8, 8, 3)), (4, 4), title="Gallery"),
    "heatmap_overlay": lambda: plots.heatmap_overlay(_picture(), np.random.rand(4, 4), title="Rollout"),
    "patch_votes": lambda: plots.patch_votes(_picture(), np.arange(16.0).reshape(4, 4), title="Votes", chosen=5),
    "small_multiples": lambda: plots.small_multiples(np.random.rand(3, 4, 4), ["Head 1", "Head 2", "Head 3"]),
    "channel_maps": lambda: plots.channel_maps(np.random.randn(3, 8, 8), ["R", "G", "B"]),
    "histogram": lambda: plots.histogram({"R": np.random.randn(50)}, "Values", x_title="value", y_title="count"),
    "bars": lambda: plots.bars(["cat", "dog"], [0.93, 0.07], title="Top 2", highlight=0, correct=1),
    "key_weights": lambda: plots.key_weights(["patch 1", "patch 2"], [0.6, 0.4], title="Keys"),
    "patch_planes": lambda: plots.patch_planes(np.random.rand(48), 4, 3, ["R", "G", "B"], title="One patch"),
    "vector_bars": lambda: plots.vector_bars(np.random.randn(48), 16, ["R", "G", "B"], title="x_p", x_title="index"),
    "component_tiles": lambda: plots.component_tiles(np.random.randn(3, 3, 4, 4), [0.5, 0.3, 0.2]),
    "token_matrix": lambda: plots.token_matrix(
        np.random.randn(3, 8), ["[CLS]", "patch 1", "patch 2"], title="Tokens", marked={0: "[CLS]"}
    ),
    "similarity_grid": lambda: plots.similarity_grid(np.random.rand(2, 2, 2, 2), title="Cosine", selected=1),
    "similarity_maps": lambda: plots.similarity_maps(
        np.random.rand(2, 3, 3), ["a", "b"], marked=(1, 1), own_range=True
    ),
    "attention_picker": lambda: plots.attention_picker(_picture(), np.random.rand(4, 4), 8, query_patch=2, title="Q"),
    "attention_distance": lambda: plots.attention_distance(
        np.random.rand(2, 3) * 10, "Distance", "layer", "pixels", uniform=8.0, uniform_label="uniform"
    ),
    "reach": lambda: plots.reach([("conv1", 3), ("pool", 6)], np.random.rand(2, 3) * 10, 32),
    "block_diagram": lambda: plots.block_diagram(
        [("x", "(1, 65, 192)", "stream"), ("norm1", "", "norm"), ("+", "", "add")], [(0, 2)], title="Block"
    ),
    "multi_line": lambda: plots.multi_line(
        [1, 2, 3],
        {"cat": np.array([0.1, 0.5, 0.9]), "dog": np.array([0.8, 0.4, 0.05])},
        "Logit lens",
        "layer",
        "p",
        percent=True,
        marked_x=2,
    ),
    "gelu_histogram": lambda: plots.gelu_histogram(
        np.linspace(-3, 3, 7),
        np.linspace(-0.1, 3, 7),
        np.clip(np.linspace(-3, 3, 7), 0, None),
        np.random.randn(40),
        "GELU",
        "x",
        "y",
        "count",
    ),
    "image_row": lambda: plots.image_row([_picture(), _picture()], ["0%", "50% hidden"]),
    "training_curves": lambda: plots.training_curves(
        [
            {"epoch": e, "train_loss": 1.0, "train_accuracy": 0.5, "lr": 1e-3, "test_loss": 1.1, "test_accuracy": 0.4}
            for e in range(1, 41)
        ],
        {key: key for key in plots.CURVE_KEYS},
        stage_starts=[11, 24, 30],
        stage_names=["s2", "s3", "s4"],
    ),
    "learning_curves": lambda: plots.learning_curves(
        [{"epoch": 0, "test_loss": 2.3, "test_accuracy": 0.1}]
        + [
            {"epoch": e, "train_loss": 1.0, "train_accuracy": 0.5, "test_loss": 1.1, "test_accuracy": 0.4}
            for e in range(1, 14)
        ],
        {key: key for key in (*plots.CURVE_KEYS, "snapshot")},
        [0, 1, 2, 5, 10, 13],
        chosen=5,
        total_epochs=30,
    ),
    "confusion_matrix": lambda: plots.confusion_matrix(
        np.arange(9).reshape(3, 3), ["cat", "dog", "bird"], "Confusion", "predicted", "true", selected=(0, 1)
    ),
    "curves_with_band": lambda: plots.curves_with_band(
        [0, 0.5, 1],
        {"attention rollout": np.array([0.9, 0.4, 0.1]), "occlusion": np.array([0.9, 0.2, 0.1])},
        (np.array([0.9, 0.5, 0.1]), np.array([0.9, 0.7, 0.1])),
        "random orders (8): lowest to highest",
        "Deletion",
        "share of patches removed",
        "p(cat)",
    ),
    "head_grid": lambda: plots.head_grid(
        np.random.rand(3, 4) * 0.05, "Accuracy lost", "head", "layer", "lost", marked=[(0, 1)]
    ),
    "test_set_map": lambda: plots.test_set_map(
        np.random.randn(20, 2), np.arange(20) % 3, ["cat", "dog", "bird"], [f"image {i}" for i in range(20)], "Map"
    ),
}


def _figure_functions() -> list[str]:
    import inspect

    return sorted(
        name
        for name, function in inspect.getmembers(plots, inspect.isfunction)
        if function.__module__ == plots.__name__
        and not name.startswith("_")
        and inspect.signature(function).return_annotation == "go.Figure"
        and "fig" not in inspect.signature(function).parameters  # theme, outline_patch: they take a figure
    )


def test_every_figure_function_is_built_by_the_readability_test():
    assert sorted(BUILDERS) == _figure_functions()  # a new figure function: add it to BUILDERS


_NAMED = {"white": "#ffffff", "black": "#000000", "gray": "#808080", "grey": "#808080"}


def _rgba(colour: str) -> tuple[float, float, float, float]:
    """A Plotly colour ("#abc", "#aabbcc", "rgb(..)", "rgba(..)", a few names) as 0..1 channels."""
    colour = _NAMED.get(colour.strip().lower(), colour.strip())
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:4])
        return (*(int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)), 1.0)
    if colour.startswith("rgb"):
        parts = [float(p) for p in colour[colour.index("(") + 1 : -1].split(",")]
        return (*(p / 255 for p in parts[:3]), parts[3] if len(parts) > 3 else 1.0)
    raise ValueError(f"colour {colour!r}: add it to the test's reader")


def _over(colour: str, background: str) -> tuple[float, float, float]:
    """A colour with its alpha laid over an opaque background."""
    *front, alpha = _rgba(colour)
    back = _rgba(background)[:3]
    return tuple(alpha * f + (1 - alpha) * b for f, b in zip(front, back, strict=True))


def _luminance(rgb: tuple[float, float, float]) -> float:
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(text: str, background: str) -> float:
    """WCAG's contrast ratio of a text colour on an opaque background."""
    a, b = sorted([_luminance(_over(text, background)), _luminance(_rgba(background)[:3])])
    return (b + 0.05) / (a + 0.05)


def _texts(spec: dict) -> list[tuple[str, float, str | None, str | None]]:
    """Every text of a figure's plotly JSON as (what, size in px, colour, background), each resolved as
    plotly.js does: the element's own font, else the template's default for that element, else the
    figure's font, else the template's, else plotly.js's own (12 px, #444). Colour and background are
    None for text drawn over a picture or a map, whose background is the data."""
    layout = spec["layout"]
    template = layout.get("template", {}).get("layout", {})
    template_data = layout.get("template", {}).get("data", {})

    def get(tree: dict, *path: str) -> object:
        for key in path:
            tree = tree.get(key, {}) if isinstance(tree, dict) else {}
        return tree if tree != {} else None

    base_size = get(layout, "font", "size") or get(template, "font", "size") or 12
    base_colour = get(layout, "font", "color") or get(template, "font", "color") or "#444"
    paper = layout.get("paper_bgcolor") or template.get("paper_bgcolor") or "#ffffff"
    plot = layout.get("plot_bgcolor") or template.get("plot_bgcolor") or "#ffffff"

    def font(own: dict | None, default: dict | None) -> tuple[float, str]:
        own, default = own or {}, default or {}
        return own.get("size") or default.get("size") or base_size, own.get("color") or default.get(
            "color"
        ) or base_colour

    found = [("the figure's font", base_size, base_colour, paper)]
    if get(layout, "title", "text"):
        found.append(("title", *font(get(layout, "title", "font"), get(template, "title", "font")), paper))
    for key, axis in layout.items():
        if key[1:5] == "axis" and key[0] in "xy" and axis.get("visible", True) is not False:
            kind = key[:5]
            found.append((f"{key} ticks", *font(axis.get("tickfont"), get(template, kind, "tickfont")), paper))
            if get(axis, "title", "text"):
                found.append(
                    (f"{key} title", *font(get(axis, "title", "font"), get(template, kind, "title", "font")), paper)
                )
    found.append(("legend", *font(get(layout, "legend", "font"), get(template, "legend", "font")), paper))
    hover = get(layout, "hoverlabel", "font", "size") or get(template, "hoverlabel", "font", "size") or 13
    found.append(("hover label", hover, None, None))
    for note in layout.get("annotations", []):
        if note.get("text"):
            on_axes = any(str(note.get(ref, "paper")).startswith(("x", "y")) for ref in ("xref", "yref"))
            under = plot if on_axes else paper
            background = _over(note["bgcolor"], under) if note.get("bgcolor") else None
            under = "#" + "".join(f"{round(255 * c):02x}" for c in background) if background else under
            found.append(
                (
                    f"annotation {note['text']!r}",
                    *font(note.get("font"), get(template, "annotationdefaults", "font")),
                    under,
                )
            )
    for index, trace in enumerate(spec["data"]):
        kind = trace.get("type", "scatter")
        defaults = (template_data.get(kind) or [{}])[0]
        if kind in ("heatmap", "contour") and trace.get("showscale", True):
            bar = trace.get("colorbar", {})
            found.append(
                (f"trace {index} colour bar", *font(bar.get("tickfont"), get(defaults, "colorbar", "tickfont")), paper)
            )
            if get(bar, "title", "text"):
                found.append((f"trace {index} colour bar title", *font(get(bar, "title", "font"), None), paper))
        has_text = trace.get("texttemplate") or (trace.get("text") is not None and "text" in trace.get("mode", "text"))
        if has_text:
            size, colour = font(trace.get("textfont"), defaults.get("textfont"))
            if kind == "bar" and trace.get("textposition") == "outside":
                found.append((f"trace {index} numbers", size, colour, plot))
            else:  # over its bar, its map's cell or a picture: the data is the background
                found.append((f"trace {index} text", size, None, None))
    return found


def _themed(name: str, presenter: bool) -> dict:
    return plots.theme(BUILDERS[name](), presenter).to_dict()


import pytest  # noqa: E402


@pytest.mark.parametrize("presenter", [False, True], ids=["screen", "presenter"])
def test_every_figure_text_is_large_and_dark_enough(presenter):
    smallest = PRESENTER_PX if presenter else SCREEN_PX
    problems = []
    for name in BUILDERS:
        for what, size, colour, background in _texts(_themed(name, presenter)):
            if size < smallest:
                problems.append(f"{name}: {what} is {size} px")
            if colour is not None and _contrast(colour, background) < AA:
                problems.append(f"{name}: {what} {colour} on {background}: {_contrast(colour, background):.1f}:1")
    assert problems == []


def test_presenter_mode_draws_a_figure_larger_and_leaves_the_figure_as_built():
    fig = BUILDERS["bars"]()
    built = fig.to_dict()
    screen = plots.theme(fig).to_dict()
    presenting = plots.theme(fig, presenter=True)
    assert presenting.layout.height >= 1.2 * 300 and presenting.layout.font.size >= PRESENTER_PX  # drawn larger
    assert fig.to_dict() == built  # themed on a copy: a figure every session shares is never changed
    assert plots.theme(fig).to_dict() == screen  # drawn again in the other mode: the same as the first time


@pytest.mark.parametrize("name", ["bars", "small_multiples", "multi_line"])
def test_theming_a_figures_json_leaves_that_json_as_it_was(name):
    """charts.draw themes a figure's JSON whose dicts and lists it shares with the figure (and with
    other sessions drawing it at the same moment): themed writes only to copies."""
    import copy

    spec = BUILDERS[name]().to_dict()
    before = plotly.io.to_json(copy.deepcopy(spec), validate=False)
    for presenter in (True, False):
        themed = plots.themed(spec, presenter)
        assert themed["layout"]["font"]["size"] == plots.TEXT_PX[presenter]
        assert themed["layout"]["template"] == plots.TEMPLATES[presenter]
    assert plotly.io.to_json(spec, validate=False) == before


@pytest.mark.parametrize("name", ["bars", "small_multiples", "multi_line"])
def test_a_figure_on_paper_is_the_themed_figure_plotly_checked(name):
    """The handout writes a figure's themed JSON without building a second, checked figure: what
    plotly.js receives is what the checked figure would have written, and the figure is unchanged."""
    import json

    fig = BUILDERS[name]()
    built = fig.to_dict()
    markup = plots.paper_html(fig, "fig-x", {"displayModeBar": False}, 500, 300)
    checked = plots.theme(fig).to_html(
        include_plotlyjs=False, full_html=False, div_id="fig-x", config={"displayModeBar": False}
    )

    def drawn(html: str) -> list:
        decoder, at = json.JSONDecoder(), html.index("Plotly.newPlot(")
        at = html.index("[", at)
        data, at = decoder.raw_decode(html, at)
        layout, at = decoder.raw_decode(html, html.index("{", at))
        config, _ = decoder.raw_decode(html, html.index("{", at))
        return [data, layout, config]

    assert drawn(markup) == drawn(checked)
    assert 'id="fig-x"' in markup
    assert fig.to_dict() == built


def test_the_looks_are_plotly_templates_by_name():
    """The renderer picks a look by a registered template's name (public plotly API)."""
    assert plotly.io.templates["vitviz"].to_plotly_json() == plots.TEMPLATES[False]
    assert plotly.io.templates["vitviz_presenter"].to_plotly_json() == plots.TEMPLATES[True]
    assert plots.TEMPLATES[True]["layout"]["font"]["size"] == plots.TEXT_PX[True]
    fig = plotly.graph_objects.Figure(layout=dict(template="vitviz_presenter"))  # checked: the name resolves
    assert fig.to_dict()["layout"]["template"] == plots.TEMPLATES[True]


def test_a_long_title_wraps_and_the_top_margin_makes_room_for_it():
    short = plots.theme(plots.image(_picture(), "A title")).to_dict()["layout"]
    title = "A title that runs on and on, far wider than half of the page"
    long = plots.theme(plots.image(_picture(), title)).to_dict()["layout"]
    assert long["title"]["text"].replace("<br>", " ") == title and "<br>" in long["title"]["text"]
    assert all(plots.ems(line) <= plots.TITLE_EMS for line in long["title"]["text"].split("<br>"))
    assert long["margin"]["t"] > short["margin"]["t"]
    assert long["height"] - short["height"] == long["margin"]["t"] - short["margin"]["t"]  # the picture keeps its size
    korean = plots.wrap("가장 높은 순위의 패치를 가렸을 때 답이 얼마나 바뀌는지", 14)  # Hangul: one em a syllable
    assert all(plots.ems(line) <= 14 for line in korean.split("<br>")) and korean.count("<br>") >= 1


@pytest.mark.parametrize("presenter", [False, True])
def test_a_figure_across_the_page_wraps_its_title_at_the_page_s_width_not_half_of_it(presenter):
    title = "[CLS] token, layer 9 (10,000 test images), a title for the whole width"  # 36 ems: over half
    assert plots.TITLE_EMS < plots.ems(title) <= plots.WIDE_TITLE_EMS
    half = plots.theme(plots.image(_picture(), title), presenter).to_dict()["layout"]
    points = np.random.default_rng(0).normal(size=(6, 2))
    wide = plots.theme(
        plots.test_set_map(points, [0, 1, 2, 0, 1, 2], ["a", "b", "c"], ["p"] * 6, title=title), presenter
    ).to_dict()["layout"]
    assert "<br>" in half["title"]["text"] and wide["title"]["text"] == title
    boxes = [("x", "(1, 65, 192)", "input"), ("LayerNorm", "(1, 65, 192)", "norm1")]
    diagram = plots.theme(plots.block_diagram(boxes, residuals=[(0, 1)], title=title), presenter).to_dict()["layout"]
    assert diagram["title"]["text"] == title


def test_bar_numbers_sit_level_beside_their_bars_on_a_scale_that_stops_at_the_longest():
    fig = plots.bars(["cat", "dog"], [0.93, 0.07])
    bar = fig.data[0]
    assert (bar.textposition, bar.textangle, bar.constraintext, bar.cliponaxis) == ("outside", 0, "none", False)
    assert fig.layout.xaxis.range[0] == 0 and fig.layout.xaxis.range[1] > 0.93  # room for "93.0%" beside the bar
    assert max(fig.layout.xaxis.tickvals) <= 0.93 + 1e-9  # no "120%" in that room


def _same_json(one, other) -> bool:
    """The same figure as the app sends it: its JSON without the template, which the renderer sets
    (built_copy's checked figure carries plotly's default one where the app builds without it)."""
    sent = [json.loads(figure.to_json()) for figure in (one, other)]
    for spec in sent:
        spec["layout"].pop("template", None)
    return sent[0] == sent[1]


def test_what_a_page_used_to_change_on_a_copy_its_builder_draws_as_the_copy_had_it():
    """A step asks the builder for every label of a short bar chart, the CNN's short layer names
    and the card's legend at the foot: the app then shares the built figure (no copy changed on
    every run), and it is the figure the copy was."""
    names = [f"class {n}" for n in range(10)]
    copy = plots.built_copy(plots.bars(names, [0.1] * 10, height=200))
    copy.update_yaxes(tickmode="array", tickvals=names, ticktext=names)
    assert _same_json(plots.bars(names, [0.1] * 10, height=200, every_label=True), copy)
    fields, distances = [("stem", 3), ("groups.0.conv1", 5)], np.full((2, 3), 7.0)
    copy = plots.built_copy(plots.reach(fields, distances, 32))
    copy.update_layout(xaxis_ticktext=["stem", "0.conv1"])
    assert _same_json(plots.reach(fields, distances, 32, tick_text=["stem", "0.conv1"]), copy)
    history = [{"epoch": e, "train_loss": 1.0 / e, "train_accuracy": 0.5, "lr": 0.1} for e in (1, 2)]
    labels = {key: key for key in plots.CURVE_KEYS}
    foot = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0)
    copy = plots.built_copy(plots.training_curves(history, labels))
    copy.update_layout(legend=foot)
    assert _same_json(plots.training_curves(history, labels, legend=foot), copy)


# ---- one colour-blind-safe palette for heads and classes ----

# Machado, Oliveira and Fernandes (2009): full dichromacy, applied to linear RGB.
DICHROMACY = {
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.01182, 0.04294, 0.968881]]
    ),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.3039]]
    ),
}
APART = 10.0  # CIEDE2000 between any two colours of the palette, for every kind of eye


def _lab(colour: str, eyes: str | None) -> np.ndarray:
    rgb = np.array(_rgba(colour)[:3])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    if eyes:
        linear = np.clip(DICHROMACY[eyes] @ linear, 0, 1)
    xyz = (
        np.array(
            [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.072175], [0.0193339, 0.119192, 0.9503041]]
        )
        @ linear
    )
    xyz /= np.array([0.95047, 1.0, 1.08883])  # D65 white
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """CIEDE2000 colour difference (Sharma, Wu and Dalal 2005)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_big_h = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * np.cos(np.radians(h_mean - 30))
        + 0.24 * np.cos(np.radians(2 * h_mean))
        + 0.32 * np.cos(np.radians(3 * h_mean + 6))
        - 0.20 * np.cos(np.radians(4 * h_mean - 63))
    )
    rotation = (
        -np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2)))) * 2 * np.sqrt(c_mean**7 / (c_mean**7 + 25**7))
    )
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    dl, dc, dh_ = (l2 - l1) / s_l, (c2 - c1) / s_c, d_big_h / s_h
    return float(np.sqrt(dl**2 + dc**2 + dh_**2 + rotation * dc * dh_))


def test_ciede2000_agrees_with_the_published_pairs():
    # Sharma, Wu and Dalal (2005), table 1: pairs 1 and 17
    assert _ciede2000(np.array([50, 2.6772, -79.7751]), np.array([50, 0, -82.7485])) == pytest.approx(2.0425, abs=1e-4)
    assert _ciede2000(np.array([50, 2.5, 0]), np.array([73, 25, -18])) == pytest.approx(27.1492, abs=1e-4)


@pytest.mark.parametrize("eyes", [None, *DICHROMACY], ids=["normal", *DICHROMACY])
def test_the_palette_colours_stay_apart_for_colour_blind_eyes(eyes):
    close = [
        (a, b, round(_ciede2000(_lab(a, eyes), _lab(b, eyes)), 1))
        for a, b in itertools.combinations(plots.PALETTE, 2)
        if _ciede2000(_lab(a, eyes), _lab(b, eyes)) < APART
    ]
    assert close == []
    assert len(plots.PALETTE) >= 8


def test_heads_classes_and_the_answer_take_the_palette():
    dots = plots.attention_distance(np.random.rand(2, 12))
    assert [d.marker.color for d in dots.data[:8]] == list(plots.PALETTE)  # heads 1 to 8: the palette in order
    assert len({(d.marker.color, d.marker.symbol) for d in dots.data}) == 12  # heads 9 to 12: other symbols
    lens = plots.theme(BUILDERS["multi_line"]()).to_dict()["layout"]
    assert tuple(lens["template"]["layout"]["colorway"]) == plots.PALETTE  # classes, in the order drawn
    bars = plots.bars(["cat", "dog", "deer"], [0.5, 0.3, 0.2], highlight=0, correct=1)
    assert {plots.PREDICTED_COLOUR, plots.TRUE_COLOUR, plots.OTHER_COLOUR} <= set(plots.PALETTE)
    assert list(bars.data[0].marker.color) == [plots.PREDICTED_COLOUR, plots.TRUE_COLOUR, plots.OTHER_COLOUR]


def test_many_heads_are_named_in_rows_under_the_plot_a_few_in_a_column_beside_it():
    """Twelve legend entries in plotly's column ran off a 400-px figure at presenter sizes (the
    browser test found it when the 12-head ViT shipped); rows under the plot wrap to its width."""
    rows = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0)
    for heads, legend in ((3, None), (6, None), (12, rows)):
        distance = plots.attention_distance(np.random.rand(9, heads)).to_plotly_json()["layout"]
        reach = plots.reach([("conv1", 3), ("pool", 6)], np.random.rand(9, heads) * 10, 32).to_plotly_json()["layout"]
        for layout in (distance, reach):
            assert layout.get("legend") == legend, (heads, layout.get("legend"))


def _without_empty(value: object) -> object:
    """Plotly JSON without empty objects (an unset title is {} when plotly checks it, absent when not)."""
    if isinstance(value, dict):
        value = {key: _without_empty(item) for key, item in value.items()}
        return {key: item for key, item in value.items() if item != {}}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_figure_built_without_plotly_checks_is_the_checked_one(name):
    """The app builds figures from plain dictionaries without plotly's checks
    (``internals.unchecked_figure``): with them on, plotly would turn a dictionary not in its own
    form into another JSON (a colour scale's name into its stops, a title's text into a dict), or
    refuse a wrong key."""
    import json

    from vitviz.app import internals

    built = {}
    for checked in (False, True):
        before = plots.build_figures_with(None if checked else internals.unchecked_figure)
        try:
            np.random.seed(0)
            figure = BUILDERS[name]()
        finally:
            plots.build_figures_with(before)
        built[checked] = plotly.io.to_json(plots.themed(figure.to_dict(), presenter=True), validate=False)
        # what the app sends for it: the same text as plotly's own to_dict writes
        assert plotly.io.to_json(internals.figure_dict(figure), validate=False) == plotly.io.to_json(
            figure.to_dict(), validate=False
        )
    assert _without_empty(json.loads(built[False])) == _without_empty(json.loads(built[True]))


# ---- issue 55: figures a class reads wrong ----


@pytest.mark.parametrize("eyes", [None, *DICHROMACY], ids=["normal", *DICHROMACY])
def test_the_test_set_map_gives_ten_classes_ten_colours_that_stay_apart(eyes):
    points = np.random.default_rng(0).normal(size=(100, 2))
    groups = np.arange(100) % 10
    fig = plots.test_set_map(points, groups, [f"class {k}" for k in range(10)], [""] * 100)
    colours = [trace.marker.color for trace in fig.data]
    assert len(set(colours)) == 10  # ship is not airplane's colour, nor truck automobile's
    close = [(a, b) for a, b in itertools.combinations(colours, 2) if _ciede2000(_lab(a, eyes), _lab(b, eyes)) < APART]
    assert close == []
    faint = [c for c in colours if _ciede2000(_lab(c, eyes), _lab("#FFFFFF", eyes)) < 15]  # small dots on white
    assert faint == []


def test_the_head_grid_colour_bar_tells_its_ticks_apart():
    drops = np.array([[0.002, 0.006, 0.011, 0.014], [0.001, 0.004, 0.0, 0.008]])
    bar = plots.head_grid(drops).data[0].colorbar
    labels = list(bar.ticktext)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels  # not "1%, 1%, 1%, 0%"
    for value, label in zip(bar.tickvals, labels, strict=True):
        assert float(label.rstrip("%")) / 100 == pytest.approx(value, abs=1e-12)  # each label says its value
    assert max(bar.tickvals) <= drops.max() + 1e-12


def test_the_cards_panels_leave_their_neighbours_room():
    history = [
        dict(epoch=e, train_loss=1 / e, train_accuracy=0.5, lr=0.002 / e, test_loss=1, test_accuracy=0.6)
        for e in range(1, 6)
    ]
    labels = {key: key.replace("_", " ") for key in plots.CURVE_KEYS} | {"accuracy_axis": "images right"}
    fig = plots.training_curves(history, labels)
    # The gap left of a panel holds its tick labels ("100%", "0.0015") and its y title, if any, at a
    # 900-pixel figure in presenter mode (20 px text); a y title rotated in the gap runs into the panel before.
    width, text_px = 900, plots.TEXT_PX[True]
    for name in ("yaxis2", "yaxis3"):
        axis, x_axis = fig.layout[name], fig.layout[name.replace("y", "x")]
        left_panel_end = fig.layout["xaxis" if name == "yaxis2" else "xaxis2"].domain[1]
        gap_px = (x_axis.domain[0] - left_panel_end) * width
        chars = 4 if name == "yaxis2" else 6  # "100%"; plotly writes a learning rate as "0.0015"
        needed = chars * 0.55 * text_px + 8 + (1.3 * text_px if axis.title.text else 0)
        assert gap_px >= needed, (name, axis.title.text, gap_px, needed)
    assert "images right" in " ".join(a.text for a in fig.layout.annotations)  # the panel says what it counts


def _plot_px(fig, presenter: bool, legend_entries: int) -> float:
    """The height left for a plot once the title, the x axis (ticks and title) and a legend of one
    entry a row (a narrow column) have taken theirs."""
    fig = plots.theme(fig, presenter)
    text, scale = plots.TEXT_PX[presenter], (plots.PRESENTER_SCALE if presenter else 1)
    legend = 1.3 * text * legend_entries if legend_entries > 1 else 0
    return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b - 2.6 * text - legend + 0 * scale


@pytest.mark.parametrize("presenter", [False, True])
def test_a_tall_legend_does_not_squash_its_curves(presenter):
    x = np.linspace(0, 1, 9)
    names = ["occlusion (hiding one patch at a time)", "[CLS] attention (last layer)", "attention rollout"]
    names += ["gradient-weighted rollout", "integrated gradients"]
    trust = plots.curves_with_band(x, {n: x for n in names}, (x, x), "random orders (8): lowest to highest")
    assert _plot_px(trust, presenter, len(names) + 1) >= 240
    lines = plots.multi_line(x, {n: x for n in names[:4]}, height=340)
    assert _plot_px(lines, presenter, 4) >= 220  # the block page's "Size of the stream"


@pytest.mark.parametrize("presenter", [False, True])
def test_a_wrapped_histogram_title_does_not_touch_its_legend(presenter):
    title = "After normalising (mean -0.12: centred near 0, the values the model reads)"
    fig = plots.theme(plots.histogram({"R": np.random.rand(50), "G": np.random.rand(50)}, title), presenter)
    lines = fig.layout.title.text.count("<br>") + 1
    assert lines > 1
    title_bottom = fig.layout.title.pad.t + 1.3 * plots.TITLE_PX[presenter] * lines
    legend = fig.layout.legend
    legend_on_top = legend.yref != "container" and (legend.y or 0) >= 1
    needed = title_bottom + (1.3 * plots.TEXT_PX[presenter] + 10 if legend_on_top else 0)
    assert fig.layout.margin.t >= needed


def test_the_token_rows_name_cls_on_its_own_row():
    rows = ["[CLS]"] + [f"patch {n}" for n in range(1, 65)]
    ticks = rows[1::8]
    after = plots.token_matrix(np.ones((65, 8)), rows, title="T x D", marked={0: "[CLS]"}, rows=rows, ticks=ticks)
    before = plots.token_matrix(np.ones((64, 8)), rows[1:], title="N x D", rows=rows, ticks=ticks)
    y = after.layout.yaxis
    assert y.tickvals[0] == "[CLS]" and "[CLS]" in y.ticktext[0]  # [CLS] named beside its row
    assert not after.layout.annotations  # no label floating over the patches' rows
    row_px = (420 - plots.TITLE_TOP - 60) / len(rows)
    slots = [rows.index(v) for v in y.tickvals]
    assert min(np.diff(slots)) * row_px >= plots.TEXT_PX[False]  # no tick level with another
    assert before.layout.yaxis.tickvals[0] == "patch 1"  # the left map, without [CLS], names patch 1


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_head_grids_rotated_layer_title_is_more_than_a_syllable(lang):
    fig = plots.head_grid(np.zeros((2, 3)), y_title=i18n.t("trust.grid_y", lang), x_title=i18n.t("trust.grid_x", lang))
    assert plots.ems(fig.layout.yaxis.title.text) >= 3  # a lone "층" on its side read as a mark, not a word


def test_a_patch_poll_writes_each_patch_s_votes_in_it_and_outlines_the_student_s():
    picture = np.zeros((32, 48, 3), dtype=np.uint8)
    votes = np.zeros((2, 3))
    votes[1, 2], votes[0, 1] = 3, 1
    fig = plots.patch_votes(picture, votes, "votes", chosen=4)
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert [list(row) for row in heat.text] == [["", "1", ""], ["", "", "3"]]
    assert np.isnan(np.asarray(heat.z, dtype=float)[0, 0])  # nobody chose it: the picture shows through
    assert (heat.dx, heat.dy, heat.zmax) == (16, 16, 3)
    outline = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(o.x0, o.y0) for o in outline] == [(15.5, 15.5)]  # patch 4: row 1, column 1
    markers = next(t for t in fig.data if t.type == "scatter")
    assert [list(c[:3]) for c in markers.customdata][4] == [4, 1, 1]  # a click names index, row, column
    no_votes = plots.patch_votes(picture, np.zeros((2, 3))).data[1]
    assert np.isnan(np.asarray(no_votes.z, dtype=float)).all() and set(np.ravel(no_votes.text)) == {""}


def test_a_patch_grid_names_every_patch_under_the_pointer_with_or_without_clicks():
    picture = np.zeros((12, 8, 3), dtype=np.uint8)  # P = 4: 3 rows of 2 patches
    clickable, still = plots.patch_grid(picture, 4), plots.patch_grid(picture, 4, clickable=False)
    markers = next(t for t in clickable.data if t.type == "scatter")
    names = next(t for t in still.data if t.type == "heatmap")  # one cell a patch, no marker
    assert not [t for t in still.data if t.type == "scatter"] and names.hovertemplate == markers.hovertemplate
    assert np.asarray(names.z).shape == (3, 2) and (names.x0, names.dx, names.y0, names.dy) == (1.5, 4, 1.5, 4)
    cells = np.asarray(names.customdata).reshape(6, 6)
    assert cells.tolist() == np.asarray(markers.customdata).tolist()  # patch 5: index 4, row 2, column 0
    assert list(cells[4]) == [4, 2, 0, 5, 3, 1]
    assert (markers.x[4], markers.y[4]) == (1.5, 9.5)  # the centre of the cell that names it
    # the grid: every inner line in one path, the same over both
    (lines,) = still.layout.shapes
    assert lines.type == "path" and lines.path == clickable.layout.shapes[0].path
    assert lines.path == "M-0.5,3.5L7.5,3.5M-0.5,7.5L7.5,7.5M3.5,-0.5L3.5,11.5"
    assert plots.patch_grid(np.zeros((4, 4, 3), dtype=np.uint8), 4).layout.shapes == ()  # one patch: no line
