"""Figures and tables of vitviz.plots that no page test pins down on its own."""

from __future__ import annotations

import itertools

import numpy as np

from vitviz import i18n, plots, tables


def test_the_recipe_shows_the_epochs_each_stage_ran_of_those_it_planned():
    recipes = [{"epochs": 28, "lr": 1e-3, "data": "somewhere"}, {"epochs": 6, "lr": 1e-4}, {"epochs": 40, "lr": 3e-4}]
    rows = dict(tables.recipe_rows(recipes, run_epochs=[10, 6, 2], cut_short="{run} of {planned}"))
    assert rows["epochs"] == ["10 of 28", "6", "2 of 40"]  # stopped early: says so; ran its plan: the number
    assert rows["lr"] == ["0.001", "0.0001", "0.0003"] and "data" not in rows
    assert dict(tables.recipe_rows(recipes))["epochs"] == ["28", "6", "40"]  # without run epochs: the plan


def test_stage_labels_a_few_epochs_apart_sit_at_different_heights():
    history = [{"epoch": e, "train_loss": 1.0, "train_accuracy": 0.5, "lr": 1e-3} for e in range(1, 94)]
    labels = {key: i18n.t(f"card.curve.{key}") for key in plots.CURVE_KEYS}
    fig = plots.training_curves(history, labels, stage_starts=[11, 24, 60, 66, 68])  # the shipped ViT's six stages
    labels = [a for a in fig.layout.annotations if a.xref == "x2"]  # the panel titles are the paper's
    assert [a.text for a in labels] == ["stage 2", "3", "4", "5", "6"]  # named once, then numbered
    shifts = [a.yshift or 0 for a in labels]
    for (a, shift_a), (b, shift_b) in itertools.pairwise(zip(labels, shifts, strict=True)):
        if abs(a.x - b.x) < 10:  # neighbours closer than a label is wide: never at one height
            assert shift_a != shift_b
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted((s.xref, s.x0) for s in lines) == sorted(  # a dashed line in every panel, between two epochs
        (axis, start - 0.5) for start in (11, 24, 60, 66, 68) for axis in ("x", "x2", "x3")
    )
    assert all(s.yref == f"y{s.xref[1:]} domain" and (s.y0, s.y1) == (0, 1) for s in lines)  # the panel's height


def test_a_patch_map_hover_counts_patches_rows_and_columns_from_one():
    picture = np.zeros((28, 28, 1), dtype=np.uint8)
    overlay = plots.heatmap_overlay(picture, np.arange(16.0).reshape(4, 4))
    patches = overlay.data[-1]
    assert patches.hovertemplate == plots.GRID_HOVER
    assert patches.customdata[0][0].tolist() == [1, 1, 1] and patches.customdata[3][1].tolist() == [4, 2, 14]
    pixels = plots.heatmap_overlay(picture, np.zeros((28, 28))).data[-1]  # Grad-CAM's size: per pixel
    assert pixels.customdata is None and pixels.hovertemplate.startswith("x=")
    heads = plots.small_multiples(np.zeros((2, 3, 5)), ["a", "b"])
    assert heads.data[1].customdata[2][4].tolist() == [3, 5, 15]


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


def test_markdown_table_aligns_numbers_right_and_escapes_pipes() -> None:
    text = tables.markdown_table(["", "right", "wrong"], [["this | that", "1,234", 5], ["other", "0", "7\n8"]])
    assert text.splitlines() == [
        "|  | right | wrong |",
        "|:---|---:|---:|",
        "| this \\| that | 1,234 | 5 |",
        "| other | 0 | 7 8 |",
    ]
