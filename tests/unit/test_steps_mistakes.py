"""The misclassification lab's blocks and slides (vitviz.steps.mistakes): every figure's line is
read from its numbers, the filters are clipped, and the slides show the overview, a gallery page
and one image up close."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.helpers import CLASSES, MIRROR_CLASSES, left_right_vit, make_image_folder
from vitviz.analyses import analysis, claims, lab
from vitviz.analyses.evaluate import evaluate
from vitviz.models import zoo
from vitviz.models.config import ViTConfig
from vitviz.models.data import ImageSet, preprocess_batch
from vitviz.models.model import VisionTransformer
from vitviz.render import plots
from vitviz.render.i18n import plain, t
from vitviz.steps import blocks, mistakes
from vitviz.steps.subject import Compute, Subject

TINY = ViTConfig(image_size=32, patch_size=8, num_classes=3, embed_dim=32, depth=2, num_heads=4, class_names=CLASSES)


def test_the_confusion_line_names_the_largest_cell_off_the_diagonal():
    confusion = np.array([[50, 3, 9], [2, 60, 1], [4, 0, 70]])
    said = plain(claims.text(claims.most_confused(confusion, ("cat", "dog", "ship"))))
    assert said == "The most frequent mistake: cat taken for ship, 9 of the 19 images answered wrong."
    said = plain(claims.text(claims.most_confused(confusion.T, ("cat", "dog", "ship"))))
    assert said.startswith("The most frequent mistake: ship taken for cat, 9")
    assert "Every image is answered right" in plain(claims.text(claims.most_confused(np.diag([5, 5]), ("a", "b"))))


def test_the_gallery_line_names_the_page_s_most_frequent_mistake():
    said = plain(claims.text(claims.gallery_page(["cat", "cat", "dog"], ["dog", "dog", "cat"], [0.99, 0.8, 0.5])))
    assert (
        said
        == "On this page, cat taken for dog is the most frequent mistake (2 of 3); the confidence goes from 99% down to 50%."
    )
    said = plain(claims.text(claims.gallery_page(["cat", "dog"], ["dog", "cat"], [0.7, 0.6])))
    assert said.startswith("The 2 images on this page are each a different mistake")


def test_the_lens_line_says_when_the_true_class_lost():
    assert plain(claims.text(claims.lens_lost([1, 0, 0, 2], 3, "cat"))).startswith(
        "'cat' was the top answer after layer 2 and lost the lead in layer 3"
    )
    assert "embeddings alone" in plain(claims.text(claims.lens_lost([0, 1, 1], 2, "cat")))
    assert "never the top answer" in plain(claims.text(claims.lens_lost([2, 1, 1], 2, "cat")))
    assert "still the top answer after the last layer" in plain(claims.text(claims.lens_lost([1, 1, 0], 2, "cat")))


@pytest.fixture(scope="module")
def lab_subject(tmp_path_factory: pytest.TempPathFactory) -> Subject:
    root = tmp_path_factory.mktemp("lab")
    make_image_folder(root, per_class=10, splits=("test",))
    torch.manual_seed(0)
    path = root / "tiny.safetensors"
    zoo.save(VisionTransformer(TINY).eval(), path)
    model, spec = zoo.load(str(path), device="cpu")
    split = lab.test_split_for(CLASSES, root)

    class Here(Compute):
        def test_split(self, subject):
            return split

    return Subject(model, None, None, name=str(path), compute=Here(), spec=spec)


def test_the_lab_s_slides_are_the_overview_a_gallery_page_and_one_image(lab_subject):
    step = mistakes.describe(lab_subject, {})
    result = evaluate(
        lab_subject.model,
        lab_subject.compute.test_set(lab_subject, lab_subject.compute.test_split(lab_subject).location),
        use_cache=False,
    )
    keys = [[figure.key for figure in slide.figures] for slide in step.slides()]
    assert keys == [
        ["mistakes_per_class"],
        ["mistakes_confusion"],
        ["mistakes_gallery_page"],
        ["mistakes_picture", "mistakes_top5"],
        ["mistakes_map_predicted", "mistakes_map_true"],
        ["mistakes_lens"],
    ]
    takeaways = {figure.key: plain(figure.takeaway) for figure in step.figures()}
    labels, predictions = result.labels.numpy(), result.predictions.numpy()
    # accuracy per true class counted here from the answers, not read from EvalResult.per_class_accuracy
    accuracy = {name: float(np.mean(predictions[labels == c] == c)) for c, name in enumerate(CLASSES)}
    assert takeaways["mistakes_per_class"] == plain(claims.text(claims.class_accuracy(accuracy)))
    assert takeaways["mistakes_confusion"] == plain(
        claims.text(claims.most_confused(result.confusion().numpy(), CLASSES))
    )
    # the first gallery page: the mistakes, the most confident first (equal confidences in the set's order)
    confidence = result.confidence.numpy()
    wrong = np.flatnonzero(predictions != labels)
    page = wrong[np.argsort(-confidence[wrong], kind="stable")][: lab.PER_PAGE]
    on_page = claims.gallery_page(
        [CLASSES[labels[i]] for i in page], [CLASSES[predictions[i]] for i in page], confidence[page].tolist()
    )
    assert takeaways["mistakes_gallery_page"] == plain(claims.text(on_page))
    first = int(page[0])  # the most confident mistake is #1, up close
    assert takeaways["mistakes_picture"] == plain(
        lab_subject.tr(
            "mistakes.verdict",
            file=result.files[first],
            true=lab_subject.label(CLASSES[labels[first]]),
            predicted=lab_subject.label(CLASSES[predictions[first]]),
            confidence=f"{confidence[first]:.1%}",
        )
    )
    assert step.shape == f"({result.n}, 3)"


def test_the_close_up_s_figures_read_the_image_s_own_numbers(lab_subject):
    """#1's top 5, maps and lens, each computed here from the image (a one-view model: its one pass,
    which the maps and the lens follow, is the lab's answer)."""
    model = lab_subject.model
    data = lab_subject.compute.test_set(lab_subject, lab_subject.compute.test_split(lab_subject).location)
    result = evaluate(model, data, use_cache=False)
    labels, predictions, confidence = result.labels.numpy(), result.predictions.numpy(), result.confidence.numpy()
    wrong = np.flatnonzero(predictions != labels)
    first = int(wrong[np.argsort(-confidence[wrong], kind="stable")][0])
    true, predicted = int(labels[first]), int(predictions[first])
    pixels = preprocess_batch(data.images[first : first + 1], model.config.preprocess, model.config.in_chans)
    with torch.no_grad():
        probs = model(pixels).softmax(dim=-1)[0]  # (K,)
        lens = analysis.logit_lens(model, model.explain(pixels))[:, 0]  # (depth + 1, K)
    assert int(probs.argmax()) == predicted and int(lens[-1].argmax()) == predicted  # the lab's answer, one pass
    takeaways = {figure.key: plain(figure.takeaway) for figure in mistakes.describe(lab_subject, {}).figures()}
    rank = 1 + int((probs > probs[true]).sum())
    assert takeaways["mistakes_top5"] == plain(
        lab_subject.tr("mistakes.true_rank", name=lab_subject.label(CLASSES[true]), rank=rank, k=len(CLASSES))
    )
    for which, index in (("predicted", predicted), ("true", true)):
        peak = claims.map_peak(analysis.grad_rollout(model, pixels, index).numpy())
        assert takeaways[f"mistakes_map_{which}"] == plain(claims.text(peak)), which
    ranks = [int((row > row[true]).sum()) for row in lens]  # 0 = the top answer, after each layer
    lost = claims.lens_lost(ranks, TINY.depth, CLASSES[true])
    assert takeaways["mistakes_lens"] == plain(claims.text(lost))


@pytest.mark.parametrize(
    ("choices", "expect"),
    [({"mistake": 10_000, "mistakes_page": -3}, "last"), ({"mistake": "x", "mistakes_range": [2, -1]}, "first")],
)
def test_the_filters_and_the_image_are_clipped(lab_subject, choices, expect):
    step = mistakes.describe(lab_subject, choices)
    picture = next(f for f in step.figures() if f.key == "mistakes_picture")
    wrong = evaluate(
        lab_subject.model,
        lab_subject.compute.test_set(lab_subject, lab_subject.compute.test_split(lab_subject).location),
        use_cache=False,
    ).misclassified
    number = wrong if expect == "last" else 1
    assert picture.figure.layout.title.text.startswith(f"#{number} ")


def test_no_image_matches_and_no_data_say_so(lab_subject):
    none_left = mistakes.describe(lab_subject, {"mistakes_range": [1.0, 1.0]})
    assert any(isinstance(b, blocks.Text) and "No image matches" in b.text for b in none_left.blocks)

    class Nowhere(Compute):
        def test_split(self, subject):
            return None

    step = mistakes.describe(dataclasses.replace(lab_subject, compute=Nowhere()), {})
    assert step.figures() == [] and len(step.slides()) == 1


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_model_that_averages_its_mirror_says_so_in_the_lab_with_its_card_s_one_view_figure(tmp_path, lang):
    """The lab counts what the model answers: for a model that averages its mirror image, that mean,
    and it says so; its card's one-view figure follows where the card measured these very images."""
    root = make_image_folder(tmp_path / "data", per_class=10, splits=("test",))
    split = lab.test_split_for(CLASSES, root)

    class Here(Compute):
        def test_split(self, subject):
            return split

    def captions(flip: bool, card_images: str | None) -> str:
        torch.manual_seed(0)
        path = tmp_path / f"tiny-{flip}-{card_images}.safetensors"
        model = VisionTransformer(dataclasses.replace(TINY, test_flip=flip)).eval()
        zoo.save(model, path)
        loaded, spec = zoo.load(str(path), device="cpu")
        data = Here().test_set(None, split.location)
        if card_images is not None:
            spec.card.evaluated = {"one_view_accuracy": 0.625, "one_view_misclassified": 12}
            spec.card.tested_on = {"fingerprint": data.fingerprint if card_images == "these" else "other images"}
        subject = Subject(loaded, None, None, name=str(path), compute=Here(), spec=spec, lang=lang)
        step = mistakes.describe(subject, {})
        return " ".join(b.text for b in step.blocks if isinstance(b, blocks.Text) and b.role == "caption")

    said = t("mistakes.mirror", lang)
    one_view = t("mistakes.mirror_one_view", lang, accuracy="62.50%", wrong="12")
    assert said in captions(True, "these") and one_view in captions(True, "these")
    assert said in captions(True, "other") and "62.50%" not in captions(True, "other")  # not these images
    assert said not in captions(False, "these") and "62.50%" not in captions(False, "these")  # one view already


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_close_up_says_its_maps_and_lens_follow_one_pass_and_that_pass_s_answer(lang):
    """The left-right ViT's mean with the mirror image answers blue where its one pass answers red:
    the lab counts blue; its close-up's lens ends on red, and it says so. The same weights without
    the mirror say nothing; an image both passes answer alike gets the caption."""
    left_dark = torch.zeros(1, 3, 32, 32, dtype=torch.uint8)
    left_dark[..., 16:] = 255
    even = torch.full((1, 3, 32, 32), 128, dtype=torch.uint8)
    red, blue = MIRROR_CLASSES.index("red"), MIRROR_CLASSES.index("blue")

    def close_up(model, images: torch.Tensor, label: int) -> tuple[int, list[blocks.Text]]:
        data = ImageSet(images, torch.tensor([label]), list(MIRROR_CLASSES), ["made.png"], "made", "made")
        result = evaluate(model, data, use_cache=False)
        predicted = int(result.predictions[0])
        inspected = lab.inspect_mistake(model, data.images[:1], predicted, label)
        inspected["logit_lens"][0] = np.eye(3)[MIRROR_CLASSES.index("green")]  # the embeddings' read: not the answer
        shown = mistakes.where_and_when(Subject(model, None, None, lang), result, data, 0, inspected)
        intros = {t(f"mistakes.{part}_intro", lang) for part in ("maps", "lens")}  # the sections' own paragraphs
        return predicted, [b for b in shown if isinstance(b, blocks.Text) and b.text not in intros]

    predicted, said = close_up(left_right_vit(test_flip=True), left_dark, red)
    assert predicted == blue  # the lab's answer: a mistake
    label = {name: Subject(left_right_vit(), None, None, lang).label(name) for name in MIRROR_CLASSES}
    expected = t("mistakes.one_pass_differs", lang, pred=label["blue"], one=label["red"])
    assert [(b.role, plain(b.text)) for b in said] == [("info", plain(expected))]
    assert said[0].slide  # on the maps' slide too: a class would read the lens's red against the lab's blue
    model = left_right_vit(test_flip=True)  # the box is the maps' slide's, under their heading, not the picture's
    data = ImageSet(left_dark, torch.tensor([red]), list(MIRROR_CLASSES), ["made.png"], "made", "made")
    result = evaluate(model, data, use_cache=False)
    inspected = lab.inspect_mistake(model, data.images[:1], int(result.predictions[0]), red)
    shown = mistakes.where_and_when(Subject(model, None, None, lang), result, data, 0, inspected)
    slides = blocks.Step("lab", "intro", (blocks.Figure("picture", plots.bars(["x"], [1.0]), "x"), *shown)).slides()
    assert [[f.key for f in slide.figures] for slide in slides] == [
        ["picture"],
        ["mistakes_map_predicted", "mistakes_map_true"],
        ["mistakes_lens"],
    ]
    assert [[c.text for c in slide.callouts] for slide in slides] == [[], [expected], []]
    assert t("mistakes.maps_intro", lang) in slides[1].notes and t("mistakes.lens_intro", lang) in slides[2].notes
    assert close_up(left_right_vit(test_flip=False), left_dark, blue)[1] == []  # one pass: nothing to say
    predicted, said = close_up(left_right_vit(test_flip=True), even, red)
    assert predicted == blue and [(b.role, plain(b.text)) for b in said] == [
        ("caption", plain(t("mistakes.one_pass_same", lang, pred=label["blue"])))
    ]
