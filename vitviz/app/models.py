"""The models a session may look at: the server's policy, the shared model cache, visitors'
uploads, and loading with a spinner that says what is happening."""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from vitviz.app import session, turns, web
from vitviz.app.text import model_title, tr
from vitviz.models import zoo
from vitviz.server import access, deadline

log = logging.getLogger(__name__)


def server_policy() -> access.Policy:
    """What this server lets its visitors load, set by whoever starts it (``streamlit run app.py
    -- --models DIR --allow-hub``, or VITVIZ_MODELS, VITVIZ_ALLOW_HUB, ...; see vitviz.server.access):
    hub downloads are allowed by default only where Streamlit's server.address is loopback."""
    settings = tuple(os.environ.get(name) for name in POLICY_ENVIRONMENT)
    return _policy(tuple(sys.argv[1:]), settings, st.get_option("server.address"))


def upload_limit_mb() -> int:
    """The one upload limit, in MB, for images and checkpoints alike: the server's
    ``--max-upload-mb``, which ``vitviz app`` also gives Streamlit as ``server.maxUploadSize``.
    Streamlit refuses a larger file itself (HTTP 413, before the app sees it), so where the two
    differ (``streamlit run app.py -- --max-upload-mb 80`` alone) the smaller one holds, and the
    server's log says how to set both."""
    return _upload_limit(server_policy().max_upload_mb, int(st.get_option("server.maxUploadSize")))


@functools.lru_cache(maxsize=4)
def _upload_limit(ours: int, streamlits: int) -> int:
    if ours != streamlits:
        log.warning(
            "--max-upload-mb is %d MB but Streamlit's server.maxUploadSize is %d MB: uploads stop at %d MB. "
            "Start the app with `vitviz app --max-upload-mb N`, which sets both.",
            ours,
            streamlits,
            min(ours, streamlits),
        )
    return min(ours, streamlits)


POLICY_ENVIRONMENT = (
    "VITVIZ_MODELS",
    "VITVIZ_ALLOW_HUB",
    "VITVIZ_MAX_MODEL_MB",
    "VITVIZ_MAX_UPLOAD_MB",
    "VITVIZ_LOAD_TIMEOUT_S",
    "VITVIZ_MAX_IMAGE_MB",
    "VITVIZ_MAX_GFLOP",
    "VITVIZ_MAX_RUN_S",
)


@functools.lru_cache(maxsize=16)
def _policy(argv: tuple[str, ...], settings: tuple[str | None, ...], address: str | None) -> access.Policy:
    """The policy for one set of server settings, worked out once: every run of every session asks
    for it, and parsing the options and resolving the folders each time was a few percent of a
    class's server CPU (docs/benchmarks.md)."""
    environ = {name: value for name, value in zip(POLICY_ENVIRONMENT, settings, strict=True) if value is not None}
    return access.server_policy(argv, environ, address)


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_model(name: str) -> zoo.Loaded:
    """One loaded model per name for the whole server (read-only: never train or edit it),
    loaded as the server's policy allows; an uploaded one from ``uploaded_models``."""
    if name.startswith(zoo.UPLOAD):
        files = uploaded_models().get(name)
        if files is None:
            raise zoo.ModelLoadError("model.upload_gone")
        return zoo.load_upload(files, dataclasses.replace(server_policy(), max_upload_mb=upload_limit_mb()))[1]
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


@contextmanager
def loading(name: str, aside: bool = True) -> Iterator[None]:
    """A spinner that says what is loading (a download, or a file), with the last run's page
    hidden under it until the load ends; ``aside``: the run gives up its turn first (a download
    may take minutes: the class goes on beside it)."""
    holder = st.empty()
    download = name.startswith(access.HUB_PREFIXES)
    text = (
        tr("model.downloading", name=model_title(name), seconds=round(server_policy().load_timeout_s))
        if download
        else tr("model.loading", name=model_title(name))
    )
    if aside:
        turns.step_aside()
    with holder.container():
        st.html(web.style("hide_stale.css"))  # the last model's answer is not this one's
        with st.spinner(text, show_time=True):
            yield
    holder.empty()


def try_model(name: str) -> zoo.ModelLoadError | None:
    """Why ``name`` does not load (None when it does), tried once per session and name, with a
    spinner (a registry model that needs no download always loads: one built from random weights
    gets the spinner at its first pick, as building ViT-B/16 takes seconds). A failed
    download is not tried again on every rerun; typing the name anew tries again."""
    spec = zoo.REGISTRY.get(name)
    if spec is not None and spec.offline:
        if spec.source == "random" and name not in st.session_state.setdefault("_models_seen", set()):
            with loading(name, aside=False):  # built at its first pick: seconds for ViT-B/16, said so
                cached_model(name)
            st.session_state["_models_seen"].add(name)
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
        return zoo.ModelLoadError("model.is_cnn", name=model_title(name))
    return problem


def wanted_model(typed: object) -> str:
    """The model the visitor asked for instead of the list's: their upload, else the name they
    typed (``typed``: the sidebar's choice ``custom_model``)."""
    return session.model_upload() or str(typed or "").strip()


def tour_model(picked: object, typed: object) -> str:
    """The ViT the tour explains, from the sidebar's choices ``model`` (``picked``) and
    ``custom_model`` (``typed``): the upload or the typed name once it has loaded as a ViT, else
    the list's choice, else (a download from the list that failed) the default model."""
    wanted = wanted_model(typed)
    if wanted and tour_problem(wanted) is None:
        limit_visitor_model(wanted)
        return wanted
    if picked in zoo.REGISTRY and tour_problem(picked) is None:
        return picked
    return zoo.default_name()


def tour_models() -> list[str]:
    """The registry's ViTs: the tour explains patches, tokens and attention, which a CNN has not
    (those that download only where the server allows downloads)."""
    hub = server_policy().allow_hub
    return [name for name, spec in zoo.REGISTRY.items() if not spec.is_cnn and (spec.offline or hub)]


def cnn_models() -> list[str]:
    """The registry's CNNs, for the page that sets one beside the ViT."""
    return [name for name, spec in zoo.REGISTRY.items() if spec.is_cnn]


def lab_pair(model_name: str) -> str | None:
    """The second model the lab sets beside a model from its first view: the shipped CNN beside
    the shipped ViT (the page offers it only when it predicts the same classes)."""
    return zoo.SHIPPED_CNN if model_name == zoo.SHIPPED else None


@contextmanager
def within_limits() -> Iterator[None]:
    """A run's scope: once it learns that its model is a visitor's (``limit_visitor_model``), it
    computes within the server's ``--max-run-s`` and stops when its visitor leaves; over the
    limit, the page ends with one sentence instead of holding the class's cores."""
    try:
        with deadline.limit():  # no limit until the run's model is known to be a visitor's
            yield
    except deadline.Stopped as err:
        if err.reason == "time":
            name = st.session_state.get("_limited_model", "")
            st.error(tr("model.too_slow", name=model_title(name), seconds=f"{err.seconds:g}"))


def limit_visitor_model(name: str) -> None:
    """The run's model is ``name``: a visitor's (anything but the registry's) starts the run's clock."""
    if name in zoo.REGISTRY:
        return
    session = turns.session_id()
    if deadline.tighten(server_policy().max_run_s, stopped=lambda: not turns.session_alive(session)):
        st.session_state["_limited_model"] = name
