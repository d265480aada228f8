"""Step 9, the model card, as data (vitviz.steps.card): its takeaways read the card's numbers, its
picker holds only models the server has, and the handout draws every figure of it."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from vitviz.analyses import claims
from vitviz.models import zoo
from vitviz.models.card import ModelCard
from vitviz.models.config import ViTConfig
from vitviz.models.model import VisionTransformer
from vitviz.render import handout
from vitviz.render.i18n import plain
from vitviz.steps import blocks, card
from vitviz.steps.subject import Subject

HISTORY = [
    {"epoch": 1, "train_loss": 2.0, "train_accuracy": 0.2, "lr": 1e-3, "test_accuracy": 0.30, "test_loss": 1.9},
    {"epoch": 2, "train_loss": 1.5, "train_accuracy": 0.4, "lr": 5e-4, "test_accuracy": 0.55, "test_loss": 1.4},
    {"epoch": 3, "train_loss": 1.2, "train_accuracy": 0.5, "lr": 1e-4, "test_accuracy": 0.50, "test_loss": 1.5},
]


def _subject(card_: ModelCard | None = None, lang: str = "en", name: str = "tiny") -> Subject:
    torch.manual_seed(0)
    config = ViTConfig(
        image_size=16, patch_size=8, num_classes=3, embed_dim=16, depth=1, num_heads=2, class_names=("a", "b", "c")
    )
    model = VisionTransformer(config).eval()
    spec = zoo.ModelSpec(name, "Tiny", "path", config, True, True, "A tiny ViT.", card_ or ModelCard())
    return Subject(model, None, None, lang, name=name, spec=spec)


def _trained() -> ModelCard:
    per_class = {"a": 0.9, "b": 0.2, "c": 0.4}
    return ModelCard(history=HISTORY, test_accuracy=0.5, epochs=3, evaluated={"per_class_accuracy": per_class})


def test_the_curves_takeaway_follows_the_record():
    rose = plain(claims.text(claims.training_curve(HISTORY)))
    assert (
        rose == "Test accuracy rose from 30.0% after epoch 1 to 50.0% after epoch 3; its best was 55.0%, after epoch 2."
    )
    fell = [dict(row, test_accuracy=1 - row["test_accuracy"]) for row in HISTORY]
    said = plain(claims.text(claims.training_curve(fell)))
    assert said.startswith("Test accuracy fell from 70.0%") and "its best was 70.0%, after epoch 1" in said
    untested = [{k: v for k, v in row.items() if not k.startswith("test")} for row in HISTORY]
    assert plain(claims.text(claims.training_curve(untested))).startswith("Training accuracy rose from 20.0%")
    assert claims.training_curve([{"epoch": 1, "train_loss": 1.0}]) is None


def test_the_class_takeaway_names_the_best_and_the_worst_class():
    said = plain(claims.text(claims.class_accuracy({"cat": 0.7, "ship": 0.95, "dog": 0.8})))
    assert "ship right most often (95.0%) and cat least often (70.0%)" in said
    said = plain(claims.text(claims.class_accuracy({"cat": 0.95, "ship": 0.7, "dog": 0.8})))
    assert "cat right most often (95.0%) and ship least often (70.0%)" in said
    assert "equally often: 50.0%" in plain(claims.text(claims.class_accuracy({"cat": 0.5, "dog": 0.5})))
    assert "고양이" in plain(claims.text(claims.class_accuracy({"cat": 0.7, "ship": 0.95}), "ko"))


def test_a_card_with_a_record_shows_its_curves_and_classes_with_their_takeaways():
    step = card.describe(_subject(_trained()), {})
    figures = {figure.key: plain(figure.takeaway) for figure in step.figures()}
    assert list(figures) == ["card_curves", "card_per_class"]
    assert "rose from 30.0% after epoch 1 to 50.0% after epoch 3" in figures["card_curves"]
    assert "a right most often (90.0%) and b least often (20.0%)" in figures["card_per_class"]
    metrics = next(block for block in step.blocks if isinstance(block, blocks.Metrics))
    assert "50.00%" in dict(metrics.items).values()
    assert [len(slide.figures) for slide in step.slides()] == [1, 1]
    downloads = [block for block in step.blocks if isinstance(block, blocks.Download)]
    assert downloads[0].csv().splitlines()[0].startswith("epoch")


def test_a_card_without_a_record_says_so_and_has_one_slide():
    step = card.describe(_subject(), {})
    assert step.figures() == []
    assert any(isinstance(b, blocks.Text) and "No training record" in b.text for b in step.blocks)
    assert len(step.slides()) == 1


def test_the_card_picker_holds_the_model_and_the_registry_s_cnns_only():
    cnns = [name for name, spec in zoo.REGISTRY.items() if spec.is_cnn]
    assert cnns, "the registry ships a CNN"
    step = card.describe(_subject(), {"card_model": "not-a-model"})
    picker = step.controls()[0]
    assert picker.key == "card_model" and picker.value == "tiny" and picker.options == ("tiny", *cnns)
    assert picker.quiet_default and "Tiny" not in picker.static  # the static sentence names the model shown

    class Loaded:  # the CNN's card, as the app's cache or zoo.load would hand it over
        def model(self, name):
            other = _subject(_trained(), name=name)
            return zoo.Loaded(other.model, dataclasses.replace(other.spec, name="elsewhere", title="Other"))

    subject = dataclasses.replace(_subject(), compute=Loaded())
    step = card.describe(subject, {"card_model": cnns[0]})
    assert step.controls()[0].value == cnns[0]
    assert any(isinstance(b, blocks.Heading) and b.text == "Other" for b in step.blocks)
    assert len(step.figures()) == 2


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_handout_draws_every_figure_of_the_card(lang):
    subject = _subject(_trained(), lang)
    step = card.describe(subject, {})
    page = handout._Page(lang)
    page.described(9, 9, step)
    markup = page.html()
    for figure in step.figures():
        assert f'id="fig-{figure.key.replace("_", "-")}"' in markup
        assert plain(figure.takeaway) in markup
    assert "Download" not in markup and "다운로드" not in markup
    # the card's numbers on paper: the parameters counted here, and the accuracy the card records
    parameters = sum(p.numel() for p in subject.model.parameters())
    assert f"<td>{parameters:,}</td>" in markup and "<td>50.00%</td>" in markup


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_vit_averaging_its_mirror_shows_its_one_view_figure_and_says_which_is_which(lang):
    mirrored = ModelCard(
        test_accuracy=0.8745,
        config={"test_flip": True},
        evaluated={"one_view_accuracy": 0.8717, "one_view_misclassified": 1283},
    )
    step = card.describe(_subject(mirrored, lang=lang), {})
    metrics = dict(next(block for block in step.blocks if isinstance(block, blocks.Metrics)).items)
    one_view = "Test accuracy, one view" if lang == "en" else "테스트 정확도 (한 번 보기)"
    assert metrics[one_view] == "87.17%" and "87.45%" not in metrics.values()
    captions = [b.text for b in step.blocks if isinstance(b, blocks.Text) and b.role == "caption"]
    said = " ".join(captions)
    assert "87.45%" in said and "87.17%" not in said  # the mirror's figure, named as such, under the one view's
    assert ("The tour explains one pass" if lang == "en" else "투어는 이미지 그대로를") in said
    plain_card = card.describe(_subject(ModelCard(test_accuracy=0.8717), lang=lang), {})
    assert not any(isinstance(b, blocks.Text) and b.role == "caption" and "%" in b.text for b in plain_card.blocks)
