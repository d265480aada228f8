"""A class's second poll, "Which patch matters most?" (``vitviz.app.classroom``).

On the prediction step the teacher asks it about the teacher's image (shared with the class as
it opens). Each student clicks a patch on their own picture of that image: one vote, changeable
until the reveal. The teacher's slide shows the class's clicks as a heat map over the patch grid,
live; at the reveal, beside it, the model's map that the step's occlusion test follows (attention
rollout: the test hides the brightest patches first) and ``claims.class_patch``'s sentence: is the
class's most-clicked patch among the map's most important, and where it ranks.

The teacher's session keeps the picture and the map it asked about, so the slide keeps showing
them when the teacher moves on to another image. A student's picture is their own model's input;
the grid is the poll's (the teacher's model's), drawn over it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from vitviz.analyses import analysis, claims
from vitviz.app import charts, current, session
from vitviz.app.caches import cached_trace
from vitviz.app.classroom import REFUSED, ask, reveal, server_store, student_id, teaching, vote
from vitviz.app.models import cached_model
from vitviz.app.text import lang, tr
from vitviz.models.data import denormalize
from vitviz.render import clicks, plots
from vitviz.server import classes

# the teacher's session state: (code, poll number, picture, model map) of the patch poll it opened
ASKED = "_class_patch_asked"
HEIGHT = 340  # the maps' height in pixels (presenter mode draws them plots.PRESENTER_SCALE taller)


def picture_of(trace, preprocess) -> np.ndarray:
    """The picture a trace's model saw (uint8, (H, W, 3))."""
    return plots.to_uint8(denormalize(trace.pixels[0], preprocess))


def model_view(trace, preprocess) -> tuple[np.ndarray, np.ndarray]:
    """``picture_of`` and the model's map over its patches, (grid_h, grid_w): the attention
    rollout that orders the prediction step's occlusion test."""
    return picture_of(trace, preprocess), analysis.rollout_map(trace)[0].numpy()


def _session_trace() -> tuple | None:
    """This session's trace and its model's preprocessing, read from the server's caches without
    writing to the page (a fragment draws with them); None when either cannot be had."""
    data = current.image_bytes()
    if data is None:
        return None
    try:
        model, _ = cached_model(current.model_name())
        return cached_trace(current.model_name(), data), model.config.preprocess
    except Exception:  # noqa: BLE001 (the page itself says what went wrong with the model or image)
        return None


def _ask(trace, preprocess) -> None:
    picture, model_map = model_view(trace, preprocess)  # here, not on every run of the pop-over
    top = str(int(np.argmax(model_map)))  # row-major, as patch_options counts
    number = ask(classes.PATCH_POLL, classes.patch_options(model_map.size), top)
    if number is not None:
        st.session_state[ASKED] = (teaching()[0], number, picture, model_map)


def ask_button(trace, preprocess) -> None:
    """The teacher's "Which patch matters most?" in the class's pop-over."""
    grid_h, grid_w = trace.grid_size
    if grid_h * grid_w > classes.MAX_PATCHES:
        return
    st.button(tr("class.ask_patch"), key="class_ask_patch", on_click=_ask, args=(trace, preprocess), type="primary")


def votes_grid(poll: classes.Poll, grid: tuple[int, int]) -> np.ndarray:
    """The poll's votes per patch, (grid_h, grid_w)."""
    return np.array([poll.counts.get(option, 0) for option in poll.options], dtype=float).reshape(grid)


def _hover() -> str:
    """A poll's patch hover in the reader's language: "patch 5 (row 2, col 1)", counted from 1."""
    where = tr("hover.row_col", row="%{customdata[4]}", col="%{customdata[5]}")
    return f"{tr('hover.patch')} %{{customdata[3]}} ({where})"


def _map_hover() -> str:
    """The model's map's hover, as the step's maps write it (``Subject.grid_hover``)."""
    where = tr("hover.row_col", row="%{customdata[0]}", col="%{customdata[1]}")
    return f"{tr('hover.patch')} %{{customdata[2]}} ({where}): %{{z:.4f}}<extra></extra>"


# ---------------------------------------------------------------------------------------------
# The teacher's slide
# ---------------------------------------------------------------------------------------------


def teacher_view(code: str, poll: classes.Poll) -> None:
    """The class's clicks as a heat map; Reveal; after it, the model's map and the sentence."""
    kept = st.session_state.get(ASKED)
    if kept is not None and kept[:2] == (code, poll.number):
        shown = kept[2:]
    else:
        traced = _session_trace()
        shown = model_view(*traced) if traced is not None else None
    if shown is None:
        return
    picture, model_map = shown
    if model_map.size != len(poll.options):  # another model's poll: this session cannot draw it
        return
    votes = votes_grid(poll, model_map.shape)
    with st.container(key="vitviz-poll", border=True):
        columns = st.columns(3 if poll.revealed else 2, vertical_alignment="center")
        title = tr("class.patch_votes_title", count=poll.total)
        answer = int(poll.answer) if poll.revealed and poll.answer is not None else None
        figure = plots.patch_votes(picture, votes, title, height=HEIGHT, hover=_hover(), answer=answer)
        charts.draw(columns[0], figure, width="stretch", key="class_patch_votes")
        if not poll.revealed:
            columns[1].markdown(tr("class.patch_question"))
            columns[1].button(tr("class.reveal"), key="class_reveal", on_click=reveal, type="primary")
            return
        model_title = tr("class.patch_model_title")
        model_figure = plots.heatmap_overlay(
            picture, model_map, title=model_title, height=HEIGHT, colorbar=False, hover=_map_hover()
        )
        charts.draw(columns[1], model_figure, width="stretch", key="class_patch_model")
        columns[2].markdown(f"**{claims.text(claims.class_patch(votes, model_map), lang())}**")
        columns[2].caption(tr("class.patch_model_caption", k=claims.PATCH_TOP_K))


# ---------------------------------------------------------------------------------------------
# A student's ballot
# ---------------------------------------------------------------------------------------------


def _choose(code: str, number: int, count: int, chart_key: str) -> Callable[[], None]:
    """The ballot's ``on_select``: the clicked patch is this student's vote."""

    def choose() -> None:
        index = clicks.patch_from_selection(session.selection(chart_key), count)
        if index is not None:
            vote(code, number, str(index))

    return choose


def _grid(count: int, picture: np.ndarray) -> tuple[int, int]:
    """The poll's grid: this session's model's when it has as many patches, else the pair of
    factors shaped like the picture (``classes.patch_grid``)."""
    try:
        own = cached_model(current.model_name())[0].config.grid_size
    except Exception:  # noqa: BLE001 (the page says what went wrong with the model)
        own = (0, 0)
    return own if own[0] * own[1] == count else classes.patch_grid(count, *picture.shape[:2])


def ballot(code: str, poll: classes.Poll) -> None:
    """A student's patch poll: their picture of the image to click on (their vote outlined), or,
    after the reveal, the class's clicks and the model's most important patch."""
    traced = _session_trace()  # every run of the student's page: the picture only, not the model's map
    if traced is None:
        return
    picture = picture_of(*traced)
    grid = _grid(len(poll.options), picture)
    try:
        mine = server_store().vote_of(code, student_id(), poll.number)
    except classes.StoreDown:
        return
    chosen = int(mine) if mine is not None else None
    key = f"class_patch_{poll.number}"
    with st.container(key="vitviz-ballot", border=True):
        left, right = st.columns(2, vertical_alignment="center")
        if poll.revealed:
            votes = votes_grid(poll, grid)
            title = tr("class.patch_votes_title", count=poll.total)
            answer = int(poll.answer) if poll.answer is not None else None
            figure = plots.patch_votes(picture, votes, title, HEIGHT, chosen, hover=_hover(), answer=answer)
            charts.draw(left, figure, width="stretch", key=key + "_revealed")
            right.markdown(revealed(poll, chosen))
            return
        figure = plots.patch_votes(picture, np.zeros(grid), None, HEIGHT, chosen, hover=_hover())
        choose = _choose(code, poll.number, len(poll.options), key)
        charts.draw(left, figure, width="stretch", key=key, on_select=choose)
        right.markdown(tr("class.patch_question"))
        if st.session_state.pop(REFUSED, False):
            right.caption(tr("class.vote_refused"))
        voted = tr("class.voted", option=tr("class.patch_n", n=chosen + 1)) if chosen is not None else None
        right.caption(voted or tr("class.patch_vote_help"))


def revealed(poll: classes.Poll, chosen: int | None) -> str:
    """After the reveal, for a student: the model's most important patch beside the class's
    most-clicked one and their own (patches counted from 1)."""
    answer = int(poll.answer) + 1 if poll.answer is not None else None
    if poll.total == 0 or answer is None:
        return tr("class.patch_revealed_no_votes", answer=answer if answer is not None else "?")
    top = max(poll.options, key=lambda o: poll.counts[o])
    sentence = tr("class.patch_revealed", answer=answer, top=int(top) + 1, votes=poll.counts[top], total=poll.total)
    if chosen is not None:
        sentence += " " + tr("class.voted", option=tr("class.patch_n", n=chosen + 1))
    return sentence
