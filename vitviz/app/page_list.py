"""The st.Page objects app.py hands st.navigation, made once per language and copied for each run."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import streamlit as st

from vitviz.app.tour import LAB, TOUR, shipped


def pages(language: str, title: Callable[[str], str]) -> tuple[list[st.Page], list[st.Page]]:
    """The tour's and the lab's ``st.Page`` objects for one run of app.py, titled in ``language``
    (``title``: a title key's text in it): copies of pages made once per language. ``st.Page``
    finds its file on disk each time one is made, and app.py made fourteen on every run of every
    session (a tenth of a class's server CPU, docs/benchmarks.md); ``st.navigation`` marks the page
    it returns as the one to run, once, so each run gets copies of its own."""
    steps, lab = _pages(language, title)
    return [copy.copy(page) for page in steps], [copy.copy(page) for page in lab]


@functools.cache
def _pages(language: str, title: Callable[[str], str]) -> tuple[tuple[st.Page, ...], tuple[st.Page, ...]]:
    steps = tuple(
        st.Page(file, title=title(key), icon=icon, default=(n == 0))
        for n, (file, key, icon) in enumerate(TOUR)
        if shipped(file)
    )
    return steps, tuple(st.Page(file, title=title(key), icon=icon) for file, key, icon in LAB if shipped(file))
