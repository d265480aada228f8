"""Pages 3 (patch vectors) and 4 ([CLS] and position embeddings), and the vitviz functions behind them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.apptest import charts, errors, open_page
from tests.apptest import figure as _figure
from tests.apptest import figure_array as _array
from tests.helpers import no_cls_vit
from vitviz.analyses import analysis, claims
from vitviz.app import caches
from vitviz.models import patches, zoo
from vitviz.models.model import sincos_2d
from vitviz.render import plots

VECTORS = "app_pages/3_vectors.py"
TOKENS = "app_pages/4_tokens.py"


def _bar_values(figure: dict) -> list:
    return [trace["y"] for trace in figure["data"]]


# ---- the pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [None, "untrained-vit-b16"])
def test_vectors_page_runs(model: str | None) -> None:
    at = open_page(VECTORS, **({"model": model} if model else {}))
    assert errors(at) == []
    assert at.selectbox(key="patch") is not None
    keys = {chart.proto.id.rsplit("-", 1)[-1] for chart in charts(at)}
    assert {"vectors_grid", "vectors_planes", "vectors_flat", "vectors_token", "vectors_components"} <= keys
    assert len(at.success) == 1  # every route agrees with the Conv2d
    assert len(at.main.get("download_button")) == 2
    planes = _figure(at, "vectors_planes")
    number = at.selectbox(key="patch").value + 1  # patches counted from 1 on screen
    assert at.selectbox(key="patch").format_func(at.selectbox(key="patch").value).startswith(f"patch {number} (")
    assert planes["layout"]["title"]["text"].startswith(
        f"Patch {number}:"
    )  # the planes' title counts as the picker does
    patch_size = 16 if model else 4
    assert len(planes["data"]) == 3  # R, G, B planes
    flat = _figure(at, "vectors_flat")
    assert [trace["name"] for trace in flat["data"]] == ["R", "G", "B"]
    components = _figure(at, "vectors_components")
    _, ratios = caches.cached_filter_components(model or zoo.default_name())
    shown = claims.components_to_show(ratios)  # those that carry 95% of the variance, one titled tile each
    assert len(components["data"]) == 1 and len(components["layout"]["annotations"]) == shown
    assert _array(planes["data"][0]["z"]).shape == (patch_size, patch_size)
    assert sum(_array(trace["y"]).size for trace in flat["data"]) == 3 * patch_size * patch_size


def test_choosing_another_patch_changes_the_vector() -> None:
    at = open_page(VECTORS)
    first = at.selectbox(key="patch").value
    before = (_bar_values(_figure(at, "vectors_flat")), _figure(at, "vectors_token")["data"][0]["y"])
    other = 0 if first != 0 else 1
    at.selectbox(key="patch").set_value(other).run()
    assert errors(at) == []
    assert at.selectbox(key="patch").value == other
    after = (_bar_values(_figure(at, "vectors_flat")), _figure(at, "vectors_token")["data"][0]["y"])
    assert after[0] != before[0]
    assert after[1] != before[1]


@pytest.mark.parametrize("model", [None, "untrained-vit-b16"])
def test_tokens_page_runs(model: str | None) -> None:
    at = open_page(TOKENS, **({"model": model} if model else {}))
    assert errors(at) == []
    assert at.selectbox(key="pos") is not None
    after = _figure(at, "tokens_after")
    assert "[CLS]" in after["layout"]["yaxis"]["ticktext"][0]  # named on its own row, not floating over others
    mosaic = _figure(at, "tokens_mosaic")
    assert mosaic["data"][1]["customdata"] is not None  # clickable markers on every block
    compare = _figure(at, "tokens_compare")
    assert len(compare["data"]) == 3
    assert len(at.main.get("download_button")) == 1


@pytest.mark.parametrize(("model", "below", "count"), [(None, 9, 64), ("untrained-vit-b16", 15, 196)])
def test_the_tokens_page_numbers_patches_from_the_models_grid(model: str | None, below: int, count: int) -> None:
    at = open_page(TOKENS, **({"model": model} if model else {}))  # an 8 x 8 grid, and ViT-B/16's 14 x 14
    assert errors(at) == []
    sentences = [text.value for text in at.markdown if "sits below" in text.value]
    assert len(sentences) == 1 and f"patch {below} sits below patch 1:" in sentences[0]
    before, after, pos = (_figure(at, key) for key in ("tokens_before", "tokens_after", "tokens_pos_embed"))
    patch_rows = [f"patch {n}" for n in range(1, count + 1)]
    assert before["data"][0]["y"] == patch_rows  # rows named by what they are ...
    assert after["data"][0]["y"] == pos["data"][0]["y"] == ["[CLS]", *patch_rows]
    for key in ("height", "margin"):  # side by side, the two maps' plot areas take the same place
        assert before["layout"][key] == after["layout"][key]
    slots = {label: k for k, label in enumerate(["[CLS]", *patch_rows])}  # patch k at one height in all three
    assert _slots(after) == _slots(pos) == slots
    assert _slots(before) == {label: k for label, k in slots.items() if label != "[CLS]"}  # [CLS]'s slot empty
    ticks = before["layout"]["yaxis"]["tickvals"]
    assert ticks[:2] == ["patch 1", f"patch {below}"]  # the first patch of each image row
    with_cls = after["layout"]["yaxis"]["tickvals"]
    assert with_cls == pos["layout"]["yaxis"]["tickvals"] == ["[CLS]", *ticks[1:]]  # patch 1 would sit level with [CLS]


def test_choosing_another_position_changes_the_large_map() -> None:
    at = open_page(TOKENS)
    before = _figure(at, "tokens_large")["data"][0]["z"]
    at.selectbox(key="pos").set_value(0).run()
    assert errors(at) == []
    assert _figure(at, "tokens_large")["data"][0]["z"] != before


def test_both_pages_without_cls_and_with_fixed_positions(tmp_path) -> None:
    path = no_cls_vit(tmp_path / "no_cls_sincos.safetensors", pos_embed="sincos2d")
    at = open_page(VECTORS, custom_model=str(path))
    assert errors(at) == []
    assert len(at.success) == 1
    at = open_page(TOKENS, custom_model=str(path))
    assert errors(at) == []
    assert any("no [CLS] token" in info.value for info in at.info)
    assert any("fixed 2D sine-cosine" in text.value for text in at.markdown)
    assert not _figure(at, "tokens_after")["layout"].get("annotations")  # no [CLS] row to mark
    compare = _figure(at, "tokens_compare")  # (a) is the model's own fixed table, equal to (c)
    assert _array(compare["data"][0]["z"]).tolist() == _array(compare["data"][2]["z"]).tolist()


# ---- vitviz functions --------------------------------------------------------------------------


def test_compare_routes_agree() -> None:
    torch.manual_seed(0)
    pixels = torch.randn(1, 3, 32, 32)
    conv = torch.nn.Conv2d(3, 24, kernel_size=8, stride=8)  # a Parameter with grad, like the model's
    differences = patches.compare_routes(pixels, conv.weight, conv.bias)
    assert set(differences) == set(patches.ROUTES)
    assert all(d < 1e-4 for d in differences.values())
    # the reference the routes are held to, against the definition written out here: patch (r, c),
    # row-major, flattened channel by row by column, times the kernel flattened alike, plus the bias
    by_hand = torch.stack(
        [
            conv.weight.reshape(24, -1) @ pixels[0, :, 8 * r : 8 * r + 8, 8 * c : 8 * c + 8].reshape(-1) + conv.bias
            for r in range(4)
            for c in range(4)
        ]
    )
    torch.testing.assert_close(patches.embed_conv2d(pixels, conv.weight, conv.bias)[0], by_hand, atol=1e-5, rtol=1e-5)
    assert patches.compare_routes(pixels, conv.weight, None)["loop"] < 1e-4


def test_similarity_of_one_hot_tables_is_identity() -> None:
    grid_h, grid_w, dim = 2, 3, 8
    table = torch.cat([torch.ones(1, dim), torch.eye(grid_h * grid_w, dim) * 5.0])  # [CLS] + one-hot
    similarities = analysis.position_similarities(table[None], (grid_h, grid_w), 1)
    assert set(similarities) == {"model", "sincos_1d", "sincos_2d"}
    torch.testing.assert_close(similarities["model"], torch.eye(6).reshape(2, 3, 2, 3))
    for values in similarities.values():
        assert values.shape == (2, 3, 2, 3)
        torch.testing.assert_close(values.reshape(6, 6).diagonal(), torch.ones(6))


def test_reference_similarities_have_the_right_structure() -> None:
    similarities = analysis.position_similarities(torch.zeros(17, 32), (4, 4), 1)
    two_d, one_d = similarities["sincos_2d"], similarities["sincos_1d"]
    torch.testing.assert_close(two_d, analysis.pos_embed_similarity(sincos_2d((4, 4), 32), (4, 4), 0))
    # 2D sine-cosine: the similarity depends only on the row and column offsets.
    torch.testing.assert_close(two_d[0, 0, 1, 2], two_d[2, 1, 3, 3])
    torch.testing.assert_close(two_d[0, 0, 0, 1], two_d[0, 0, 1, 0])  # rows and columns alike
    # 1D sinusoidal: the next patch in reading order is closer than the patch below it.
    assert one_d[1, 1, 1, 2] > one_d[1, 1, 2, 1]


def test_similarity_mosaic_places_each_position_at_its_block() -> None:
    grid_h, grid_w, gap = 2, 3, 1
    similarity = np.arange(grid_h * grid_w * grid_h * grid_w, dtype=float).reshape(grid_h, grid_w, grid_h, grid_w)
    mosaic = plots.similarity_mosaic(similarity, gap=gap)
    assert mosaic.shape == (grid_h * grid_h + gap, grid_w * grid_w + 2 * gap)
    for row in range(grid_h):
        for col in range(grid_w):
            top, left = row * (grid_h + gap), col * (grid_w + gap)
            np.testing.assert_array_equal(mosaic[top : top + grid_h, left : left + grid_w], similarity[row, col])
    assert np.isnan(mosaic[grid_h, 0]) and np.isnan(mosaic[0, grid_w])  # the gaps
    assert np.isnan(mosaic).sum() == mosaic.size - similarity.size


def test_similarity_grid_marks_and_clicks() -> None:
    similarity = np.random.default_rng(0).uniform(-1, 1, (3, 4, 3, 4))
    fig = plots.similarity_grid(similarity, selected=5)
    markers = fig.data[1]
    assert markers.customdata.shape == (12, 6)
    assert markers.customdata[5].tolist() == [5, 1, 1, 6, 2, 2]  # 0-based for the click, from 1 for the hover
    rect = fig.layout.shapes[0]  # position 5 = (row 1, col 1): block at rows 4-6, cols 5-8
    assert (rect.x0, rect.y0) == (5 - 0.5, 4 - 0.5)


def test_patch_planes_follow_c_p1_p2_order() -> None:
    p, chans = 2, 3
    vector = np.arange(chans * p * p, dtype=float)
    fig = plots.patch_planes(vector, p, chans, ["R", "G", "B"])
    assert len(fig.data) == 3
    for c, trace in enumerate(
        fig.data
    ):  # counted from 1: cell (p1, p2) of plane c is position (c-1)*P*P + (p1-1)*P + p2
        np.testing.assert_array_equal(trace.z, vector[c * p * p : (c + 1) * p * p].reshape(p, p))
        np.testing.assert_array_equal(trace.customdata, np.arange(c * 4 + 1, c * 4 + 5).reshape(2, 2))
        assert list(trace.x) == list(trace.y) == [1, 2]  # p2 and p1


def test_vector_bars_segments_by_channel() -> None:
    fig = plots.vector_bars(np.arange(12.0), segment=4, names=["R", "G", "B"])
    assert [t.name for t in fig.data] == ["R", "G", "B"]
    assert list(fig.data[1].x) == [5, 6, 7, 8]  # positions in the vector, counted from 1
    assert list(fig.layout.xaxis.tickvals) == [1, 5, 9]
    assert list(fig.layout.xaxis.ticktext) == ["R: 1", "G: 5", "B: 9"]
    assert len(plots.vector_bars(np.ones(5)).data) == 1


def test_component_tiles_rescale_each_tile() -> None:
    components = np.stack([np.full((3, 2, 2), 7.0), np.arange(12.0).reshape(3, 2, 2) - 20])
    scaled = plots.rescale_each(components)
    assert scaled[0].tolist() == np.full((3, 2, 2), 0.5).tolist()  # a flat tile is mid-grey
    assert scaled[1].min() == 0.0 and scaled[1].max() == 1.0
    fig = plots.component_tiles(components, [0.75, 0.25], columns=7)
    assert len(fig.data) == 1  # one picture of both tiles, a white gutter between them
    assert [a.text for a in fig.layout.annotations] == ["1: 75.0%", "2: 25.0%"]
    picture = np.asarray(fig.data[0].z)
    assert picture.shape == (2, 2 + 1 + 2, 3)
    assert (picture[:, :2] == 128).all() and (picture[:, 2] == 255).all()  # the flat tile grey, the gutter white
    assert picture[:, 3:].min() == 0 and picture[:, 3:].max() == 255  # the other tile stretched over the range
    assert [(a.x, a.y) for a in fig.layout.annotations] == [(0.5, -0.5), (3.5, -0.5)]  # each title over its tile


def _slots(fig: dict) -> dict[str, int]:
    """Row label -> its slot on the figure's y axis, counted from the top of the axis's range."""
    top = fig["layout"]["yaxis"]["range"][1] + 0.5  # a category axis: data row k sits at k
    return {label: int(k - top) for k, label in enumerate(fig["data"][0]["y"])}


def test_token_matrix_marks_cls_row() -> None:
    fig = plots.token_matrix(
        np.zeros((5, 8)), ["[CLS]", "patch 1", "patch 2", "patch 3", "patch 4"], marked={0: "[CLS]"}
    )
    assert "[CLS]" in fig.layout.yaxis.ticktext[0] and fig.layout.yaxis.tickvals[0] == "[CLS]"  # named on its row
    assert (fig.layout.shapes[0].y0, fig.layout.shapes[0].y1) == (-0.5, 0.5)
    assert list(fig.data[0].x) == list(range(1, 9))  # channels counted from 1


def test_the_patch_tokens_line_up_with_the_same_patches_after_cls() -> None:
    patches_only = ["patch 1", "patch 2", "patch 3", "patch 4"]
    sequence = ["[CLS]", *patches_only]
    before = plots.token_matrix(np.ones((4, 8)), patches_only, rows=sequence).to_dict()
    after = plots.token_matrix(np.ones((5, 8)), sequence, marked={0: "[CLS]"}).to_dict()

    assert _slots(before) == {label: n for n, label in enumerate(sequence) if n}  # [CLS]'s slot stays empty
    assert _slots(after) == {label: n for n, label in enumerate(sequence)}
    assert before["layout"]["yaxis"]["range"][0] - before["layout"]["yaxis"]["range"][1] == len(sequence)  # 5 slots
