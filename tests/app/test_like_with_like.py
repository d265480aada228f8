"""Like with like (issue 55): a card's headline is measured on one view (the ViT's 87.17%), where
the model answers in the lab with the mean of the image and its mirror (the ViT's 87.45%, the
CNN's 93.16%). Page 8 and every card compare the two on one protocol, one view each, and say so;
a two-view number is said as such."""

from __future__ import annotations

import pytest

from tests.apptest import errors, open_page_in_one_run, tables
from vitviz.models import zoo
from vitviz.models.card import ModelCard


def test_a_card_says_what_its_accuracy_looked_at_and_its_one_view_accuracy():
    one = ModelCard(config={"arch": "vit"}, test_accuracy=0.8)
    two = ModelCard(
        config={"arch": "cnn", "test_flip": True}, test_accuracy=0.93, evaluated={"one_view_accuracy": 0.92}
    )
    unknown = ModelCard(config={"arch": "cnn", "test_flip": True}, test_accuracy=0.93)
    assert (one.views, one.one_view_accuracy) == ("image", 0.8)
    assert (two.views, two.one_view_accuracy) == ("image and mirror", 0.92)
    assert unknown.one_view_accuracy is None
    split = {"dataset": "CIFAR-10 (JPEG copy)", "fingerprint": "abc"}
    one.tested_on, two.tested_on, unknown.tested_on = split, split, split
    assert zoo.compared_accuracies(one, two) == (0.8, 0.92)
    assert zoo.compared_accuracies(one, unknown) is None  # no two-view number passed off as one view
    two.tested_on = {**split, "fingerprint": "other"}
    assert zoo.compared_accuracies(one, two) is None  # other images: not like with like


def shipped_cards() -> tuple[ModelCard, ModelCard]:
    return zoo.REGISTRY[zoo.SHIPPED].card, zoo.REGISTRY[zoo.SHIPPED_CNN].card


def test_the_shipped_pair_compares_on_one_view():
    vit, cnn = shipped_cards()
    assert vit.views == cnn.views == "image and mirror"  # both average their mirror in the lab (issue 57)
    assert zoo.compared_accuracies(vit, cnn) == (vit.evaluated["one_view_accuracy"], cnn.evaluated["one_view_accuracy"])
    assert zoo.one_view_accuracy_of(vit.teacher) == cnn.one_view_accuracy != vit.teacher["test_accuracy"]
    for lang in ("en", "ko"):  # the titles the pickers show: one view each (the cards and page 8 say so;
        # a title that said it too no longer fit the sidebar's picker: tests/browser/test_browser.py)
        for spec in (zoo.REGISTRY[zoo.SHIPPED], zoo.REGISTRY[zoo.SHIPPED_CNN], zoo.REGISTRY[zoo.SHIPPED_FASHION]):
            title = spec.title_in(lang)
            assert f"{spec.card.one_view_accuracy:.1%}" in title
            assert spec.card.views == "image" or f"{spec.card.test_accuracy:.1%}" not in title


@pytest.mark.parametrize(("lang", "mirror"), [("en", "mirror image"), ("ko", "뒤집은")])
def test_page_8_states_both_accuracies_on_one_view(lang, mirror):
    vit, cnn = shipped_cards()
    at = open_page_in_one_run("app_pages/8_compare.py", lang=lang)
    assert errors(at) == []
    said = next(c.value for c in at.caption if f"{vit.one_view_accuracy:.2%}" in c.value)
    assert f"{cnn.one_view_accuracy:.2%}" in said
    # the two-view number only after the sentence says it is two views
    first, second = said.split(f"{cnn.one_view_accuracy:.2%}")
    assert f"{cnn.test_accuracy:.2%}" not in first and mirror in second and f"{cnn.test_accuracy:.2%}" in second
    # the ViT's bars here are the tour's one pass, so its two-view number is not said on this page
    assert f"{vit.test_accuracy:.2%}" not in said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_shipped_card_shows_one_view_and_a_mirror_number_as_such(lang):
    vit, cnn = shipped_cards()
    label = "Test accuracy, one view" if lang == "en" else "테스트 정확도 (한 번 보기)"
    tour = "The tour explains one pass" if lang == "en" else "투어는 이미지 그대로를"
    for owner in (zoo.SHIPPED, zoo.SHIPPED_CNN, zoo.SHIPPED_FASHION):
        card = zoo.REGISTRY[owner].card
        sidebar = {"model": owner} if owner == zoo.SHIPPED_FASHION else {}  # the grey ViT's card: the sidebar's model
        at = open_page_in_one_run("app_pages/9_card.py", lang=lang, card_model=owner, **sidebar)
        assert errors(at) == []
        shown = {m.label: m.value for m in at.metric}
        assert shown[label] == f"{card.one_view_accuracy:.2%}", shown
        captions = " ".join(c.value for c in at.caption)
        assert (f"{card.test_accuracy:.2%}" in captions) == (card.views != "image")
        # a ViT that averages its mirror says that its tour explains one view
        assert (tour in captions) == (card.views != "image" and card.config.get("arch") != "cnn")
        if owner == zoo.SHIPPED and card.teacher:  # the ViT's teacher, the shipped CNN, on the ViT's protocol
            facts = " ".join(str(cell) for table in tables(at) for cell in table.to_numpy().ravel())
            assert f"{cnn.one_view_accuracy:.2%}" in facts and f"{cnn.test_accuracy:.2%}" not in facts
