"""What every page needs: the model and image the session is looking at, their trace, and the
sentences that read a prediction against the image's known class."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st
from PIL import Image

from vitviz.analyses import compare, lab
from vitviz.app import analyses, models, session, shelf, state, testset
from vitviz.app.caches import (
    SAMPLES,
    cached_comparison,
    cached_component_tiles,
    cached_experiment,
    cached_filter_components,
    cached_image,
    cached_occlusion,
    cached_routes,
    cached_snapshot_model,
    cached_snapshots,
    cached_trace,
    decoded_image,
    sample_names,
)
from vitviz.app.models import cached_model, try_model
from vitviz.app.text import dataset_text, lang, tr
from vitviz.models import data as vdata
from vitviz.models import zoo
from vitviz.models.data import ImageError
from vitviz.models.model import VisionTransformer
from vitviz.models.prediction import Verdict, verdict
from vitviz.models.trace import Trace
from vitviz.render import plots
from vitviz.server import values
from vitviz.steps.subject import Compute, Subject


def uploaded_model() -> str | None:
    """The name of the checkpoint this visitor uploaded and uses, if any."""
    return session.model_upload()


def test_images() -> lab.TestImages | None:
    """The sidebar model's test images, by class and index within the class, or None."""
    return testset.test_images(model_name())


def wanted_model() -> str:
    """The model the visitor asked for instead of the list's: their upload, else the typed name."""
    return models.wanted_model(state.get("custom_model"))


def model_name() -> str:
    """The ViT the tour explains (``models.tour_model`` of the sidebar's choices)."""
    return models.tour_model(state.get("model"), state.get("custom_model"))


# A test image's or a sample's bytes, read once for the server: a run asks for them in the
# sidebar, in the work ahead and in its page, and each of a class's students every step.
IMAGE_BYTES: shelf.Shelf[bytes | None] = shelf.Shelf(64 * 2**20, size=lambda data: len(data or b""), ttl_s=3600)


def image_bytes() -> bytes | None:
    """The bytes of the chosen image, or None (with a message shown) when there is none."""
    source = state.get("source", "sample")
    if source == "upload":
        upload = session.uploaded_image()
        return upload[1] if upload else None
    if source == "test":
        images, chosen = test_images(), chosen_test_image()
        if images is None or chosen is None:
            return None
        return IMAGE_BYTES.get(("test", images.split, *chosen), lambda: images.image_bytes(*chosen))
    path = SAMPLES / Path(state.get("sample") or sample_names()[0]).name
    return IMAGE_BYTES.get(("sample", path), lambda: path.read_bytes() if path.exists() else None)


@dataclass
class Current:
    """The model and image this session is looking at, and the cached trace of the pair."""

    name: str
    model: VisionTransformer
    spec: zoo.ModelSpec
    image: np.ndarray  # (H, W, 3) uint8 as uploaded, upright
    image_bytes: bytes
    trace: Trace
    verdict: Verdict | None = None  # the prediction against the image's known class, if any


@dataclass
class CurrentModel:
    """The chosen model alone, for pages that need no image."""

    name: str
    model: VisionTransformer
    spec: zoo.ModelSpec


def current_model() -> CurrentModel:
    """The sidebar's model (marked there when its weights are random); on a load error show one
    sentence and stop the page."""
    name = model_name()
    try:
        model, spec = cached_model(name)
    except zoo.ModelLoadError as err:
        st.error(tr("error.model", message=err.sentence(lang())))
        st.stop()
    if not spec.trained:
        st.sidebar.warning(tr("sidebar.untrained"))
    return CurrentModel(name, model, spec)


def current() -> Current:
    """Load what the sidebar chose; on a user error (or no image yet) show one sentence and stop the page."""
    chosen = current_model()
    name, model, spec = chosen.name, chosen.model, chosen.spec
    data = image_bytes()
    if data is None:
        st.info(tr("sidebar.no_image"))
        st.stop()
    try:
        array, notes = cached_image(data, lang())
        trace = cached_trace(name, data)
    except ImageError as err:
        st.error(err.sentence(lang()))
        st.stop()
    for note in notes:
        st.caption(tr("note.image", message=note))
    if vdata.inverts(decoded_image(data), model.config.preprocess, model.config.in_chans):
        st.caption(tr("note.inverted"))
    probs = trace.logits[0].float().softmax(dim=-1)  # (K,)
    return Current(name, model, spec, array, data, trace, verdict(probs, model.config.class_names, true_class()))


def subject() -> Subject:
    """What a step's description reads (``vitviz.steps``): the session's model, image and trace, in
    its language; on a user error, one sentence and the page stops (``current``)."""
    cur = current()
    dataset = dataset_text(images.split.label) if cur.verdict is not None and (images := test_images()) else ""
    return Subject(
        cur.model,
        cur.image,
        cur.trace,
        lang(),
        cur.verdict,
        cur.name,
        cur.image_bytes,
        CachedCompute(),
        dataset=dataset,
        spec=cur.spec,
        trained=cur.spec.trained,
    )


def model_subject() -> Subject:
    """What a step about the model alone reads (the card, the lab's test set): the session's model,
    no image; on a load error, one sentence and the page stops (``current_model``)."""
    chosen = current_model()
    return Subject(chosen.model, None, None, lang(), name=chosen.name, compute=CachedCompute(), spec=chosen.spec)


class CachedCompute(Compute):
    """``vitviz.steps.subject.Compute`` from the server's caches (``vitviz.app.caches``): one
    computation per (model, image) for every session, called as the work done ahead
    (``vitviz.app.ahead``) calls them, so that it finds what the read-ahead computed."""

    def model(self, name: str) -> zoo.Loaded:
        problem = try_model(name)  # once per session and name, with a spinner
        if problem is not None:
            raise problem
        return cached_model(name)

    def cnns(self) -> list[str]:
        return models.cnn_models()

    def snapshots(self):
        return cached_snapshots()

    def snapshot_model(self, epoch: int) -> VisionTransformer:
        return cached_snapshot_model(epoch)

    def busy(self, key: str) -> contextlib.AbstractContextManager:
        """What a page shows while a long computation runs: a spinner saying ``key``'s sentence."""
        return st.spinner(tr(key))

    def occlusion(self, subject: Subject, kind: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
        with self.busy("prediction.occlusion_running"):
            return cached_occlusion(subject.name, subject.image_bytes, kind, steps)

    def comparison(self, subject: Subject, cnn_name: str, class_index: int, with_ig: bool) -> dict[str, np.ndarray]:
        return cached_comparison(subject.name, cnn_name, subject.image_bytes, class_index, with_ig)

    def experiment(
        self, subject: Subject, cnn_name: str, kind: str, shift: int, seed: int, hidden: tuple[int, ...]
    ) -> compare.Experiment:
        # only the setting of the chosen experiment is part of its key (as ahead asks)
        return cached_experiment(
            subject.name, cnn_name, subject.image_bytes, kind, shift=shift, seed=seed, hidden=hidden
        )

    def picture(self, subject: Subject) -> Image.Image:
        return decoded_image(subject.image_bytes)

    def routes(self, subject: Subject) -> dict[str, float]:
        return cached_routes(subject.name, subject.image_bytes)

    def filter_components(self, subject: Subject) -> tuple[np.ndarray, np.ndarray]:
        return cached_filter_components(subject.name)

    def component_tiles(self, subject: Subject, k: int) -> plots.Figure:
        return cached_component_tiles(subject.name, k)

    def test_split(self, subject: Subject) -> lab.TestSplit | None:
        return testset.test_split(subject.name)

    def faithfulness(self, subject: Subject):
        with self.busy("trust.computing"):
            return analyses.cached_faithfulness(subject.name, subject.image_bytes)

    def stored(self, subject: Subject, kind: str) -> dict | None:
        return analyses.stored(subject.name, kind)

    def ablated(self, subject: Subject, heads, layers, mode: str, location: str | None) -> dict[str, np.ndarray]:
        return analyses.cached_ablated(subject.name, subject.image_bytes, heads, layers, mode, location)

    def test_set(self, subject: Subject, location: str):
        return testset.cached_test_set(location)

    def evaluation(self, subject: Subject, name: str, location: str):
        return testset.cached_evaluation(name, location)  # a progress bar the first time

    def mistake(self, subject: Subject, location: str, index: int) -> dict[str, np.ndarray]:
        return testset.cached_mistake(subject.name, location, index)

    def projection(self, subject: Subject):
        split = None if subject.spec.is_cnn else testset.test_split(subject.name)
        if split is None:  # no test images here: the map that ships with the weights, without its pictures
            return None if subject.spec.is_cnn else analyses.shipped_projection(subject.name), None, None
        found, data = analyses.cached_projection(subject.name, split.location)
        return found, data, len(testset.cached_test_set(split.location))


def chosen_test_image() -> tuple[str, int] | None:
    """The chosen test image as (class, index within the class), or None when the image comes from elsewhere."""
    if state.get("source") != "test" or state.get("test") is None:
        return None
    return values.test_image(state.get("test"))


def true_class() -> str | None:
    """The known class of the chosen image: its class when it is a test image."""
    chosen = chosen_test_image()
    return chosen[0] if chosen else None
