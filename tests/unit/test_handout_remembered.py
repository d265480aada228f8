"""The handout's analyses remembered for the process (``vitviz.steps.remembered``): each equals
the direct computation, and another image or another model is another entry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.unit.test_handout import CAT, tiny_model
from vitviz.models import zoo
from vitviz.render import handout
from vitviz.steps import remembered
from vitviz.steps.subject import Compute

COFFEE = handout.SAMPLES / "coffee.jpg"


def same(a, b) -> bool:
    """Equal to the last bit: tensors, arrays, dataclasses, dicts and sequences of them."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.fixture(scope="module")
def cnn() -> zoo.Loaded:
    return zoo.load(handout.matching_cnn(tiny_model()[0].config.class_names), device="cpu")


CALLS = {
    "occlusion": lambda compute, subject, cnn: compute.occlusion(subject, "rollout", 8),
    "comparison": lambda compute, subject, cnn: compute.comparison(subject, cnn, 3, False),
    "experiment": lambda compute, subject, cnn: compute.experiment(subject, cnn, "shift", 2, 0, ()),
    "filter_components": lambda compute, subject, cnn: compute.filter_components(subject),
    "faithfulness": lambda compute, subject, cnn: compute.faithfulness(subject),
}


@pytest.mark.parametrize("method", list(CALLS))
def test_a_remembered_analysis_equals_the_direct_one_and_keys_by_image_and_model(method, cnn) -> None:
    remembered.forget()
    model, spec = tiny_model()
    call = CALLS[method]
    name = cnn.spec.name

    def subject(vit, photo):
        return handout._subject(vit, spec, photo.read_bytes(), "en", None, None, cnn)

    cat, coffee = subject(model, CAT), subject(model, COFFEE)
    first = call(cat.compute, cat, name)
    direct = call(Compute({name: cnn}), cat, name)
    assert same(first, direct)
    assert call(subject(model, CAT).compute, subject(model, CAT), name) is first  # a new build reads it
    other = call(coffee.compute, coffee, name)
    assert same(other, call(Compute({name: cnn}), coffee, name))
    if method == "filter_components":  # the model's alone: the same for every image
        assert other is first
    else:
        assert other is not first and not same(other, first)
    torch.manual_seed(1)
    second_model = type(model)(model.config).eval()  # other weights: another entry
    elsewhere = subject(second_model, CAT)
    theirs = call(elsewhere.compute, elsewhere, name)
    assert theirs is not first and not same(theirs, first)
    assert same(theirs, call(Compute({name: cnn}), elsewhere, name))


def test_a_handout_built_again_is_the_same_file_as_one_computed_afresh(cnn, monkeypatch) -> None:
    remembered.forget()
    model, spec = tiny_model()
    photo = CAT.read_bytes()
    first = handout.build(model, spec, photo, "en", image_name="cat", cnn=cnn)
    assert remembered._MEMORY[model]  # it remembered something
    again = handout.build(model, spec, photo, "en", image_name="cat", cnn=cnn)  # from memory
    remembered.forget()
    monkeypatch.setattr(handout, "RememberedCompute", Compute)  # nothing remembered but the model's steps
    assert again == first == handout.build(model, spec, photo, "en", image_name="cat", cnn=cnn)


def test_the_model_s_own_steps_are_made_once_a_model_and_language(cnn) -> None:
    """The card and the map of the test set: their HTML equals the step described afresh, once per
    model and language."""
    remembered.forget()
    model, spec = tiny_model()
    photo = CAT.read_bytes()

    def steps(vit) -> dict:
        return {key: html for key, html in remembered._MEMORY[vit].items() if key[0] == "handout"}

    handout.build(model, spec, photo, "en", image_name="cat", cnn=cnn)
    english = steps(model)
    assert sorted(key[2] for key in english) == [9, 11]  # the card, the map
    for (_, lang, number, total, lab, *_), (parts, names) in english.items():
        fresh = handout._Page(lang)
        subject = handout._subject(model, spec, photo, lang, None, None, cnn)
        fresh.described(number, total, {9: handout.card, 11: handout.testset}[number].describe(subject, {}), lab=lab)
        assert (tuple(fresh.parts), frozenset(fresh.names)) == (parts, names)
    handout.build(model, spec, photo, "ko", image_name="cat", cnn=cnn)
    korean = {key: value for key, value in steps(model).items() if key not in english}
    assert len(korean) == 2 and all(
        parts != english[("handout", "en", *key[2:])][0] for key, (parts, _) in korean.items()
    )
    torch.manual_seed(1)
    other = type(model)(model.config).eval()
    handout.build(other, spec, photo, "en", image_name="cat", cnn=cnn)
    assert len(steps(other)) == 2  # its own entries
