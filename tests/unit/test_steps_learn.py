"""The lab's "How the ViT learned", as data (vitviz.steps.learn), on a tiny run written here: the
snapshot chooser, the figures of the chosen snapshot and their takeaways, the run's curves; and the
sentences it adds to vitviz.analyses.claims, each with numbers that make the other one true."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from vitviz.analyses import analysis, claims
from vitviz.models import snapshots, zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import Preprocess, ViTConfig
from vitviz.models.model import VisionTransformer, sincos_2d
from vitviz.models.prediction import top_k
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, learn
from vitviz.steps.subject import Compute, Subject

GREY = ViTConfig(
    image_size=8, patch_size=2, in_chans=1, embed_dim=16, depth=2, num_heads=2, num_classes=3,
    class_names=("cat", "dog", "ship"), preprocess=Preprocess(resize=(8, 8), mean=(0.5,), std=(0.25,)),
)  # fmt: skip
HISTORY = [
    {"epoch": 0, "test_accuracy": 0.30, "test_loss": 1.10},
    {"epoch": 1, "test_accuracy": 0.40, "test_loss": 1.00, "train_loss": 1.05, "train_accuracy": 0.35},
    {"epoch": 2, "test_accuracy": 0.55, "test_loss": 0.90, "train_loss": 0.95, "train_accuracy": 0.5},
    {"epoch": 3, "test_accuracy": 0.70, "test_loss": 0.80, "train_loss": 0.85, "train_accuracy": 0.6},
]


def models() -> dict[int, VisionTransformer]:
    """Epoch 0: random weights; epoch 3: other weights whose position embeddings hold the 2D layout."""
    torch.manual_seed(0)
    before, after = VisionTransformer(GREY).eval(), VisionTransformer(GREY).eval()
    with torch.no_grad():
        after.pos_embed[0, 1:] = sincos_2d(GREY.grid_size, GREY.embed_dim)
        after.head.bias.copy_(torch.tensor([0.0, 0.0, 5.0]))  # answers "ship"
    return {0: before, 3: after}


class RunCompute(Compute):
    def __init__(self, folder) -> None:
        super().__init__()
        self.folder = folder

    def snapshots(self):
        return snapshots.read("tiny", self.folder)


@pytest.fixture
def run_folder(tmp_path):
    states = {epoch: model.state_dict() for epoch, model in models().items()}
    samples = np.stack([np.full((1, 8, 8), 40 * n, dtype=np.uint8) for n in range(3)])
    facts = {"epochs": 3, "planned_epochs": 30, "seed": 0, "hardware": ["CPU (AMD EPYC, 1 thread)"]}
    noise = torch.randn(states[3]["pos_embed"].shape, generator=torch.Generator().manual_seed(0))
    positions = {1: states[3]["pos_embed"] + noise, 2: states[3]["pos_embed"] + noise * 0.3}  # the layout out of noise
    snapshots.write("tiny", GREY, states, HISTORY, facts, samples, GREY.class_names, [7, 2, 5], positions, tmp_path)
    return tmp_path


def subject(folder, config: ViTConfig = GREY, lang: str = "en", paper: bool = False) -> Subject:
    torch.manual_seed(1)
    model = VisionTransformer(config).eval()
    side = config.image_size[0]
    image = np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8)
    with torch.inference_mode():
        trace = model.explain(torch.rand(1, config.in_chans, side, side))
    return Subject(model, image, trace, lang, name="mine", compute=RunCompute(folder), paper=paper)


def figure(step: blocks.Step, key: str) -> blocks.Figure:
    return next(f for f in step.figures() if f.key == key)


def control(step: blocks.Step, key: str) -> blocks.Control:
    return next(c for c in step.controls() if c.key == key)


# ---- the claims it adds ---------------------------------------------------------------------------


def test_positions_are_said_to_form_at_the_first_epoch_past_the_margin_and_peak_where_the_gap_is_largest():
    epochs, far = [0, 1, 2, 5, 10], [0.0] * 5
    said = claims.positions_over_training(epochs, [0.02, 0.05, 0.2, 0.45, 0.3], far)
    assert said.key == "learn.positions_formed_then"
    assert plain(claims.text(said)) == (
        "Neighbouring positions' embeddings are first more alike than the rest after epoch 2 (cosine 0.20 against"
        " 0.00 on average), and most alike, relative to the rest, after epoch 5 (0.45 against 0.00); after epoch"
        " 10: 0.30 against 0.00."
    )
    kept = claims.positions_over_training(epochs, [0.02, 0.05, 0.2, 0.3, 0.45], far)  # most alike at the end
    assert kept.key == "learn.positions_formed" and claims.text(kept).endswith("after epoch 10 (0.45 against 0.00).")
    assert "2에폭 뒤 처음으로" in claims.text(said, "ko") and "5에폭 뒤" in claims.text(said, "ko")
    never = claims.positions_over_training(epochs, [0.02, 0.05, 0.08, 0.04, 0.01], far)
    assert never.key == "learn.positions_not_formed"
    assert plain(claims.text(never)).startswith("Up to epoch 10, neighbouring positions' embeddings are never clearly")
    assert "after epoch 2 (cosine 0.08" in claims.text(never)
    at_start = claims.positions_over_training([0, 1], [0.5, 0.1], [0.0, 0.0])
    assert "first more alike than the rest before training" in claims.text(at_start)
    assert "학습 전" in claims.text(at_start, "ko")
    # neighbours most alike after epoch 10, but every position grew alike too: the gap peaked at 5
    relative = claims.positions_over_training(epochs, [0.02, 0.05, 0.2, 0.45, 0.5], [0.0, 0.0, 0.0, 0.1, 0.3])
    assert "most alike, relative to the rest, after epoch 5 (0.45 against 0.10)" in plain(claims.text(relative))


def test_accuracy_is_said_to_rise_with_the_epoch_half_of_the_rise_had_come_by_or_not_to_rise():
    fast = [{"epoch": 0, "test_accuracy": 0.1}, {"epoch": 1, "test_accuracy": 0.5}, {"epoch": 5, "test_accuracy": 0.9}]
    assert claims.text(claims.accuracy_over_training(fast)) == (
        "Test accuracy rose from 10.0% before training to 90.0% after epoch 5; half of the rise had come by epoch 1."
    )
    slow = [{"epoch": 1, "test_accuracy": 0.1}, {"epoch": 2, "test_accuracy": 0.2}, {"epoch": 5, "test_accuracy": 0.9}]
    assert claims.text(claims.accuracy_over_training(slow)).endswith("by epoch 5.")
    assert "from 10.0% after epoch 1" in claims.text(claims.accuracy_over_training(slow))
    fell = [{"epoch": 0, "test_accuracy": 0.5}, {"epoch": 1, "train_loss": 1.0}, {"epoch": 2, "test_accuracy": 0.4}]
    said = claims.accuracy_over_training(fell)
    assert said.key == "learn.accuracy_not_rose" and "40.0%" in claims.text(said, "ko")
    assert claims.accuracy_over_training(fell[:2]) is None


def test_test_loss_is_said_to_fall_or_to_rise_again_past_its_lowest():
    falling = [{"epoch": 0, "test_loss": 2.0}, {"epoch": 4, "test_loss": 0.6}, {"epoch": 8, "test_loss": 0.5}]
    assert claims.text(claims.loss_over_training(falling)) == (
        "Test loss fell from 2.000 before training to 0.500 after epoch 8 (its lowest, 0.500, after epoch 8)."
    )
    rising = [*falling[:2], {"epoch": 8, "test_loss": 0.7}]
    said = claims.loss_over_training(rising)
    assert (
        said.key == "learn.loss_rose_again"
        and "lowest after epoch 4 (0.600) and rose again to 0.700" in claims.text(said)
    )
    flat = [*falling[:2], {"epoch": 8, "test_loss": 0.605}]  # within LOSS_RISE of the lowest: not a rise
    assert claims.loss_over_training(flat).key == "learn.loss_fell"
    assert claims.loss_over_training(falling[:1]) is None


def test_the_filters_are_said_to_vary_along_fewer_patterns_when_their_first_components_carry_more():
    start = np.array([0.2, 0.2, 0.2, 0.2, 0.2])
    grown = claims.filters_over_training(np.array([0.5, 0.2, 0.1, 0.1, 0.1]), start, 2, 5, 0)
    assert grown.key == "learn.filters_more"
    assert claims.text(grown) == (
        "The first 2 of 5 components carry 70.0% of the filters' variance, up from 40.0% before training:"
        " the filters vary along fewer patterns."
    )
    same = claims.filters_over_training(np.array([0.21, 0.2, 0.2, 0.2, 0.19]), start, 2, 5, 0)
    assert same.key == "learn.filters_not_more" and "no more than 40.0% before training" in claims.text(same)
    first = claims.filters_over_training(start, start, 2, 0, 0)
    assert claims.text(first).startswith("The first 2 of 5 components carry 40.0% of the filters' variance before")
    assert "1에폭 뒤의 40.0%" in claims.text(claims.filters_over_training(start, start, 2, 4, 1), "ko")


# ---- the step -----------------------------------------------------------------------------------


def test_the_chosen_snapshot_draws_its_own_model_on_the_session_s_image(run_folder):
    mine = subject(run_folder)
    before = learn.describe(mine, {"learn_epoch": 0, "learn_head": 1})
    after = learn.describe(mine, {"learn_epoch": 3, "learn_head": 1})
    assert control(before, "learn_epoch").options == (0, 3) and control(before, "learn_epoch").value == 0
    assert control(before, "learn_head").value == 1 and not any(c.key == "learn_sample" for c in before.controls())
    for epoch, step in ((0, before), (3, after)):
        model = models()[epoch]
        with torch.inference_mode():
            trace = model.explain(mine.trace.pixels)
        cls = analysis.cls_attention(trace, -1, 1)[0].numpy()
        shown = figure(step, "learn_attention").figure
        assert np.allclose(shown.data[1].z, cls, atol=2e-3)  # float16 weights
        # the answer of the snapshot's own weights (float16, as the run keeps them), read by claims here
        model.load_state_dict({key: value.half().float() for key, value in model.state_dict().items()})
        with torch.inference_mode():
            ranked = top_k(GREY.class_names, model(mine.trace.pixels), 3)
        said = claims.top_answer([name for name, _ in ranked], [p for _, p in ranked])
        assert figure(step, "learn_answer").takeaway == mine.says(said)
    assert "answers ship" in plain(figure(after, "learn_answer").takeaway)
    assert "Before training" in figure(before, "learn_positions").figure.layout.title.text
    assert "After epoch 3" in figure(after, "learn_positions").figure.layout.title.text


def test_the_weights_takeaways_read_the_snapshot_s_own_positions_and_filters(run_folder):
    mine = subject(run_folder)
    for epoch, key in ((0, "claims.layout_none"), (3, "claims.layout_learned")):
        step = learn.describe(mine, {"learn_epoch": epoch})
        model = models()[epoch]
        table = model.pos_embed.detach()[0].half().float()
        similarity = analysis.pos_embed_similarity(table, GREY.grid_size, 1).numpy()
        said = claims.position_layout(similarity)
        assert said.key == key and figure(step, "learn_positions").takeaway == mine.says(said)
        _, ratios = analysis.patch_embed_components(model.patch_embed.proj.weight.detach().half().float(), k=None)
        start = models()[0].patch_embed.proj.weight.detach().half().float()
        _, first = analysis.patch_embed_components(start, k=None)
        shown = min(learn.FILTER_COMPONENTS, len(ratios))
        grew = claims.filters_over_training(ratios.numpy(), first.numpy(), shown, epoch, 0)
        assert grew.key == ("learn.filters_first" if epoch == 0 else "learn.filters_not_more")  # two random inits
        assert figure(step, "learn_filters").takeaway == mine.says(grew)


def test_an_unknown_snapshot_is_the_last_and_the_curves_mark_every_snapshot(run_folder):
    step = learn.describe(subject(run_folder), {"learn_epoch": 2, "learn_head": 9})
    assert control(step, "learn_epoch").value == 3 and control(step, "learn_head").value == 0  # 2 was not kept
    curves = figure(step, "learn_curves").figure
    marked = [trace for trace in curves.data if trace.mode == "markers"]
    assert [list(trace.x) for trace in marked] == [[0, 3], [0, 3]]
    assert list(marked[0].y) == [0.30, 0.70] and list(marked[1].y) == [1.10, 0.80]
    assert curves.layout.shapes[0].x0 == 3
    said = [claims.accuracy_over_training(HISTORY), claims.loss_over_training(HISTORY)]
    assert figure(step, "learn_curves").takeaway == subject(run_folder).says(said)
    lines = figure(step, "learn_positions_curve").figure
    assert list(lines.data[0].x) == [0, 1, 2, 3]  # every epoch whose position embeddings ship
    gaps = np.asarray(lines.data[0].y) - np.asarray(lines.data[1].y)
    assert gaps[3] > claims.LAYOUT_MARGIN > gaps[0]
    first = int(np.flatnonzero(gaps >= claims.LAYOUT_MARGIN)[0])
    takeaway = figure(step, "learn_positions_curve").takeaway
    assert f"first more alike than the rest after epoch {first}" in takeaway and first == 2
    assert "most alike, relative to the rest, after epoch 3" in takeaway and gaps.argmax() == 3
    caption = next(b for b in step.blocks if isinstance(b, blocks.Text) and b.role == "caption")
    assert caption.text.startswith("The snapshots come from a grey ViT on Fashion-MNIST (D = 16, 2 blocks of 2 heads)")
    assert "3 of its 30 planned epochs" in caption.text and "shipped" not in caption.text  # "tiny" ships nowhere


def _caption(folder, lang: str = "en") -> str:
    step = learn.describe(subject(folder, lang=lang), {"learn_epoch": 3})
    return next(b.text for b in step.blocks if isinstance(b, blocks.Text) and b.role == "caption")


def test_the_caption_says_whether_the_shipped_model_the_run_follows_has_its_shape(run_folder, monkeypatch):
    shipped = zoo.ModelSpec("tiny", "tiny", "shipped", GREY.replace(drop_path_rate=0.1), True, True, "", ModelCard())
    monkeypatch.setitem(zoo.REGISTRY, "tiny", replace(shipped, card=ModelCard(epochs=115)))
    assert "The shipped grey ViT has the same shape and trained for 115 epochs in all." in _caption(run_folder)
    assert "배포된 흑백 ViT도 같은 구조이며, 모두 115에폭을 학습했습니다." in _caption(run_folder, "ko")
    wider = replace(shipped, config=GREY.replace(embed_dim=24, depth=3, num_heads=3))
    monkeypatch.setitem(zoo.REGISTRY, "tiny", wider)
    said = _caption(run_folder)
    assert "The shipped grey ViT has another shape (D = 24, 3 blocks of 3 heads)" in said and "same shape" not in said
    assert "배포된 흑백 ViT는 구조가 다릅니다(D = 24, 헤드 3개짜리 블록 3개)" in _caption(run_folder, "ko")


def test_a_model_that_reads_other_images_follows_the_run_s_test_image_and_says_so(run_folder):
    rgb = ViTConfig(image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=1, num_heads=2)
    other = subject(run_folder, rgb)
    step = learn.describe(other, {"learn_epoch": 3, "learn_sample": 2})
    said = [b.text for b in step.blocks if isinstance(b, blocks.Text) and b.role == "info"]
    assert len(said) == 1 and "follows a Fashion-MNIST test image instead of yours" in said[0]
    chooser = control(step, "learn_sample")
    assert chooser.options == (1, 2, 0) and chooser.value == 2  # in the test split's order: 2, 5, 7
    assert chooser.format(0) == "cat (Fashion-MNIST test image 8)"
    run = snapshots.read("tiny", run_folder)
    with torch.inference_mode():
        trace = run.model_at(3).explain(learn.sample_pixels(run, 2))
    assert np.allclose(figure(step, "learn_attention").figure.data[1].z, analysis.cls_attention(trace, -1, 0)[0])
    assert control(learn.describe(other, {}), "learn_sample").value == 1  # the first in the test split
    # a slide shows the figures without that sentence: their titles name the run's model
    assert figure(step, "learn_attention").figure.layout.title.text.startswith("This grey ViT (Fashion-MNIST): [CLS]")
    assert figure(step, "learn_answer").figure.layout.title.text.startswith("This grey ViT's answer after epoch 3")
    own = learn.describe(subject(run_folder), {"learn_epoch": 3})
    assert figure(own, "learn_attention").figure.layout.title.text.startswith("[CLS] attention")
    assert figure(own, "learn_answer").figure.layout.title.text.startswith("Its answer after epoch 3")
    ko = learn.describe(subject(run_folder, rgb, lang="ko"), {})
    assert "Fashion-MNIST 테스트 이미지" in next(b.text for b in ko.blocks if getattr(b, "role", "") == "info")


def test_no_run_is_one_sentence(tmp_path):
    step = learn.describe(subject(tmp_path), {})
    assert [b.role for b in step.blocks] == ["info"] and step.blocks[
        0
    ].text == "No snapshots of a training run ship with this copy of vitviz."


def test_the_slides_open_on_the_attention_and_the_answer_and_paper_names_the_snapshot(run_folder):
    step = learn.describe(subject(run_folder, paper=True), {"learn_epoch": 0})
    first = step.slides()[0]
    assert [f.key for f in first.figures] == ["learn_attention", "learn_answer"]
    assert {c.key for c in first.controls} == {"learn_epoch", "learn_head"}
    assert len(step.slides()) == 4
    page = handout._Page("en")
    page.described(12, 9, step, lab=True)
    text = page.html()
    assert "Snapshot: Before training" in text and "fig-learn-curves" in text and "fig-learn-attention" in text
