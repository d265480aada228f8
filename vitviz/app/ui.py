"""Streamlit glue shared by app.py and every page: caches, the sidebar, headers, navigation.

Everything that computes lives in the rest of vitviz; this module only connects it to
Streamlit. Models sit in ``st.cache_resource`` (one copy shared by every session, never
modified); traces sit in ``st.cache_data`` keyed by (model name, image bytes), so changing a
layer, a head or a query patch never runs the model again. Per-user choices live in
``st.session_state`` and are mirrored in the URL's query parameters so a shared link opens the
same view.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import streamlit as st
import torch
from PIL import Image

from vitviz import access, analysis, clicks, compare, handout, lab, plots, precision, zoo
from vitviz import data as vdata
from vitviz.app import charts
from vitviz.card import MACHINES_JOIN
from vitviz.config import ViTConfig
from vitviz.data import ImageError, image_notes, load_image, to_tensor
from vitviz.evaluate import EvalResult, evaluate, predictions_path
from vitviz.i18n import DEFAULT_LANGUAGE, LANGUAGES, class_label, t
from vitviz.model import VisionTransformer, on_weights
from vitviz.patches import compare_routes
from vitviz.prediction import Verdict, verdict
from vitviz.tour import ROOT, TOUR
from vitviz.trace import Trace

log = logging.getLogger(__name__)

SAMPLES = ROOT / "assets" / "samples"

DATASET_KEYS = {"CIFAR-10 (JPEG copy)": "data.cifar10_jpeg", "CIFAR-10 (image folder)": "data.cifar10_folder"}
URL_KEYS = ("model", "sample", "test", "step", "layer", "head", "query", "lang", "present", "card_model")


# ---------------------------------------------------------------------------------------------
# Language and text
# ---------------------------------------------------------------------------------------------


def lang() -> str:
    return st.session_state.get("lang", DEFAULT_LANGUAGE)


def tr(key: str, **values: object) -> str:
    """The sentence for ``key`` in the user's language."""
    return t(key, lang(), **values)


def label(class_name: str, short: bool = False) -> str:
    """A class name in the user's language ("고양이 (cat)", or "고양이" when ``short``), or as the
    model spells it."""
    return class_label(class_name, lang(), short)


# ---------------------------------------------------------------------------------------------
# Caches
# ---------------------------------------------------------------------------------------------


def server_policy() -> access.Policy:
    """What this server lets its visitors load, set by whoever starts it (``streamlit run app.py
    -- --models DIR --allow-hub``, or VITVIZ_MODELS, VITVIZ_ALLOW_HUB, ...; see vitviz.access):
    hub downloads are allowed by default only where Streamlit's server.address is loopback."""
    return access.server_policy(sys.argv[1:], os.environ, st.get_option("server.address"))


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_model(name: str) -> zoo.Loaded:
    """One loaded model per name for the whole server (read-only: never train or edit it),
    loaded as the server's policy allows; an uploaded one from ``uploaded_models``."""
    if name.startswith(zoo.UPLOAD):
        files = uploaded_models().get(name)
        if files is None:
            raise zoo.ModelLoadError("model.upload_gone")
        return zoo.load_upload(files, server_policy().max_upload_mb)[1]
    return zoo.load(name, policy=server_policy())


UPLOADS_KEPT = 8  # uploaded checkpoints the server keeps in memory (never on disk)


@st.cache_resource(show_spinner=False)
def uploaded_models() -> dict[str, dict[str, bytes]]:
    """The checkpoints visitors uploaded, by their ``zoo.upload_name``: file name -> bytes, the
    last UPLOADS_KEPT of them, in this process's memory only."""
    return {}


def keep_upload(files: dict[str, bytes]) -> str:
    """Keep an upload in ``uploaded_models`` and return its name.

    Raises:
        zoo.ModelLoadError: when the files are not one .safetensors (and perhaps its .json).
    """
    name = zoo.upload_name(files)
    store = uploaded_models()
    store.pop(name, None)
    store[name] = files
    while len(store) > UPLOADS_KEPT:
        store.pop(next(iter(store)), None)
    return name


# While a model loads, the page's elements from the last run stay on screen (greyed) until this
# run replaces them: they would show the last model's answer as if it were the new one's.
_HIDE_STALE = "<style>[data-testid='stMain'] [data-testid='stElementContainer'][data-stale='true'] { visibility: hidden; }</style>"


@contextmanager
def loading(name: str) -> Iterator[None]:
    """A spinner that says what is loading (a download, or a file), with the last run's page
    hidden under it until the load ends."""
    holder = st.empty()
    download = name.startswith(access.HUB_PREFIXES)
    text = (
        tr("model.downloading", name=model_title(name), seconds=round(server_policy().load_timeout_s))
        if download
        else tr("model.loading", name=model_title(name))
    )
    with holder.container():
        st.html(_HIDE_STALE)
        with st.spinner(text, show_time=True):
            yield
    holder.empty()


def try_model(name: str) -> zoo.ModelLoadError | None:
    """Why ``name`` does not load (None when it does), tried once per session and name, with a
    spinner (a registry model that needs no download is not tried: it always loads). A failed
    download is not tried again on every rerun; typing the name anew tries again."""
    spec = zoo.REGISTRY.get(name)
    if spec is not None and spec.offline:
        return None
    tried = st.session_state.setdefault("_models_tried", {})
    if name not in tried:
        try:
            with loading(name):
                cached_model(name)
            tried[name] = None
        except zoo.ModelLoadError as err:
            tried[name] = err
    return tried[name]


def forget_tries() -> None:
    """A model box's on_change: the next name is tried afresh (a download that failed offline may work now)."""
    st.session_state.pop("_models_tried", None)


def model_spec(name: str) -> zoo.ModelSpec:
    """A model's spec: the registry's, else the loaded model's (``try_model`` first)."""
    spec = zoo.REGISTRY.get(name)
    return spec if spec is not None and spec.offline else cached_model(name).spec


def tour_problem(name: str) -> zoo.ModelLoadError | None:
    """Why the tour cannot explain ``name`` (it does not load, or it is a CNN), or None."""
    problem = try_model(name)
    if problem is None and model_spec(name).is_cnn:
        return zoo.ModelLoadError("model.is_cnn", name=model_title(name) if name.startswith(zoo.UPLOAD) else name)
    return problem


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def decoded_image(image_bytes: bytes) -> Image.Image:
    """load_image once per image for the whole server (read-only: every step makes new images)."""
    return load_image(image_bytes)


# A resource, not data: every rerun gets the same Trace object instead of unpickling a copy (a
# ViT-B/16 trace is about 48 MB, some 95 ms to unpickle). Pages only read it (tests/app/test_app_core
# walks the tour and compares the cached trace with a fresh one). 12 entries bound the memory to
# about 0.6 GB at ViT-B/16's size.
@st.cache_resource(max_entries=12, ttl=3600, show_spinner=False)
def cached_trace(model_name: str, image_bytes: bytes) -> Trace:
    """The explained forward pass of one image, on the CPU in float32, keyed by (model name, image
    bytes), computed in the model's precision (``cached_precision``). Read-only: never change its
    tensors in place."""
    model, _ = cached_model(model_name)
    image = decoded_image(image_bytes)
    pixels = on_weights(to_tensor(image, model.config.preprocess, model.config.in_chans), model)
    return precision.explain(model, pixels, cached_precision(model_name).dtype)


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def cached_precision(model_name: str) -> precision.Precision:
    """bf16 or float32 for a model's explained pass, measured once per model for the server
    (``precision.choose`` on the sample photos; the server's VITVIZ_PRECISION, "auto" by default,
    can decide instead)."""
    model, _ = cached_model(model_name)
    if not isinstance(model, VisionTransformer):  # the tour's pages say what they need
        return precision.Precision()
    setting = os.environ.get("VITVIZ_PRECISION", "auto")
    if setting not in precision.SETTINGS:
        log.warning("VITVIZ_PRECISION=%s is not one of %s: measuring (auto)", setting, precision.SETTINGS)
        setting = "auto"
    config = model.config
    photos = [(SAMPLES / name).read_bytes() for name in sample_names()]
    probes = torch.cat([to_tensor(load_image(photo), config.preprocess, config.in_chans) for photo in photos])
    return precision.choose(model, on_weights(probes, model), setting)


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def cached_occlusion(model_name: str, image_bytes: bytes, order_kind: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """One occlusion curve, keyed by (model name, image bytes, order kind, steps).

    Returns:
        order: (N,) the patches in the order they are hidden (``analysis.occlusion_order``).
        curve: (steps + 1,) the probability of the unoccluded top class at every step.
    """
    model, _ = cached_model(model_name)
    trace = cached_trace(model_name, image_bytes)
    order = analysis.occlusion_order(trace, order_kind)  # type: ignore[arg-type]
    target = int(trace.logits[0].argmax())
    curve = analysis.occlusion_curve(model, trace.pixels, order, steps, target=target)
    return order.numpy(), curve.numpy()


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def cached_comparison(
    vit_name: str, cnn_name: str, image_bytes: bytes, class_index: int, with_ig: bool
) -> dict[str, np.ndarray]:
    """The ViT-vs-CNN page's arrays for one image and class, keyed by (models, image, class, IG on).

    Returns:
        "cnn_logits" (K,), "rollout" and "grad_rollout" (grid_h, grid_w), "gradcam" (H, W) of
        the CNN's input, and with ``with_ig`` "ig_vit" and "ig_cnn" (the inputs' H, W).
    """
    vit, _ = cached_model(vit_name)
    cnn, _ = cached_model(cnn_name)
    image = decoded_image(image_bytes)
    vit_pixels = on_weights(to_tensor(image, vit.config.preprocess, vit.config.in_chans), vit)
    cnn_pixels = on_weights(to_tensor(image, cnn.config.preprocess, cnn.config.in_chans), cnn)
    with torch.no_grad():
        cnn_logits = cnn(cnn_pixels)[0].float().cpu().numpy()
    trace = cached_trace(vit_name, image_bytes)
    arrays = {
        "cnn_logits": cnn_logits,
        "rollout": analysis.rollout_map(trace)[0].float().cpu().numpy(),
        "grad_rollout": analysis.grad_rollout(vit, vit_pixels, class_index).numpy(),
        "gradcam": compare.gradcam(cnn, cnn_pixels, class_index).numpy(),
    }
    if with_ig:
        arrays["ig_vit"] = compare.integrated_gradients(vit, vit_pixels, class_index).numpy()
        arrays["ig_cnn"] = compare.integrated_gradients(cnn, cnn_pixels, class_index).numpy()
    return arrays


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_experiment(
    vit_name: str, cnn_name: str, image_bytes: bytes, kind: str, shift: int, seed: int, hidden: tuple[int, ...]
) -> compare.Experiment:
    """``compare.run_experiment`` on one image, keyed by (models, image, experiment, its setting):
    the page's reruns (another map, the next student on the same sample) run neither model."""
    vit, _ = cached_model(vit_name)
    cnn, _ = cached_model(cnn_name)
    cnn_pixels = to_tensor(decoded_image(image_bytes), cnn.config.preprocess, cnn.config.in_chans)
    pixels = cached_trace(vit_name, image_bytes).pixels
    return compare.run_experiment(kind, vit, pixels, cnn, cnn_pixels, shift=shift, seed=seed, hidden=hidden)


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_filter_components(model_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every component of ``analysis.patch_embed_components`` of a model's patch embedding, once
    per model: an SVD of ViT-B/16's 768 x 768 filters takes seconds here, and the weights never
    change (read-only). All of them, so that their shares decide how many a page shows."""
    model, _ = cached_model(model_name)
    components, ratios = analysis.patch_embed_components(model.patch_embed.proj.weight, k=None)
    return components.cpu().numpy(), ratios.cpu().numpy()


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_component_tiles(model_name: str, k: int) -> plots.Figure:
    """``plots.component_tiles`` of the first ``k`` of ``cached_filter_components``: it depends on
    the model alone, and 28 small subplots took a tenth of a second to lay out on every rerun of
    page 3. Shared by every session: ``st.plotly_chart`` only reads it (``to_dict``, then JSON)."""
    components, ratios = cached_filter_components(model_name)
    return plots.component_tiles(components[:k], ratios[:k])


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def cached_routes(model_name: str, image_bytes: bytes) -> dict[str, float]:
    """``patches.compare_routes`` on one image's (pixels or hybrid features) and the model's
    patch embedding, keyed by (model name, image bytes)."""
    model, _ = cached_model(model_name)
    trace = cached_trace(model_name, image_bytes)
    proj = model.patch_embed.proj
    return compare_routes(trace.pixels if trace.features is None else trace.features, proj.weight, proj.bias)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_image(image_bytes: bytes, language: str) -> tuple[np.ndarray, list[str]]:
    """The decoded upload as an (H, W, 3) uint8 array, and load_image's notes in a language."""
    image = decoded_image(image_bytes)
    return np.asarray(image), image_notes(image, language)


def test_split(model_name: str) -> lab.TestSplit | None:
    """The test split that goes with a model (``lab.test_split_for``: Fashion-MNIST's for a
    Fashion-MNIST model, else the server's data), which the sidebar's picker and the lab both
    read; None when there is none here, or the model does not load (the page says why)."""
    try:
        model, _ = cached_model(model_name)
    except zoo.ModelLoadError:
        return None
    return lab.test_split_for(model.config.class_names, lab.default_test_root())


def test_images() -> lab.TestImages | None:
    """The sidebar model's test images, by class and index within the class, or None."""
    split = test_split(model_name())
    return lab.TestImages(split, cached_test_set) if split else None


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_test_set(root: str) -> vdata.ImageSet:
    """The lab's test images in memory, keyed by folder (read-only; shared by every session)."""
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


def warm_model() -> None:
    """The default model and its precision in the caches (at the server's startup, before anyone
    asks: ``vitviz.app.warm_up``)."""
    cached_precision(zoo.default_name())


def lab_pair(model_name: str) -> str | None:
    """The second model the lab sets beside a model from its first view: the shipped CNN beside
    the shipped ViT (the page offers it only when it predicts the same classes)."""
    return zoo.SHIPPED_CNN if model_name == zoo.SHIPPED else None


def warm_test_split() -> None:
    """The default model's test split in the cache and, for it and the model the lab sets beside
    it, the evaluation where it is stored (the shipped predictions of these weights on these
    images, or an earlier evaluation's disk cache): read, never run here, since an evaluation takes
    minutes and shows its progress to whoever opens the lab."""
    name = zoo.default_name()
    split = test_split(name)
    if split is None:
        return
    cached_test_set(split.location)
    for model_name in filter(None, (name, lab_pair(name))):
        try:
            cached_evaluation(model_name, split.location, _on_page=False, _stored_only=True)
        except (LookupError, ValueError):  # nothing stored, or other classes than the data's: the
            continue  # lab evaluates, or says why it cannot in the user's language, on its first visit


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_mistake(model_name: str, location: str, index: int) -> dict[str, np.ndarray]:
    """``lab.inspect_mistake`` of test image ``index``, keyed by (model name, data, index): the
    lab's maps and logit lens, computed once per image rather than on every click."""
    model, _ = cached_model(model_name)
    result = cached_evaluation(model_name, location)
    data = cached_test_set(location)
    predicted, true = int(result.predictions[index]), int(result.labels[index])
    return lab.inspect_mistake(model, data.images[index : index + 1], predicted, true)


# ---------------------------------------------------------------------------------------------
# State <-> URL
# ---------------------------------------------------------------------------------------------


@dataclass
class Choices:
    """The session's choices: one source of truth that outlives every click.

    Streamlit drops a widget's value when a run ends in ``st.switch_page`` (Next, Previous, the
    lab's "Open in the tour") and the URL's query parameters with it. So every run starts with
    ``sync_choices``: a widget value that is present is the newest and is kept here; one that
    Streamlit dropped comes back from here before any widget is drawn. The field names are the
    widgets' keys; the URL mirrors the fields in URL_KEYS with stable ids (the model's name, the
    sample's file name, a CIFAR-10 image as "class/index"; layers and heads counted from 1, as on
    screen, while code and session state count them from 0; the query as a token index, [CLS] = 0).
    """

    lang: str = DEFAULT_LANGUAGE
    model: str | None = None  # a registry name
    custom_model: str | None = None  # any other name (timm:, hf:, a path)
    source: str | None = None  # "sample", "upload" or "test"
    sample: str | None = None  # a file name in assets/samples
    test: str | None = None  # "class/index" of a test image of the model's dataset ("cat/3", "T-shirt/top/0")
    test_class: str | None = None
    test_index: int | None = None
    step: int | None = None  # the tour page, 0 = overview
    layer: int | None = None
    head: int | None = None
    query: int | None = None  # a token index, [CLS] = 0
    patch: int | None = None
    pos: int | None = None
    mistakes_true: int | None = None  # the lab's filters (class indices, or the lab's "any")
    mistakes_predicted: int | None = None
    mistakes_range: tuple[float, float] | None = None  # the lab's confidence range
    mistakes_page: int | None = None  # the lab's gallery page, from 1
    mistake: int | None = None  # the image the lab shows up close: its # in the filtered list, from 1
    mistakes_other: str | None = None  # a second model on the same images (a registry name, or a file)
    mistakes_other_path: str | None = None
    mistakes_pair: str | None = None  # which of the two gets the image wrong (lab.PAIRS)
    compare_cnn: str | None = None  # the ViT-vs-CNN page: the registry's CNN, or a file
    compare_cnn_path: str | None = None
    compare_class: int | None = None
    compare_ig: bool | None = None
    compare_experiment: str | None = None
    present: bool | None = None  # presenter mode: no sidebar, larger type, keys for a clicker
    card_model: str | None = None  # whose card the model card page shows: the sidebar's ViT or a CNN


def choices() -> Choices:
    """This session's Choices."""
    if "_choices" not in st.session_state:
        st.session_state["_choices"] = Choices()
    return st.session_state["_choices"]


SOURCES = ("sample", "upload", "test")


def cnn_models() -> list[str]:
    """The registry's CNNs, for the page that sets one beside the ViT."""
    return [name for name, spec in zoo.REGISTRY.items() if spec.is_cnn]


def model_title(name: str) -> str:
    """A registry model's title in the user's language; an upload's file name; any other name as
    it was typed."""
    if name.startswith(zoo.UPLOAD):
        return name.split(":", 2)[-1]
    return zoo.REGISTRY[name].title_in(lang()) if name in zoo.REGISTRY else name


def tour_models() -> list[str]:
    """The registry's ViTs: the tour explains patches, tokens and attention, which a CNN has not
    (those that download only where the server allows downloads)."""
    hub = server_policy().allow_hub
    return [name for name, spec in zoo.REGISTRY.items() if not spec.is_cnn and (spec.offline or hub)]


_INT_CHOICES = {
    "test_index",
    "step",
    "layer",
    "head",
    "query",
    "patch",
    "pos",
    "mistakes_true",
    "mistakes_predicted",
    "mistakes_page",
    "mistake",
    "compare_class",
}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_valid(name: str, value: object) -> bool:
    """Whether a widget's value is one of its options.

    A selectbox or radio whose labels are translated sends, on the run after a language switch,
    the label it showed before (the English title of a model, say) instead of its option: such
    a value is refused here, so it never reaches Choices, the URL or a page.
    """
    if value is None:
        return False
    if name in _INT_CHOICES:
        return isinstance(value, int) and not isinstance(value, bool)
    if name in ("present", "compare_ig"):
        return isinstance(value, bool)
    if name == "mistakes_range":
        return isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_number(v) for v in value)
    if name == "lang":
        return value in LANGUAGES
    if name == "model":
        return value in tour_models()
    if name == "source":
        return value in SOURCES
    if name == "compare_experiment":
        return value in compare.EXPERIMENTS
    if name == "mistakes_pair":
        return value in lab.PAIRS
    if name == "sample":
        return value in sample_names()
    if name == "test_class":
        images = test_images()
        return images is not None and value in images.classes()
    return isinstance(value, str)


def sync_choices() -> None:
    """Keep the widgets' newest valid values, and give back the ones Streamlit dropped or a
    language switch garbled (see Choices and _is_valid)."""
    kept = choices()
    for field in fields(Choices):
        value = st.session_state.get(field.name)
        if field.name in st.session_state and _is_valid(field.name, value):
            setattr(kept, field.name, value)
        elif getattr(kept, field.name) is not None:
            st.session_state[field.name] = getattr(kept, field.name)
        elif field.name in st.session_state:
            del st.session_state[field.name]


def remember(**values: object) -> None:
    """Set choices from code (before a page switch): in the widgets' keys and in Choices at once."""
    kept = choices()
    for key, value in values.items():
        setattr(kept, key, value)
        st.session_state[key] = value


COUNTED_FROM_ONE = ("layer", "head")  # 0-based in code and session state, from 1 on screen and in the URL


def _to_url(key: str, value: object) -> str:
    """A choice as the URL writes it: layers and heads counted from 1 (the mean of the heads as
    "mean"), presenter mode as 1, everything else as it is."""
    if key in COUNTED_FROM_ONE and isinstance(value, int) and not isinstance(value, bool):
        return "mean" if value < 0 else str(value + 1)
    if key == "present":
        return "1"
    return str(value)


def _from_url(key: str, text: str) -> object:
    """A URL parameter as session state holds it (the inverse of ``_to_url``)."""
    if key in COUNTED_FROM_ONE:
        if key == "head" and text == "mean":
            return -1
        return int(text) - 1 if text.isdigit() and int(text) >= 1 else text  # anything else: refused by sync_choices
    if key in ("query", "step") and text.lstrip("-").isdigit():
        return int(text)
    return text


def url_params() -> dict[str, str]:
    """The URL's query parameters for the session's choices."""
    return {
        key: _to_url(key, st.session_state[key])
        for key in URL_KEYS
        if st.session_state.get(key) not in (None, "", False)
    }


def init_state() -> None:
    """Every run: on the session's first, copy the URL's query parameters into session state;
    then bring back the choices a page switch dropped."""
    if not st.session_state.get("_url_loaded"):
        _load_url()
    sync_choices()
    relabel_after_language_switch()


def relabel_after_language_switch() -> None:
    """A select box shows the words its option had when it was picked, and Streamlit sends it
    its value only when that value changes: after a switch to Korean the sidebar's model would
    still read "CIFAR-10 ViT (shipped, ...)" among Korean options. On the run a switch starts,
    every choice is set again, which makes Streamlit send each widget its value anew, in the
    new language's words."""
    shown = st.session_state.get("_lang_shown")
    st.session_state["_lang_shown"] = lang()
    if shown is None or shown == lang():
        return
    for field in fields(Choices):
        if field.name != "lang" and field.name in st.session_state:
            st.session_state[field.name] = st.session_state[field.name]


def _load_url() -> None:
    params = st.query_params
    if "cifar" in params:  # a link from before test images came from other datasets than CIFAR-10
        st.session_state.setdefault("test", params["cifar"])
        del st.query_params["cifar"]
    for key in URL_KEYS:
        if key in params and key not in st.session_state:
            st.session_state[key] = _from_url(key, params[key])
    if "present" in st.session_state:
        st.session_state["present"] = st.session_state["present"] in ("1", "true", "True")
    if st.session_state.get("lang") not in LANGUAGES:
        st.session_state["lang"] = DEFAULT_LANGUAGE
    st.session_state["_url_loaded"] = True


def set_param(key: str, value: object | None) -> None:
    """Mirror one choice in the URL (None removes it), as ``_to_url`` writes it."""
    if value is None:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != _to_url(key, value):
        st.query_params[key] = _to_url(key, value)


def follow_step_link(page) -> None:
    """Open the page a shared link's ``step`` parameter asks for (once, on the session's first
    run at the root URL; a page's own URL opens it directly), then track the page in the URL."""
    files = [f for f, _, _ in TOUR]
    step = st.session_state.get("step")
    if not st.session_state.get("_step_followed"):
        st.session_state["_step_followed"] = True
        if isinstance(step, int) and 0 < step < len(files) and page.url_path == "":
            st.switch_page(files[step])
    titles = [tr(k) for _, k, _ in TOUR]
    index = titles.index(page.title) if page.title in titles else None
    st.session_state["step"] = index
    set_param("step", index)


def patch_picker(where, label_key: str, key: str, grid: tuple[int, int]) -> int:
    """A select box of the patches, counted from 1 with their row and column, on the centre patch
    at first (and again when a new model has fewer patches); returns the 0-based patch index."""
    grid_h, grid_w = grid
    count = grid_h * grid_w
    int_choice(key, (grid_h // 2) * grid_w + grid_w // 2, 0, count - 1)
    return where.selectbox(
        tr(label_key),
        list(range(count)),
        key=key,
        format_func=lambda i: tr("vectors.patch_option", index=i + 1, row=i // grid_w + 1, col=i % grid_w + 1),
    )


def choose_clicked_patch(chart_key: str, state_key: str, count: int, offset: int = 0) -> Callable[[], None]:
    """A patch figure's ``on_select`` callback: the clicked patch (of ``count``) becomes the
    widget ``state_key``'s value, plus ``offset`` (the [CLS] and other prefix tokens, for a
    token index). It runs before the page, so the page's picker shows the click."""

    def choose() -> None:
        index = clicks.patch_from_selection(st.session_state.get(chart_key), count)
        if index is not None:
            st.session_state[state_key] = offset + index

    return choose


def back_and_forward(
    columns, labels: tuple[str, str], key: str, on_click: Callable[[int], None], value: int, last: int
) -> None:
    """◀ and ▶ buttons in two columns (keys ``<key>_back`` / ``<key>_forward``) that call
    ``on_click(value - 1)`` or ``on_click(value + 1)``; off at 1 and at ``last``."""
    back, forward = columns
    back.button(
        f"◀ {labels[0]}",
        key=f"{key}_back",
        on_click=on_click,
        args=(value - 1,),
        disabled=value <= 1,
        width="stretch",
    )
    forward.button(
        f"{labels[1]} ▶",
        key=f"{key}_forward",
        on_click=on_click,
        args=(value + 1,),
        disabled=value >= last,
        width="stretch",
    )


def int_choice(key: str, default: int, low: int, high: int) -> int:
    """The session's value for a numeric widget key, clipped to [low, high] (for a new model)."""
    value = st.session_state.get(key, default)
    value = default if not isinstance(value, int) else min(max(value, low), high)
    st.session_state[key] = value
    return value


# ---------------------------------------------------------------------------------------------
# The sidebar: model, image, device, language
# ---------------------------------------------------------------------------------------------


DEFAULT_SAMPLE = "cat-chelsea.jpg"  # a CIFAR-10 class, so the shipped model has a fair first try


def sample_names() -> list[str]:
    """Sample photos, the default first."""
    names = sorted(p.name for p in SAMPLES.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    return sorted(names, key=lambda n: n != DEFAULT_SAMPLE)


# Korean wraps between words, never inside one ("자동차", not "자동/차" under a thumbnail); the
# lab's thumbnail buttons wrap their captions instead of cutting them, and every button of a
# gallery row fills its column, so a row's buttons are as tall as its tallest (at least 3 lines).
_STYLE = """
<style>
  [data-testid="stAppViewContainer"], [data-testid="stSidebar"],
  :is([data-testid="stAppViewContainer"], [data-testid="stSidebar"]) :is(p, li, span, label, button) { word-break: keep-all; overflow-wrap: break-word; }
  .st-key-mistakes_gallery button, .st-key-mistakes_gallery button * { white-space: normal; overflow: visible; text-overflow: clip; }
  .st-key-mistakes_gallery [data-testid="stElementContainer"]:has(.stButton) { flex: 1 1 auto; }
  .st-key-mistakes_gallery .stButton, .st-key-mistakes_gallery .stButton button { height: 100%; }
  .st-key-mistakes_gallery .stButton button { min-height: 5.2em; padding: 0.25rem 0.35rem; }
  .st-key-mistakes_detail { scroll-margin-top: 1rem; }
  [data-testid="stTable"] :is(th, td) p { overflow-wrap: anywhere !important; }  /* "trivialaugment" breaks */
  [data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { color: #4a4d57; }  /* 8.4:1 on white; Streamlit's grey is 3.7:1 */
</style>
"""


def sidebar() -> None:
    """Draw the shared sidebar and store the user's choices in session state."""
    init_state()
    st.html(_STYLE)
    side = st.sidebar
    codes = list(LANGUAGES)
    side.radio(tr("sidebar.language"), codes, format_func=LANGUAGES.get, key="lang", horizontal=True)
    set_param("lang", lang())

    names = tour_models()
    if st.session_state.get("model") not in names and st.session_state.get("model"):
        st.session_state["custom_model"] = st.session_state["model"]
        st.session_state["model"] = zoo.default_name()
    st.session_state.setdefault("model", zoo.default_name())
    side.selectbox(
        tr("sidebar.model"),
        names,
        key="model",
        help=tr("sidebar.model_help"),
        format_func=model_title,
    )
    # a typed name and an uploaded checkpoint are for the practitioner: folded away, so that a
    # class sees one model picker and one image uploader (open while either is in use)
    own = side.expander(tr("sidebar.own_model"), expanded=bool(wanted_model()))
    custom = own.text_input(
        tr("sidebar.custom_model"), key="custom_model", placeholder="timm:deit_tiny_patch16_224", on_change=forget_tries
    )
    _model_upload(own)
    in_use, wanted = model_name(), wanted_model()
    if wanted and in_use == wanted:  # said only once the model has loaded
        side.caption(
            tr("sidebar.model_upload_in_use", name=model_title(wanted)) if _uploaded() else tr("sidebar.custom_in_use")
        )
    else:  # the picker cuts a long name: the whole of it, and what the model is, wrap below
        for asked in (wanted, st.session_state["model"]):
            if asked and asked != in_use and (problem := tour_problem(asked)) is not None:
                # on the page, above its title: the sidebar's foot is off screen, and hidden in presenter mode
                st.warning(tr("sidebar.custom_not_used", message=problem.sentence(lang()), model=model_title(in_use)))
                break
        spec = zoo.REGISTRY[in_use]
        side.caption(f"**{spec.title_in(lang())}**: {spec.description_in(lang())}")
    set_param("model", custom.strip() or st.session_state["model"])

    side.subheader(tr("sidebar.image"))
    sources = list(SOURCES)
    if "source" not in st.session_state:
        st.session_state["source"] = "test" if st.session_state.get("test") else "sample"
    images = test_images()
    dataset = dataset_text(images.split.label) if images else ""
    source = side.radio(
        tr("sidebar.source"),
        sources,
        key="source",
        format_func=lambda s: (
            tr(f"sidebar.source.{s}_any") if s == "test" and not dataset else tr(f"sidebar.source.{s}", dataset=dataset)
        ),
    )
    if source == "sample":
        samples = sample_names()
        if st.session_state.get("sample") not in samples:
            st.session_state["sample"] = samples[0]
        side.selectbox(tr("sidebar.sample"), samples, key="sample")
        set_param("sample", st.session_state["sample"])
        set_param("test", None)
    elif source == "upload":
        upload = side.file_uploader(tr("sidebar.upload"), type=None, key="upload")
        side.caption(tr("sidebar.upload_limit", limit=st.get_option("server.maxUploadSize")))
        if upload is not None:
            st.session_state["upload_bytes"] = upload.getvalue()
            st.session_state["upload_name"] = upload.name
        elif st.session_state.get("upload_bytes"):  # the uploader forgets its file on a page switch; the image stays
            side.caption(tr("sidebar.upload_kept", name=st.session_state.get("upload_name", "")))
        set_param("sample", None)
        set_param("test", None)
    else:
        _test_picker(side, images)
    handout_button(side)

    device = zoo.pick_device()
    side.caption(f"{tr('sidebar.device')}: {device_text(device)}")
    side.caption(f"{tr('sidebar.precision')}: {precision_text(model_name())}", help=tr("sidebar.precision_help"))
    side.toggle(tr("present.toggle"), key="present", help=tr("present.help"))
    set_param("present", "1" if st.session_state.get("present") else None)
    if st.session_state.get("present"):
        presenter_mode()


# Presenter mode: the sidebar hidden, the page's text larger for a projector (by its root font size,
# so that everything is laid out again to fit: a CSS zoom cut the figures at the column's and the
# window's edge; figures grow in plots.theme), and the keys a clicker
# sends (→ / PageDown, ← / PageUp) pressing Next / Previous; Escape leaves. Keys typed into a
# field, a select box or a slider stay theirs.
_PRESENTER = """
<div id="vitviz-present"></div>
<style>
  [data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] { display: none !important; }
  html { font-size: 20px; }  /* Streamlit sizes text and spacing in rem: PRESENTER_REM times its 16 px */
  [data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 1.5rem; }
</style>
<script>
  (function () {
    if (window.__vitvizKeys) return;
    window.__vitvizKeys = true;
    const press = (pattern) => {
      const button = Array.from(document.querySelectorAll("button")).find((b) => pattern.test(b.innerText.trim()));
      if (button) button.click();
    };
    document.addEventListener("keydown", (event) => {
      if (!document.getElementById("vitviz-present")) return;
      const target = event.target;
      if (target && (target.closest("input, textarea, select, [role=slider], [role=combobox], [role=listbox]"))) return;
      if (event.key === "ArrowRight" || event.key === "PageDown") { press(/→$/); event.preventDefault(); }
      else if (event.key === "ArrowLeft" || event.key === "PageUp") { press(/^←/); event.preventDefault(); }
      else if (event.key === "Escape") { press(/^✕/); }
    });
  })();
</script>
"""


def device_text(device: torch.device) -> str:
    """Where the model runs, in the user's language: "CPU (2 threads)" / "CPU (스레드 2개)", or the GPU's name."""
    return (
        tr("sidebar.device_cpu", threads=torch.get_num_threads()) if device.type == "cpu" else zoo.device_label(device)
    )


def precision_text(name: str) -> str:
    """The precision the model's explained pass runs in, and why, in the user's language; nothing
    is measured for a model that does not load (its page says why)."""
    try:
        chosen = cached_precision(name)
    except zoo.ModelLoadError:
        return "-"
    if chosen.dtype == torch.bfloat16:
        if chosen.speedup is None:
            return tr("sidebar.precision_bf16_set")
        return tr("sidebar.precision_bf16", speedup=f"{chosen.speedup:.1f}")
    if chosen.attention_diff is not None and chosen.attention_diff > precision.ATTENTION_TOLERANCE:
        return tr("sidebar.precision_fp32_moved", diff=f"{chosen.attention_diff:.3f}")
    if chosen.speedup is not None and chosen.speedup > 1:
        return tr("sidebar.precision_fp32_little", speedup=f"{chosen.speedup:.1f}")
    if chosen.speedup is not None:
        return tr("sidebar.precision_fp32_faster", speedup=f"{1 / chosen.speedup:.1f}")
    return "float32"


def dataset_text(label: str) -> str:
    """A dataset's name as ``vitviz.data.dataset_label`` and model cards write it, in the user's language."""
    key = DATASET_KEYS.get(label)
    return tr(key) if key else label


def hardware_text(label: str) -> str:
    """A card's hardware ("CPU (Intel(R) Xeon(R) Processor, 2 threads)", as ``train.hardware_label``
    writes it, or the machines a run moved between, joined by ``MACHINES_JOIN``) in the user's
    language; other labels as written."""
    texts = []
    for machine in label.split(MACHINES_JOIN):
        found = re.fullmatch(r"CPU \((.+), (\d+) threads\)", machine)
        texts.append(tr("card.hardware_cpu", name=found[1], threads=found[2]) if found else machine)
    return MACHINES_JOIN.join(texts)


def presenter_mode() -> None:
    """Hide the sidebar, enlarge the page's text and bind the clicker's keys (see _PRESENTER)."""
    st.html(_PRESENTER, unsafe_allow_javascript=True)
    st.button(
        f"✕ {tr('present.leave')}",
        key="present_leave",
        on_click=remember,
        kwargs={"present": False},
        help=tr("present.leave_help"),
    )


def presenting() -> bool:
    """Whether this session is in presenter mode."""
    return bool(st.session_state.get("present"))


def theme_charts() -> None:
    """Every figure a page hands to st.plotly_chart (``st.plotly_chart``, ``column.plotly_chart``)
    is drawn through ``plots.theme``, for this session's mode: the one place where presenter mode
    makes figures larger. Streamlit's own chart theme is off by default (``theme=None``): it would
    write the tick labels small and light grey over the figure's template. app.py calls this on
    every run; the hook goes in once, for the server."""
    from streamlit.delta_generator import DeltaGenerator

    charts.share_figures(presenting)  # figures built once for the server, sent as JSON written once
    draw = DeltaGenerator.plotly_chart
    if getattr(draw, "themed", False):
        return

    @functools.wraps(draw)
    def themed(self, figure_or_data, *args, theme=None, **kwargs):
        if not isinstance(figure_or_data, plots.Figure):
            return draw(self, figure_or_data, *args, theme=theme, **kwargs)
        # A cached figure is one object for every session: theming it for one session's mode and
        # serialising it happen under the figure's own lock, so another session in the other mode
        # cannot re-theme it in between (figures of one session never wait on each other's locks).
        lock = figure_or_data.__dict__.setdefault("_vitviz_lock", threading.Lock())
        with lock:
            plots.theme(figure_or_data, presenting())
            return draw(self, figure_or_data, *args, theme=theme, **kwargs)

    themed.themed = True
    DeltaGenerator.plotly_chart = themed
    st.plotly_chart = st._main.plotly_chart  # streamlit bound st.plotly_chart to the old method at its import


def _test_picker(side, images: lab.TestImages | None) -> None:
    """A class, an index within it, and a dice: any test image of the model's dataset."""
    if images is None:
        side.info(tr("sidebar.no_test"))
        return
    classes = images.classes()
    cls, _, index = str(st.session_state.get("test", "")).rpartition("/")  # class names may hold "/"
    if st.session_state.get("test_class") not in classes:  # none yet, or the last model's dataset
        st.session_state["test_class"] = cls if cls in classes else classes[0]
        st.session_state["test_index"] = int(index) if index.isdigit() and cls in classes else 0
    if not isinstance(st.session_state.get("test_index"), int):
        st.session_state["test_index"] = 0
    side.selectbox(tr("sidebar.test_class"), classes, key="test_class", format_func=label)
    count = images.count(st.session_state["test_class"])
    st.session_state["test_index"] = min(max(st.session_state["test_index"], 0), max(count - 1, 0))
    side.number_input(tr("sidebar.test_index"), 0, max(count - 1, 0), key="test_index")
    side.button(
        tr("sidebar.test_random"), key="test_random", on_click=_random_test, args=(images,), icon=":material/casino:"
    )
    st.session_state["test"] = f"{st.session_state['test_class']}/{st.session_state['test_index']}"
    set_param("test", st.session_state["test"])
    set_param("sample", None)


def _random_test(images: lab.TestImages) -> None:
    """A button's callback (it runs before the picker's widgets): any test image."""
    st.session_state["test_class"], st.session_state["test_index"] = images.random()


def handout_button(where) -> None:
    """A button that downloads the tour of the session's image through its model, in its
    language, as one offline HTML file (``vitviz.handout``). The file is made when the button is
    clicked: Streamlit then calls ``make`` in a thread of its own, outside any run of the page,
    so the session's choices are read here, at drawing time."""
    name, data, language = model_name(), image_bytes(), lang()
    if data is None:
        return
    try:
        model, spec = cached_model(name)
    except zoo.ModelLoadError:  # the page says why
        return
    if spec.is_cnn:
        return
    chosen = chosen_test_image()
    images = test_images() if chosen else None
    truth = handout.Truth(chosen[0], dataset_text(images.split.label)) if chosen and images else None
    if chosen:
        image_name = f"test={chosen[0]}/{chosen[1]}"
    elif st.session_state.get("source") == "upload":
        image_name = str(st.session_state.get("upload_name") or "upload")
    else:
        image_name = str(st.session_state.get("sample") or DEFAULT_SAMPLE)

    def make() -> bytes:
        cnn_name = handout.matching_cnn(model.config.class_names)
        cnn = cached_model(cnn_name).model if cnn_name else None
        trace = cached_trace(name, data)
        with charts.private():  # the handout resizes and themes its figures: never the sessions' shared ones
            text = handout.build(model, spec, data, language, image_name=image_name, truth=truth, trace=trace, cnn=cnn)
        return text.encode("utf-8")

    where.download_button(
        tr("handout.button"),
        make,
        file_name=handout.file_name(name, image_name, language),
        mime="text/html",
        key="handout_download",
        help=tr("handout.button_help"),
        icon=":material/download:",
        on_click="ignore",
        width="stretch",
    )


def _uploaded() -> str | None:
    return st.session_state.get("model_upload")


def wanted_model() -> str:
    """The model the visitor asked for instead of the list's: their upload, else the typed name."""
    return _uploaded() or str(st.session_state.get("custom_model", "") or "").strip()


def model_name() -> str:
    """The ViT the tour explains: the upload or the typed name once it has loaded as a ViT, else
    the list's choice, else (a download from the list that failed) the default model."""
    wanted = wanted_model()
    if wanted and tour_problem(wanted) is None:
        return wanted
    picked = st.session_state.get("model", zoo.default_name())
    if picked in zoo.REGISTRY and tour_problem(picked) is None:
        return picked
    return zoo.default_name()


def _model_upload(side) -> None:
    """The sidebar's uploader of a visitor's own checkpoint (read in memory, never saved), and,
    once one is in use, a button to stop using it."""
    limit = server_policy().max_upload_mb
    files = side.file_uploader(
        tr("sidebar.model_upload"),
        type=["safetensors", "json"],
        accept_multiple_files=True,
        key=f"model_upload_files_{st.session_state.get('_upload_round', 0)}",  # a new key empties it
        help=tr("sidebar.model_upload_help", limit=limit),
        max_upload_size=limit,
    )
    if files:
        try:
            name = keep_upload({file.name: file.getvalue() for file in files})
        except zoo.ModelLoadError as err:
            side.warning(err.sentence(lang()))
        else:
            if name != _uploaded():
                forget_tries()
            st.session_state["model_upload"] = name
    if _uploaded():
        side.button(tr("sidebar.model_upload_clear"), key="model_upload_clear", on_click=_stop_upload)


def _stop_upload() -> None:
    st.session_state.pop("model_upload", None)
    st.session_state["_upload_round"] = st.session_state.get("_upload_round", 0) + 1


def image_bytes() -> bytes | None:
    """The bytes of the chosen image, or None (with a message shown) when there is none."""
    source = st.session_state.get("source", "sample")
    if source == "upload":
        return st.session_state.get("upload_bytes")
    if source == "test":
        images, chosen = test_images(), chosen_test_image()
        if images is None or chosen is None:
            return None
        return images.image_bytes(*chosen)
    name = st.session_state.get("sample") or sample_names()[0]
    path = SAMPLES / Path(name).name
    return path.read_bytes() if path.exists() else None


# ---------------------------------------------------------------------------------------------
# What every page needs: the model, the image, the trace
# ---------------------------------------------------------------------------------------------


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


def chosen_test_image() -> tuple[str, int] | None:
    """The chosen test image as (class, index within the class), or None when the image comes from elsewhere."""
    if st.session_state.get("source") != "test" or "test" not in st.session_state:
        return None
    cls, _, index = str(st.session_state["test"]).rpartition("/")  # "T-shirt/top/3": the last "/" ends the class
    return (cls, int(index)) if cls and index.isdigit() else None


def true_class() -> str | None:
    """The known class of the chosen image: its class when it is a test image."""
    chosen = chosen_test_image()
    return chosen[0] if chosen else None


def show_verdict(found: Verdict | None, where=None) -> None:
    """One coloured sentence: right or wrong, and where the true class ranks (nothing when unknown)."""
    if found is None:
        return
    where = where or st
    values = {
        "truth": label(found.true_class),
        "pred": label(found.predicted),
        "p": f"{found.probability:.1%}",
        "rank": found.rank,
        "n": found.num_classes,
        "dataset": dataset_text(images.split.label) if (images := test_images()) else "",
    }
    if found.correct:
        where.success(tr("verdict.right", **values), icon=":material/check_circle:")
    else:
        where.warning(tr("verdict.wrong", **values), icon=":material/cancel:")


def show_known_classes(config: ViTConfig, found: Verdict | None, where=None) -> None:
    """Under a prediction of an image with no known class: a model with a short list of classes
    (CIFAR-10's 10) gives every image one of them, whatever the image shows."""
    names = config.class_names
    if found is not None or not names or len(names) > 20:
        return
    (where or st).caption(tr("prediction.known_classes", n=len(names), names=", ".join(map(label, names))))


def grid_hover() -> str:
    """A patch map's hover in the user's language ("patch 5 (row 2, col 1): 0.1234"; "패치 5 (2행 1열)")."""
    where = tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
    return f"{tr('hover.patch')} %{{customdata[2]}} ({where}): %{{z:.4f}}<extra></extra>"


def bar_title(title: str, found: Verdict | None) -> str:
    """A top-k chart's title, with what its colours mean when the true class is known."""
    if found is None:
        return title
    return f"{title} ({tr('verdict.legend_right' if found.correct else 'verdict.legend_wrong')})"


def class_bars(names: list[str], values: list[float], title: str, found: Verdict | None, height: int):  # -> go.Figure
    """Top-k probabilities, best first, as bars labelled in the user's language: the answer in red
    and, when the image's class is known, the true class in green (the title says so)."""
    correct = names.index(found.true_class) if found is not None and found.true_class in names else None
    return plots.bars(
        [label(n) for n in names], values, title=bar_title(title, found), height=height, highlight=0, correct=correct
    )


# ---------------------------------------------------------------------------------------------
# Page furniture
# ---------------------------------------------------------------------------------------------


def header(page_key: str, intro_key: str, shape: tuple[int, ...] | str | None = None) -> None:
    """Title, one explaining paragraph, and the live shape of the tensor at this step."""
    st.title(tr(page_key))
    st.markdown(tr(intro_key))
    if shape is not None:
        text = shape if isinstance(shape, str) else "(" + ", ".join(map(str, shape)) + ")"
        st.markdown(f"**{tr('shape.label')}:** `{text}`")


def nav(script: str) -> None:
    """Previous / Next buttons that walk the tour in order (``ask_step``)."""
    files = [f for f, _, _ in TOUR]
    if script not in files:
        return
    index = files.index(script)
    st.divider()
    left, middle, right = st.columns([1, 2, 1])
    if index > 0:
        left.button(f"← {tr('nav.previous')}", key="nav_prev", width="stretch", on_click=ask_step, args=(index - 1,))
    middle.markdown(
        f"<div style='text-align:center;padding-top:0.4rem'>{tr('nav.step', index=index, total=len(files) - 1)}</div>",
        unsafe_allow_html=True,
    )
    if index < len(files) - 1:
        right.button(
            f"{tr('nav.next')} →", key="nav_next", width="stretch", type="primary", on_click=ask_step, args=(index + 1,)
        )


def ask_step(step: int) -> None:
    """Previous / Next's callback, run before the run their click starts: that run opens the step
    (``follow_asked_step``) instead of drawing the page the click came from once more."""
    st.session_state["_asked_step"] = step


def follow_asked_step() -> None:
    """app.py, right after st.navigation: open the step a Previous / Next click asked for."""
    step = st.session_state.pop("_asked_step", None)
    if step is not None:
        go_to(step)


# The page's scroll box goes back to its top (a constant script: nothing a user typed is in it).
TO_THE_TOP = """<script>
(() => {
  // once the run has drawn the new page: the old page's elements, replaced one by one, would
  // otherwise pull the view back down (the browser's scroll anchoring)
  const app = document.querySelector("[data-testid='stApp']");
  const started = Date.now();
  const top = () => {
    if (app && app.getAttribute("data-test-script-state") === "running" && Date.now() - started < 10000) {
      setTimeout(top, 50);
      return;
    }
    document.querySelector("[data-testid='stMain']")?.scrollTo({top: 0});
  };
  top();
})();
</script>"""


def open_at_the_top(page) -> None:
    """app.py, before a page runs: a page the session arrives at (Next at the foot of the last one,
    Previous, a sidebar link, the lab's "Open in the tour") opens at its title. Streamlit keeps
    the scroll box where the last page left it when the new one is as tall, so a class would see
    the middle of the next page. Reruns on the same page (a slider, a language switch) stay put."""
    if st.session_state.get("_page_shown") != page.url_path:
        st.session_state["_page_shown"] = page.url_path
        # a body of its own each time: Streamlit runs an st.html's script when its body is new
        st.session_state["_arrivals"] = arrivals = st.session_state.get("_arrivals", 0) + 1
        # in the sidebar, after its last widget: in the page it would push the title down by a gap
        st.sidebar.html(TO_THE_TOP.replace("<script>", f"<script>// arrival {arrivals}"), unsafe_allow_javascript=True)


# Scroll a keyed container into view (a constant script and a key written in code, never a
# user's text), once the run has drawn it: the lab's thumbnails open their image below the gallery.
SCROLL_TO = """<script>
(() => {
  const app = document.querySelector("[data-testid='stApp']");
  const started = Date.now();
  const go = () => {
    if (app && app.getAttribute("data-test-script-state") === "running" && Date.now() - started < 10000) {
      setTimeout(go, 50);
      return;
    }
    document.querySelector(".st-key-KEY")?.scrollIntoView({block: "start", behavior: "smooth"});
  };
  go();
})();
</script>"""


def scroll_to(key: str) -> None:
    """Bring the container ``st.container(key=key)`` into view at the end of this run (in the
    sidebar, like ``open_at_the_top``'s script, so the page gets no gap)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        raise ValueError(f"A container key has letters, digits, - and _ only, not {key!r}.")
    st.session_state["_scrolls"] = scrolls = st.session_state.get("_scrolls", 0) + 1  # a new body runs anew
    st.sidebar.html(
        SCROLL_TO.replace("KEY", key).replace("<script>", f"<script>// scroll {scrolls}"), unsafe_allow_javascript=True
    )


def go_to(step: int) -> None:
    """Open a tour page, keeping the session's choices (and the URL's copy of them)."""
    remember(step=step)
    st.switch_page(TOUR[step][0], query_params={**url_params(), "step": str(step)})


PRESENTER_REM = 1.25  # presenter mode's root font size against Streamlit's 16 px (_PRESENTER)


def table_height(rows: int, limit: int = 720) -> int:
    """Pixels for st.dataframe to show ``rows`` rows and its header without scrolling (up to a
    limit), for rows as tall as this session's mode draws them."""
    return round(min(35 * (rows + 1) + 3, limit) * (PRESENTER_REM if presenting() else 1))


def png_bytes(array: np.ndarray) -> bytes:
    """An (H, W, 3) uint8 array as PNG bytes (for downloads and thumbnails)."""
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, "PNG")
    return buffer.getvalue()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """Arrays as the bytes of a compressed .npz file."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def download_npz(label_key: str, file_name: str, key: str, **arrays: np.ndarray) -> None:
    """A download button for the arrays behind a figure; the file is made when it is clicked
    (compressing ViT-B/16's arrays on every run cost a tenth of a second or more)."""
    kept = {name: np.asarray(value) for name, value in arrays.items()}
    st.download_button(
        tr(label_key), lambda: npz_bytes(kept), file_name=file_name, mime="application/octet-stream", key=key
    )


def download_csv(label_key: str, file_name: str, key: str, text: Callable[[], str]) -> None:
    """A download button for a table as CSV; ``text`` makes it when the button is clicked (the
    lab's list of 1,818 mistakes took a tenth of a second on every run)."""
    st.download_button(tr(label_key), lambda: text().encode(), file_name=file_name, mime="text/csv", key=key)
