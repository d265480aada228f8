"""Page furniture: the tab's icon, the title and its paragraph, pickers and buttons several pages
share, table heights, and downloads of the numbers behind a figure."""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Callable

import numpy as np
import streamlit as st
from PIL import Image

from vitviz.app import session, state
from vitviz.app.presenter import PRESENTER_REM, presenting
from vitviz.app.text import tr
from vitviz.models import zoo
from vitviz.render import clicks


@functools.cache
def favicon() -> str:
    """The tab's icon (``assets/icon.png``) as a data URL, made once: Streamlit takes a file's path
    as a picture to read, hash and register with its media files on every run of every session."""
    return "data:image/png;base64," + base64.b64encode((zoo.ASSETS / "icon.png").read_bytes()).decode()


def header(
    page_key: str, intro_key: str, shape: tuple[int, ...] | str | None = None, then_key: str | None = None
) -> None:
    """Title, one explaining paragraph (``then_key``'s sentence after it), and the live shape of
    the tensor at this step."""
    shape = shape if shape is None or isinstance(shape, str) else "(" + ", ".join(map(str, shape)) + ")"
    title(tr(page_key), tr(intro_key) + (f" {tr(then_key)}" if then_key else ""), shape)


def title(text: str, intro: str, shape: str | None = None) -> None:
    """A step's title, its paragraph and the live shape of its tensor, in the reader's words."""
    st.title(text)
    st.markdown(intro)
    if shape is not None:
        st.markdown(f"**{tr('shape.label')}:** `{shape}`")


def patch_picker(where, label_key: str, key: str, grid: tuple[int, int]) -> int:
    """A select box of the patches, counted from 1 with their row and column, on the centre patch
    at first (and again when a new model has fewer patches); returns the 0-based patch index."""
    grid_h, grid_w = grid
    count = grid_h * grid_w
    state.clip(key, (grid_h // 2) * grid_w + grid_w // 2, 0, count - 1)
    return state.widget(
        where.selectbox,
        key,
        tr(label_key),
        list(range(count)),
        format_func=lambda i: tr("vectors.patch_option", index=i + 1, row=i // grid_w + 1, col=i % grid_w + 1),
    )


def choose_clicked_patch(chart_key: str, state_key: str, count: int, offset: int = 0) -> Callable[[], None]:
    """A patch figure's ``on_select`` callback: the clicked patch (of ``count``) becomes the
    widget ``state_key``'s value, plus ``offset`` (the [CLS] and other prefix tokens, for a
    token index). It runs before the page, so the page's picker shows the click."""

    def choose() -> None:
        index = clicks.patch_from_selection(session.selection(chart_key), count)
        if index is not None:
            state.set(**{state_key: offset + index})

    return choose


def toggle_clicked_patch(chart_key: str, state_key: str, count: int, offset: int = 0) -> Callable[[], None]:
    """A patch figure's ``on_select`` callback for a choice that lists patches: the clicked patch
    (of ``count``, plus ``offset``) joins the list, or leaves it when it was there."""

    def toggle() -> None:
        index = clicks.patch_from_selection(session.selection(chart_key), count)
        if index is not None:
            chosen = list(state.get(state_key, []))
            chosen.remove(offset + index) if offset + index in chosen else chosen.append(offset + index)
            state.set(**{state_key: chosen})

    return toggle


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
