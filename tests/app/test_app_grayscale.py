"""The tour and the lab with a grayscale model (issue 19): the seed's Fashion-MNIST ViT layout
(28 x 28, one channel, 7 x 7 patches), random weights, saved to a temporary file, on a small
Fashion-MNIST made here as idx files in the cache folder (where torchvision's download puts it),
so no test needs Debian's package. Both languages.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from tests.app.test_korean_pages import english_words, page_labels
from tests.apptest import errors, figure, figure_array, gallery, open_page, open_page_in_one_run, tables
from tests.helpers import CLASSES, make_image_folder, write_idx
from vitviz.app import state, testset, tour
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.config import FASHION_MNIST_CLASSES, Preprocess, ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.training.train import SEED_MNIST_VIT

torch.set_num_threads(1)  # a training job shares the CPU; these tensors are tiny

PER_CLASS = 4
FASHION = ViTConfig(
    **SEED_MNIST_VIT,
    num_classes=10,
    class_names=FASHION_MNIST_CLASSES,
    preprocess=Preprocess(resize=(28, 28), mean=(0.2860,), std=(0.3530,), dark_background=True),
)


def _fashion_images() -> tuple[np.ndarray, np.ndarray]:
    """(40, 28, 28) light shapes on a dark ground, class by class, and their labels (0, 1, ..., 9, 0, ...)."""
    rng = np.random.default_rng(0)
    labels = np.tile(np.arange(10, dtype=np.uint8), PER_CLASS)
    images = rng.integers(0, 40, (len(labels), 28, 28), dtype=np.uint8)
    for i, label in enumerate(labels):
        images[i, 4 : 24 - label, 6 : 22 + label // 2] = 150 + 10 * label
    return images, labels


@pytest.fixture(scope="module")
def fashion(tmp_path_factory: pytest.TempPathFactory):
    """(cache folder holding the small Fashion-MNIST, model file)."""
    cache = tmp_path_factory.mktemp("gray-cache")
    raw = cache / "data" / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    images, labels = _fashion_images()
    for image_stem, label_stem in vdata.IDX_FILES.values():
        write_idx(raw / f"{image_stem}.gz", images, gz=True)
        write_idx(raw / f"{label_stem}.gz", labels, gz=True)
    torch.manual_seed(0)
    path = cache / "fashion-tiny.safetensors"
    zoo.save(VisionTransformer(FASHION).eval(), path)
    return cache, path


@pytest.fixture(autouse=True)
def serve(fashion, monkeypatch: pytest.MonkeyPatch) -> None:
    """This server's Fashion-MNIST is the small one made here (never Debian's, if installed)."""
    monkeypatch.setenv("VITVIZ_CACHE", str(fashion[0]))
    monkeypatch.setattr(vdata, "DEBIAN_FOLDERS", {})
    testset.cached_test_set.clear()


def dataset_image(class_name: str, index: int) -> np.ndarray:
    """(28, 28) the index-th image of a class in the small Fashion-MNIST."""
    images, labels = _fashion_images()
    return images[labels == FASHION_MNIST_CLASSES.index(class_name)][index]


def model_input(at) -> np.ndarray:
    """The overview's picture of the model's input, (H, W, 3) as drawn."""
    return figure_array(figure(at, "home_grid")["data"][0]["z"]).astype(int)


@pytest.mark.parametrize("which", ["made here", zoo.SHIPPED_FASHION])
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", [f for f, _, _ in tour.TOUR])
def test_every_tour_page_runs_with_the_grayscale_model(fashion, page, lang, which):
    chosen = {"custom_model": str(fashion[1])} if which == "made here" else {"model": which}
    at = open_page_in_one_run(page, lang=lang, source="test", test="Ankle boot/1", **chosen)
    assert errors(at) == []
    if lang == "ko":
        leaks = sorted({f"{word!r} in {text[:80]!r}" for text in page_labels(at) for word in english_words(text)})
        assert leaks == [], "\n".join(leaks)


def test_the_sidebar_picks_fashion_test_images_and_the_verdict_names_the_dataset(fashion):
    at = open_page(None, custom_model=str(fashion[1]), source="test", test="T-shirt/top/2")
    assert errors(at) == []
    source = at.sidebar.radio(key="source")
    assert source.options[SOURCE_TEST] == "Test image (Fashion-MNIST)"
    assert at.sidebar.selectbox(key="test_class").options == list(FASHION_MNIST_CLASSES)
    assert (at.session_state["test_class"], at.session_state["test_index"]) == ("T-shirt/top", 2)
    shown = model_input(at)
    assert np.array_equal(shown[..., 0], dataset_image("T-shirt/top", 2)) and np.ptp(shown, axis=2).max() == 0
    said = [e.value for e in at.success] + [e.value for e in at.warning]
    assert len(said) == 1 and "(Fashion-MNIST test set): **T-shirt/top**" in said[0]
    at.sidebar.selectbox(key="test_class").set_value("Bag").run()
    at.sidebar.number_input(key="test_index").set_value(3).run()
    assert errors(at) == [] and at.session_state["test"] == "Bag/3"
    assert np.array_equal(model_input(at)[..., 0], dataset_image("Bag", 3))
    assert not [c for c in at.caption if "inverted" in c.value]  # the dataset's own pictures never are


SOURCE_TEST = state.SOURCES.index("test")


def test_the_input_page_shows_one_grey_channel(fashion):
    at = open_page("app_pages/1_input.py", custom_model=str(fashion[1]), source="test", test="Sneaker/0")
    assert errors(at) == []
    assert "one channel" in at.info[0].value
    resized = figure(at, "input_resized")
    assert resized["layout"]["title"]["text"] == "Resized, cropped and grey: 28 x 28 px"
    pixels = figure_array(resized["data"][0]["z"]).astype(int)
    assert np.array_equal(pixels[..., 1], dataset_image("Sneaker", 0))
    channels = figure(at, "input_channels")
    assert [t["text"] for t in channels["layout"]["annotations"]] == ["L: (x - 0.286) / 0.353"]
    steps = dict(zip(tables(at)[0].iloc[:, 0], tables(at)[0].iloc[:, 1], strict=True))
    assert steps["to grey (one channel)"] == "L = 0.299 R + 0.587 G + 0.114 B"
    assert steps["invert a light background"].startswith("not needed")


def test_a_photo_on_a_light_ground_is_inverted_and_the_page_says_so(fashion):
    photo = Image.new("RGB", (120, 90), (235, 235, 230))  # a dark bag on a white table
    photo.paste((40, 30, 20), (30, 20, 90, 70))
    buffer = io.BytesIO()
    photo.save(buffer, "PNG")
    state = {"custom_model": str(fashion[1]), "source": "upload", "upload_bytes": buffer.getvalue()}
    at = open_page(None, **state)
    assert errors(at) == []
    assert any("inverted (dark and light swapped)" in c.value for c in at.caption)
    shown = model_input(at)[..., 0]
    assert shown[0, 0] < 40 and shown[14, 14] > 180  # a light bag on a dark ground, as the model learnt
    at = open_page("app_pages/1_input.py", **state)
    title = figure(at, "input_resized")["layout"]["title"]["text"].replace("<br>", " ")  # wrapped to fit its column
    assert title.endswith("grey and inverted: 28 x 28 px")
    steps = dict(zip(tables(at)[0].iloc[:, 0], tables(at)[0].iloc[:, 1], strict=True))
    assert steps["invert a light background"].startswith("yes")


def test_the_patch_pages_show_16_patches_of_49_numbers(fashion):
    at = open_page("app_pages/2_patches.py", custom_model=str(fashion[1]), source="test", test="Coat/0")
    assert errors(at) == []
    metrics = {m.label: m.value for m in reversed(at.metric)}  # the model's row, not the "try it" one below
    assert metrics["Patch size (P x P)"] == "7 x 7"
    assert metrics["Patches N"] == "4 x 4 = 16"
    assert metrics["Numbers per patch"] == "7 x 7 x 1 = 49"


def test_the_lab_lists_fashion_mistakes_and_opens_one_in_the_tour(fashion):
    at = open_page("app_pages/10_mistakes.py", custom_model=str(fashion[1]))
    assert errors(at) == []
    assert any("Fashion-MNIST" in c.value and "40" in c.value for c in at.caption)
    thumbs = gallery(at, "mistakes_gallery")["items"]
    assert thumbs, "a random model gets most of 40 images wrong"
    at.button(key="mistakes_open_tour").click().run()
    assert errors(at) == [] and at.session_state["source"] == "test"
    class_name, _, index = at.session_state["test"].rpartition("/")
    assert class_name in FASHION_MNIST_CLASSES
    assert np.array_equal(model_input(at)[..., 0], dataset_image(class_name, int(index)))


def test_the_vectors_page_flattens_one_grey_channel(fashion):
    at = open_page("app_pages/3_vectors.py", custom_model=str(fashion[1]), source="test", test="Coat/0")
    assert errors(at) == []
    assert "one grey channel (C = 1)" in at.markdown[0].value
    bars = figure(at, "vectors_flat")
    assert [trace["name"] for trace in bars["data"]] == ["L"] and len(figure_array(bars["data"][0]["x"])) == 49


def test_switching_from_a_colour_model_to_the_grey_one_moves_the_picker_to_fashion_mnist(
    fashion, monkeypatch, tmp_path
):
    make_image_folder(tmp_path, per_class=3, splits=("test",))  # the server's colour test folder
    monkeypatch.setenv("VITVIZ_DATA", str(tmp_path))
    colour = tmp_path / "colour.safetensors"
    zoo.save(
        VisionTransformer(
            ViTConfig(
                image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=1, num_heads=2, class_names=CLASSES
            )
        ),
        colour,
    )
    at = open_page(None, custom_model=str(colour), source="test", test=f"{CLASSES[1]}/2")
    assert errors(at) == [] and at.session_state["test_class"] == CLASSES[1]
    at.sidebar.text_input(key="custom_model").set_value(str(fashion[1])).run()
    assert errors(at) == []
    assert at.session_state["test_class"] == "T-shirt/top" and at.session_state["test"] == "T-shirt/top/0"
    assert np.array_equal(model_input(at)[..., 0], dataset_image("T-shirt/top", 0))
    at.sidebar.text_input(key="custom_model").set_value(str(colour)).run()  # and back: the folder's classes again
    assert errors(at) == [] and at.session_state["test_class"] == CLASSES[0]


def test_no_fashion_mnist_on_the_server_gets_a_sentence_and_a_download_button(fashion, monkeypatch, tmp_path):
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path))  # neither Debian's copy nor a download here
    testset.cached_test_set.clear()
    at = open_page(None, custom_model=str(fashion[1]), source="test", test="Bag/0")
    assert errors(at) == []
    assert any("No test images of this model's dataset" in info.value for info in at.sidebar.info)
    at = open_page("app_pages/10_mistakes.py", custom_model=str(fashion[1]))
    assert errors(at) == []
    (said,) = [info.value for info in at.info]
    assert "Fashion-MNIST" in said and "dataset-fashion-mnist" in said and str(tmp_path) not in said
    assert at.button(key="mistakes_download").label == "Download Fashion-MNIST with torchvision"


def test_a_failed_fashion_mnist_download_names_its_own_package_not_a_cifar_folder(fashion, monkeypatch, tmp_path):
    monkeypatch.setenv("VITVIZ_CACHE", str(tmp_path))
    testset.cached_test_set.clear()

    def offline(*args, **kwargs):
        raise FileNotFoundError("Fashion-MNIST could not be downloaded (no network).")

    monkeypatch.setattr(vdata, "load_split", offline)
    at = open_page("app_pages/10_mistakes.py", custom_model=str(fashion[1]))
    at.button(key="mistakes_download").click().run()
    assert errors(at) == []
    (failed,) = [info.value for info in at.info if "did not work" in info.value]
    assert "no network" in failed and "dataset-fashion-mnist" in failed and "CIFAR-10" not in failed
