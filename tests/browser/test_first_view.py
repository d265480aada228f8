"""A fresh server's first visitor, in headless Chromium: the overview comes from the shipped first
view (vitviz.app.first_view) before torch has loaded, then the app's run brings the sidebar in
without drawing the figures again, and Next walks on."""

from __future__ import annotations

import re

import pytest

from benchmarks.bench import SIDEBAR_CHOICE, app_server, wait_ready
from tests.browser.chromium import launched
from vitviz.render.i18n import t

pytestmark = pytest.mark.cifar10


MARK_FIGURES = "() => document.querySelectorAll('.vitviz-chart').forEach((d) => (d.vitvizFirstView = true))"
FIGURES = """() => [...document.querySelectorAll('.vitviz-chart')].map((d) => ({
  first: Boolean(d.vitvizFirstView), drawn: d.dataset.drawn === '1' }))"""
TABLE_HEIGHT = (
    "() => document.querySelector(\"[data-testid='stMarkdownContainer'] table\").getBoundingClientRect().height"
)
HANGUL = re.compile("[\uac00-\ud7a3]")


def problems(page) -> list[str]:
    return [
        e.inner_text()[:200]
        for e in page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").all()
    ]


@pytest.mark.parametrize("language", ["en", "ko"])
def test_a_fresh_servers_first_visitor_sees_the_overview_then_the_app_takes_over(language):
    with app_server() as server, launched() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server.url}/" + ("?lang=ko" if language == "ko" else ""), wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=60_000)
        server.wait_for_output(f"drew the first view ({language})", timeout=5)
        title = page.locator("h1").first.inner_text()
        assert title == t("page.home", language)
        assert bool(HANGUL.search(page.locator("[data-testid='stMain']").inner_text())) == (language == "ko")
        page.evaluate(MARK_FIGURES)
        table_height = page.evaluate(TABLE_HEIGHT)

        page.locator(SIDEBAR_CHOICE).first.wait_for(timeout=60_000)  # the app's run, once the startup is ready
        wait_ready(page, timeout_ms=60_000, quiet_polls=10)
        assert page.locator("h1").first.inner_text() == title
        figures = page.evaluate(FIGURES)
        assert figures == [{"first": True, "drawn": True}] * 2, figures  # the same elements, not drawn again
        assert page.evaluate(TABLE_HEIGHT) == table_height
        assert not problems(page)

        page.get_by_role("button", name=re.compile(t("nav.next", language))).first.click()
        page.wait_for_function(
            "(before) => document.querySelector('h1')?.innerText !== before", arg=title, timeout=60_000
        )
        wait_ready(page, timeout_ms=60_000)
        assert page.locator("h1").first.inner_text() == t("page.input", language)
        assert not problems(page)


def test_next_pressed_at_once_in_the_first_view_opens_the_first_step():
    """Next in the first view, before the startup is ready: the click's run is the app's, which
    waits for what it needs, and opens the step."""
    with app_server() as server, launched() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server.url}/", wait_until="domcontentloaded")
        page.get_by_role("button", name=re.compile(t("nav.next", "en"))).first.click(timeout=60_000)
        page.wait_for_function(
            "(want) => document.querySelector('h1')?.innerText === want", arg=t("page.input", "en"), timeout=60_000
        )
        wait_ready(page, timeout_ms=60_000)
        assert not problems(page)
        server.output.seek(0)
        assert b"drew the first view (en)" in server.output.read()


# When the first figure's element came into the page, by the page's clock.
FIRST_FIGURE_SEEN = """(() => {
  performance.setResourceTimingBufferSize(2000);  // 250 by default: a page's first view fetches more
  new MutationObserver((_, observer) => {
    if (document.querySelector('.vitviz-chart')) {
      window.vitvizFirstFigureAt = performance.now();
      observer.disconnect();
    }
  }).observe(document, { subtree: true, childList: true });
})()"""
FETCHED = "() => performance.getEntriesByType('resource').map((e) => [e.name, e.startTime])"


def test_the_first_view_fetches_what_its_elements_need_before_they_ask():
    """vitviz.app.chart_script.EarlyCharts: as the first run starts, the page fetches the chart
    element's drawing and the chunks of Streamlit's frontend that the overview's elements need,
    so that neither waits until the figures have arrived at a server then busy loading torch; once
    that run has ended, the chunks the sidebar and the steps need (a slider: the overview has none)."""
    from vitviz.app import chart_script
    from vitviz.app.assets import frontend_chunks, streamlit_static_dir

    slider = frontend_chunks(streamlit_static_dir(), ["Slider"])[0]
    with app_server() as server, launched() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(FIRST_FIGURE_SEEN)
        page.goto(f"{server.url}/", wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=60_000)
        page.wait_for_function(
            f"() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/{slider}'))",
            timeout=30_000,
        )
        fetched = dict(page.evaluate(FETCHED))
        first_figure = page.evaluate("window.vitvizFirstFigureAt")
        assert not problems(page)
    drawing = [at for name, at in fetched.items() if name.endswith("/" + chart_script.chart_script_path())]
    assert len(drawing) == 1 and drawing[0] < first_figure  # asked for before any figure's element was there
