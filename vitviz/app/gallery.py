"""The lab's gallery of test images: one element (``static/gallery.js``, an ``st.components.v2``
script in the page, no frame) that shows a page of thumbnails, each a button with its caption.

It was a row of Streamlit columns per eight thumbnails, each column an ``st.image`` and an
``st.button``: 24 thumbnails were 24 columns, 48 elements and 24 requests for the pictures, and
the lab's first open spent most of its time in the browser building them (docs/benchmarks.md).
Here the pictures come inline with the element, and a click on one (on its picture or its
caption) is the element's trigger "open", the thumbnail's number, which ``on_open`` gets before
the next run. The number comes from the browser: only one of the numbers shown counts.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from vitviz.app import web
from vitviz.render import clicks

TRIGGER = "open"
STREAMLIT_PRIMARY = "#ff4b4b"  # Streamlit's primary colour where the theme names none


@functools.cache
def element() -> Callable[..., Any]:
    """The gallery element, registered once."""
    return st.components.v2.component(
        "vitviz_gallery",
        html='<div class="vitviz-gallery"></div>',
        js=web.page_text("gallery.js"),
        isolate_styles=False,  # the page's fonts, and style.css's look of the thumbnails
    )


def element_data(
    pictures: Sequence[bytes],
    captions: Sequence[str],
    numbers: Sequence[int],
    current: int,
    columns: int,
    colour: str = STREAMLIT_PRIMARY,
) -> bytes:
    """What the element gets, as JSON bytes: ``columns`` thumbnails a row, and per thumbnail its
    PNG (a data URL), its caption and its number; ``current`` (a number) is the image up close,
    marked in ``colour`` (the theme's primary colour)."""
    items = [
        {"src": "data:image/png;base64," + base64.b64encode(png).decode(), "caption": caption, "number": int(number)}
        for png, caption, number in zip(pictures, captions, numbers, strict=True)
    ]
    shown = {"columns": int(columns), "current": int(current), "colour": colour, "items": items}
    return json.dumps(shown).encode()


def read_element_data(data: bytes) -> dict:
    """``element_data`` read back (tests)."""
    return json.loads(data)


def opened(key: str, numbers: Sequence[int]) -> int | None:
    """The number of the thumbnail the last click opened, if it is one of ``numbers``, else None."""
    found = st.session_state.get(key)
    value = found.get(TRIGGER) if hasattr(found, "get") else None
    return int(value) if clicks.whole(value) and int(value) in numbers else None


def gallery(
    key: str,
    pictures: Sequence[bytes],
    captions: Sequence[str],
    numbers: Sequence[int],
    current: int,
    columns: int,
    on_open: Callable[[int], None],
) -> None:
    """Draw the thumbnails (PNG bytes) with their captions, ``columns`` a row, the one numbered
    ``current`` marked; a click on thumbnail ``n`` calls ``on_open(n)`` before the next run."""

    def clicked() -> None:
        number = opened(key, numbers)
        if number is not None:
            on_open(number)

    colour = st.get_option("theme.primaryColor") or STREAMLIT_PRIMARY  # .streamlit/config.toml's
    data = element_data(pictures, captions, numbers, current, columns, colour)
    element()(key=key, data=data, width="stretch", **{f"on_{TRIGGER}_change": clicked})
