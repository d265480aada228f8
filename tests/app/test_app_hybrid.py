"""The tour with a hybrid ViT (a ResNet makes the tokens): every page runs, and the patch pages
say that a token is a cell of the CNN's feature map, with this model's shapes."""

from __future__ import annotations

import re

import pytest

from tests.app.test_korean_pages import english_words, page_labels
from tests.apptest import charts, errors, figure, open_page, open_page_in_one_run
from vitviz.app import tour

HYBRID = "untrained-vit-r26-s32"  # timm's R26+ViT-S/32 layout, random weights: 224 px -> 7 x 7 x 2048


@pytest.mark.parametrize("page", [f for f, _, _ in tour.TOUR])
def test_every_tour_page_runs_with_a_hybrid(page):
    at = open_page(page, model=HYBRID)
    assert errors(at) == []


def test_the_patches_page_explains_feature_map_tokens():
    at = open_page("app_pages/2_patches.py", model=HYBRID)
    note = at.info[0].value
    assert "ResNet-26 (2, 2, 2, 2)" in note and "(2048, 7, 7)" in note and "32 x 32" in note
    metrics = {m.label: m.value for m in reversed(at.metric)}  # the model's row, not the "try it" one below
    assert metrics["Patch size (P x P)"] == "1 x 1"
    assert metrics["Patches N"] == "7 x 7 = 49"
    assert metrics["Numbers per patch"] == "2048"
    assert metrics["ResNet feature map (C' x h x w)"] == "2048 x 7 x 7"
    assert metrics["Pixels per token"] == "32 x 32"
    grid = figure(at, "patches_grid")
    (lines,) = [shape for shape in grid["layout"]["shapes"] if shape["type"] == "path"]  # every line, one path
    ends = [tuple(map(float, end)) for end in re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", lines["path"])]
    across = {y0 for (_, y0), (_, y1) in zip(ends[::2], ends[1::2], strict=True) if y0 == y1}
    down = {x0 for (x0, _), (x1, _) in zip(ends[::2], ends[1::2], strict=True) if x0 == x1}
    inner = {32.0 * k - 0.5 for k in range(1, 7)}  # the 7 x 7 grid of 32-pixel squares has 6 inner lines each way
    assert across == down == inner and len(ends) == 2 * 2 * 6


def test_the_vectors_page_shows_the_feature_vector_and_checks_the_routes_on_the_map():
    at = open_page("app_pages/3_vectors.py", model=HYBRID)
    assert "2048" in at.info[0].value
    bars = figure(at, "vectors_flat")
    assert len(bars["data"]) == 1  # one bar per channel, no colour planes
    assert "2048" in bars["layout"]["title"]["text"]
    assert at.success, "the five routes must agree on the feature map"
    assert not [c for c in charts(at) if c.proto.id.endswith("-vectors_components")]


@pytest.mark.parametrize("page", ["app_pages/0_home.py", "app_pages/2_patches.py", "app_pages/3_vectors.py"])
def test_the_hybrid_pages_in_korean(page):
    at = open_page_in_one_run(page, lang="ko", model=HYBRID)
    assert [e.value for e in at.exception] == []
    leaks = sorted({f"{word!r} in {text[:80]!r}" for text in page_labels(at) for word in english_words(text)})
    assert leaks == [], "\n".join(leaks)
    if page != "app_pages/0_home.py":
        assert "하이브리드" in at.info[0].value
