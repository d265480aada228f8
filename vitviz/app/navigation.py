"""Moving through the tour: Previous / Next, a shared link's step, the lab's "Open in the tour",
and where a page opens (its top, or a container the run brings into view)."""

from __future__ import annotations

import streamlit as st

from vitviz.app import internals, state, web
from vitviz.app.text import tr
from vitviz.app.tour import TOUR
from vitviz.server import values

ASKED_STEP = "_asked_step"  # session state: the step the next whole run of the app opens (``ask_step``)


def nav(script: str) -> None:
    """Previous / Next buttons that walk the tour in order (``ask_step``)."""
    files = [f for f, _, _ in TOUR]
    if script not in files:
        return
    index = files.index(script)
    st.session_state.pop("_slide_moved", None)  # a slide's click that led here
    st.divider()
    left, middle, right = st.columns([1, 2, 1])
    clicked = None
    if index > 0 and left.button(
        f"← {tr('nav.previous')}", key="nav_prev", width="stretch", on_click=ask_step, args=(index - 1,)
    ):
        clicked = index - 1
    middle.markdown(
        f"<div style='text-align:center;padding-top:0.4rem'>{counter(index, len(files) - 1)}</div>",
        unsafe_allow_html=True,
    )
    if index < len(files) - 1 and right.button(
        f"{tr('nav.next')} →", key="nav_next", width="stretch", type="primary", on_click=ask_step, args=(index + 1,)
    ):
        clicked = index + 1
    if clicked is not None:
        _follow_unasked_click(clicked)


def slide_nav(script: str, index: int, count: int, where: tuple) -> None:
    """Presenter mode's Previous / Next in the columns ``where`` (left, middle, right): slide by
    slide (``index`` of ``count``), then step by step (Previous from a step opens the last slide
    of the one before). A lab page is in no order of steps: its slides alone."""
    files = [f for f, _, _ in TOUR]
    if script not in files:
        _lab_slide_nav(script, index, count, where)
        return
    step = files.index(script)
    left, middle, right = where
    # a click whose callback ran has moved the slide already: this run draws where it went
    followed = st.session_state.pop("_slide_moved", False)
    unasked = None
    if (index > 0 or step > 0) and left.button(
        "←", key="nav_prev", width="stretch", on_click=_previous_slide, args=(step, index), help=tr("nav.previous")
    ):
        unasked = _previous_slide
    middle.markdown(slide_counter(counter(step, len(files) - 1), step, index, count), unsafe_allow_html=True)
    if (index < count - 1 or step < len(files) - 1) and right.button(
        "→",
        key="nav_next",
        width="stretch",
        type="primary",
        on_click=_next_slide,
        args=(step, index, count),
        help=tr("nav.next"),
    ):
        unasked = _next_slide
    if unasked is not None and not followed:  # the first click after a reconnection (_follow_unasked_click)
        asked = unasked(step, index, count) if unasked is _next_slide else unasked(step, index)
        if asked is None:
            st.rerun()  # the slide this run drew is the one before the click
        _follow_unasked_click(asked)


def _lab_slide_nav(script: str, index: int, count: int, where: tuple) -> None:
    """A lab page's ← and →: its own slides, none past its first or last."""
    left, middle, right = where
    if index > 0:
        left.button(
            "←", key="nav_prev", width="stretch", on_click=_lab_slide, args=(script, index - 1), help=tr("nav.previous")
        )
    middle.markdown(slide_counter(tr("nav.lab"), -1, index, count), unsafe_allow_html=True)
    if index < count - 1:
        right.button(
            "→",
            key="nav_next",
            width="stretch",
            type="primary",
            on_click=_lab_slide,
            args=(script, index + 1),
            help=tr("nav.next"),
        )


def _lab_slide(script: str, index: int) -> None:
    state.set(slide=f"{script}:{index}")


def slide_place(script: str) -> int | str:
    """What presenter mode keeps a page's slide under: a tour page's step, a lab page's script."""
    files = [f for f, _, _ in TOUR]
    return files.index(script) if script in files else script


def slide_of(place: int | str) -> int:
    """The slide presenter mode shows of ``place`` (a step, or a lab page's script:
    ``slide_place``): 0 unless the session moved within it (-1: the last)."""
    shown, _, index = str(state.get("slide", "")).rpartition(":")
    return number if shown == str(place) and (number := values.integer(index)) is not None else 0  # not "²"


def _next_slide(step: int, index: int, count: int) -> int | None:
    """→ in presenter mode: the next slide, or the next step's first. Returns the step it asks for."""
    st.session_state["_slide_moved"] = True
    if index < count - 1:
        state.set(slide=f"{step}:{index + 1}")
        return None
    state.set(slide=f"{step + 1}:0")
    ask_step(step + 1)
    return step + 1


def _previous_slide(step: int, index: int) -> int | None:
    """← in presenter mode: the slide before, or the step before's last. Returns the step it asks for."""
    st.session_state["_slide_moved"] = True
    if index > 0:
        state.set(slide=f"{step}:{index - 1}")
        return None
    state.set(slide=f"{step - 1}:-1")
    ask_step(step - 1)
    return step - 1


def _follow_unasked_click(step: int) -> None:
    """Previous / Next clicked, and this run did not follow their callback (``ask_step``): the
    click came to a session that had never drawn the button, so Streamlit knew no callback for it.
    That is the first click after the browser reconnected to another app server (its own stopped,
    deploy/serve-class.sh): the frontend keeps its page and sends no run until the click, whose run
    then draws the page clicked on. Open the step now (a second run), so that the click counts."""
    if not st.session_state.get("_asked_step_followed"):
        go_to(step)


def step_of(script: str) -> int:
    """The tour's index of a page script (0: the overview)."""
    return [f for f, _, _ in TOUR].index(script)


def slide_counter(where: str, step: int, index: int, count: int) -> str:
    """Presenter mode's counter, "Step 3 of 9 · slide 2 of 4" (``where``: the step's place, or the
    lab's), in two parts that each stay on one line: a narrow column breaks it at the dot alone.
    Its data attributes say where the slide is, for tests and a follower's page (``step`` -1: a lab
    page, in no step; ``index`` from 0)."""
    part = "<span class='vitviz-counter-part' style='white-space:nowrap'>{}</span>".format
    spot = tr("slides.counter", step=part(where), slide=part(tr("slides.slide", index=index + 1, count=count)))
    where_data = f"data-step='{step}' data-slide='{index}' data-slides='{count}'"
    return f"<div class='vitviz-slide-counter' {where_data} style='text-align:center'>{spot}</div>"


def counter(index: int, steps: int) -> str:
    """Where the tour stands: "Overview, then 9 steps" on the overview, "Step 3 of 9" after it."""
    return tr("nav.overview", total=steps) if index == 0 else tr("nav.step", index=index, total=steps)


def ask_step(step: int) -> None:
    """Previous / Next's callback, run before the run their click starts: that run opens the step
    (``follow_asked_step``) instead of drawing the page the click came from once more."""
    st.session_state[ASKED_STEP] = step


def follow_asked_step(steps: list) -> int | None:
    """app.py, right before st.navigation (``steps``: the tour's st.Page objects, in order): the
    run a Previous / Next click started draws the step it asked for. Returns the step when this
    Streamlit cannot do that: app.py then ``go_to``-s it after st.navigation.

    ``st.switch_page`` would end this run and start another that draws the step: a second run of
    app.py for every click, a fifth of the server's CPU for a class pressing Next together (0.018 of
    0.058 CPU-s a step, docs/benchmarks.md), and a 0.1 s pause it sleeps to flush the URL. Instead
    this run tells Streamlit's page manager the step is the page it is on, as the browser's own
    rerun request would: st.navigation then resolves it, sends the browser its page (the URL and
    the sidebar's highlight follow), and runs it. A Streamlit without that hook gets the two runs
    (st.switch_page finds its pages only once st.navigation has named them in this run).

    The browser clears the last page's elements only when a run starts on another page; here the
    run starts on the page clicked on, so its elements that this run has not replaced yet are
    hidden (the first of every run's style-only elements: on the runs that stay on a page an empty
    one takes its place at once, so a slider's rerun hides nothing)."""
    step = st.session_state.pop(ASKED_STEP, None)
    switching = step is not None and 0 <= step < len(steps)
    st.session_state["_asked_step_followed"] = switching  # nav: a click whose callback did not run
    st.html(web.style("hide_stale.css") if switching else "<style></style>")
    if not switching:
        return None
    if not internals.open_page_now(steps[step]):
        return step
    state.set(step=step)
    st.query_params.from_dict({**state.url_params(), "step": str(step)})
    return None


def open_at_the_top(page) -> None:
    """app.py, before a page runs: a page the session arrives at (Next at the foot of the last one,
    Previous, a sidebar link, the lab's "Open in the tour") opens at its title. Streamlit keeps
    the scroll box where the last page left it when the new one is as tall, so a class would see
    the middle of the next page. Reruns on the same page (a slider, a language switch) stay put."""
    if st.session_state.get("_page_shown") != page.url_path:
        st.session_state["_page_shown"] = page.url_path
        # in the sidebar, after its last widget: in the page it would push the title down by a gap
        st.sidebar.html(to_the_top(), unsafe_allow_javascript=True)


def to_the_top() -> str:
    """The script that scrolls the page to its top once this run is over, as an st.html body."""
    # a body of its own each time: Streamlit runs an st.html's script when its body is new
    st.session_state["_arrivals"] = arrivals = st.session_state.get("_arrivals", 0) + 1
    return web.script("after_run.js", f"arrival {arrivals}", target="")


def scroll_to(key: str) -> None:
    """Bring the container ``st.container(key=key)`` into view at the end of this run (in the
    sidebar, like ``open_at_the_top``'s script, so the page gets no gap)."""
    target = web.key_selector(key)  # refuses anything but letters, digits, - and _
    st.session_state["_scrolls"] = scrolls = st.session_state.get("_scrolls", 0) + 1  # a new body runs anew
    st.sidebar.html(web.script("after_run.js", f"scroll {scrolls}", target=target), unsafe_allow_javascript=True)


def fragment_off_page() -> bool:
    """Whether this run of a timed fragment (the teacher's live poll) is on another page than the
    session's last full run drew. The fragment's timer asks for its run naming the page the
    browser shows; a request sent before the browser heard of a new page (the run that opened it
    still on its way: a slow network, a busy server or browser) names the last one. Streamlit
    runs the fragment on that page, and the browser, on the new page by then, takes the run for a
    page change: it clears the whole page and draws the fragment alone. The fragment then asks
    for the page again (``redraw_page``)."""
    drawn = st.session_state.get("_drawn_page")
    if drawn is None:
        return False
    _, key, step = drawn
    running = internals.run_page()
    if key is not None and running is not None:
        return running != key
    return st.query_params.get("step") != step  # the public way: the request's URL, read on a page change


def redraw_page() -> None:
    """After ``fragment_off_page``: a full run that draws the session's page again (a run started
    on that page, as the browser's own request would be, so that the browser takes it for one)."""
    page, step = st.session_state["_drawn_page"][0], state.get("step")
    st.switch_page(page, query_params={**state.url_params(), **({} if step is None else {"step": str(step)})})


def go_to(step: int) -> None:
    """Open a tour page, keeping the session's choices (and the URL's copy of them)."""
    state.set(step=step)
    st.switch_page(TOUR[step][0], query_params={**state.url_params(), "step": str(step)})


def follow_step_link(page) -> None:
    """Open the page a shared link's ``step`` parameter asks for (once, on the session's first
    run at the root URL; a page's own URL opens it directly), then track the page in the URL."""
    files = [f for f, _, _ in TOUR]
    step = st.session_state.get("step")
    if not st.session_state.get("_step_followed"):
        st.session_state["_step_followed"] = True
        if isinstance(step, int) and 0 < step < len(files) and page.url_path == "":
            st.switch_page(files[step])
    titles = [tr(k) for _, k, _ in TOUR]
    index = titles.index(page.title) if page.title in titles else None
    state.set(step=index)
    state.set_param("step", index)
    st.session_state["_drawn_page"] = (page, internals.page_key(page), st.query_params.get("step"))


def open_test_image(class_name: str, index_in_class: int) -> None:
    """Make a test image the sidebar's image (a button's callback: before the sidebar's widgets exist)."""
    state.set(
        source="test", test=f"{class_name}/{index_in_class}", test_class=class_name, test_index=index_in_class, step=0
    )


def open_in_tour(class_name: str, index_in_class: int) -> None:
    """The "Open in the tour" button's callback: the test image becomes the sidebar's, and the run
    the click starts draws the overview (``follow_asked_step``), as Next's does."""
    open_test_image(class_name, index_in_class)
    ask_step(0)


def open_in_tour_button(where, key: str, class_name: str, index_in_class: int) -> None:
    """The lab's "Open in the tour": test image ``index_in_class`` of ``class_name`` becomes the
    tour's image, and the overview opens."""
    where.button(
        tr("mistakes.open_tour"),
        key=key,
        help=tr("mistakes.open_tour_help"),
        on_click=open_in_tour,
        args=(class_name, index_in_class),
        type="primary",
    )
