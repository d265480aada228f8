"""The ViT-vs-CNN page (app_pages/8_compare.py) in Streamlit's AppTest, with a tiny ViT and a tiny
CNN made here (3 colour classes), chosen with session state ``custom_model`` and the page's own
``compare_cnn_path``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.apptest import charts, errors, figure, figure_array, open_page, open_page_in_one_run, tables
from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import compare
from vitviz.app import caches
from vitviz.app import models as app_models
from vitviz.models import zoo
from vitviz.models.cnn import ConvNet
from vitviz.models.config import CNNConfig, ViTConfig
from vitviz.models.data import load_image, to_tensor
from vitviz.models.model import VisionTransformer

torch.set_num_threads(1)

PAGE = "app_pages/8_compare.py"
SAMPLE = caches.SAMPLES / caches.DEFAULT_SAMPLE


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(tiny ViT file, tiny CNN file), both predicting CLASSES from 32x32 inputs."""
    root = tmp_path_factory.mktemp("compare")
    torch.manual_seed(0)
    vit = VisionTransformer(
        ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=4, class_names=CLASSES)
    )
    with torch.no_grad():
        vit.pos_embed.normal_(std=0.5)
    cnn = ConvNet(CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), class_names=CLASSES))
    zoo.save(vit.eval(), root / "vit.safetensors")
    zoo.save(cnn.eval(), root / "cnn.safetensors")
    return root / "vit.safetensors", root / "cnn.safetensors"


def _open(models: tuple[Path, Path], **state: object):
    vit_path, cnn_path = models
    return open_page(PAGE, custom_model=str(vit_path), compare_cnn_path=str(cnn_path), **state)


def _table(at) -> dict[str, tuple[str, str]]:
    table = tables(at)[0]
    return {row.iloc[0]: (row.iloc[1], row.iloc[2]) for _, row in table.iterrows()}


def test_both_models_answer_and_the_maps_are_theirs(models) -> None:
    at = _open(models)
    assert errors(at) == [] and [e.value for e in at.exception] == []
    assert at.title[0].value == "8. ViT vs CNN"
    cnn, _ = zoo.load(str(models[1]), device="cpu")
    pixels = to_tensor(load_image(SAMPLE.read_bytes()), cnn.config.preprocess)
    with torch.no_grad():
        probs = cnn(pixels)[0].softmax(-1)
    bars = figure(at, "compare_cnn_top")["data"][0]
    assert bars["y"][0] == CLASSES[int(probs.argmax())]  # the CNN's own answer, computed here
    assert _table(at)["CNN"][0] == f"{CLASSES[int(probs.argmax())]} ({float(probs.max()):.0%})"
    # Grad-CAM for the chosen class (no true class for a photo: the ViT's answer), on one 0..1 scale
    chosen = at.selectbox(key="compare_class").value
    expected = compare.gradcam(cnn, pixels, chosen).numpy()
    shown = figure_array(figure(at, "compare_map_gradcam")["data"][1]["z"])
    np.testing.assert_allclose(shown, expected / expected.max(), rtol=1e-4, atol=1e-5)
    assert not any("mirror image" in c.value for c in at.caption)  # this CNN answers from one view
    reach = figure(at, "compare_reach")
    assert [t["name"] for t in reach["data"][1:]] == ["head 1", "head 2", "head 3", "head 4"]
    assert figure_array(reach["data"][0]["y"]).tolist() == [f.size for f in compare_fields(cnn)]
    assert [
        a["text"]
        for a in reach["layout"]["annotations"]
        if a["text"] not in ("CNN: receptive field", "ViT: mean attention distance")
    ] == ["image side"]


def test_a_cnn_that_averages_the_mirror_image_answers_and_maps_so(models, tmp_path) -> None:
    flipping = tmp_path / "flipping.safetensors"
    cnn, _ = zoo.load(str(models[1]), device="cpu")
    cnn.config = cnn.config.replace(test_flip=True)
    zoo.save(cnn, flipping)
    at = open_page(PAGE, custom_model=str(models[0]), compare_cnn_path=str(flipping))
    assert errors(at) == [] and [e.value for e in at.exception] == []
    pixels = to_tensor(load_image(SAMPLE.read_bytes()), cnn.config.preprocess)
    with torch.no_grad():
        probs = cnn(pixels)[0].softmax(-1)  # the mean of both views' logits
    assert _table(at)["CNN"][0] == f"{CLASSES[int(probs.argmax())]} ({float(probs.max()):.0%})"
    chosen = at.selectbox(key="compare_class").value
    expected = compare.gradcam(cnn, pixels, chosen).numpy()
    shown = figure_array(figure(at, "compare_map_gradcam")["data"][1]["z"])
    np.testing.assert_allclose(shown, expected / expected.max(), rtol=1e-4, atol=1e-5)
    assert any("mean of the two views' maps" in c.value for c in at.caption)


def compare_fields(cnn: ConvNet):
    from vitviz.models.cnn import receptive_fields

    return receptive_fields(cnn)


def test_the_experiments_report_before_and_after(models) -> None:
    at = _open(models)
    vit, _ = zoo.load(str(models[0]), device="cpu")
    pixels = to_tensor(load_image(SAMPLE.read_bytes()), vit.config.preprocess)
    at.radio(key="compare_experiment").set_value("no_position").run()
    assert errors(at) == []
    table = _table(at)
    assert table["CNN"][1] == "does not apply"  # a CNN has no position embeddings to remove
    logits = compare.logits_without_position(vit, pixels)
    probs = logits[0].softmax(-1)
    assert table["ViT"][1] == f"{CLASSES[int(probs.argmax())]} ({float(probs.max()):.0%})"
    at.radio(key="compare_experiment").set_value("shift").run()
    at.slider(key="compare_shift").set_value(3).run()
    assert errors(at) == [] and _table(at)["CNN"][1] != "does not apply"
    at.toggle(key="compare_ig").set_value(True).run()  # integrated gradients: two more maps
    assert errors(at) == []
    assert {"compare_map_ig_vit", "compare_map_ig_cnn"} <= {c.proto.id.rsplit("-", 1)[-1] for c in charts(at)}


def test_korean(models) -> None:
    vit_path, cnn_path = models
    at = open_page_in_one_run(PAGE, lang="ko", custom_model=str(vit_path), compare_cnn_path=str(cnn_path))
    assert errors(at) == [] and at.title[0].value == "8. ViT와 CNN"
    assert at.radio(key="compare_experiment").options == [
        "패치 섞기",
        "이미지 옮기기",
        "ViT의 위치 임베딩 빼기",
        "누른 패치 가리기",
    ]


def test_without_a_cnn_or_with_a_vit_in_its_place_the_page_says_so(models, monkeypatch) -> None:
    monkeypatch.setattr(app_models, "cnn_models", lambda: [])  # nothing shipped yet
    at = open_page(PAGE, custom_model=str(models[0]))
    assert errors(at) == []
    assert any("No CNN is in the model list" in info.value for info in at.info)
    assert at.button(key="nav_next") is not None  # the tour goes on
    at = open_page(PAGE, custom_model=str(models[0]), compare_cnn_path=str(models[0]))
    assert any("is not a CNN" in info.value for info in at.info)


def test_the_pages_choices_survive_a_trip_through_the_tour(models) -> None:
    at = _open(models)
    at.radio(key="compare_experiment").set_value("shift").run()
    at.button(key="nav_next").click().run()  # on to the model card, where none of these widgets exist
    assert at.title[0].value == "9. Model card"
    at.button(key="nav_prev").click().run()
    assert errors(at) == [] and at.title[0].value == "8. ViT vs CNN"
    assert at.text_input(key="compare_cnn_path").value == str(models[1])
    assert at.radio(key="compare_experiment").value == "shift"


def test_hidden_patches_are_hidden_from_both_models(models) -> None:
    at = _open(models, compare_hidden=[0, 5, 9])  # as three clicks on the grid leave them
    at.radio(key="compare_experiment").set_value("hide").run()
    assert errors(at) == []
    vit, _ = zoo.load(str(models[0]), device="cpu")
    cnn, _ = zoo.load(str(models[1]), device="cpu")
    image = load_image(SAMPLE.read_bytes())
    outcome = compare.run_experiment(
        "hide",
        vit,
        to_tensor(image, vit.config.preprocess),
        cnn,
        to_tensor(image, cnn.config.preprocess),
        hidden=[0, 5, 9],
    )
    for model_name, logits in (("ViT", outcome.vit_logits), ("CNN", outcome.cnn_logits)):
        probs = logits[0].softmax(-1)
        assert _table(at)[model_name][1] == f"{CLASSES[int(probs.argmax())]} ({float(probs.max()):.0%})"
    grid = figure(at, "compare_hide_grid")
    shown = figure_array(grid["data"][0]["z"])  # the picture the user clicks on: patch 0 in the mean colour
    assert shown.shape[:2] == (32, 32) and np.ptp(shown[:8, :8].reshape(-1, shown.shape[-1]), axis=0).max() == 0
    assert any("3 hidden" in c.value for c in at.caption)
    at.button(key="compare_show_all").click().run()
    assert at.session_state["compare_hidden"] == [] and errors(at) == []


def test_an_experiment_runs_the_models_once_per_image_and_setting(models, monkeypatch) -> None:
    ran = []
    real = compare.run_experiment
    monkeypatch.setattr(compare, "run_experiment", lambda kind, *a, **k: ran.append(kind) or real(kind, *a, **k))
    caches.cached_experiment.clear()
    at = _open(models)  # the first experiment, the patch shuffle with seed 0
    assert errors(at) == [] and ran == ["shuffle"]
    shown = _table(at)
    at.toggle(key="compare_ig").set_value(True).run()  # another map: the same experiment, not run again
    at.session_state["compare_shift"] = 3  # the shift's setting (its slider disabled) is no part of the shuffle's key
    at.run()
    again = _open(models)  # another student on the same picture
    assert ran == ["shuffle"] and _table(again) == shown
    at.number_input(key="compare_seed").set_value(1).run()
    assert ran == ["shuffle", "shuffle"] and errors(at) == []


def _always(model: torch.nn.Module, answer: str) -> torch.nn.Module:
    """``model`` made to answer ``answer`` whatever the image: a head of zeros and one bias."""
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.copy_(torch.tensor([4.0 if name == answer else 0.0 for name in CLASSES]))
    return model.eval()


@pytest.mark.parametrize(("cnn_answer", "legend"), [("red", "green: the true class"), ("blue", "red: a wrong answer")])
def test_both_answers_share_one_legend_so_their_bars_start_level(tmp_path, monkeypatch, cnn_answer, legend) -> None:
    """On a test image of a known class, the two top-5 charts say what their colours mean in one
    legend, computed from both answers: red is named when either model is wrong (here the CNN, built
    to answer blue on a red image), and only green when both are right. Titles of one length wrap
    alike, so the two charts' bars start level, on a projector too."""
    make_image_folder(tmp_path, per_class=2, splits=("test",))
    monkeypatch.setenv("VITVIZ_DATA", str(tmp_path / "test"))
    torch.manual_seed(0)
    vit = _always(
        VisionTransformer(
            ViTConfig(
                image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=4, class_names=CLASSES
            )
        ),
        "red",
    )
    cnn = _always(
        ConvNet(CNNConfig(image_size=32, num_classes=3, stem_width=4, widths=(8, 8), class_names=CLASSES)), cnn_answer
    )
    zoo.save(vit, tmp_path / "vit.safetensors")
    zoo.save(cnn, tmp_path / "cnn.safetensors")
    at = _open((tmp_path / "vit.safetensors", tmp_path / "cnn.safetensors"), source="test", test="red/0")
    assert errors(at) == []
    titles = [
        figure(at, f"compare_{which}_top")["layout"]["title"]["text"].replace("<br>", " ") for which in ("vit", "cnn")
    ]
    assert figure(at, "compare_cnn_top")["data"][0]["y"][0] == cnn_answer  # the CNN answers as it was built to
    assert titles[0].startswith("ViT: top 5 (") and titles[1].startswith("CNN: top 5 (")
    assert titles[0][len("ViT") :] == titles[1][len("CNN") :], titles  # one legend
    assert legend in titles[0]
    assert ("red:" in titles[0]) == (cnn_answer != "red")
