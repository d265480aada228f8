"""The session's language, and every sentence and name the app writes in it."""

from __future__ import annotations

import re

import streamlit as st

from vitviz.card import MACHINES_JOIN
from vitviz.i18n import DEFAULT_LANGUAGE, class_label, t
from vitviz.steps import answers


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
    """A model's title in the user's language (``vitviz.steps.answers.model_title``)."""
    return answers.model_title(name, lang())


def dataset_text(label: str) -> str:
    """A dataset's name as ``vitviz.data.dataset_label`` and model cards write it, in the user's language."""
    return answers.dataset_name(label, lang())


def hardware_text(label: str) -> str:
    """A card's hardware ("CPU (Intel(R) Xeon(R) Processor, 2 threads)", as ``train.hardware_label``
    writes it, or the machines a run moved between, joined by ``MACHINES_JOIN``) in the user's
    language; other labels as written."""
    texts = []
    for machine in label.split(MACHINES_JOIN):
        found = re.fullmatch(r"CPU \((.+), (\d+) threads?\)", machine)
        if found and found[2] == "1":
            texts.append(tr("card.hardware_cpu_one", name=found[1]))
        else:
            texts.append(tr("card.hardware_cpu", name=found[1], threads=found[2]) if found else machine)
    return MACHINES_JOIN.join(texts)
