"""The lab's "Which map to trust?" and map of the test set as data (vitviz.steps.trust, testset):
every figure's line is read from its numbers, the controls hold only valid values, a click on the
map shows that image, and the handout draws every figure without asking to click."""

from __future__ import annotations

import dataclasses
import html
import re

import numpy as np
import pytest
import torch

from vitviz.analyses import ablation, analysis, claims, evaluate
from vitviz.analyses.faithfulness import Reading
from vitviz.analyses.projection import Projection
from vitviz.models.config import FASHION_MNIST_CLASSES, ViTConfig
from vitviz.models.data import ImageSet
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, testset, trust
from vitviz.steps.subject import Compute, Subject

CLASSES = ("cat", "dog", "ship")


def _subject(lang: str = "en", paper: bool = False) -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(
        image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=2, num_heads=2, class_names=CLASSES
    )
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    with torch.no_grad():  # the maps of the trust step take gradients of the image
        trace = model.explain(torch.rand(1, 3, 16, 16))
    return Subject(model, image, trace, lang, name="tiny", paper=paper)


def _reading(deletion: dict[str, float], insertion: dict[str, float]) -> Reading:
    ranked = [m for m in deletion if m != "random"]
    margins = {m: insertion[m] - deletion[m] for m in deletion}
    return Reading(
        best=max(ranked, key=margins.get),
        best_deletion=min(ranked, key=deletion.get),
        best_insertion=max(ranked, key=insertion.get),
        margins=margins,
        deletion=deletion,
        insertion=insertion,
        chance_low=-0.1,
        chance_high=0.1,
        verdicts={m: "chance" for m in ranked},
        orders=8,
    )


def test_the_curve_takeaways_name_the_fastest_map_or_say_none_beats_chance():
    faster = _reading(
        {"random": 0.4, "rollout": 0.2, "occlusion": 0.1}, {"random": 0.3, "rollout": 0.7, "occlusion": 0.5}
    )
    said = plain(claims.text(claims.trust_curve(faster, "deletion")))
    assert said.startswith("Removing the top patches of occlusion") and "area 0.100, against 0.400" in said
    said = plain(claims.text(claims.trust_curve(faster, "insertion")))
    assert said.startswith("Revealing the top patches of attention rollout") and "area 0.700, against 0.300" in said
    slower = _reading(
        {"random": 0.1, "rollout": 0.2, "occlusion": 0.3}, {"random": 0.8, "rollout": 0.7, "occlusion": 0.5}
    )
    assert plain(claims.text(claims.trust_curve(slower, "deletion"))).startswith("No map's order lowers")
    assert plain(claims.text(claims.trust_curve(slower, "insertion"))).startswith("No map's order brings")
    tied = _reading({"random": 0.3001, "rollout": 0.3}, {"random": 0.3, "rollout": 0.3001})  # equal as written
    assert plain(claims.text(claims.trust_curve(tied, "deletion"))).startswith("No map's order lowers")


def test_a_map_s_peak_and_how_the_switches_move_it():
    before = np.array([[0.1, 0.6], [0.2, 0.1]])
    assert (
        plain(claims.text(claims.map_peak(before)))
        == "Strongest at patch 2 (row 1, column 2), with 60.0% of the map's total."
    )
    assert "patch 4 (row 2, column 2)" in plain(claims.text(claims.map_peak(before[::-1])))
    same = plain(claims.text(claims.map_shift(before, before * 2)))
    assert same.startswith("The strongest patch stays patch 2") and "correlates 1.00" in same
    moved = plain(claims.text(claims.map_shift(before, before[::-1])))
    assert moved.startswith("The strongest patch moves from patch 2 to patch 4")
    flat = np.full((2, 2), 0.25)
    assert "correlates 1.00" in plain(claims.text(claims.map_shift(flat, flat)))
    assert "correlates 0.00" in plain(claims.text(claims.map_shift(flat, before)))


def test_the_bars_takeaway_names_the_answer_and_the_runner_up():
    assert (
        plain(claims.text(claims.top_two(np.array([0.2, 0.7, 0.1]), CLASSES)))
        == "dog leads with 70.0%; cat follows with 20.0%."
    )
    assert plain(claims.text(claims.top_two(np.array([0.1, 0.2, 0.7]), CLASSES))).startswith(
        "ship leads with 70.0%; dog"
    )
    assert plain(claims.text(claims.top_two(np.array([1.0]), ("cat",)))) == "cat: 100.0%."


def test_the_trust_step_reads_its_figures_and_clips_its_controls():
    subject = _subject()
    step = trust.describe(subject, {"trust_heads": [99, 1, "x", 1], "trust_layers": [5, 0], "trust_mode": "bogus"})
    by_key = {control.key: control for control in step.controls()}
    assert by_key["trust_heads"].value == [1] and by_key["trust_layers"].value == [0]
    assert by_key["trust_mode"].value == "zero"
    assert "layer 1, head 2" in by_key["trust_heads"].static and "Layer 1" in by_key["trust_layers"].static
    keys = [figure.key for figure in step.figures()]
    assert keys == [
        "trust_deletion",
        "trust_insertion",
        "trust_bars_before",
        "trust_bars_after",
        "trust_rollout_before",
        "trust_rollout_after",
    ]
    takeaways = {figure.key: plain(figure.takeaway) for figure in step.figures()}
    result = subject.compute.faithfulness(subject)
    from vitviz.analyses import faithfulness

    reading = faithfulness.read(result)
    assert takeaways["trust_deletion"] == plain(claims.text(claims.trust_curve(reading, "deletion")))
    assert takeaways["trust_insertion"] == plain(claims.text(claims.trust_curve(reading, "insertion")))
    before = subject.compute.ablated(subject, (), (), "zero", None)
    after = subject.compute.ablated(subject, ((0, 1),), (0,), "zero", None)
    # "before" is the model as it is: its one pass and the trace's rollout, computed here without the ablation code
    with torch.no_grad():
        probs = subject.model.forward_one_view(subject.trace.pixels)[0].softmax(dim=-1).numpy()
    rollout = analysis.rollout_map(subject.trace)[0].numpy()
    assert np.allclose(before["probs"], probs, atol=1e-6) and np.allclose(before["rollout"], rollout, atol=1e-6)
    assert takeaways["trust_bars_before"] == plain(claims.text(claims.top_two(probs, CLASSES)))
    assert takeaways["trust_bars_after"] == plain(claims.text(claims.top_two(after["probs"], CLASSES)))
    assert takeaways["trust_rollout_before"] == plain(claims.text(claims.map_peak(rollout)))
    assert takeaways["trust_rollout_after"] == plain(claims.text(claims.map_shift(rollout, after["rollout"])))
    # the switches change this model's answer and map: a step that drew "after" in both columns would show it
    assert takeaways["trust_bars_before"] != takeaways["trust_bars_after"]
    assert takeaways["trust_rollout_before"] != plain(claims.text(claims.map_peak(after["rollout"])))
    said = plain(claims.text(claims.ablation_answer(before["probs"], after["probs"], CLASSES, 1, 1)))
    assert any(isinstance(b, blocks.Text) and plain(b.text) == said for b in step.blocks)
    # nothing ships beside a model without weights on disk: the page says so instead of the table and grid
    texts = " ".join(b.text for b in step.blocks if isinstance(b, blocks.Text))
    assert "No table of the test set ships" in texts and "No head-ablation grid ships" in texts
    assert [len(slide.figures) for slide in step.slides()] == [1, 1, 2, 2]  # a curve a slide, its legend beside it


def test_mean_ablation_without_test_images_says_so_and_zeroes():
    class NoData(Compute):
        def test_split(self, subject):
            return None

    step = trust.describe(dataclasses.replace(_subject(), compute=NoData()), {"trust_heads": [0], "trust_mode": "mean"})
    assert any(
        "Mean ablation needs the model's test images" in b.text for b in step.blocks if isinstance(b, blocks.Text)
    )


def _projection(points: int = 6) -> tuple[Projection, ImageSet]:
    rng = np.random.default_rng(0)
    labels = torch.tensor([0, 0, 1, 1, 2, 2][:points])
    found = Projection(
        points={
            (m, t, layer): torch.tensor(rng.normal(size=(points, 2)), dtype=torch.float32)
            for m in ("pca",)
            for t in ("cls", "mean")
            for layer in (0, 2)
        },
        labels=labels,
        predictions=torch.tensor([0, 1, 1, 1, 2, 0][:points]),
        classes=list(CLASSES),
        files=[f"img{i}.png" for i in range(points)],
        seconds={"pca": 1.0},
    )
    data = ImageSet(torch.zeros(points, 3, 8, 8, dtype=torch.uint8), labels, list(CLASSES), found.files, "test", "")
    return found, data


class Mapped(Compute):
    def __init__(self, with_images: bool = True) -> None:
        self.with_images = with_images

    def projection(self, subject):
        found, data = _projection()
        return (found, data, 10) if self.with_images else (found, None, None)


def test_the_map_step_reads_its_points_and_clips_its_controls():
    subject = dataclasses.replace(_subject(), compute=Mapped())
    step = testset.describe(subject, {"map_method": "umap", "map_token": "mean", "map_layer": 7, "map_colour": "x"})
    by_key = {control.key: control.value for control in step.controls()}
    assert by_key == {"map_method": "pca", "map_token": "mean", "map_layer": 2, "map_colour": "class"}
    (figure,) = step.figures()
    assert plain(figure.takeaway).startswith("4 of 6 images are answered right.")
    assert figure.select == blocks.Select("map_point", 6)
    texts = [b.text for b in step.blocks if isinstance(b, blocks.Text)]
    assert subject.tr("map.subset", count="6") in texts  # a subset of the 10: said, with how many it shows
    assert texts[-1] == subject.tr("map.pick")


def test_a_clicked_point_shows_its_image_and_opens_it_in_the_tour():
    subject = dataclasses.replace(_subject(), compute=Mapped())
    step = testset.describe(subject, {"map_point": 3})
    picked = step.figures()[-1]
    assert picked.key == "map_picked" and "img3.png" in picked.takeaway and "dog" in picked.takeaway
    assert step.blocks[-1] == blocks.OpenInTour("map_open_tour", "dog", 1)  # the second dog
    assert len(testset.describe(subject, {"map_point": 99}).figures()) == 1  # no such point: no image


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_handout_draws_every_lab_figure_and_asks_for_no_click(lang):
    subject = _subject(lang, paper=True)
    page = handout._Page(lang)
    steps = [trust.describe(subject, {}), testset.describe(dataclasses.replace(subject, compute=Mapped(False)), {})]
    for number, step in enumerate(steps, start=10):
        page.described(number, 9, step, lab=True)
    markup = page.html()
    for step in steps:
        for figure in step.figures():
            assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
            assert html.escape(plain(figure.takeaway)) in markup
    assert not steps[1].figures()[0].select  # no pictures here: nothing to click
    words = re.sub(r"<script.*?</script>", "", markup, flags=re.S)  # the text, not the figures' settings
    for screen_only in ("click", "Choose heads", "choose to switch off", "누르면", "고르고"):
        assert screen_only not in words
    assert markup.count(f'<p class="counter">{plain(subject.tr("nav.lab"))}</p>') == 2


def test_the_steps_leave_the_built_figures_as_they_were(monkeypatch):
    """The app shares a built figure between sessions (vitviz.app.charts): a step that changes its
    layout works on a copy (a slide once shrank a shared figure run after run, to a negative height)."""
    from vitviz.render import plots

    built = []

    def keeping(function):
        def build(*args, **kwargs):
            fig = function(*args, **kwargs)
            built.append((fig, fig.to_plotly_json()["layout"]))
            return fig

        return build

    for name in ("curves_with_band", "test_set_map"):
        monkeypatch.setattr(plots, name, keeping(getattr(plots, name)))
    trust.describe(_subject(), {})
    testset.describe(dataclasses.replace(_subject(), compute=Mapped()), {})
    assert len(built) == 3
    for fig, layout in built:
        assert fig.to_plotly_json()["layout"] == layout


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_model_of_other_classes_than_the_test_images_gets_a_sentence_not_a_traceback(lang):
    """/map?model=untrained-vit-r26-s32 (ImageNet's 1,000 classes beside CIFAR-10's test images)
    raised projection's ValueError on the page: a link a visitor can send."""

    class Raising(Mapped):
        def __init__(self, error: Exception) -> None:
            self.error = error

        def projection(self, subject):
            raise self.error

    wrong = evaluate.OtherClasses("The model predicts 1000 classes but the dataset has 10")
    subject = dataclasses.replace(_subject(lang=lang), compute=Raising(wrong))
    step = testset.describe(subject, {})
    assert step.figures() == [] and step.controls() == []
    (said,) = step.blocks
    assert said == blocks.Text(subject.tr("map.other_classes", n=subject.config.num_classes), role="info")
    # any other error is not said to be the classes: it is not caught here
    with pytest.raises(ValueError, match="a broken file"):
        testset.describe(dataclasses.replace(subject, compute=Raising(ValueError("a broken file"))), {})


def test_a_click_on_the_map_chooses_the_point_s_image():
    """The map's points carry their image index as a 1-D customdata: the browser sends one number
    a point, which the map's Select reads (a list or {"0": ...} for the patch figures)."""
    from vitviz.render import clicks

    assert clicks.patch_from_selection({"selection": {"points": [{"customdata": 3}]}}, 6) == 3
    assert clicks.patch_from_selection({"selection": {"points": [{"customdata": 9}]}}, 6) is None  # no such image
    assert clicks.patch_from_selection({"selection": {"points": [{"customdata": True}]}}, 6) is None
    assert clicks.cell_from_selection({"selection": {"points": [{"customdata": 1}]}}, 3) is None  # a cell needs two


@pytest.mark.parametrize("paper", [False, True])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_ablation_s_intro_says_how_many_images_the_mean_is_taken_over(monkeypatch, lang, paper):
    said = {}
    for images in (ablation.MEAN_REFERENCE_IMAGES, 100):
        monkeypatch.setattr(ablation, "MEAN_REFERENCE_IMAGES", images)
        subject = _subject(lang, paper)
        step = trust.describe(subject, {})
        title = subject.tr("trust.ablation_title")
        heading = next(i for i, b in enumerate(step.blocks) if isinstance(b, blocks.Heading) and b.text == title)
        said[images] = plain(step.blocks[heading + 1].text)
    assert "256" in said[256] and "100" in said[100] and "256" not in said[100], said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_map_without_pictures_says_how_its_own_dataset_s_images_are_had(lang):
    fashion = ViTConfig(
        image_size=16, patch_size=8, in_chans=1, num_classes=10, embed_dim=16, depth=1, num_heads=2,
        class_names=FASHION_MNIST_CLASSES,
    )  # fmt: skip
    cifar = dataclasses.replace(_subject(lang), compute=Mapped(with_images=False))
    fashion_model = VisionTransformer(fashion).eval()
    with torch.no_grad():
        trace = fashion_model.explain(torch.rand(1, 1, 16, 16))
    grey = Subject(fashion_model, np.zeros((16, 16), np.uint8), trace, lang, name="grey", compute=Mapped(False))

    def box(subject: Subject) -> str:
        step = testset.describe(subject, {})
        return next(plain(b.text) for b in step.blocks if isinstance(b, blocks.Text) and b.role == "info")

    assert box(cifar) == plain(cifar.tr("map.no_images")) and "CIFAR-10" in box(cifar)
    assert box(grey) == plain(grey.tr("map.no_images_named", dataset="Fashion-MNIST"))
    assert "CIFAR-10" not in box(grey) and "dataset-fashion-mnist" in box(grey)
