"""The misclassification lab (app_pages/10_mistakes.py) in Streamlit's AppTest.

Every test uses a tiny ImageFolder made here (3 colour classes, 10 images each, 32x32) and a
tiny random ViT whose class names are the folders', saved to a temporary file and chosen with
session state ``custom_model``. The server's data folder is VITVIZ_DATA (``serve``): a visitor
can neither see nor change it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.apptest import charts, errors, figure, gallery, open_page, open_page_in_one_run, open_thumbnail, tables
from tests.apptest import figure_array as _array
from tests.conftest import SHARED_DATA
from tests.helpers import CLASSES, make_image_folder
from vitviz.analyses import lab
from vitviz.analyses.evaluate import EvalResult, evaluate, predictions_path, read_predictions, save_predictions
from vitviz.app import furniture, state
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import i18n, plots

torch.set_num_threads(1)  # a training job shares the CPU; these tensors are tiny

PAGE = "app_pages/10_mistakes.py"
GALLERY = "mistakes_gallery"  # the gallery element's key (vitviz.app.gallery)
TINY = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=4, class_names=CLASSES)


def _save_model(path: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    zoo.save(VisionTransformer(TINY).eval(), path)
    return path


@pytest.fixture(scope="module")
def lab_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, EvalResult]:
    """(test folder, model file, what vitviz.analyses.evaluate says about the pair)."""
    root = tmp_path_factory.mktemp("lab")
    make_image_folder(root, per_class=10, splits=("test",))
    model_path = _save_model(root / "tiny.safetensors", seed=0)
    model, _ = zoo.load(str(model_path), device="cpu")
    result = evaluate(model, vdata.load_image_folder(root / "test", use_cache=False), use_cache=False)
    assert 0 < result.misclassified < result.n  # the page has mistakes to show and correct cells
    return root / "test", model_path, result


@pytest.fixture(autouse=True)
def serve(lab_setup: tuple[Path, Path, EvalResult], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's server has the tiny test folder as its data (VITVIZ_DATA)."""
    monkeypatch.setenv("VITVIZ_DATA", str(lab_setup[0]))


@pytest.fixture
def csv_texts(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The text of every furniture.download_csv button, by widget key (AppTest keeps no media files)."""
    texts: dict[str, str] = {}
    original = furniture.download_csv

    def recording(label_key: str, file_name: str, key: str, text: Callable[[], str]) -> None:
        texts[key] = text()  # what a click on the button would download
        original(label_key, file_name, key, text)

    monkeypatch.setattr(furniture, "download_csv", recording)
    return texts


def agreement_table(at) -> list[list]:
    """The lab's 2x2 agreement table as shown (its Markdown read back: counts as numbers), header first."""
    (table,) = [table for table in tables(at) if "second model right" in table.columns]
    return [list(table.columns), *table.to_numpy().tolist()]


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _captions(at) -> list[str]:
    """The gallery's thumbnails' captions, in order."""
    return [item["caption"] for item in gallery(at, GALLERY)["items"]]


def _marked(at) -> list[str]:
    """The captions of the thumbnails marked as the image up close (one, or none on another page)."""
    shown = gallery(at, GALLERY)
    return [item["caption"].split()[0] for item in shown["items"] if item["number"] == shown["current"]]


def _open(folder: Path, model_path: Path, **state: object):
    return open_page(PAGE, custom_model=str(model_path), **state)


def test_page_lists_exactly_the_wrong_images(lab_setup, csv_texts) -> None:
    folder, model_path, result = lab_setup
    at = _open(folder, model_path)
    assert errors(at) == []
    assert at.title[0].value == "Misclassification lab"
    assert any(f"`({result.n}, 3)`" in m.value for m in at.markdown)  # the header's probs shape
    assert [
        w.key for w in at.text_input if w.key not in ("custom_model", "mistakes_other_path")
    ] == []  # no data folder to type (model files only)
    on_screen = [e.value for e in (*at.markdown, *at.caption, *at.info)]
    assert not [text for text in on_screen if str(folder) in text or str(folder.parent) in text]  # no server path
    assert any("test split: 30 images" in text for text in on_screen)
    assert at.selectbox(key="mistakes_true").value == -1 == at.selectbox(key="mistakes_predicted").value  # (any)
    assert at.slider(key="mistakes_range").value == (0.0, 1.0)
    assert at.number_input(key="mistake").value == 1
    assert at.button(key="mistakes_page_back").disabled and at.button(key="mistakes_image_back").disabled
    assert at.button(key="mistakes_open_tour") is not None
    keys = {chart.proto.id.rsplit("-", 1)[-1].removeprefix("mistakes_") for chart in charts(at)}
    assert {"per_class", "confusion", "top5", "map_predicted", "map_true", "lens"} <= keys

    rows = _rows(csv_texts["mistakes_csv"])
    wrong = result.wrong.tolist()
    assert sorted(int(r["index"]) for r in rows) == sorted(wrong)
    confidences = [float(r["confidence"]) for r in rows]
    assert confidences == sorted(confidences, reverse=True)  # most confident first
    for row in rows:
        i = int(row["index"])
        assert row["file"] == result.files[i]
        assert row["true"] == CLASSES[int(result.labels[i])] != row["predicted"] == CLASSES[int(result.predictions[i])]
    captions = _captions(at)
    assert len(captions) == min(24, len(wrong))
    first = int(rows[0]["index"])
    true, predicted = CLASSES[int(result.labels[first])], CLASSES[int(result.predictions[first])]
    assert captions[0] == f"#1 {true} → {predicted} ({float(result.confidence[first]):.0%})"


def test_thumbnails_and_previous_next_open_images_and_turn_pages(lab_setup, csv_texts, monkeypatch) -> None:
    folder, model_path, result = lab_setup
    monkeypatch.setattr(lab, "PER_PAGE", 4)  # pages of 4, so a few mistakes fill several pages
    at = _open(folder, model_path)
    rows = _rows(csv_texts["mistakes_csv"])
    count = len(rows)
    assert count >= 10 and errors(at) == []

    def up_close() -> int:  # the dataset index of the image shown up close
        (said,) = [m.value for m in at.markdown if m.value.startswith("`") and "true class" in m.value]
        return next(int(r["index"]) for r in rows if f"`{r['file']}`" in said)

    assert [label.split()[0] for label in _captions(at)] == ["#1", "#2", "#3", "#4"]
    assert _marked(at) == ["#1"]  # the image up close is marked
    open_thumbnail(at, GALLERY, 3)  # a click on a thumbnail opens it
    assert at.number_input(key="mistake").value == 3 and up_close() == int(rows[2]["index"])
    assert _marked(at) == ["#3"]
    at.button(key="mistakes_page_forward").click().run()  # the gallery turns; the image up close stays
    assert [label.split()[0] for label in _captions(at)] == ["#5", "#6", "#7", "#8"]
    assert at.number_input(key="mistake").value == 3 and _marked(at) == []
    assert any(f"images 5–8 of {count}" in c.value for c in at.caption)
    open_thumbnail(at, GALLERY, 8)
    assert at.number_input(key="mistake").value == 8 and _marked(at) == ["#8"]
    at.button(key="mistakes_image_forward").click().run()  # #9 lives on page 3: the gallery follows
    assert at.number_input(key="mistake").value == 9 and up_close() == int(rows[8]["index"])
    assert _captions(at)[0].startswith("#9 ")
    at.button(key="mistakes_image_back").click().run()
    assert at.number_input(key="mistake").value == 8 and _captions(at)[0].startswith("#5 ")
    at.number_input(key="mistake").set_value(count).run()  # typed: the last image, on the last page
    assert at.button(key="mistakes_image_forward").disabled and at.button(key="mistakes_page_forward").disabled
    assert _captions(at)[-1].startswith(f"#{count} ") and errors(at) == []


def test_one_confidence_filter_keeps_exactly_its_range(lab_setup, csv_texts) -> None:
    """One confidence control (a range; "confidently wrong" is its left end raised), no second
    threshold beside it."""
    folder, model_path, result = lab_setup
    at = _open(folder, model_path)
    assert [s.key for s in at.slider] == ["mistakes_range"] and len(at.checkbox) == 0
    wrong = result.wrong
    low = float(result.confidence[wrong].median())  # about half of the mistakes are at least this sure
    at.slider(key="mistakes_range").set_value((round(low, 2), 1.0)).run()
    assert errors(at) == []
    kept = result.wrong[result.confidence[result.wrong] >= round(low, 2)].tolist()
    assert 0 < len(kept) < len(wrong)
    assert sorted(int(r["index"]) for r in _rows(csv_texts["mistakes_csv"])) == sorted(kept)
    assert at.number_input(key="mistake").value == 1  # new filters: back to the first image


def test_the_gallery_shows_each_thumbnail_and_ignores_a_forged_click(lab_setup) -> None:
    """Every thumbnail of a page is a PNG of its test image with its caption and number; a click's
    number comes from the browser, so one that is not a thumbnail on the page, or not a whole
    number, opens nothing and breaks nothing."""
    folder, model_path, _ = lab_setup
    at = _open(folder, model_path)
    shown = gallery(at, GALLERY)
    assert shown["columns"] == lab.PER_ROW and shown["current"] == 1
    config = (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text()
    primary = re.search(r'^primaryColor = "(#[0-9a-fA-F]{6})"$', config, re.MULTILINE)[1]
    assert shown["colour"] == primary  # the image up close is marked in the theme's colour
    assert [item["number"] for item in shown["items"]] == list(range(1, len(shown["items"]) + 1))
    for item in shown["items"]:
        assert item["src"].startswith("data:image/png;base64,") and item["caption"].startswith(f"#{item['number']} ")
    for forged in (len(shown["items"]) + 1, 0, -1, 2.5, "2", True, None, [2], 10**30):
        open_thumbnail(at, GALLERY, forged)
        assert at.number_input(key="mistake").value == 1 and errors(at) == [], forged
    open_thumbnail(at, GALLERY, 2.0)  # a whole number as JSON may write it
    assert at.number_input(key="mistake").value == 2 and errors(at) == []


def test_a_thumbnail_click_scrolls_to_the_image_up_close(lab_setup) -> None:
    """A thumbnail opens its image below the gallery and asks the browser to scroll there (once);
    the up-close view's own buttons, already in view, do not (tests/browser holds the scrolling)."""
    folder, model_path, _ = lab_setup
    at = _open(folder, model_path)

    def scrolls() -> list[str]:
        return [h.proto.body for h in at.sidebar.get("html") if "st-key-mistakes_detail" in h.proto.body]

    assert scrolls() == []
    open_thumbnail(at, GALLERY, 3)
    assert at.number_input(key="mistake").value == 3 and len(scrolls()) == 1
    at.button(key="mistakes_image_forward").click().run()
    assert at.number_input(key="mistake").value == 4 and scrolls() == []


def test_choosing_a_confusion_cell_shows_exactly_that_cell(lab_setup, csv_texts) -> None:
    folder, model_path, result = lab_setup
    counts = result.confusion()
    off = counts * (1 - torch.eye(3, dtype=counts.dtype))
    true, predicted = divmod(int(off.argmax()), 3)  # the fullest off-diagonal cell
    at = _open(folder, model_path)
    at.selectbox(key="mistakes_true").set_value(true)
    at.selectbox(key="mistakes_predicted").set_value(predicted).run()
    assert errors(at) == []
    cell = torch.nonzero((result.labels == true) & (result.predictions == predicted)).flatten().tolist()
    assert len(cell) == int(counts[true, predicted]) > 0
    assert sorted(int(r["index"]) for r in _rows(csv_texts["mistakes_csv"])) == cell
    assert len(_captions(at)) == min(24, len(cell))
    (figure,) = [c for c in charts(at) if c.proto.id.endswith(f"-mistakes_confusion_{true}_{predicted}")]
    assert '"rect"' in figure.proto.spec  # the chosen cell is outlined

    # A cell on the diagonal shows the images classified correctly as that class.
    at.selectbox(key="mistakes_predicted").set_value(true).run()
    assert errors(at) == []
    diagonal = torch.nonzero((result.labels == true) & (result.predictions == true)).flatten().tolist()
    assert sorted(int(r["index"]) for r in _rows(csv_texts["mistakes_csv"])) == diagonal


def test_korean_and_a_model_without_cls(lab_setup, tmp_path) -> None:
    folder, _, _ = lab_setup
    torch.manual_seed(2)
    path = tmp_path / "no_cls.safetensors"
    zoo.save(VisionTransformer(TINY.replace(class_token=False, global_pool="avg")).eval(), path)
    at = open_page_in_one_run(PAGE, lang="ko", custom_model=str(path))
    assert errors(at) == []
    assert at.title[0].value == "오분류 실험실"
    assert at.selectbox(key="mistakes_true").options[0] == "(전체)"
    assert any("[CLS] 토큰이 없" in caption.value for caption in at.caption)


def test_second_open_and_filter_changes_do_not_run_the_model(lab_setup, tmp_path, monkeypatch) -> None:
    folder, _, _ = lab_setup
    model_path = _save_model(tmp_path / "fresh.safetensors", seed=1)  # a model no other test evaluated
    calls = _counting_forward(monkeypatch)
    at = _open(folder, model_path)
    assert errors(at) == []
    assert sum(calls) == 30  # every test image went through the model once
    shutil.rmtree(vdata.cache_dir() / "eval")  # so only Streamlit's cache can answer now
    again = _open(folder, model_path)
    assert errors(again) == []
    again.slider(key="mistakes_range").set_value((0.0, 0.6)).run()
    again.slider(key="mistakes_range").set_value((0.9, 1.0)).run()
    assert errors(again) == []
    assert sum(calls) == 30


def _counting_forward(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The batch sizes of every VisionTransformer.forward from now on."""
    calls: list[int] = []
    original = VisionTransformer.forward

    def counting(self, pixels):
        calls.append(len(pixels))
        return original(self, pixels)

    monkeypatch.setattr(VisionTransformer, "forward", counting)
    return calls


def test_predictions_beside_the_weights_open_the_lab_without_running_the_model(
    lab_setup, tmp_path, monkeypatch
) -> None:
    folder, _, _ = lab_setup
    model_path = _save_model(tmp_path / "shipped.safetensors", seed=3)
    model, _ = zoo.load(str(model_path), device="cpu")
    data = vdata.load_image_folder(folder)
    measured = evaluate(model, data, use_cache=False)
    save_predictions(measured, predictions_path(model_path), model, data.fingerprint)
    shutil.rmtree(vdata.cache_dir() / "eval", ignore_errors=True)  # no disk cache can answer
    calls = _counting_forward(monkeypatch)
    at = _open(folder, model_path)
    assert errors(at) == []
    assert sum(calls) == 0  # not one test image went through the model
    assert at.metric[0].value == f"{measured.accuracy:.1%}"

    stale = _save_model(tmp_path / "retrained.safetensors", seed=4)  # other weights, the old file beside them
    shutil.copy(predictions_path(model_path), predictions_path(stale))
    again = _open(folder, stale)
    assert errors(again) == []
    assert sum(calls) == 30  # the stale predictions were refused: the model ran over the 30 images


def test_the_servers_startup_looks_at_the_image_the_lab_opens_with(lab_setup, tmp_path, monkeypatch) -> None:
    # a first visit to the lab spent 0.15 s of its run on this image's maps and logit lens (docs/benchmarks.md)
    from vitviz.app import testset

    folder, _, _ = lab_setup
    model_path = _save_model(tmp_path / "default.safetensors", seed=5)
    model, _ = zoo.load(str(model_path), device="cpu")
    data = vdata.load_image_folder(folder)
    save_predictions(evaluate(model, data, use_cache=False), predictions_path(model_path), model, data.fingerprint)
    monkeypatch.setattr(zoo, "default_name", lambda: str(model_path))
    looked_at: list[int] = []
    original = lab.inspect_mistake

    def counting(model, images, predicted, true):
        looked_at.append(int(images.float().sum()))
        return original(model, images, predicted, true)

    monkeypatch.setattr(lab, "inspect_mistake", counting)
    testset.cached_mistake.clear()
    at = _open(folder, model_path)  # without the startup's look: the lab's run looks at its image itself
    assert errors(at) == [] and len(looked_at) == 1
    opened = looked_at[0]

    testset.cached_mistake.clear()
    testset.warm_test_split()
    assert looked_at[1:] == [opened]  # the image the lab opens with, and no other
    at = _open(folder, model_path)
    assert errors(at) == [] and looked_at[1:] == [opened]  # the lab's run found it done
    assert at.metric[0].value == f"{testset.cached_evaluation(str(model_path), str(folder)).accuracy:.1%}"


def test_no_dataset_gets_a_sentence(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("VITVIZ_DATA", raising=False)
    monkeypatch.setattr(vdata, "find_cifar_test_folder", lambda: None)
    empty = tmp_path / "nothing here"
    empty.mkdir()
    monkeypatch.setattr(vdata, "default_data_dir", lambda: empty)
    at = open_page(PAGE)
    assert [e.value for e in at.exception] == []
    assert errors(at) == []
    (said,) = [info.value for info in at.info]
    assert "ImageFolder" in said and "--data" in said and str(empty) not in said
    assert at.button(key="mistakes_download") is not None
    assert charts(at) == []


def test_a_model_for_other_classes_gets_a_sentence(lab_setup) -> None:
    folder, _, _ = lab_setup
    at = open_page(PAGE)  # the default model predicts the 10 CIFAR-10 classes
    assert errors(at) == []
    assert any("10 classes" in info.value for info in at.info)


def test_open_in_the_tour_shows_the_chosen_image(lab_setup, csv_texts, monkeypatch) -> None:
    folder, model_path, result = lab_setup
    at = _open(folder, model_path)
    at.number_input(key="mistake").set_value(2).run()
    chosen = int(_rows(csv_texts["mistakes_csv"])[1]["index"])
    class_name, _, file_name = result.files[chosen].partition("/")
    index_in_class = sorted(p.name for p in (folder / class_name).iterdir()).index(file_name)
    runs, init = [], state.init
    monkeypatch.setattr(state, "init", lambda: (runs.append(1), init())[1])  # app.py calls it once a run
    at.button(key="mistakes_open_tour").click().run()
    assert errors(at) == []
    assert at.title[0].value == "Overview"
    assert len(runs) == 1  # the click's own run drew the overview, as Next's does
    assert at.query_params["test"] == f"{class_name}/{index_in_class}" and at.query_params["step"] == "0"
    assert at.session_state["source"] == "test"
    assert at.session_state["test"] == f"{class_name}/{index_in_class}"
    assert (at.session_state["test_class"], at.session_state["test_index"]) == (class_name, index_in_class)
    expected = (folder / result.files[chosen]).read_bytes()
    assert vdata.folder_image_bytes(folder, class_name, index_in_class) == expected
    (grid,) = [c for c in charts(at) if c.proto.id.endswith("-home_grid")]
    shown = _array(json.loads(grid.proto.spec)["data"][0]["z"]).astype(int)  # the overview's model input
    assert np.abs(shown - np.asarray(Image.open(io.BytesIO(expected)).convert("RGB"), dtype=int)).max() <= 1
    # the overview says it is a mistake: the true class in green, the model's answer on top in red
    (bars,) = [c for c in charts(at) if c.proto.id.endswith("-home_topk")]
    spec = json.loads(bars.proto.spec)
    bar = spec["data"][0]
    title = spec["layout"]["title"]["text"].replace("<br>", " ")  # a long title may wrap to fit its column
    assert title == "Prediction (red: the answer, green: the true class)"
    top = bar["y"][0]
    assert top != class_name
    assert [e.value for e in at.success] == []
    (said,) = [e.value for e in at.warning]
    assert said.startswith("Wrong.") and f"**{class_name}**" in said and f"the model says **{top}**" in said
    # green whether or not it is among the top 5: a class below them gets a bar of its own
    assert bar["marker"]["color"][bar["y"].index(class_name)] == plots.TRUE_COLOUR
    at.switch_page(PAGE).run()  # back in the lab, the same image is still the one up close
    assert errors(at) == []
    assert at.number_input(key="mistake").value == 2


def test_a_right_answer_on_a_test_image_says_so(lab_setup) -> None:
    folder, model_path, result = lab_setup
    right = int((~result.wrong).nonzero()[0])
    class_name, _, file_name = result.files[right].partition("/")
    index_in_class = sorted(p.name for p in (folder / class_name).iterdir()).index(file_name)
    at = open_page(None, custom_model=str(model_path), source="test", test=f"{class_name}/{index_in_class}")
    assert errors(at) == []
    (said,) = [e.value for e in at.success]
    assert said.startswith("Right.") and f"**{class_name}**" in said
    assert not [c.value for c in at.caption if "knows only" in c.value]  # the verdict says enough
    at.session_state["source"] = "sample"  # a photo has no known class: no verdict
    at.run()
    assert errors(at) == [] and [e.value for e in at.success] == []


def test_the_chosen_mistake_shows_its_answer_red_and_its_true_class_green(lab_setup, csv_texts) -> None:
    folder, model_path, result = lab_setup
    at = _open(folder, model_path)
    chosen = int(_rows(csv_texts["mistakes_csv"])[0]["index"])  # image #1 of the list
    probs, true_name = result.probs[chosen], result.classes[int(result.labels[chosen])]
    (bars,) = [c for c in charts(at) if c.proto.id.endswith("-mistakes_top5")]
    bar = json.loads(bars.proto.spec)["data"][0]
    colours = bar["marker"]["color"]
    assert bar["y"][0] == result.classes[int(probs.argmax())] and colours[0] == plots.PREDICTED_COLOUR
    assert colours[bar["y"].index(true_name)] == plots.TRUE_COLOUR  # 3 classes: the top 5 shows them all
    rank = int((probs > probs[int(result.labels[chosen])]).sum()) + 1
    assert any(f"'{true_name}' is number {rank} of {len(result.classes)}" in c.value for c in at.caption)


def test_korean_class_names_on_screen_and_the_files_names_in_downloads(lab_setup, csv_texts, monkeypatch) -> None:
    folder, model_path, result = lab_setup
    korean = {"red": "빨강", "green": "초록", "blue": "파랑"}
    for name, word in korean.items():  # the colour classes get translations, as CIFAR-10's have
        monkeypatch.setitem(i18n.CLASS_NAMES, name, {"ko": word})
    shown = [f"{korean[c]} ({c})" for c in result.classes]
    at = open_page_in_one_run(PAGE, lang="ko", custom_model=str(model_path))
    assert errors(at) == []
    assert figure(at, "mistakes_per_class")["data"][0]["y"] == shown
    matrix = figure(at, "mistakes_confusion")["data"][0]
    assert list(matrix["x"]) == shown and list(matrix["y"]) == shown
    top5 = figure(at, "mistakes_top5")["data"][0]["y"]
    assert all(label in shown for label in top5)
    first = _rows(csv_texts["mistakes_csv"])[0]
    assert first["true"] in result.classes and first["predicted"] in result.classes  # downloads keep the files' names
    wrong = int(first["index"])
    true_name = result.classes[int(result.labels[wrong])]
    assert any(f"'{korean[true_name]} ({true_name})'" in caption.value for caption in at.caption)  # the rank sentence
    gallery = _captions(at)
    assert gallery[0].startswith(f"#1 {korean[true_name]} → ")  # thumbnails' captions: the short Korean name


def test_the_overview_verdict_in_korean_names_classes_in_korean(lab_setup, monkeypatch) -> None:
    folder, model_path, result = lab_setup
    for name, word in {"red": "빨강", "green": "초록", "blue": "파랑"}.items():
        monkeypatch.setitem(i18n.CLASS_NAMES, name, {"ko": word})
    wrong = int(result.wrong[0])
    class_name, _, file_name = result.files[wrong].partition("/")
    index_in_class = sorted(p.name for p in (folder / class_name).iterdir()).index(file_name)
    at = open_page_in_one_run(
        "app_pages/0_home.py",
        lang="ko",
        custom_model=str(model_path),
        source="test",
        test=f"{class_name}/{index_in_class}",
    )
    assert errors(at) == []
    (said,) = [e.value for e in at.warning]
    label = i18n.class_label(class_name, "ko")
    assert said.startswith("틀렸습니다.") and f"**{label}**" in said
    assert label in at.selectbox(key="test_class").proto.options  # the sidebar's class picker, as sent to the browser
    bars = figure(at, "home_topk")["data"][0]
    assert sorted(bars["y"]) == sorted(i18n.class_label(c, "ko") for c in result.classes)  # all 3 classes, in Korean
    assert bars["marker"]["color"][0] == plots.PREDICTED_COLOUR


def test_a_second_model_splits_the_mistakes(lab_setup, csv_texts, tmp_path) -> None:
    folder, model_path, result = lab_setup
    second_path = _save_model(tmp_path / "second.safetensors", seed=7)
    second_model, _ = zoo.load(str(second_path), device="cpu")
    second = evaluate(second_model, vdata.load_image_folder(folder, use_cache=False), use_cache=False)
    at = _open(folder, model_path, mistakes_other_path=str(second_path))
    assert errors(at) == []
    counts = lab.agreement(result, second).tolist()
    header, *rows = agreement_table(at)
    assert header == ["", "second model right", "second model wrong"]
    assert rows == [["this model right", *counts[0]], ["this model wrong", *counts[1]]]
    for which in ("first_only", "both", "second_only"):
        at.radio(key="mistakes_pair").set_value(which).run()
        assert errors(at) == []
        expected = lab.pair_mask(result, second, which).nonzero().flatten().tolist()
        assert sorted(int(r["index"]) for r in _rows(csv_texts["mistakes_csv"])) == expected, which
    at.radio(key="mistakes_pair").set_value("both").run()
    if lab.pair_mask(result, second, "both").any():
        first = int(_rows(csv_texts["mistakes_csv"])[0]["index"])
        said = [m.value for m in at.markdown if m.value.startswith("Second model:")]
        answer = CLASSES[int(second.predictions[first])]
        assert said == [f"Second model: **{answer}** ({float(second.confidence[first]):.1%}), wrong."]


@pytest.mark.cifar10
def test_the_shipped_vit_opens_the_lab_beside_the_shipped_cnn(monkeypatch):
    """The two shipped models on the CIFAR-10 (JPEG copy) test split: both read their shipped
    predictions, so the 2x2 agreement table is there from the first view."""
    monkeypatch.setenv("VITVIZ_DATA", str(SHARED_DATA))
    at = open_page(PAGE)
    assert errors(at) == []
    assert at.selectbox(key="mistakes_other").value == zoo.SHIPPED_CNN
    test = vdata.load_split(SHARED_DATA, "test")

    def shipped(name: str) -> EvalResult:
        return read_predictions(predictions_path(zoo.MODELS_DIR / f"{name}.safetensors"), zoo.load(name)[0], test)

    counts = lab.agreement(shipped(zoo.SHIPPED), shipped(zoo.SHIPPED_CNN)).tolist()
    _, *rows = agreement_table(at)  # rows: the ViT right / wrong
    shown = [row[1:] for row in rows]
    assert shown == counts and sum(map(sum, counts)) == 10_000
    # the shipped ViT averages its mirror image: the caption says so, with its card's one-view figure
    card = zoo.REGISTRY[zoo.SHIPPED].card
    caption = " ".join(c.value for c in at.caption)
    assert "mean of its logits for each image and its mirror image" in caption
    assert f"{card.one_view_accuracy:.2%} right ({card.evaluated['one_view_misclassified']:,} wrong)" in caption
    assert f"{shipped(zoo.SHIPPED).accuracy:.1%}" in [m.value for m in at.metric]  # the mean's: 87.5%, not 87.2%
    # the first mistake up close: its maps and lens follow one pass, whose answer is computed here
    result, model = shipped(zoo.SHIPPED), zoo.load(zoo.SHIPPED)[0]
    first = int(lab.filter_mistakes(result)[0])
    pixels = vdata.preprocess_batch(test.images[first : first + 1], model.config.preprocess, model.config.in_chans)
    with torch.inference_mode():
        one = int(model.forward_one_view(pixels).argmax())
    lab_answer, one_answer = result.classes[int(result.predictions[first])], result.classes[one]
    if one == int(result.predictions[first]):
        expected = i18n.plain(i18n.t("mistakes.one_pass_same", pred=lab_answer))
        assert expected in [i18n.plain(c.value) for c in at.caption]
    else:
        expected = i18n.plain(i18n.t("mistakes.one_pass_differs", pred=lab_answer, one=one_answer))
        assert expected in [i18n.plain(i.value) for i in at.info]


@pytest.mark.cifar10
def test_a_reversed_confidence_range_keeps_the_lab_working(monkeypatch):
    """A forged slider value (0.9, 0.1) reached lab.filter_mistakes' ValueError and broke the lab on
    every run until the visitor moved the slider (a fuzzing helper's find): the range is a choice
    checked as 0 <= low <= high <= 1, so the lab keeps its last valid one."""
    monkeypatch.setenv("VITVIZ_DATA", str(SHARED_DATA))
    at = open_page(PAGE)
    at.slider(key="mistakes_range").set_value((0.9, 0.1)).run()
    assert errors(at) == []
    at.run()
    assert errors(at) == [] and at.slider(key="mistakes_range").value == (0.0, 1.0)
