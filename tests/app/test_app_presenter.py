"""Presenter mode draws every figure larger (charts.draw themes each for the mode), never by zooming
the page (issue 39). The browser test (tests/browser/test_presenter.py) checks that nothing is cut."""

from __future__ import annotations

import json

from tests.apptest import charts, errors, open_page, slide_counter
from vitviz.app import web


def _charts(present: bool) -> dict[str, tuple[dict, dict]]:
    at = open_page("app_pages/5_attention.py", query={"present": "1"} if present else None)  # a shared link
    assert errors(at) == []
    return {chart.proto.id.rsplit("-", 1)[-1]: (json.loads(chart.proto.spec), chart.data) for chart in charts(at)}


def test_every_chart_of_a_page_is_drawn_larger_in_presenter_mode_and_no_page_is_zoomed():
    screen, presenter = _charts(False), _charts(True)
    # presenter mode shows a slide: the step's first figure row ([CLS]'s map beside the query's)
    assert presenter.keys() <= screen.keys() and len(presenter) >= 2 and len(screen) >= 4
    for key, (figure, data) in presenter.items():
        layout, before = figure["layout"], screen[key][0]["layout"]
        assert data["stretch"] and not screen[key][1]["stretch"], key  # a slide's figure takes the slide's free height
        assert layout["font"]["size"] >= 18 and before["font"]["size"] >= 14, key
        if before.get("height"):  # drawn taller (a slide's figure then takes the slide's free height: presenter.css)
            assert layout["height"] > before["height"], key
    presenting = web.page_text("presenter.css", root_px="20") + web.page_text("presenter.js", marker="m")
    assert "zoom:" not in presenting.replace(" ", "")  # a zoomed page cut the figures at their column's edge


def test_next_and_previous_move_slide_by_slide_before_they_move_step_by_step():
    """Step 7 has four slides: → walks them one by one (the click onto the last slide stays in
    the step), then opens step 8; ← from step 8's first slide opens step 7's last, and ← again
    its third."""
    at = open_page("app_pages/7_prediction.py", query={"present": "1"})
    assert errors(at) == []
    counters = []
    for _ in range(4):
        counters.append(slide_counter(at))
        at.button(key="nav_next").click().run()
        assert errors(at) == []
    assert counters == [f"Step 7 of 9 · slide {n} of 4" for n in range(1, 5)]
    assert "Step 8 of 9 · slide 1 of " in slide_counter(at)
    at.button(key="nav_prev").click().run()
    assert slide_counter(at) == "Step 7 of 9 · slide 4 of 4"
    at.button(key="nav_prev").click().run()
    assert slide_counter(at) == "Step 7 of 9 · slide 3 of 4"


def test_next_walks_every_slide_of_a_step_before_the_next_step():
    at = open_page("app_pages/1_input.py", query={"present": "1"})
    assert errors(at) == [] and "slide 1 of 3" in slide_counter(at)
    for shown in ("slide 2 of 3", "slide 3 of 3"):  # the last slide too, before step 2
        at.button(key="nav_next").click().run()
        assert errors(at) == [] and "Step 1 of 9" in slide_counter(at) and shown in slide_counter(at)
    at.button(key="nav_next").click().run()
    assert errors(at) == [] and "Step 2 of 9 · slide 1 of 2" in slide_counter(at)
    for shown in ("Step 1 of 9 · slide 3 of 3", "slide 2 of 3", "Step 1 of 9 · slide 1 of 3"):  # and back
        at.button(key="nav_prev").click().run()
        assert errors(at) == [] and shown in slide_counter(at)


def test_a_slide_kept_in_other_digits_opens_the_step_s_first_slide():
    """The session's slide is "step:index"; an index in digits int() refuses ("²", which
    str.isdigit() accepts) or too long for a slide crashed the page: it opens the first slide."""
    for index in ("²", "٣", "9" * 5000, "1.5"):
        at = open_page("app_pages/5_attention.py", present=True, slide=f"5:{index}")
        assert errors(at) == [], index
        assert slide_counter(at).startswith("Step 5 of 9 · slide 1 of"), index
    at = open_page("app_pages/5_attention.py", present=True, slide="5:-1")  # -1: the step's last, as Previous keeps it
    assert errors(at) == [] and not slide_counter(at).startswith("Step 5 of 9 · slide 1 of")
