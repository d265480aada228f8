"""The test split that goes with a model, its images in memory, and each model's evaluation on
it, cached for the whole server: what the sidebar's test-image picker, the lab, the map of the
test set and "Which map to trust" read.

The folder comes from the server (``--data``, VITVIZ_DATA), never from a visitor; the test set
and the evaluations sit in ``st.cache_resource`` (read-only, shared by every session).
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import streamlit as st

from vitviz.analyses import lab
from vitviz.analyses.evaluate import EvalResult, evaluate, predictions_path
from vitviz.app import turns
from vitviz.app.models import cached_model, lab_pair
from vitviz.app.text import tr
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.server import access


def server_data() -> str | None:
    """The test images' folder the server was started with (``streamlit run app.py -- --data
    FOLDER``), read here and passed down: the library never reads the command line."""
    return _data_flag(tuple(sys.argv[1:]))


@functools.lru_cache(maxsize=4)
def _data_flag(argv: tuple[str, ...]) -> str | None:
    return access.data_flag(argv)


def test_split(model_name: str) -> lab.TestSplit | None:
    """The test split that goes with a model (``lab.test_split_for``: Fashion-MNIST's for a
    Fashion-MNIST model, else the server's data), which the sidebar's picker and the lab both
    read; None when there is none here, or the model does not load (the page says why)."""
    try:
        model, _ = cached_model(model_name)
    except zoo.ModelLoadError:
        return None
    return split_for(tuple(model.config.class_names), server_data(), os.environ.get("VITVIZ_DATA"))


@functools.lru_cache(maxsize=16)
def split_for(classes: tuple[str, ...], data: str | None, _data_variable: str | None) -> lab.TestSplit | None:
    """Where a model's test split is, looked up once per server setting (the sidebar and the lab
    ask on every run; the folders do not move while the server runs, and the lookup walked them)."""
    return lab.test_split_for(classes, lab.default_test_root(data))


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_test_set(root: str) -> vdata.ImageSet:
    """The lab's test images in memory, keyed by folder (read-only; shared by every session)."""
    turns.step_aside()  # ten thousand files decoded: the class goes on beside it
    return vdata.load_split(root, "test", download=False)


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_evaluation(model_name: str, root: str, _on_page: bool = True, _stored_only: bool = False) -> EvalResult:
    """Every test image's class probabilities, keyed by (model name, data folder) (read-only).

    A model that ships its test-split predictions beside its weights opens at once when they
    match these weights and this folder; otherwise the first call shows a progress bar while the
    model runs (or reads evaluate's disk cache). The bar is made and emptied inside this
    function, so a cache hit replays nothing visible. The server's startup, outside any page,
    asks with ``_on_page=False`` (no bar) and ``_stored_only=True`` (read what is stored, never
    run the model); neither is part of the cache's key.

    Raises:
        ValueError: the model does not predict the dataset's classes (a sentence to show).
        LookupError: with ``_stored_only``, where nothing is stored (nothing is cached then).
    """
    model, spec = cached_model(model_name)
    data = cached_test_set(root)
    turns.step_aside()  # the model may run over the whole split: the class goes on beside it
    holder = st.empty() if _on_page else None
    try:
        return evaluate(
            model,
            data,
            name=model_name,
            shipped=predictions_path(spec.path) if spec.path else None,
            run=not _stored_only,
            progress=None
            if holder is None
            else lambda done, total: holder.progress(
                done / max(total, 1), text=tr("mistakes.evaluating", done=done, total=total)
            ),
        )
    finally:
        if holder is not None:
            holder.empty()


def warm_test_split() -> None:
    """The default model's test split in the cache and, for it and the model the lab sets beside
    it, the evaluation where it is stored (the shipped predictions of these weights on these
    images, or an earlier evaluation's disk cache): read, never run here, since an evaluation takes
    minutes and shows its progress to whoever opens the lab. Then the default model's look at the
    image the lab opens with (``cached_mistake``)."""
    name = zoo.default_name()
    split = test_split(name)
    if split is None:
        return
    cached_test_set(split.location)
    for model_name in filter(None, (name, lab_pair(name))):
        try:
            result = cached_evaluation(model_name, split.location, _on_page=False, _stored_only=True)
        except (LookupError, ValueError):  # nothing stored, or other classes than the data's: the
            continue  # lab evaluates, or says why it cannot in the user's language, on its first visit
        if model_name == name and len(opening := lab.filter_mistakes(result)):
            # the image the lab opens up close (its filters' defaults: every mistake, the most
            # confident first): its maps and logit lens were 0.15 s of a first visit's run
            cached_mistake(name, split.location, int(opening[0]))


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_mistake(model_name: str, location: str, index: int) -> dict[str, np.ndarray]:
    """``lab.inspect_mistake`` of test image ``index``, keyed by (model name, data, index): the
    lab's maps and logit lens, computed once per image rather than on every click."""
    model, _ = cached_model(model_name)
    result = cached_evaluation(model_name, location)
    data = cached_test_set(location)
    predicted, true = int(result.predictions[index]), int(result.labels[index])
    return lab.inspect_mistake(model, data.images[index : index + 1], predicted, true)


def test_images(model_name: str) -> lab.TestImages | None:
    """A model's test images, by class and index within the class, or None where it has no test split here."""
    split = test_split(model_name)
    return lab.TestImages(split, cached_test_set) if split else None
