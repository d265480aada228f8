"""The handout (issue 42): its numbers read back from the file, its size, and its command line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.app.test_korean_pages import english_words, figure_texts
from tests.apptest import figure_array
from vitviz.analyses import analysis
from vitviz.models import zoo
from vitviz.models.config import CIFAR10_CLASSES, ViTConfig
from vitviz.models.data import load_image, to_tensor
from vitviz.models.model import VisionTransformer
from vitviz.render import handout, plots
from vitviz.render.i18n import plain, t

CAT = handout.SAMPLES / "cat-chelsea.jpg"


def plotted(text: str) -> dict[str, tuple[list[dict], dict]]:
    """Every figure in a handout, by its div's id: Plotly's (data, layout) as the file holds them,
    read from each ``Plotly.newPlot("id", data, layout, ...)`` after the inlined library."""
    body = text[text.index("</head>") :]
    decoder = json.JSONDecoder()
    found = {}
    for call in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*', body):
        data, end = decoder.raw_decode(body, call.end())
        layout, _ = decoder.raw_decode(body, end + re.match(r"\s*,\s*", body[end:]).end())
        found[call.group(1)] = (data, layout)
    return found


def tiny_model() -> tuple[VisionTransformer, zoo.ModelSpec]:
    config = ViTConfig(
        image_size=32, patch_size=4, num_classes=10, embed_dim=32, depth=2, num_heads=4, class_names=CIFAR10_CLASSES
    )
    torch.manual_seed(0)
    model = VisionTransformer(config).eval()
    spec = zoo.ModelSpec(
        name="tiny", title="tiny", source="random", config=config, trained=False, offline=True, description="tiny"
    )
    return model, spec


def test_the_numbers_in_the_file_are_the_traces() -> None:
    model, spec = tiny_model()
    data = CAT.read_bytes()
    text = handout.build(model, spec, data, "en", image_name="cat-chelsea.jpg")
    figures = plotted(text)
    pixels = to_tensor(load_image(data), model.config.preprocess)
    with torch.inference_mode():
        trace = model.explain(pixels)
    depth, heads = trace.depth, trace.num_heads

    # the attention step as the page opens: layer 1, head 1, the centre patch as the query
    first = analysis.readout_attention(trace, 0)[0].numpy()  # (heads, 8, 8)
    np.testing.assert_allclose(figure_array(figures["fig-attention-readout"][0][1]["z"]), first[0], rtol=1e-6)
    centre = analysis.query_attention(trace, 0, 1 + 4 * 8 + 4)[0, 0].numpy()
    np.testing.assert_allclose(figure_array(figures["fig-attention-query"][0][1]["z"]), centre, rtol=1e-6)
    (mosaic,), layout = figures["fig-attention-heads"]  # every head's map in one heatmap, each titled above it
    values = figure_array(mosaic["customdata"])[..., 3]  # each map's own numbers, which the pointer reads
    titles = layout["annotations"]
    assert len(titles) == heads
    for head, title in enumerate(titles):
        top, left = round(title["y"] + 0.5), round(title["x"] - 3.5)  # over the middle of its 8 columns
        np.testing.assert_allclose(values[top : top + 8, left : left + 8], first[head], rtol=1e-6)

    rollout = analysis.rollout_map(trace)[0].numpy()
    np.testing.assert_allclose(figure_array(figures["fig-attention-rollout"][0][1]["z"]), rollout, rtol=1e-6)
    distances = analysis.mean_attention_distance(trace, model.config.token_size).numpy()  # (depth, heads)
    dots = [figure_array(d["y"]) for d in figures["fig-attention-distance"][0] if d.get("mode") == "markers"]
    np.testing.assert_allclose(np.stack(dots, axis=1), distances, rtol=1e-6)

    probs = trace.logits[0].softmax(-1)
    best = probs.topk(5)
    bars = figures["fig-prediction-topk"][0][0]
    np.testing.assert_allclose(figure_array(bars["x"]), best.values.numpy(), rtol=1e-6)
    assert list(bars["y"]) == [CIFAR10_CLASSES[i] for i in best.indices]

    lens = analysis.logit_lens(model, trace).float()
    tracked, scores = analysis.logit_lens_tracks(lens, k=5)
    lines = figures["fig-prediction-lens"][0]
    assert [line["name"] for line in lines] == [CIFAR10_CLASSES[int(c)] for c in tracked]
    np.testing.assert_allclose(np.stack([figure_array(line["y"]) for line in lines], 1), scores.numpy(), rtol=1e-5)

    steps = analysis.occlusion_steps(model)
    curves = figures["fig-prediction-occlusion"][0]
    for kind, curve in zip(analysis.OCCLUSION_ORDERS, curves, strict=True):
        order = analysis.occlusion_order(trace, kind)
        with torch.inference_mode():
            expected = analysis.occlusion_curve(model, trace.pixels, order, steps, target=int(probs.argmax()))
        np.testing.assert_allclose(figure_array(curve["y"]), expected.numpy(), rtol=1e-5, atol=1e-7)
        # x: the share of the 64 patches hidden, from none to all of them
        hidden = np.round(np.linspace(0, 64, steps + 1)) / 64
        np.testing.assert_allclose(figure_array(curve["x"]), hidden, rtol=1e-6)
        assert figure_array(curve["x"])[-1] == 1.0

    # the logit lens table: after each block, the final answer's rank counted from 1 (1 + the
    # classes scored above it there); after the last block it is the answer, rank 1
    final = int(probs.argmax())
    rows = lens_table(text, t("prediction.col.rank", "en", name=CIFAR10_CLASSES[final]))
    assert len(rows) == depth + 1
    for block, row in enumerate(rows):
        above = sum(1 for score in lens[block, 0].tolist() if score > float(lens[block, 0, final]))
        assert int(row[-1]) == above + 1, (block, row)
    assert int(rows[-1][-1]) == 1

    similarity = analysis.pos_embed_similarity(model.pos_embed.detach()[0], trace.grid_size, 1).numpy()
    mosaic = figure_array(figures["fig-tokens-mosaic"][0][0]["z"])
    np.testing.assert_allclose(mosaic, plots.similarity_mosaic(similarity), rtol=1e-6, equal_nan=True)
    centre = 4 * 8 + 4
    token = figure_array(figures["fig-vectors-token"][0][0]["y"])
    np.testing.assert_allclose(token, trace.patch_tokens[0, centre].numpy(), rtol=1e-6)


def lens_table(text: str, rank_column: str) -> list[list[str]]:
    """The cells of the handout's table whose last column is ``rank_column``, row by row."""
    for found in re.finditer(r"<table><thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody></table>", text, re.S):
        columns = re.findall(r"<th>(.*?)</th>", found.group(1))
        if columns and html.unescape(columns[-1]) == rank_column:
            return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", found.group(2))]
    raise AssertionError(f"no table with the column {rank_column!r}")


def test_the_attention_step_says_what_it_shows_and_the_sentences_are_the_apps() -> None:
    model, spec = tiny_model()
    text = handout.build(model, spec, CAT.read_bytes(), "ko", image_name="cat")
    chosen = [html.unescape(found) for found in re.findall(r'<p class="chosen">(.*?)</p>', text)]
    layer = f"{t('attention.layer', 'ko')}: {t('attention.layer_n', 'ko', n=1)}"
    head = f"{t('attention.head', 'ko')}: {t('attention.head_n', 'ko', n=1)}"
    query = f"{t('attention.query', 'ko')}: {t('attention.token_patch', 'ko', token=37, patch=37, row=5, col=5)}"
    assert " · ".join((layer, head, query)) in chosen  # the page's first view, said instead of its widgets
    assert "<select" not in text and t("attention.click_hint", "ko") not in text  # nothing to choose or click on paper
    titles = re.findall(r"<h2>([^<]+)</h2>", text)
    assert titles[:3] == [t(key, "ko") for key in ("page.home", "page.input", "page.patches")]
    assert t("page.card", "ko") in titles
    assert '<html lang="ko">' in text
    # no English left in the figures' labels, beyond the terms Korean ML texts keep (as the app's pages)
    texts = [
        label for data, layout in plotted(text).values() for label in figure_texts({"data": data, "layout": layout})
    ]
    leaks = sorted({f"{word!r} in {label[:60]!r}" for label in texts for word in english_words(label)})
    assert leaks == [], leaks
    # a title in a figure half the column wide is broken to that width, not cut at its edge
    narrow = [layout for _, layout in plotted(text).values() if layout["width"] == handout.HALF]
    lines = [line for layout in narrow if "title" in layout for line in layout["title"]["text"].split("<br>")]
    assert len(narrow) >= 6 and any("<br>" in layout["title"]["text"] for layout in narrow if "title" in layout)
    assert max(plots.ems(line) for line in lines) * plots.TITLE_PX[False] <= handout.HALF - 24


def test_a_file_that_loads_nothing_holds_plotly_once_and_the_image() -> None:
    model, spec = tiny_model()
    text = handout.build(model, spec, CAT.read_bytes(), "en", image_name="cat")
    assert text.count(plotly_js_banner()) == 1
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=[\"']?(https?:)?//", text)
    assert "<link" not in text and "@import" not in text and "url(http" not in text
    (photo,), _ = plotted(text)["fig-input-original"]  # the photo itself, 451 x 300 px, as step 1 draws it
    assert photo["type"] == "image" and photo["source"].startswith("data:image/jpeg;base64,")
    assert len(plotted(text)) == text.count('class="plotly-graph-div"') >= 20


def plotly_js_banner() -> str:
    import plotly.offline

    return plotly.offline.get_plotlyjs()[:200]


def test_the_cifar_handout_is_under_8_mb() -> None:
    model, spec = zoo.load("cifar10-vit", device="cpu")
    cnn = zoo.load(handout.matching_cnn(model.config.class_names), device="cpu")
    text = handout.build(model, spec, CAT.read_bytes(), "en", image_name="cat-chelsea.jpg", cnn=cnn)
    assert "fig-compare-map-gradcam" in plotted(text)  # the ViT-vs-CNN step is in it
    # 4.6 MB of plotly.js; the rest, every figure the tour's pages and the lab's trust page and map
    # draw (7.85 MB: the map's 10,000 hover texts are 0.66 MB of it)
    assert len(text.encode()) <= 8e6


@pytest.mark.slow  # a ViT-B/16: about 20 CPU-seconds
def test_a_vit_b16_handout_is_under_20_mb(monkeypatch: pytest.MonkeyPatch) -> None:
    """A randomly initialised ViT-B/16 (the zoo's config, no download). Its occlusion curves are
    cut to 2 points here (20 numbers of a 7 MB file) to spare the test ViT-B/16's 14 forward passes."""
    monkeypatch.setattr(analysis, "occlusion_steps", lambda model: 1)
    model, spec = zoo.load("untrained-vit-b16", device="cpu")
    text = handout.build(model, spec, CAT.read_bytes(), "en", image_name="cat-chelsea.jpg")
    assert len(plotted(text)["fig-attention-heads"][1]["annotations"]) == 12  # twelve heads' maps, titled
    assert len(text.encode()) <= 20e6


def test_markdown() -> None:
    assert (
        handout.markdown("**a** `b` *c* <script>")
        == "<p><strong>a</strong> <code>b</code> <em>c</em> &lt;script&gt;</p>"
    )
    assert handout.markdown("- one\n- two\nend") == "<ul><li>one</li><li>two</li></ul>\n<p>end</p>"


# ---- the command line -------------------------------------------------------------------------


@pytest.fixture
def test_folder(tmp_path: Path) -> Path:
    """A CIFAR-10 ImageFolder of two images a class."""
    root = tmp_path / "cifar"
    rng = np.random.default_rng(0)
    for name in CIFAR10_CLASSES:
        (root / "test" / name).mkdir(parents=True)
        for index in range(2):
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(
                root / "test" / name / f"{index}.png"
            )
    return root


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = handout.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("image", "extra", "key", "values"),
    [
        ("nope.jpg", [], "handout.no_image", {"name": "nope.jpg", "samples": ", ".join(handout.sample_names())}),
        ("test=cat", [], "handout.test_form", {"given": "cat"}),
        ("test=cat/²", [], "handout.test_form", {"given": "cat/²"}),  # "²".isdigit(), and int() refuses it
        ("test=cat/" + "9" * 5000, [], "handout.test_form", {"given": "cat/" + "9" * 75 + "…"}),  # echoed cut
        ("x" * 10_000, [], "handout.no_image", {"name": "x" * 79 + "…", "samples": ", ".join(handout.sample_names())}),
        (
            "test=unicorn/0",
            ["--data", "FOLDER"],
            "handout.test_class",
            {"name": "unicorn", "classes": ", ".join(CIFAR10_CLASSES)},
        ),
        ("test=cat/7", ["--data", "FOLDER"], "handout.test_index", {"name": "cat", "count": 2, "last": 1}),
        ("test=cat/0", ["--data", "EMPTY"], "handout.no_test", {}),
        ("cat-chelsea", ["--model", "cifar10-cnn"], "handout.cnn_model", {"name": "cifar10-cnn"}),
    ],
)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_wrong_argument_gets_a_sentence_not_a_traceback(
    capsys, tmp_path, test_folder, image, extra, key, values, lang
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = [{"FOLDER": str(test_folder), "EMPTY": str(empty)}.get(arg, arg) for arg in extra]
    out = tmp_path / "out.html"
    code, _, err = run(capsys, image, *extra, "--lang", lang, "-o", str(out))
    assert code == 2 and not out.exists()
    assert "Traceback" not in err
    assert err.strip() == f"error: {t(key, lang, **values)}"


def test_files_and_folders_that_do_not_work_get_a_sentence(capsys, tmp_path) -> None:
    not_an_image = tmp_path / "notes.jpg"
    not_an_image.write_text("hello")
    code, _, err = run(capsys, str(not_an_image), "-o", str(tmp_path / "a.html"))
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    code, _, err = run(capsys, "cat-chelsea", "-o", str(tmp_path / "missing" / "a.html"))
    assert code == 2 and err.strip() == "error: " + plain(
        t("handout.no_folder", path=str(tmp_path / "missing" / "a.html"))
    )
    code, _, err = run(capsys, "cat-chelsea", "--model", "no-such-model", "-o", str(tmp_path / "a.html"))
    assert code == 2 and err.startswith("error: ") and "no-such-model" in err and "Traceback" not in err
    for argv in (["cat-chelsea"], ["cat-chelsea", "--lang", "fr", "-o", "x.html"], []):
        with pytest.raises(SystemExit) as stopped:
            handout.main(argv)
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and "error:" in err and "Traceback" not in err


def test_a_test_image_by_class_and_index(capsys, tmp_path, test_folder) -> None:
    out = tmp_path / "tour.html"
    code, said, err = run(
        capsys, "test=dog/1", "--model", "untrained-cifar10-vit", "--data", str(test_folder), "-o", str(out)
    )
    assert code == 0, err
    assert said.startswith(f"Wrote {out} (") and said.rstrip().endswith("on test=dog/1.")
    text = out.read_text(encoding="utf-8")
    assert "test=dog/1" in text
    # the overview, step 7, and step 8 for each of its two models (as the pages say it)
    assert text.count("True class (CIFAR-10 test set): <strong>dog</strong>") == 4
    # the image the sidebar's picker would open: the class's second file, step 1's photo pixel for pixel
    pixels = np.asarray(Image.open(test_folder / "test" / "dog" / "1.png"))
    (photo,), _ = plotted(text)["fig-input-original"]
    assert np.array_equal(figure_array(photo["z"]), pixels)


def test_a_sample_by_its_name_or_stem() -> None:
    assert handout.choose_image("cat-chelsea", CIFAR10_CLASSES).data == CAT.read_bytes()
    assert handout.choose_image("cat-chelsea.jpg", CIFAR10_CLASSES).name == "cat-chelsea.jpg"
    assert handout.choose_image(str(CAT), CIFAR10_CLASSES).truth is None
    assert handout.file_name("cifar10-vit", "test=T-shirt/top/3", "ko") == "vitviz-cifar10-vit-t-shirt-top-3-ko.html"


# ---- the app's button -------------------------------------------------------------------------


def test_the_sidebar_offers_the_tour_made_when_clicked() -> None:
    from tests.apptest import open_page

    at = open_page(None, lang="ko")
    buttons = [b for b in at.sidebar.get("download_button") if b.proto.label == t("handout.button", "ko")]
    assert len(buttons) == 1 and buttons[0].proto.HasField("deferred_file_id")  # nothing built until clicked


def test_the_button_writes_the_sessions_image_model_and_language(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from vitviz.app import sidebar, text

    photo = CAT.read_bytes()
    monkeypatch.setattr(sidebar, "model_name", lambda: zoo.SHIPPED)
    monkeypatch.setattr(sidebar, "image_bytes", lambda: photo)
    monkeypatch.setattr(sidebar, "lang", lambda: "ko")
    monkeypatch.setattr(text, "lang", lambda: "ko")  # the button's own label, through tr
    monkeypatch.setattr(sidebar, "chosen_test_image", lambda: ("cat", 3))  # as if it were test image cat/3
    monkeypatch.setattr(sidebar, "test_images", lambda: SimpleNamespace(split=SimpleNamespace(label="CIFAR-10")))
    offered = {}
    sidebar.handout_button(
        SimpleNamespace(download_button=lambda label, data, **kw: offered.update(label=label, data=data, **kw))
    )
    assert offered["label"] == t("handout.button", "ko") and offered["file_name"] == "vitviz-cifar10-vit-cat-3-ko.html"
    text = offered["data"]().decode("utf-8")
    model, spec = zoo.load(zoo.SHIPPED, device="cpu")
    cnn = zoo.load(handout.matching_cnn(model.config.class_names), device="cpu")
    truth = handout.Truth("cat", "CIFAR-10")
    assert text == handout.build(model, spec, photo, "ko", image_name="test=cat/3", truth=truth, cnn=cnn)
    assert '<html lang="ko">' in text and "(CIFAR-10 테스트 세트)" in text
