"""The pages show the sentences ``vitviz.analyses.claims`` computes from the numbers in their figures.

The unit tests (tests/unit/test_claims.py) make each sentence say the opposite on made-up
numbers; here each page is opened on the shipped model and on its untrained twin (whose
attention is spread evenly and whose filters are random), in English and in Korean, and the
sentence on screen must be the one computed from that model's own numbers.
"""

from __future__ import annotations

import pytest

from tests.apptest import errors, figure, open_page_in_one_run
from vitviz.analyses import analysis, claims
from vitviz.app import caches, models
from vitviz.models import zoo
from vitviz.render.i18n import class_label

MODELS = [zoo.default_name(), "untrained-cifar10-vit"]
LANGS = ["en", "ko"]


def trace_of(model_name: str):
    return caches.cached_trace(model_name, (caches.SAMPLES / caches.DEFAULT_SAMPLE).read_bytes())


def shown(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model_name", MODELS)
def test_attention_page_reads_its_distance_chart(model_name, lang):
    at = open_page_in_one_run("app_pages/5_attention.py", model=model_name, lang=lang)
    assert errors(at) == []
    model, trace = models.cached_model(model_name).model, trace_of(model_name)
    size = model.config.token_size
    distances = analysis.mean_attention_distance(trace, size).numpy()
    uniform = analysis.uniform_attention_distance(trace.grid_size, size)
    expected = claims.attention_distance(distances, uniform, max(trace.pixels.shape[-2:]))
    assert claims.text(expected, lang) in shown(at)
    assert "local like a small convolution" not in " ".join(shown(at))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model_name", MODELS)
def test_vectors_page_shows_the_components_that_carry_the_variance(model_name, lang):
    at = open_page_in_one_run("app_pages/3_vectors.py", model=model_name, lang=lang)
    assert errors(at) == []
    _, ratios = caches.cached_filter_components(model_name)
    reading = claims.filter_components(ratios, models.cached_model(model_name).model.config.patch_size)
    assert claims.text(reading["title"], lang) in shown(at)
    assert claims.text([reading["spread"], reading["size"]], lang) in shown(at)
    tiles = figure(at, "vectors_components")["layout"]["annotations"]  # one titled tile a component
    assert len(tiles) == claims.components_to_show(ratios) == reading["title"].values["shown"]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("model_name", MODELS)
def test_block_page_measures_what_layer_norm_does_and_names_token_zero(model_name, lang):
    at = open_page_in_one_run("app_pages/6_block.py", model=model_name, lang=lang)
    assert errors(at) == []
    norms = analysis.block_token_norms(models.cached_model(model_name).model, trace_of(model_name), 0)
    expected = claims.layer_norm_lengths(norms["input"].numpy(), norms["norm1"].numpy())
    assert claims.text(expected, lang) in shown(at)
    for key in ("block_token_norms", "block_token_ratios"):
        assert figure(at, key)["layout"]["xaxis"]["title"]["text"] == claims.text(claims.token_axis(1), lang)


@pytest.mark.parametrize("lang", LANGS)
def test_prediction_page_follows_every_leader_and_reads_the_whole_occlusion_curves(lang):
    name = zoo.default_name()
    at = open_page_in_one_run("app_pages/7_prediction.py", lang=lang)
    assert errors(at) == []
    model = models.cached_model(name).model
    lens = analysis.logit_lens(model, trace_of(name))
    leaders = {int(c) for c in analysis.logit_lens_top1(lens)[0]}
    drawn = {t["name"] for t in figure(at, "prediction_lens")["data"]}
    assert {class_label(model.config.class_names[c], lang) for c in leaders} <= drawn
    for key in ("prediction_lens", "prediction_occlusion"):
        axis = figure(at, key)["layout"]["yaxis"]
        assert axis.get("rangemode") == "tozero" or axis.get("range", [None])[0] == 0  # drawn from 0
    steps = analysis.occlusion_steps(model)
    image = (caches.SAMPLES / caches.DEFAULT_SAMPLE).read_bytes()
    curves = {kind: caches.cached_occlusion(name, image, kind, steps)[1] for kind in analysis.OCCLUSION_ORDERS}
    fractions = analysis.occlusion_counts(model.config.num_patches, steps).numpy() / model.config.num_patches
    expected = claims.occlusion(fractions, curves["rollout"], curves["random"])
    assert claims.text(expected, lang) in shown(at)
