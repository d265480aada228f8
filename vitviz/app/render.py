"""Draw a step's description (``vitviz.steps``) in Streamlit: as a page, or in presenter mode as
slides. The third renderer, paper, is ``vitviz.render.handout``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import streamlit as st

from vitviz.app import (
    charts,
    current,
    described,
    first_view_file,
    furniture,
    models,
    navigation,
    presenter,
    state,
    tabular,
    tour,
)
from vitviz.app.text import tr
from vitviz.steps.blocks import (
    Block,
    Button,
    Control,
    Controls,
    Download,
    DownloadCsv,
    Figure,
    Figures,
    Formula,
    Heading,
    Link,
    Metrics,
    OpenInTour,
    Slide,
    Step,
    Table,
    Text,
)
from vitviz.steps.subject import Subject

Describe = Callable[[Subject, Mapping], Step]
METRICS_PER_ROW = 4


class SessionChoices(Mapping):
    """The session's choices (``vitviz.app.state``) as the mapping a step's description reads."""

    def __getitem__(self, key: str):
        value = state.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(state.BY_KEY)

    def __len__(self) -> int:
        return len(state.BY_KEY)


def page(describe: Describe, script: str, subject: Callable[[], Subject] | None = None, shared: bool = False) -> None:
    """A tour or lab page: the step the session's choices describe, drawn as a page or as slides,
    then Previous / Next. ``subject``: what the step reads (``current.subject``: the model and the
    image; ``current.model_subject`` for a page about the model alone); ``shared``: such a page
    described once for every session (``described.for_everyone``)."""
    if subject is None:  # a step of the tour, perhaps described ahead while the last one was read
        subject_now = current.subject()
        step = described.step(script, describe, subject_now, SessionChoices())
        first_view_file.record(script, step)  # only while the first view's file is made
    elif shared:
        step = described.for_everyone(script, describe, subject(), SessionChoices())
    else:
        step = describe(subject(), SessionChoices())
    if presenter.presenting():
        slides(step, script)
    else:
        blocks(step)
        navigation.nav(script)
    if subject is None:  # the next step, while this one is read
        described.ask_next(script, subject_now, SessionChoices())


def blocks(step: Step) -> None:
    """The step as a page: title, paragraph, shape, then every block in order."""
    furniture.title(step.title, step.intro, step.shape)
    for block in step.blocks:
        draw(block)


def draw(block: Block, where=st) -> None:
    """One block of a step on the page (``where``: the page, or a column)."""
    if isinstance(block, Text):
        _text(block, where)
    elif isinstance(block, Heading):
        where.markdown(f"#### {block.text}") if block.minor else where.subheader(block.text)
    elif isinstance(block, Metrics):
        helps = block.helps or ("",) * len(block.items)
        for start in range(0, len(block.items), METRICS_PER_ROW):
            row = zip(block.items[start : start + METRICS_PER_ROW], helps[start : start + METRICS_PER_ROW], strict=True)
            for column, ((label, value), help_text) in zip(where.columns(METRICS_PER_ROW), row, strict=False):
                column.metric(label, value, help=help_text or None)
    elif isinstance(block, Figure):
        _figure(block, where)
    elif isinstance(block, Figures):
        for column, figure in zip(where.columns(block.widths or len(block.figures)), block.figures, strict=False):
            _figure(figure, column)
    elif isinstance(block, Table):
        # a long one's grid shows every row without scrolling inside it (up to a limit)
        tabular.draw(where, block.rows, block.whole, furniture.table_height(len(block.rows)))
        if block.caption:
            where.caption(block.caption)
    elif isinstance(block, Controls):
        for column, control in zip(where.columns(len(block.controls)), block.controls, strict=True):
            widget(control, column)
    elif isinstance(block, Download) and block.csv is not None:
        furniture.download_csv(block.label_key, block.file_name, block.key, block.csv)
    elif isinstance(block, Download):
        furniture.download_npz(block.label_key, block.file_name, block.key, **block.arrays)
    elif isinstance(block, DownloadCsv):
        furniture.download_csv(block.label_key, block.file_name, block.key, block.text)
    elif isinstance(block, Link):
        script, _, icon = next(page for page in tour.TOUR + tour.LAB if page[1] == block.page)
        where.page_link(script, label=block.label, icon=icon)
    elif isinstance(block, Button):
        where.button(block.label, key=block.key, on_click=state.set, kwargs=dict(block.sets), disabled=block.disabled)
    elif isinstance(block, Formula):
        where.latex(block.latex)
    elif isinstance(block, OpenInTour):
        navigation.open_in_tour_button(where, block.key, block.class_name, block.index)
    else:
        raise TypeError(f"No renderer for {type(block).__name__}")


def _text(block: Text, where) -> None:
    show = {"body": where.markdown, "caption": where.caption, "info": where.info, "success": where.success}
    show["error"] = where.error
    show.get(block.role, where.warning)(block.text)


def _figure(block: Figure, where, slide: bool = False) -> None:
    """A figure and, under it, its takeaway; on a slide, the figure alone, as tall as the slide
    leaves it (``height="stretch"``: presenter.css gives the slide the window's height, and the
    figures what its title line and takeaways leave; a picture keeps its square pixels)."""
    kwargs = {"height": "stretch"} if slide else {}
    if block.select is not None:
        select = block.select
        choose = furniture.toggle_clicked_patch if select.toggle else furniture.choose_clicked_patch
        kwargs |= {"on_select": choose(block.key, select.key, select.count, select.offset)}
    charts.draw(where, block.figure, width="stretch", key=block.key, **kwargs)
    if not slide:
        where.caption(block.takeaway)


def widget(control: Control, where=st):
    """A control's widget, showing the value the step was described with."""
    if state.get(control.key) != control.value:
        state.set(**{control.key: control.value})
    extra = {"help": control.help} if control.help else {}
    extra |= {"disabled": True} if control.disabled else {}
    if control.kind == "toggle":
        return state.widget(where.toggle, control.key, control.label, **extra)
    if control.kind in ("int_slider", "number"):
        draw_with = where.slider if control.kind == "int_slider" else where.number_input
        low, high = control.options[0], control.options[-1]
        return state.widget(draw_with, control.key, control.label, min_value=low, max_value=high, step=1, **extra)
    if control.kind == "model_name":  # a new name is tried afresh (a download that failed may work now)
        placeholder = control.placeholder or None
        return state.widget(
            where.text_input, control.key, control.label, placeholder=placeholder, on_change=models.forget_tries
        )
    draw_with = {
        "slider": where.select_slider,
        "select": where.selectbox,
        "radio": where.radio,
        "multiselect": where.multiselect,
    }[control.kind]
    extra |= {"horizontal": True} if control.kind == "radio" else {}
    extra |= {"placeholder": control.placeholder} if control.placeholder else {}
    format_func = control.format or str
    value = state.widget(
        draw_with,
        control.key,
        control.label,
        options=list(control.options),
        format_func=format_func,
        mirror=not control.quiet_default,
        **extra,
    )
    if control.quiet_default:  # a link to the default view names nothing
        state.set_param(control.key, value if value != control.options[0] else None)
    return value


# ---------------------------------------------------------------------------------------------
# Slides: presenter mode
# ---------------------------------------------------------------------------------------------


def slide_index(script: str, count: int) -> int:
    """The session's slide of the page ``script`` (a tour step or a lab page) with ``count``
    slides: 0 at first, the last after Previous from the next step."""
    index = navigation.slide_of(navigation.slide_place(script))
    return count - 1 if index < 0 else min(index, count - 1)


def slides(step: Step, script: str) -> None:
    """The step as slides: one figure (or a row of them) a slide, its takeaway in large type, the
    paragraphs as the presenter's notes, the controls in a pop-over; → and ← move slide by slide,
    then step by step."""
    shown = step.slides()
    index = slide_index(script, len(shown))
    with st.container(key="vitviz-slide"):
        _slide_with_header(step, shown, index, script)


def _slide_with_header(step: Step, shown: list[Slide], index: int, script: str) -> None:
    slide = shown[index]
    # the title, the way through the tour, the notes and the controls on one line; presenter
    # mode's leave button floats in the corner above them. The controls' column fits "Controls" whole
    # at 1280 x 720 in the projector's type (tests/browser/test_presenter.py checks every label)
    top = st.columns([4, 0.8, 2.6, 0.8, 1.2, 1.6, 0.4], vertical_alignment="center")
    top[0].markdown(f"# {step.title}")  # the page's title (h1), in a slide's size (presenter.css)
    navigation.slide_nav(script, index, len(shown), (top[1], top[2], top[3]))
    with top[4].popover(tr("slides.notes"), width="stretch"):
        for note in slide.notes:
            st.markdown(note)
    if slide.controls:
        with top[5].popover(tr("slides.controls"), width="stretch"):
            for control in slide.controls:
                widget(control)
    _slide(slide)


def _slide(slide: Slide) -> None:
    if not slide.figures:  # a step with no figure: its notes are the slide
        for note in slide.notes:
            st.markdown(note)
        return
    widths = slide.widths or len(slide.figures)
    with st.container(key="vitviz-figures"):  # the row that takes the slide's free height (presenter.css)
        columns = st.columns(widths) if len(slide.figures) > 1 else [st]
        for column, figure in zip(columns, slide.figures, strict=False):
            _figure(figure, column, slide=True)
    with st.container(key="vitviz-takeaway"):
        for column, figure in zip(st.columns(widths), slide.figures, strict=False):
            column.markdown(figure.takeaway)
        for callout in slide.callouts:  # under the takeaways: the figures shrink to leave it room
            _text(callout, st)
