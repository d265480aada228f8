"""Unit tests for the vitviz functions behind page 5 (attention): known answers on hand-made inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import Tensor

from vitviz.analyses import analysis
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.models.trace import Trace
from vitviz.render import clicks, plots, tables

torch.set_num_threads(1)  # a training job shares the CPU; these tensors are tiny


def make_trace(attentions: list[Tensor], grid_size: tuple[int, int], prefix: int, patch: int = 8) -> Trace:
    """A Trace holding hand-made attention maps; the other fields are zeros of the right shape."""
    batch, _, tokens, _ = attentions[0].shape
    grid_h, grid_w = grid_size
    hidden = torch.zeros(batch, tokens, 4)
    return Trace(
        pixels=torch.zeros(batch, 3, grid_h * patch, grid_w * patch),
        patches=torch.zeros(batch, grid_h * grid_w, 3 * patch * patch),
        patch_tokens=torch.zeros(batch, grid_h * grid_w, 4),
        tokens=hidden,
        hidden_states=[hidden] * (len(attentions) + 1),
        attentions=attentions,
        attn_outputs=[hidden] * len(attentions),
        mlp_outputs=[hidden] * len(attentions),
        pre_logits=torch.zeros(batch, 4),
        logits=torch.zeros(batch, 5),
        grid_size=grid_size,
        num_prefix_tokens=prefix,
    )


# ---- readout_attention and select_head ---------------------------------------------------------


def test_readout_attention_with_cls_is_the_cls_row() -> None:
    attention = torch.rand(1, 2, 5, 5).softmax(dim=-1)  # [CLS] + a 2x2 grid
    trace = make_trace([attention], (2, 2), prefix=1)
    got = analysis.readout_attention(trace, 0)
    assert got.shape == (1, 2, 2, 2)
    assert torch.equal(got, analysis.cls_attention(trace, 0))
    assert torch.equal(analysis.readout_attention(trace, 0, head=1), attention[:, 1, 0, 1:].reshape(1, 2, 2))


def test_readout_attention_without_cls_is_the_mean_of_patch_queries() -> None:
    # 4 patches (2x2), no [CLS]: patch query i attends only to patch 0, except query 3 -> patch 3.
    attention = torch.zeros(1, 1, 4, 4)
    attention[0, 0, :3, 0] = 1.0
    attention[0, 0, 3, 3] = 1.0
    trace = make_trace([attention], (2, 2), prefix=0)
    got = analysis.readout_attention(trace, 0, head=0)
    assert torch.allclose(got, torch.tensor([[[0.75, 0.0], [0.0, 0.25]]]))
    assert analysis.readout_attention(trace, -1).shape == (1, 1, 2, 2)  # all heads, last layer
    with pytest.raises(ValueError, match="Layer 1 does not exist"):
        analysis.readout_attention(trace, 1)


def test_select_head_picks_one_or_averages() -> None:
    maps = torch.stack([torch.zeros(2, 3), torch.ones(2, 3) * 2])  # (heads=2, 2, 3)
    assert torch.equal(analysis.select_head(maps, 1), torch.full((2, 3), 2.0))
    assert torch.equal(analysis.select_head(maps, None), torch.ones(2, 3))
    assert analysis.select_head(maps[None], 0).shape == (1, 2, 3)  # leading batch dimension
    with pytest.raises(ValueError, match="Head 2"):
        analysis.select_head(maps, 2)


# ---- patch_from_selection ----------------------------------------------------------------------


def test_patch_from_selection_reads_customdata() -> None:
    point = {"curve_number": 2, "point_index": 7, "customdata": [7, 1, 3, 0.02]}
    state = {"selection": {"points": [point], "point_indices": [7]}}
    assert clicks.patch_from_selection(state, 64) == 7
    assert clicks.patch_from_selection(state["selection"], 64) == 7  # the inner dict works too
    assert clicks.patch_from_selection({"selection": {"points": [{"customdata": [7.0]}]}}, 64) == 7


def test_patch_from_selection_reads_what_the_browser_sends() -> None:
    # Streamlit 1.67 in Chromium, a click on patch 10 of attention_picker's markers (trace 2):
    state = {
        "selection": {
            "points": [
                {
                    "curve_number": 2,
                    "point_number": 10,
                    "point_index": 10,
                    "x": 9.5,
                    "y": 5.5,
                    "customdata": {"0": 10, "1": 1, "2": 2, "3": 0.15625},
                }
            ],
            "point_indices": [10],
            "box": [],
            "lasso": [],
        }
    }
    assert clicks.patch_from_selection(state, 64) == 10


@pytest.mark.parametrize(
    "forged",
    [
        "x",
        5,
        [1, 2],
        {"points": 5},
        {"points": [1]},
        {"points": [None]},
        {"selection": "x"},
        {"selection": {"points": {"0": {}}}},
        {"points": [{"customdata": [10**400]}]},
        {"points": [{"customdata": [float("nan")]}]},
        {"points": [{"customdata": [float("inf")]}]},
        {"points": [{"customdata": [True]}]},
    ],
)
def test_a_forged_selection_is_no_click_not_an_error(forged) -> None:
    """A browser sends {"selection": {"points": [{...}]}}; a hand-made websocket message can send
    anything, and each of these crashed the visitor's run (a fuzzing helper's payloads)."""
    assert clicks.patch_from_selection(forged, 64) is None
    assert clicks.cell_from_selection(forged, 10) is None
    assert (
        clicks.patch_from_selection(
            {"points": [{"customdata": [3]}, forged]},
            64,  # the last point is read first: forged, then skipped
        )
        == 3
    )


def test_patch_from_selection_last_point_wins_and_bad_points_are_skipped() -> None:
    points = [{"customdata": [3]}, {"customdata": [5]}, {"x": 1, "y": 2}, {"customdata": [99]}]
    assert clicks.patch_from_selection({"selection": {"points": points}}, 64) == 5


def test_patch_from_selection_point_index_only_on_the_marker_curve() -> None:
    point = {"curve_number": 2, "point_index": 9}
    assert clicks.patch_from_selection({"points": [point]}, 64) is None  # curve not named
    assert clicks.patch_from_selection({"points": [point]}, 64, curve=2) == 9
    assert clicks.patch_from_selection({"points": [point]}, 64, curve=1) is None
    assert clicks.patch_from_selection({"points": [point]}, 9, curve=2) is None  # outside the grid


@pytest.mark.parametrize("empty", [None, {}, {"selection": {"points": []}}, {"selection": None}])
def test_patch_from_selection_empty(empty: object) -> None:
    assert clicks.patch_from_selection(empty, 64) is None  # type: ignore[arg-type]


# ---- top_keys -------------------------------------------------------------------------------------


def test_top_keys_known_answer() -> None:
    scores = torch.tensor([0.0, 2.0, 1.0, 3.0, -1.0])  # [CLS] + a 2x2 grid
    worked = {"scores": scores, "weights": scores.softmax(dim=-1)}
    rows, rest = analysis.top_keys(worked, (2, 2), 1, k=3)
    assert [r["token"] for r in rows] == [3, 1, 2]
    assert [(r["row"], r["col"]) for r in rows] == [(1, 0), (0, 0), (0, 1)]
    weights = scores.softmax(dim=-1)
    assert rows[0]["score"] == pytest.approx(3.0)
    assert rows[0]["weight"] == pytest.approx(float(weights[3]))
    assert rest == pytest.approx(float(weights[0] + weights[4]))
    assert sum(r["weight"] for r in rows) + rest == pytest.approx(1.0)


def test_top_keys_names_cls_and_clips_k() -> None:
    scores = torch.tensor([5.0, 0.0, 0.0, 0.0, 0.0])
    rows, rest = analysis.top_keys({"scores": scores, "weights": scores.softmax(-1)}, (2, 2), 1, k=10)
    assert len(rows) == 5 and rest == pytest.approx(0.0, abs=1e-9)
    assert rows[0]["token"] == 0 and rows[0]["row"] is None and rows[0]["col"] is None


def test_top_keys_on_a_real_worked_example() -> None:
    torch.manual_seed(0)
    config = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=1, num_heads=2)
    model = VisionTransformer(config).eval()
    with torch.no_grad():
        trace = model.explain(torch.randn(1, 3, 16, 16))
    worked = analysis.worked_attention(model, trace, 0, 1, 2)
    rows, rest = analysis.top_keys(worked, trace.grid_size, 1, k=2)
    assert rows[0]["weight"] == pytest.approx(float(trace.attentions[0][0, 1, 2].max()), abs=1e-6)
    assert sum(r["weight"] for r in rows) + rest == pytest.approx(1.0, abs=1e-5)


# ---- uniform_attention_distance -----------------------------------------------------------------


def test_uniform_attention_distance_known_answer() -> None:
    # 1x2 grid of 10 px patches: pairs (0,0), (0,1), (1,0), (1,1) -> distances 0, 10, 10, 0.
    assert analysis.uniform_attention_distance((1, 2), 10) == pytest.approx(5.0)
    # 2x2 grid of 1 px: 4 zeros, 8 neighbours at 1, 4 diagonals at sqrt(2).
    assert analysis.uniform_attention_distance((2, 2), 1) == pytest.approx((8 + 4 * math.sqrt(2)) / 16)


def test_uniform_attention_matches_mean_attention_distance_of_uniform_attention() -> None:
    attention = torch.full((1, 3, 10, 10), 0.1)  # [CLS] + 3x3 grid, every weight equal
    trace = make_trace([attention], (3, 3), prefix=1)
    distances = analysis.mean_attention_distance(trace, 8)
    assert torch.allclose(distances, torch.full((1, 3), analysis.uniform_attention_distance((3, 3), 8)))


# ---- figures -------------------------------------------------------------------------------------


def test_attention_picker_markers_and_outline() -> None:
    image = np.zeros((16, 24, 3), dtype=np.uint8)
    values = np.arange(6, dtype=float).reshape(2, 3) / 15
    fig = plots.attention_picker(image, values, 8, query_patch=4, title="t")
    heatmap = [t for t in fig.data if t.type == "heatmap"][0]
    assert np.allclose(heatmap.z, values) and heatmap.hoverinfo == "skip"
    markers = fig.data[-1]
    assert markers.type == "scatter"
    custom = np.asarray(markers.customdata)
    assert custom[:, 0].tolist() == list(range(6))
    assert custom[4, 1:3].tolist() == [1, 1]  # patch 4 = row 1, col 1
    assert np.allclose(custom[:, 3], values.ravel())
    assert custom[4, 4:].tolist() == [5, 2, 2]  # the hover counts from 1: patch 5, row 2, col 2
    assert markers.x[4] == pytest.approx(11.5) and markers.y[4] == pytest.approx(11.5)  # centre of patch (1, 1)
    (rect,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (7.5, 15.5, 7.5, 15.5)
    assert not [s for s in plots.attention_picker(image, values, 8).layout.shapes if s.type == "rect"]
    # a click on a marker gives back the patch through clicks.patch_from_selection
    point = {"curve_number": len(fig.data) - 1, "point_index": 4, "customdata": list(custom[4])}
    assert clicks.patch_from_selection({"selection": {"points": [point]}}, 6) == 4


def test_attention_distance_figure() -> None:
    distances = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # (depth 2, heads 3)
    fig = plots.attention_distance(distances, title="d", uniform=3.5, uniform_label="uniform")
    assert [trace.name for trace in fig.data] == ["head 1", "head 2", "head 3"]  # a legend entry per head, from 1
    assert [list(trace.x) for trace in fig.data] == [[1, 2]] * 3  # layers shown 1-based
    assert [list(trace.y) for trace in fig.data] == [[1, 4], [2, 5], [3, 6]]
    assert len({trace.marker.color for trace in fig.data}) == 3
    assert any(s.y0 == 3.5 for s in fig.layout.shapes)


def test_key_weights_and_maps_csv() -> None:
    fig = plots.key_weights(["a", "b"], [0.6, 0.4], title="w")
    assert list(fig.data[0].x) == [0.6, 0.4] and fig.layout.xaxis.tickformat == ".1%"
    text = tables.maps_csv({"cls": np.array([[0.5, 0.25]]), "q": np.array([[1.0], [0.0]])})
    assert text.splitlines() == ["map,row,col,value", "cls,0,0,0.5", "cls,0,1,0.25", "q,0,0,1", "q,1,0,0"]
