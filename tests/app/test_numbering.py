"""One numbering everywhere (README): what a person counts (patches, rows, columns, layers,
heads, channels, positions in a vector) starts at 1 on every page, in both languages; code
indices appear only as code (`x[0]`, blocks[0]); a token keeps its index in the sequence, where
[CLS] is token 0. Every page is rendered in AppTest and its figures (axis titles and ticks, hover
texts, titles, annotations), captions, text, tables and widgets are read for a count from 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.apptest import open_page_in_one_run
from tests.conftest import SHARED_DATA
from tests.figure_reading import zero_counts_in_figure, zero_counts_in_text, zero_counts_on_page
from vitviz.app import tour
from vitviz.render import plots

PAGES = [script for script, _, _ in tour.TOUR] + [
    pytest.param(script, marks=pytest.mark.cifar10) for script, _, _ in tour.LAB
]  # the lab reads the CIFAR-10 test split


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", PAGES)
def test_no_page_counts_from_zero(page: str, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VITVIZ_DATA", str(SHARED_DATA))
    at = open_page_in_one_run(page, lang=lang)
    assert [e.value for e in at.exception] == []
    found = zero_counts_on_page(at, lang)
    assert found == [], "\n".join(found)


# ---- the check itself --------------------------------------------------------------------------


def test_the_check_reads_counts_from_zero_in_words() -> None:
    assert zero_counts_in_text("Nothing tells it that patch 8 sits below patch 0") == ["patch 0"]
    for text in (
        "p1 = 0, p2 = 3",
        "Layer 0",
        "head 0 of layer 2",
        "c = 0 (R): 0-15",
        "채널 0",
        "0층 (blocks[0])",
        "0번째 행",
    ):
        assert zero_counts_in_text(text), text
    for text in (
        "Token 0: [CLS]",  # a token keeps its sequence index
        "Layer 1 (blocks[0])",  # code
        "`x[0]` is the first entry",
        "groups.0.conv1",
        "0 of 64 patches hidden",  # an amount, not a count
        "After layer (0 = the embeddings)",
        "x=0, y=3",  # a coordinate
        "mean 0 and standard deviation 1",
        "patch 10 (row 2, col 2)",
        "layer 0.5",
    ):
        assert zero_counts_in_text(text) == [], text


def test_the_check_reads_ticks_and_hovers_that_start_at_zero() -> None:
    counted_from_zero = plots.go.Figure(
        plots.go.Heatmap(z=np.zeros((4, 4)), hovertemplate="p1=%{y}, p2=%{x}: %{z}<extra></extra>")
    )
    counted_from_zero.update_xaxes(title_text="p2")
    found = zero_counts_in_figure(counted_from_zero.to_dict())
    assert "axis 'p2' has a tick at 0" in found
    assert any("shows p1 0" in problem for problem in found) and any("shows p2 0" in problem for problem in found)
    bars = plots.go.Figure(plots.go.Bar(x=np.arange(5), y=np.ones(5), hovertemplate="position %{x}: %{y}"))
    bars.update_xaxes(title_text="position in x_p", tickvals=[0, 3], ticktext=["R: 0", "G: 3"])
    assert zero_counts_in_figure(bars.to_dict()) == [
        "hover 'position %{x}: %{y}' shows position 0",
        "axis 'position in x_p' has a tick 'R: 0'",
    ]
    tokens = plots.go.Figure(plots.go.Scatter(x=np.arange(5), y=np.ones(5), hovertemplate="token %{x}: %{y}"))
    tokens.update_xaxes(title_text="Token index (0 = [CLS], k = patch k)")
    assert zero_counts_in_figure(tokens.to_dict()) == []  # a token's index in the sequence may be 0


def test_the_figures_of_page_3_count_from_one() -> None:
    vector = np.arange(48.0)
    titles = plots.plane_titles(["R", "G", "B"], 4)
    assert titles == ["c = 1 (R): 1-16", "c = 2 (G): 17-32", "c = 3 (B): 33-48"]
    planes = plots.patch_planes(vector, 4, 3, titles)
    flat = plots.vector_bars(vector, segment=16, names=["R", "G", "B"], x_title="position in x_p")
    token = plots.vector_bars(np.ones(8), index_word="channel", x_title="channel of the token (D)")
    for fig in (planes, flat, token):
        assert zero_counts_in_figure(fig.to_dict()) == []
