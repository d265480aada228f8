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
    monkeypatch.setattr(handout, "RememberedCompute", Compute)  # nothing remembered
    assert again == first == handout.build(model, spec, photo, "en", image_name="cat", cnn=cnn)
