"""What a session holds that is not one of its choices (vitviz.app.state): the visitor's uploads,
what a page remembers of its last run, and what a figure's selection is."""

from __future__ import annotations

from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# What the visitor uploaded: kept for the session (an uploader forgets its file on a page switch)
# ---------------------------------------------------------------------------------------------


def keep_upload_image(name: str, data: bytes) -> None:
    st.session_state["upload_bytes"], st.session_state["upload_name"] = data, name


def uploaded_image() -> tuple[str, bytes] | None:
    """The image the visitor uploaded last, as (file name, bytes)."""
    data = st.session_state.get("upload_bytes")
    return (st.session_state.get("upload_name") or "upload", data) if data is not None else None


def use_model_upload(name: str | None) -> None:
    """Use an uploaded checkpoint (its ``zoo.upload_name``), or stop using it (None): the uploader
    then gets a new key, which empties it."""
    if name is None and st.session_state.pop("model_upload", None) is not None:
        st.session_state["_upload_round"] = upload_round() + 1
    elif name is not None:
        st.session_state["model_upload"] = name


def model_upload() -> str | None:
    """The uploaded checkpoint in use, if any."""
    return st.session_state.get("model_upload")


def upload_round() -> int:
    return st.session_state.get("_upload_round", 0)


# ---------------------------------------------------------------------------------------------
# What a page remembers of its last run (not a choice: never in the URL), and a figure's selection
# ---------------------------------------------------------------------------------------------


def recall(name: str, default: T | None = None) -> Any | T:
    """What the page kept with ``keep`` on an earlier run of this session."""
    return st.session_state.get(f"_page.{name}", default)


def keep(name: str, value: object) -> None:
    """Keep a value for the page's next run (the filters it last showed, a click it handled)."""
    st.session_state[f"_page.{name}"] = value


def forget(name: str, default: T | None = None) -> Any | T:
    """A kept value, removed: a one-time note to the next run."""
    return st.session_state.pop(f"_page.{name}", default)


def selection(chart_key: str) -> Any:
    """What the user selected on the figure drawn with ``key=chart_key`` and ``on_select``."""
    return st.session_state.get(chart_key)
