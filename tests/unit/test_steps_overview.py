"""Step 0, the overview, as data (vitviz.steps.overview): its takeaways read its numbers, the
verdict is said only for a known class, and the handout draws every figure."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.models.prediction import top_k, verdict
from vitviz.render import handout
from vitviz.render.i18n import TEXT, plain
from vitviz.steps import blocks, overview
from vitviz.steps.subject import Subject


def subject(lang: str = "en", num_classes: int = 3, truth: str | None = None, paper: bool = False) -> Subject:
    torch.manual_seed(0)
    names = ("cat", "dog", "ship")[:num_classes] if num_classes else ()
    config = ViTConfig(
        image_size=32, patch_size=4, num_classes=num_classes, class_names=names, embed_dim=16, depth=1, num_heads=2
    )
    model = VisionTransformer(config).eval()
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, 3, 32, 32))
    found = verdict(trace.logits[0].softmax(-1), names, truth) if truth else None
    return Subject(model, image, trace, lang, found, dataset="CIFAR-10" if truth else "", paper=paper)


def takeaways(step: blocks.Step) -> list[str]:
    return [plain(figure.takeaway) for figure in step.figures()]


# ---- the claims it adds ---------------------------------------------------------------------------


# ---- the step --------------------------------------------------------------------------------------


def test_the_overview_shows_the_grid_and_the_answer_it_reads():
    shown = subject()
    step = overview.describe(shown, {})
    assert [figure.key for figure in step.figures()] == ["home_grid", "home_topk"]
    assert takeaways(step)[0] == "The 32 x 32 image becomes 8 x 8 = 64 patches of 4 x 4 pixels, each 48 numbers."
    (first, p_first), (second, p_second) = top_k(shown.config.class_names, shown.trace.logits, 2)
    assert takeaways(step)[1].startswith(("The model answers", "A close call"))
    assert f"{first}" in takeaways(step)[1] and f"{p_first:.1%}" in takeaways(step)[1]
    assert f"{second} ({p_second:.1%})" in takeaways(step)[1]
    table = next(block for block in step.blocks if isinstance(block, blocks.Table))
    assert table.rows[0]["Shape"] == "(1, 3, 32, 32)" and table.rows[-1]["Shape"] == "(1, 3)"
    assert step.shape == "(1, 3, 32, 32)"


def test_the_verdict_is_said_for_a_known_class_only():
    unknown = overview.describe(subject(), {})
    roles = [block.role for block in unknown.blocks if isinstance(block, blocks.Text)]
    assert roles == ["caption"]  # the model's 3 classes, and no verdict
    shown = subject()
    with torch.no_grad():  # the model's answer, from its forward pass rather than the trace the step reads
        answer = shown.config.class_names[int(shown.model(shown.trace.pixels).argmax())]
    other = next(name for name in shown.config.class_names if name != answer)
    for truth, role, start in ((answer, "success", "Right."), (other, "warning", "Wrong.")):
        said = [block for block in overview.describe(subject(truth=truth), {}).blocks if isinstance(block, blocks.Text)]
        assert [block.role for block in said] == [role], truth
        assert said[0].text.startswith(start) and "CIFAR-10 test set" in said[0].text
        assert f"True class (CIFAR-10 test set): **{truth}**; the model says **{answer}**" in said[0].text


def test_a_model_without_classes_has_no_answer_to_draw():
    step = overview.describe(subject(num_classes=0), {})
    assert [figure.key for figure in step.figures()] == ["home_grid"]


@pytest.mark.parametrize(("choices", "paper", "said"), [({}, False, "menu"), ({"present": True}, False, "→")])
def test_the_intro_says_how_to_go_on_where_there_is_a_way(choices, paper, said):
    assert said in overview.describe(subject(paper=paper), choices).intro


def test_paper_is_not_told_to_press_anything():
    intro = overview.describe(subject(paper=True), {}).intro
    assert "Next" not in intro and "menu" not in intro and "→" not in intro


def test_the_overview_is_one_slide_with_the_table_in_its_notes():
    step = overview.describe(subject(), {})
    slides = step.slides()
    assert [len(slide.figures) for slide in slides] == [2]
    assert slides[0].notes[0] == step.intro


def test_korean_takeaways_are_korean():
    assert "패치" in takeaways(overview.describe(subject("ko"), {}))[0]


def test_the_handout_draws_every_figure_and_takeaway():
    step = overview.describe(subject(paper=True, truth="dog"), {})
    page = handout._Page("en")
    page.described(0, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert html.escape(plain(figure.takeaway)) in markup
    assert 'class="verdict' in markup and "Overview, then 9 steps" in markup


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_intro_says_what_this_model_reads_its_answer_from(lang):
    """The paper's ViT reads its [CLS] token; a model that averages its patch tokens, with or without
    a [CLS] token, or one without a head, is told as it is (not "the [CLS] token's final vector")."""

    def intro(num_classes: int = 3, **pooling) -> str:
        torch.manual_seed(0)
        config = ViTConfig(
            image_size=32, patch_size=4, num_classes=num_classes, embed_dim=16, depth=1, num_heads=2, **pooling
        )
        model = VisionTransformer(config).eval()
        with torch.inference_mode():
            trace = model.explain(torch.rand(1, 3, 32, 32))
        return overview.describe(Subject(model, None, trace, lang, paper=True), {}).intro

    t = lambda key: plain(TEXT[key][lang])  # noqa: E731
    assert intro() == f"{t('home.intro')} {t('home.readout_cls')}"  # the paper's ViT: as before
    assert intro(global_pool="avg") == f"{t('home.intro')} {t('home.readout_avg_cls')}"
    assert intro(global_pool="avg", class_token=False) == f"{t('home.intro_no_cls')} {t('home.readout_avg')}"
    assert intro(num_classes=0) == f"{t('home.intro')} {t('home.readout_none')}"
    assert "[CLS]" in t("home.intro") and "[CLS]" not in t("home.readout_avg")
