"""The session's language, and every sentence and name the app writes in it."""

from __future__ import annotations

import streamlit as st

from vitviz.render.i18n import DEFAULT_LANGUAGE, class_label, t
from vitviz.steps import names


def lang() -> str:
    """The session's language code ("en", "ko")."""
    return st.session_state.get("lang", DEFAULT_LANGUAGE)


def tr(key: str, **values: object) -> str:
    """The sentence for ``key`` in the user's language."""
    return t(key, lang(), **values)


def label(class_name: str, short: bool = False) -> str:
    """A class name in the user's language ("고양이 (cat)", or "고양이" when ``short``), or as the
    model spells it."""
    return class_label(class_name, lang(), short)


def model_title(name: str) -> str:
    """A model's title in the user's language (``vitviz.steps.names.model_title``)."""
    return names.model_title(name, lang())


def dataset_text(label: str) -> str:
    """A dataset's name as ``vitviz.models.data.dataset_label`` and model cards write it, in the user's language."""
    return names.dataset_text(label, lang())


def hardware_text(label: str) -> str:
    """A card's hardware in the user's language (``vitviz.steps.names.hardware_text``)."""
    return names.hardware_text(label, lang())
