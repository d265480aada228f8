"""The lab's trust page and the map of the test set (issue 43), through AppTest."""

from __future__ import annotations

import numpy as np
import torch

from tests.apptest import errors, open_page, open_page_in_one_run
from vitviz.analyses import ablation, analysis, claims, faithfulness
from vitviz.app import caches
from vitviz.models import zoo
from vitviz.models.data import load_image, to_tensor
from vitviz.render.i18n import class_label, t

PAGE = "app_pages/11_trust.py"


def _markdown(at) -> list[str]:
    return [m.value for m in at.markdown]


def test_the_trust_page_reads_this_image_s_curves_and_the_switched_off_heads():
    at = open_page(PAGE)
    assert errors(at) == []
    model = zoo.load(zoo.default_name()).model
    photo = (caches.SAMPLES / caches.DEFAULT_SAMPLE).read_bytes()
    pixels = to_tensor(load_image(photo), model.config.preprocess)
    expected = claims.text(faithfulness.sentences(faithfulness.read(faithfulness.faithfulness(model, pixels))))
    assert expected in _markdown(at)  # the sentence is the one this image's curves make
    assert any("Nothing is switched off" in m for m in _markdown(at))
    with torch.no_grad():  # the lab's answer: the mean of the image's and its mirror image's logits
        one = model.forward_one_view(pixels)[0]
        mean = (one + model.forward_one_view(pixels.flip(-1))[0]) / 2
    names, lab, first = model.config.class_names, int(mean.argmax()), int(one.argmax())
    filled = {"pred": class_label(names[lab], "en"), "p": f"{float(mean.softmax(-1)[lab]):.1%}"}
    key = "trust.mirror_same" if lab == first else "trust.mirror_differs"
    assert t(key, "en", **filled, one=class_label(names[first], "en")) in [c.value for c in (*at.caption, *at.info)]

    skipped = list(range(model.config.depth))  # every layer skipped: the answer comes from the embeddings
    at.multiselect(key="trust_layers").set_value(skipped).run()
    assert errors(at) == []
    with torch.no_grad():  # the page's explained pass: one view, the image as it is
        before = model.forward_one_view(pixels)[0].softmax(-1).numpy()
        switched = ablation.ablated(model, ablation.Ablation.of(layers=skipped))
        after = switched.forward_one_view(pixels)[0].softmax(-1).numpy()
        # with no block left the readout reads the embeddings: the logit lens's first point, which
        # no ablation code computes
        embeddings = analysis.logit_lens(model, model.explain(pixels))[0, 0].numpy()
    np.testing.assert_allclose(after, embeddings, atol=1e-5)
    said = claims.text(claims.ablation_answer(before, embeddings, model.config.class_names, 0, len(skipped)))
    assert said in _markdown(at)  # the sentence the embeddings' answer makes


def test_the_trust_page_in_korean_has_no_error():
    at = open_page_in_one_run(PAGE, lang="ko")
    assert errors(at) == []
    assert any("무작위" in m for m in _markdown(at))
    captions = " ".join(c.value for c in at.caption)
    assert "CIFAR-10 (JPEG 사본)" in captions and "JPEG copy" not in captions  # the set's name, in Korean


def test_the_map_counts_the_one_pass_it_shows_and_says_so_for_a_model_that_averages_its_mirror():
    at = open_page("app_pages/12_map.py")
    assert errors(at) == []
    card = zoo.REGISTRY[zoo.SHIPPED].card  # its one-view accuracy, measured on the whole test split when it shipped
    assert card.views == "image and mirror" and zoo.default_name() == zoo.SHIPPED
    right = round(card.one_view_accuracy * card.tested_on["images"])
    shown = " ".join(_markdown(at) + [c.value for c in at.caption])
    assert f"{right:,} of {card.tested_on['images']:,} images are answered right by one pass" in shown
