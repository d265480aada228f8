"""Every use of Streamlit's and Plotly's internals, in one place, each beside the public way it
falls back to.

The public API cannot do these, or not at a classroom's pace:

- ``figure_dict``: a figure's plotly JSON without ``to_dict``'s deep copy of every list (reads
  ``Figure._layout`` and ``_data`` and uses ``_plotly_utils``). Public way: ``figure.to_dict()``.
- ``unchecked_figure``: a figure built from plain dictionaries without Plotly checking every
  property again (``go.Figure(..., _validate=False)``); ``vitviz.render.plots`` builds with it once
  ``install`` ran. Public way: ``go.Figure(data=..., layout=...)``.
- ``open_page_now``: Previous / Next draw the step in the run their click started (the page
  manager's ``set_script_intent`` and ``st.Page``'s ``_script_hash``). Public way:
  ``st.switch_page``, a second run.
- ``run_page`` and ``page_key``: a run's page (``page_script_hash``) and an ``st.Page``'s
  (``_script_hash``), for ``navigation.fragment_off_page``. Public way: None (it reads the URL).
- ``fragment_run``: whether this run is a fragment's alone (``fragment_ids_this_run``), for a
  following student's catch-up that draws the step without a whole run of the app
  (``students.follow_page``). Public way: False (the student's catch-ups run the whole app).
- ``session_id`` and ``session_alive``: whose run this thread is, and whether that session still
  has a browser (``get_script_run_ctx``, the runtime's ``is_active_session``). Public way: None
  (figures are then not shared between sessions) and True (a run is never stopped for it).
- ``logger``: Streamlit's console format and level for the app's log. Public way: ``logging``.

Each is taken only where the installed Streamlit and Plotly are versions it was tested with
(``TESTED``) and the piece it needs is there; elsewhere, or with ``VITVIZ_INTERNALS=0``, the public
way is taken (``ACTIVE`` is False). tests/app/test_internals.py renders pages both ways.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

# The versions every private piece was tested with: [lowest, highest] by (major, minor). A newer
# release takes the public way until someone runs the tests on it and widens the range here
# (tests/app/test_internals.py fails while the installed versions are outside it).
TESTED = {"streamlit": ((1, 67), (1, 67)), "plotly": ((6, 0), (7, 1))}


def version(package: str) -> tuple[int, int] | None:
    """An installed package's (major, minor), or None where it is not installed or unreadable."""
    try:
        found = re.match(r"(\d+)\.(\d+)", importlib.metadata.version(package))
    except importlib.metadata.PackageNotFoundError:
        return None
    return (int(found[1]), int(found[2])) if found else None


def tested(package: str) -> bool:
    """Whether the installed ``package`` is within the versions the private pieces were tested with."""
    installed, (lowest, highest) = version(package), TESTED[package]
    return installed is not None and lowest <= installed <= highest


def allowed(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the private ways may be taken: the installed versions were tested, and
    ``VITVIZ_INTERNALS=0`` does not turn them off."""
    return environ.get("VITVIZ_INTERNALS", "1") != "0" and all(tested(package) for package in TESTED)


ACTIVE = allowed()


def logger(name: str) -> logging.Logger:
    """A logger for the app, in Streamlit's console format and at its ``--logger.level``."""
    if ACTIVE:
        try:
            from streamlit.logger import get_logger

            return get_logger(name)
        except ImportError:
            pass
    return logging.getLogger(name)


# ---- the session ----


def _run_context() -> Any:
    if not ACTIVE:
        return None
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:
        return None
    return get_script_run_ctx(suppress_warning=True)


def run_page() -> str | None:
    """The page this run is on, as Streamlit names it to the browser (None the public way)."""
    return getattr(_run_context(), "page_script_hash", None) or None


def page_key(page: Any) -> str | None:
    """The name ``run_page`` gives an ``st.Page`` (None the public way)."""
    return (getattr(page, "_script_hash", None) or None) if ACTIVE else None


def session_id() -> str | None:
    """The Streamlit session whose run this thread is (None outside one, or the public way)."""
    context = _run_context()
    return getattr(context, "session_id", None)


def fragment_run() -> bool:
    """Whether this run is a fragment's alone, not the whole app's (False the public way)."""
    return bool(getattr(_run_context(), "fragment_ids_this_run", None))


def in_a_run() -> bool:
    """Whether this thread runs a session's script (False the public way: nothing is shared)."""
    return _run_context() is not None


def session_alive(session: str | None) -> bool:
    """Whether a session still has a browser (True outside a server, as under AppTest, and the public way)."""
    if not ACTIVE or session is None:
        return True
    try:
        from streamlit import runtime

        return not runtime.exists() or runtime.get_instance().is_active_session(session)
    except Exception:  # a Streamlit without the call: never stop a run for it
        return True


def open_page_now(page: Any) -> bool:
    """Tell Streamlit's page manager that this run is on ``page`` (an ``st.Page``), as the browser's
    own request for the page would: st.navigation, called next in this run, then draws it. Returns
    False where this cannot be done (the caller then uses ``st.switch_page``)."""
    context = _run_context()
    choose = getattr(getattr(context, "pages_manager", None), "set_script_intent", None)
    script_hash = getattr(page, "_script_hash", None)
    if choose is None or not script_hash:
        return False
    choose(script_hash, "")
    return True


# ---- figures ----


_INSTALLING = threading.Lock()
_installed: dict[str, Any] = {}  # what install() found: Plotly's own functions, the pieces that are there


def install() -> bool:
    """Once per process: find Plotly's pieces that ``figure_dict`` and ``write`` use, and let
    ``vitviz.render.plots`` build figures without Plotly's checks. Returns whether the private way is on."""
    with _INSTALLING:
        if "done" not in _installed:
            _installed.update(_install())
            _installed["done"] = True
    return ACTIVE


def _install() -> dict[str, Any]:
    import plotly.graph_objects as go
    import plotly.io

    from vitviz.render import plots

    found: dict[str, Any] = {"to_json": plotly.io.to_json}
    try:
        import _plotly_utils.basevalidators
        import _plotly_utils.utils

        found["typed"] = (
            _plotly_utils.utils.is_skipped_key,
            _plotly_utils.basevalidators.is_homogeneous_array,
            _plotly_utils.utils.to_typed_array_spec,
        )
        found["figure_dict"] = all(hasattr(go.Figure(), name) for name in ("_layout", "_data", "_frame_objs"))
    except (ImportError, AttributeError):
        found["figure_dict"] = False
    if ACTIVE:
        plots.build_figures_with(unchecked_figure)
    return found


def use(active: bool) -> None:
    """Take the private ways (where installed) or the public ones from now on (tests, VITVIZ_INTERNALS)."""
    global ACTIVE
    install()
    from vitviz.render import plots

    ACTIVE = active
    plots.build_figures_with(unchecked_figure if active else None)


def write(spec: dict) -> str:
    """A figure's plotly JSON as text, as Plotly writes it (arrays as plotly.js typed arrays)."""
    install()
    return _installed["to_json"](spec, validate=False)


def figure_dict(figure: Any, template: bool = True) -> dict:
    """``figure.to_dict()``: its plotly JSON, arrays as plotly.js typed arrays; without the layout's
    template where ``template`` is False (for a caller that puts its own there). The private way
    copies the containers and shares the values (``to_dict`` deep-copies every list); a figure
    with frames takes plotly's own way."""
    install()
    if not (ACTIVE and _installed.get("figure_dict")) or figure._frame_objs:
        spec = figure.to_dict()
        if not template:
            spec["layout"].pop("template", None)
        return spec
    layout = {k: _typed_value(v, k) for k, v in figure._layout.items() if template or k != "template"}
    return {"data": [_typed(trace) for trace in figure._data], "layout": layout}


def _typed(value: Any) -> Any:
    """A copy of plotly JSON with every array a dictionary value holds as a typed array spec, as
    plotly's ``convert_to_base64`` writes it (arrays that sit directly in a list stay as they are)."""
    if isinstance(value, dict):
        return {k: _typed_value(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_typed(v) for v in value]
    return value


def _typed_value(value: Any, key: str) -> Any:
    import copy

    skipped, homogeneous, typed_array = _installed["typed"]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if skipped(key):
        return copy.deepcopy(value)
    if homogeneous(value):
        return typed_array(value)
    return _typed(value)


def unchecked_figure(data: list[dict], layout: dict) -> Any:
    """A figure from plain trace and layout dictionaries, without Plotly checking them again
    (tests/unit/test_plots.py compares every figure built so with the checked one)."""
    import plotly.graph_objects as go

    if ACTIVE:
        return go.Figure(data=data, layout=layout, _validate=False)
    return go.Figure(data=data, layout=layout)
