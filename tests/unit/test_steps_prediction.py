"""Step 7 as data (vitviz.steps.prediction): its takeaways read its numbers, its top-k control
holds only valid values, its slides follow its figure blocks, and the handout draws all of it; it
and the trust page say the lab's answer of a model that averages its mirror image in."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from tests.helpers import LEFT_DARK, left_right_vit
from tests.helpers import MIRROR_CLASSES as CLASSES
from vitviz.analyses import analysis, claims
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import class_label, plain, t
from vitviz.steps import blocks, prediction, trust
from vitviz.steps.subject import Subject

torch.set_num_threads(1)


def subject(bias: tuple[float, ...] | None = None, num_classes: int = 3, lang: str = "en") -> Subject:
    """A tiny ViT on a random image; ``bias``: its head made to answer these logits whatever it sees."""
    torch.manual_seed(0)
    names = CLASSES if num_classes == 3 else ()
    config = ViTConfig(
        image_size=32, patch_size=8, num_classes=num_classes, embed_dim=16, depth=2, num_heads=2, class_names=names
    )
    model = VisionTransformer(config).eval()
    if bias is not None:
        with torch.no_grad():
            model.head.weight.zero_()
            model.head.bias.copy_(torch.tensor(bias))
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    return Subject(model, image, trace, lang)


def takeaways(step: blocks.Step) -> dict[str, str]:
    return {figure.key: plain(figure.takeaway) for figure in step.figures()}


def test_the_answer_s_takeaway_is_clear_or_close_by_its_probabilities():
    clear = takeaways(prediction.describe(subject(bias=(3.0, 0.0, 0.0)), {}))["prediction_topk"]
    close = takeaways(prediction.describe(subject(bias=(0.1, 0.0, -2.0)), {}))["prediction_topk"]
    assert clear.startswith("The model answers red with") and "times the next class" in clear
    assert close.startswith("A close call: red") and "green" in close


def test_every_takeaway_is_read_from_what_its_figure_shows():
    shown = subject()
    step = prediction.describe(shown, {})
    said = takeaways(step)
    assert list(said) == [
        "prediction_topk", "prediction_lens", "prediction_occlusion", "prediction_rollout", "prediction_occluded"
    ]  # fmt: skip
    model, trace = shown.model, shown.trace
    lens = analysis.logit_lens(model, trace).float()
    top1 = analysis.logit_lens_top1(lens)[0].tolist()
    final = int(trace.logits[0].argmax())
    assert said["prediction_lens"] == plain(claims.text(claims.logit_lens(top1, final, CLASSES)))
    steps = analysis.occlusion_steps(model)
    curves = {kind: shown.compute.occlusion(shown, kind, steps)[1] for kind in analysis.OCCLUSION_ORDERS}
    fractions = analysis.occlusion_counts(16, steps).numpy() / 16
    expected = claims.occlusion(fractions, curves["rollout"], curves["random"])
    area = claims.occlusion_area(curves["rollout"], curves["random"])
    assert said["prediction_occlusion"] == plain(claims.text(area))  # one line for a slide
    paragraphs = [block.text for block in step.blocks if isinstance(block, blocks.Text)]
    assert claims.text(expected) in paragraphs  # the whole reading follows the figures
    rollout = analysis.rollout_map(trace)[0].numpy()
    assert said["prediction_rollout"] == plain(claims.text(claims.map_focus(rollout)))
    last = round(steps * 0.75)
    strip = claims.occluded_strip(fractions[last], curves["rollout"][last], curves["rollout"][0], claims.ClassName("x"))
    assert said["prediction_occluded"].endswith(plain(claims.text(strip)).split("'x'")[1])


@pytest.mark.parametrize(("chosen", "k"), [(None, 3), (2, 2), (0, 3), (99, 3), (True, 3), ("2", 3)])
def test_the_top_k_control_holds_only_valid_values(chosen, k):
    step = prediction.describe(subject(), {} if chosen is None else {"topk": chosen})
    (control,) = step.controls()
    assert control.key == "topk" and control.value == k and control.options == (1, 2, 3)  # 3 classes: k <= 3
    assert len(step.figures()[0].figure.data[0].y) == k
    assert control.static == f"Number of classes to show (k): {k}"


def test_slides_are_the_figure_rows_and_the_curves_sit_beside_rollout():
    step = prediction.describe(subject(), {})
    slides = step.slides()
    assert [[figure.key for figure in slide.figures] for slide in slides] == [
        ["prediction_topk"], ["prediction_lens"], ["prediction_occlusion", "prediction_rollout"], ["prediction_occluded"]
    ]  # fmt: skip
    assert slides[2].widths == (3, 2) and [c.key for c in slides[0].controls] == ["topk"]
    assert slides[0].notes[0] == step.intro


def test_a_model_without_a_head_says_so_and_shows_nothing_else():
    step = prediction.describe(subject(num_classes=0), {})
    assert step.figures() == [] and [block.role for block in step.blocks] == ["info"]
    assert "no classification head" in step.blocks[0].text


def test_the_handout_draws_every_figure_and_takeaway_and_no_download_or_link():
    step = prediction.describe(subject(lang="ko"), {})
    page = handout._Page("ko")
    page.described(7, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert "(k): 3" in markup  # the slider, as the value it was described with
    assert markup.count('class="figure"') == 5 and "csv" not in markup and "app_pages" not in markup


def mirrored(pixels: torch.Tensor, lang: str = "en", test_flip: bool = True) -> Subject:
    """``helpers.left_right_vit``'s subject: red where the left half is the darker, green where the
    right is; the mean with the mirror image answers blue."""
    model = left_right_vit(test_flip)
    with torch.inference_mode():
        trace = model.explain(pixels)
    return Subject(model, np.zeros((32, 32, 3), dtype=np.uint8), trace, lang)


def both_views(subject: Subject) -> tuple[str, str, float]:
    """The one pass's answer, and the two views' (the mean of both logits) with its probability, computed here."""
    model, pixels = subject.model, subject.trace.pixels
    with torch.inference_mode():
        one = model.forward_one_view(pixels)[0]
        mean = (one + model.forward_one_view(pixels.flip(-1))[0]) / 2
    return CLASSES[int(one.argmax())], CLASSES[int(mean.argmax())], float(mean.softmax(-1).max())


def texts(step: blocks.Step) -> list[blocks.Text]:
    return [b for b in step.blocks if isinstance(b, blocks.Text)]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", ["prediction", "trust"])
def test_a_model_that_averages_its_mirror_says_the_lab_s_answer_and_whether_it_differs(page, lang):
    """Step 7 and the trust page (which explain the one pass: ``explained_pass``) say the lab's answer."""
    describe = {"prediction": prediction.describe, "trust": trust.describe}[page]
    noise = torch.randn(1, 3, 32, 16, generator=torch.Generator().manual_seed(0))
    symmetric = torch.cat([noise, noise.flip(-1)], dim=-1)  # its mirror is itself
    cases = {"differs": LEFT_DARK, "same": symmetric}
    for case, pixels in cases.items():
        subject = mirrored(pixels, lang)
        one, two, p = both_views(subject)
        assert (one, two) == (("red", "blue") if case == "differs" else (one, one))  # as the model was built
        said = texts(describe(subject, {}))
        values = {"pred": class_label(two, lang), "p": f"{p:.1%}", "one": class_label(one, lang)}
        said_here = t(f"{page}.mirror_{case}", lang, **values)
        if case == "differs":  # a box the slide shows under the bars: they draw the one pass alone
            assert blocks.Text(said_here, "info", slide=True) in said
            shown = [slide for slide in describe(subject, {}).slides() if slide.callouts]
            assert len(shown) == 1 and [c.text for c in shown[0].callouts] == [said_here]
            assert said_here not in shown[0].notes
            assert page == "trust" or shown[0].figures[0].key == "prediction_topk"  # the bars' own slide
        else:
            assert blocks.Text(said_here, "caption") in said
        other = "same" if case == "differs" else "differs"
        assert t(f"{page}.mirror_{other}", lang, **values) not in [b.text for b in said]
    # the same model without the mirror: its one pass is the lab's answer, and nothing is said
    start = t(f"{page}.mirror_same", lang).split("{")[0][:30]
    assert not any(b.text.startswith(start) for b in texts(describe(mirrored(LEFT_DARK, lang, False), {})))
