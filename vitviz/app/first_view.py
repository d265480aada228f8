"""The overview of the default model and sample, drawn before torch has loaded.

A fresh server's first visitor used to wait for the startup's imports (torch, the app's glue, the
default model: 3-4 s on 2 cores, while the same cores loaded Streamlit's frontend) before the
overview's first element came. Here a session's first run on the overview, while the startup has
not loaded them yet, draws the overview from ``assets/first_view.json``: the same title, sentences,
figures (their JSON as ``vitviz.app.charts.draw`` sends it), table and Next button that the app
draws for the default model and sample in the visitor's language, with nothing but Streamlit and
json. The startup waits for that run before it imports (``vitviz.app.warm_up``), and a fragment of
the page then starts the whole app's run as soon as the startup is ready (``_then_the_app``): the
sidebar's choices come in, and the figures, the same bytes, are not drawn again.

The file is made by the app itself (``vitviz.app.first_view_file``: the overview's page in each
language, recorded as ``vitviz.app.render.page`` draws it), and tests/app/test_first_view.py makes
it again and compares, so it never says what the app would not.

Nothing here imports torch, numpy or the rest of vitviz: keep it so (tested).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import streamlit as st

from vitviz.app import chart_script, internals, page_list, tabular, web

log = internals.logger(__name__)

ASSETS = Path(__file__).resolve().parents[1] / "assets"
FILE = ASSETS / "first_view.json"
HOME = "app_pages/0_home.py"
PAGE_TITLE = "vitviz: inside a Vision Transformer"  # app.py's st.set_page_config
POLL_S = 0.3  # how often the page asks whether the startup is ready
ROLES = ("body", "caption", "info", "success", "warning", "error")


_run = threading.local()  # .view and .ready: this thread's run draws the first view (``page_drawn``)


def draws(ready: threading.Event, warming: threading.Event) -> bool:
    """Draw the first view in this run if it is one: the startup began (``warming``) and is not
    ``ready``, the URL asks for the overview with no choice but the default model and a language
    the file has, and the file is there. The overview's page draws it (``page_drawn``), so that its
    figures and its Next button are the elements the app's run draws there (a page's elements are
    named by it). Returns whether it drew (then the run is done)."""
    if ready.is_set() or not warming.is_set() or st.session_state.get("nav_next"):
        return False  # the app's run: after the startup, without one (AppTest), or for Next's click
    view = _view_for(_query(), _path())
    if view is None:
        return False
    st.set_page_config(page_title=PAGE_TITLE, page_icon=view["icon"], layout="wide")
    nav = view["nav"]
    steps, lab = page_list.pages(view["language"], nav["titles"].__getitem__)
    page = st.navigation(
        {nav["tour"]: steps, nav["lab"]: lab} if lab else steps, expanded=True
    )  # the URL's "": the overview
    st.html(web.style("style.css"))  # as the sidebar's first line does, for the same look
    st.html("<style></style>")  # where the app's page-switch style goes (navigation.open_at_the_top)
    _run.view, _run.ready = view, ready
    try:
        page.run()
    finally:
        _run.view = _run.ready = None
    log.info("drew the first view (%s) before the startup was ready", view["language"])
    return True


def page_drawn() -> bool:
    """The overview page's first line: in a first view's run (``draws``), draw it from the file and
    return True; else False, and the page is the app's."""
    view = getattr(_run, "view", None)
    if view is None:
        return False
    _draw(view)
    _then_the_app(_run.ready)
    return True


def _query() -> dict[str, str]:
    return {key: st.query_params[key] for key in st.query_params}


def _path() -> str | None:
    """The page's path in the URL without the server's base path ("" for the overview), or None
    where Streamlit does not say."""
    url = getattr(st.context, "url", None)
    if not url:
        return None
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    path = urllib.parse.urlsplit(url).path.strip("/")
    return path[len(base) :].strip("/") if path.startswith(base) else None


def _view_for(query: dict[str, str], path: str | None) -> dict[str, Any] | None:
    """The file's view for this URL, or None: another page, another choice, no file, or a server
    that would not draw what the file says (``_same_server``)."""
    if path != "":
        return None
    shipped = _read()
    if shipped is None or not _same_server(shipped):
        return None
    language = query.get("lang", shipped["default_language"])
    if set(query) - {"lang", "model"} or query.get("model", shipped["model"]) != shipped["model"]:
        return None
    view = shipped["languages"].get(language)
    return None if view is None else {**view, "language": language, "icon": shipped["icon"]}


def _same_server(shipped: dict[str, Any]) -> bool:
    """Whether this server's overview is the file's: the same weights and sample (by their bytes),
    float32 (a VITVIZ_PRECISION of bfloat16 changes the probabilities' last digits), no GPU (whose
    convolutions may round otherwise), and figures drawn by a plotly.js this server serves (a file
    made before the bundle was built again names the old one's path)."""
    if os.environ.get("VITVIZ_PRECISION", "float32") != "float32" or has_gpu():
        return False
    served = {chart_script.cartesian_script_path(), chart_script.plotly_script_path()}
    scripts = {
        figure["script"]
        for view in shipped["languages"].values()
        for block in view["blocks"]
        if block["kind"] == "figures"
        for figure in block["figures"]
    }
    if not scripts <= served:
        return False
    return all(sha256(ASSETS / name) == digest for name, digest in shipped["inputs"].items())


def has_gpu() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*"))


@functools.cache
def sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@functools.cache
def _read() -> dict[str, Any] | None:
    try:
        return json.loads(FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _draw(view: dict[str, Any]) -> None:
    """The overview as ``vitviz.app.render.blocks`` and ``navigation.nav`` draw it."""
    st.title(view["title"])
    st.markdown(view["intro"])
    if view["shape"] is not None:
        st.markdown(view["shape"])
    for block in view["blocks"]:
        kind = block["kind"]
        if kind == "figures":
            columns = st.columns(block["widths"] or len(block["figures"]))
            for column, figure in zip(columns, block["figures"], strict=False):
                spec, script, key = figure["spec"], figure["script"], figure["key"]
                data = chart_script.element_data(spec, False, False, script, key, view["language"], False)
                with column:
                    chart_script.chart_element()(key=key, data=data, width="stretch", height="content")
                column.caption(figure["takeaway"])
        elif kind == "text":
            show = {"body": st.markdown, "caption": st.caption, "info": st.info, "success": st.success}
            show["error"] = st.error
            show.get(block["role"], st.warning)(block["text"])
        elif kind == "heading":
            st.subheader(block["text"])
        elif kind == "table":  # drawn as the app's own run draws it (vitviz.app.render.draw)
            tabular.draw(st, block["rows"], False, block["height"])
            if block["caption"]:
                st.caption(block["caption"])
    nav = view["next"]
    st.divider()
    _, middle, right = st.columns([1, 2, 1])
    middle.markdown(f"<div style='text-align:center;padding-top:0.4rem'>{nav['counter']}</div>", unsafe_allow_html=True)
    # no callback: the app's run that the click starts finds it unasked and opens the step
    # (navigation._follow_unasked_click), as after a reconnection
    right.button(nav["label"], key="nav_next", width="stretch", type="primary")


def _then_the_app(ready: threading.Event) -> None:
    """A fragment that asks every ``POLL_S`` whether the startup is ready and then starts the
    app's run of this page (the sidebar, the choices, the rest of the app)."""

    @st.fragment(run_every=POLL_S)
    def wait() -> None:
        if ready.is_set():
            st.rerun()

    wait()
