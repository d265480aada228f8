"""The shared sidebar: the language, the model, the image, the handout, the device and presenter mode."""

from __future__ import annotations

import streamlit as st
import torch

from vitviz.analyses import lab
from vitviz.app import charts, session, state, turns, web
from vitviz.app.caches import DEFAULT_SAMPLE, cached_precision, cached_trace, sample_names
from vitviz.app.current import (
    chosen_test_image,
    image_bytes,
    model_name,
    test_images,
    uploaded_model,
    wanted_model,
)
from vitviz.app.models import (
    cached_model,
    forget_tries,
    keep_upload,
    tour_models,
    tour_problem,
    upload_limit_mb,
)
from vitviz.app.presenter import presenter_mode
from vitviz.app.text import dataset_text, label, lang, model_title, tr
from vitviz.models import zoo
from vitviz.render import handout
from vitviz.render.i18n import LANGUAGES
from vitviz.server import values


def sidebar() -> None:
    """Draw the shared sidebar; the choices it holds are read with ``vitviz.app.state`` and ``current``."""
    st.html(web.style("style.css"))
    side = st.sidebar
    state.widget(
        side.radio, "lang", tr("sidebar.language"), list(LANGUAGES), format_func=LANGUAGES.get, horizontal=True
    )
    _model_picker(side)
    _image_picker(side)
    handout_button(side)
    side.caption(f"{tr('sidebar.device')}: {device_text(zoo.pick_device())}")
    side.caption(f"{tr('sidebar.precision')}: {precision_text(model_name())}", help=tr("sidebar.precision_help"))
    if state.widget(side.toggle, "present", tr("present.toggle"), help=tr("present.help")):
        presenter_mode()


def _model_picker(side) -> None:
    """The registry's ViTs; folded below them, a typed name and an uploaded checkpoint, for the
    practitioner (so that a class sees one model picker and one image uploader)."""
    names = tour_models()
    asked = state.get("model")
    if asked and asked not in names:  # a link's "model" that is not the list's: a typed name
        state.set(custom_model=asked, model=zoo.default_name())
    state.default("model", zoo.default_name())
    picked = state.widget(
        side.selectbox,
        "model",
        tr("sidebar.model"),
        names,
        help=tr("sidebar.model_help"),
        format_func=model_title,
        mirror=False,
    )
    own = side.expander(tr("sidebar.own_model"), expanded=bool(wanted_model()))  # open while either is in use
    custom = state.widget(
        own.text_input,
        "custom_model",
        tr("sidebar.custom_model"),
        placeholder="timm:deit_tiny_patch16_224",
        on_change=forget_tries,
    )
    _model_upload(own)
    in_use, wanted = model_name(), wanted_model()
    if wanted and in_use == wanted:  # said only once the model has loaded
        side.caption(
            tr("sidebar.model_upload_in_use", name=model_title(wanted))
            if uploaded_model()
            else tr("sidebar.custom_in_use")
        )
    else:  # the picker cuts a long name: the whole of it, and what the model is, wrap below
        for name in (wanted, picked):
            if name and name != in_use and (problem := tour_problem(name)) is not None:
                # on the page, above its title: the sidebar's foot is off screen, and hidden in presenter mode
                st.warning(tr("sidebar.custom_not_used", message=problem.sentence(lang()), model=model_title(in_use)))
                break
        spec = zoo.REGISTRY[in_use]
        side.caption(f"**{spec.title_in(lang())}**: {spec.description_in(lang())}")
    state.set_param("model", (custom or "").strip() or picked)


def _image_picker(side) -> None:
    """A sample photo, an upload, or a test image of the model's dataset."""
    side.subheader(tr("sidebar.image"))
    state.default("source", "test" if state.get("test") else "sample")
    images = test_images()
    dataset = dataset_text(images.split.label) if images else ""
    source = state.widget(
        side.radio,
        "source",
        tr("sidebar.source"),
        list(state.SOURCES),
        format_func=lambda s: (
            tr(f"sidebar.source.{s}_any") if s == "test" and not dataset else tr(f"sidebar.source.{s}", dataset=dataset)
        ),
    )
    if source == "sample":
        state.default("sample", sample_names()[0])
        state.widget(side.selectbox, "sample", tr("sidebar.sample"), sample_names())
        state.set_param("test", None)
    elif source == "upload":
        limit = upload_limit_mb()
        upload = side.file_uploader(tr("sidebar.upload"), type=None, key="upload", max_upload_size=limit)
        side.caption(tr("sidebar.upload_limit", limit=limit))
        if upload is not None:
            session.keep_upload_image(upload.name, upload.getvalue())
        elif session.uploaded_image():  # the uploader forgets its file on a page switch; the image stays
            side.caption(tr("sidebar.upload_kept", name=session.uploaded_image()[0]))
        state.set_param("sample", None)
        state.set_param("test", None)
    else:
        _test_picker(side, images)


def _test_picker(side, images: lab.TestImages | None) -> None:
    """A class, an index within it, and a dice: any test image of the model's dataset."""
    if images is None:
        side.info(tr("sidebar.no_test"))
        return
    classes = images.classes()
    if not state.is_valid("test_class", state.get("test_class")):  # none yet, or the last model's dataset
        cls, index = values.test_image(state.get("test")) or ("", 0)
        found = cls in classes
        state.set(test_class=cls if found else classes[0], test_index=index if found else 0)
    chosen_class = state.widget(side.selectbox, "test_class", tr("sidebar.test_class"), classes, format_func=label)
    last = max(images.count(chosen_class) - 1, 0)
    state.clip("test_index", 0, 0, last)
    chosen_index = state.widget(side.number_input, "test_index", tr("sidebar.test_index"), 0, last)
    side.button(
        tr("sidebar.test_random"), key="test_random", on_click=_random_test, args=(images,), icon=":material/casino:"
    )
    state.set(test=f"{chosen_class}/{chosen_index}")
    state.set_param("test", state.get("test"))
    state.set_param("sample", None)


def _random_test(images: lab.TestImages) -> None:
    """A button's callback (it runs before the picker's widgets): any test image."""
    test_class, test_index = images.random()
    state.set(test_class=test_class, test_index=test_index)


def handout_button(where) -> None:
    """A button that downloads the tour of the session's image through its model, in its
    language, as one offline HTML file (``vitviz.render.handout``). The file is made when the button is
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
    elif state.get("source") == "upload":
        image_name = (session.uploaded_image() or ("upload",))[0]
    else:
        image_name = str(state.get("sample", DEFAULT_SAMPLE))

    def make() -> bytes:
        cnn_name = handout.matching_cnn(model.config.class_names)
        cnn = cached_model(cnn_name) if cnn_name else None
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


def _model_upload(side) -> None:
    """The sidebar's uploader of a visitor's own checkpoint (read in memory, never saved), and,
    once one is in use, a button to stop using it."""
    limit = upload_limit_mb()
    files = side.file_uploader(
        tr("sidebar.model_upload"),
        type=["safetensors", "json"],
        accept_multiple_files=True,
        key=f"model_upload_files_{session.upload_round()}",  # a new key empties it
        help=tr("sidebar.model_upload_help", limit=limit),
        max_upload_size=limit,
    )
    if files:
        try:
            name = keep_upload({file.name: file.getvalue() for file in files})
        except zoo.ModelLoadError as err:
            side.warning(err.sentence(lang()))
        else:
            if name != uploaded_model():
                forget_tries()
            session.use_model_upload(name)
    if uploaded_model():
        side.button(tr("sidebar.model_upload_clear"), key="model_upload_clear", on_click=_stop_upload)


def _stop_upload() -> None:
    session.use_model_upload(None)


def device_text(device: torch.device) -> str:
    """Where the model runs, in the user's language: "CPU (2 cores)" / "CPU (코어 2개)", or the GPU's
    name. The cores are the server's for torch (``turns``), the same on every page: the threads a
    run gets change with the sessions that share them, and its sidebar was drawn with a run's."""
    if device.type != "cpu":
        return zoo.device_label(device)
    cores = turns.server_turns().cores
    return tr("sidebar.device_cpu_one") if cores == 1 else tr("sidebar.device_cpu", cores=cores)


def precision_text(name: str) -> str:
    """The precision every pass of the model's pages runs in, in the user's language; nothing is
    said for a model that does not load (its page says why)."""
    try:
        chosen = cached_precision(name)
    except zoo.ModelLoadError:
        return "-"
    return tr("sidebar.precision_bf16_set") if chosen.dtype == torch.bfloat16 else "float32"
