"""A real browser visits every page of `streamlit run app.py` and keeps a screenshot of each.

Screenshots go to screenshots/ (ignored by git) so a person can look at what users see.
"""

from __future__ import annotations

import math
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS, app_server, url_path, wait_ready
from tests.conftest import SHARED_DATA
from vitviz.app import tour

pytestmark = pytest.mark.cifar10  # the server's lab browses a copy of the test split

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "screenshots"
ARGS = CHROMIUM_ARGS  # the benchmark's Chromium, started the same way


# Console errors that are Streamlit's own, not the app's: opened on a page's URL, the frontend first
# asks for /<page>/_stcore/... (404) and then falls back to the root, which works.
BENIGN = ("/_stcore/host-config", "/_stcore/health")


def _is_app_error(message) -> bool:
    where = message.location.get("url", "") if message.location else ""
    return message.type == "error" and not where.endswith(BENIGN)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # The lab evaluates the whole test folder on its first visit: give the server a small copy of
    # the CIFAR-10 test folder (20 images a class, in a temporary folder) and a cold cache of its own.
    data = tmp_path_factory.mktemp("data")
    source = SHARED_DATA / "test"
    for class_folder in sorted(source.iterdir()):
        target = data / "test" / class_folder.name
        target.mkdir(parents=True)
        for file in sorted(class_folder.iterdir())[:20]:
            shutil.copy(file, target / file.name)
    env = {
        "VITVIZ_DATA": str(data),
        "VITVIZ_CACHE": str(tmp_path_factory.mktemp("cache")),
        "VITVIZ_MODELS": str(tmp_path_factory.getbasetemp()),  # where the journeys save their own models
    }
    with app_server(timeout=60, env=env) as running:  # the benchmark's launcher: same flags, same checks
        yield running.url


CONTENT = ".js-plotly-plot, [data-testid='stMetricValue'], [data-testid='stDataFrame'], [data-testid='stMarkdownContainer'] table"


def _visit(page, url: str, shot: Path, content: str = CONTENT) -> list[str]:
    problems: list[str] = []
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=90_000)
    try:
        page.wait_for_selector(content, timeout=90_000)
    except Exception:
        problems.append(
            f"{url}: no figure, metric or table appeared" if content == CONTENT else f"{url}: {content} did not appear"
        )
    page.wait_for_timeout(1500)
    page.screenshot(path=str(shot), full_page=True)
    for selector in ("[data-testid='stException']", ".stException"):
        if page.locator(selector).count():
            problems.append(f"{url}: Streamlit exception: {page.locator(selector).first.inner_text()[:300]}")
    return problems


# Words that Plotly's modebar would cover while the pointer rests on their figure: the modebar sits
# in the page (transparent) even when hidden, so its box and the titles' boxes can be compared.
COVERED_BY_MODEBAR = """() => {
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const covered = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const bar = plot.querySelector('.modebar');
    if (!bar || bar.getBoundingClientRect().width === 0) continue;
    for (const text of plot.querySelectorAll('.gtitle, .annotation-text, .legendtext')) {
      if (meet(bar.getBoundingClientRect(), text.getBoundingClientRect())) covered.push(text.textContent);
    }
  }
  return covered;
}"""


def test_every_page_in_a_real_browser(server):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium chromium-driver fonts-noto-cjk"

    SHOTS.mkdir(exist_ok=True)
    console: list[str] = []
    problems: list[str] = []
    pages = tour.scripts()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: console.append(f"{page.url}: {m.text}") if _is_app_error(m) else None)
        page.on("pageerror", lambda e: console.append(f"{page.url}: {e}"))
        # first, on the fresh server, a shared deep link (in Korean): it must open that page inside
        # the app (navigation and sidebar), not the bare page script
        problems += _visit(page, f"{server}/patches?lang=ko&sample=rocket.jpg", SHOTS / "2_patches_ko.png")
        assert page.locator("h1").first.inner_text().startswith("2. 패치")
        assert page.locator("[data-testid='stSidebar'] [data-testid='stRadio']").count() >= 1
        assert "sample=rocket.jpg" in page.url
        assert page.evaluate(COVERED_BY_MODEBAR) == []
        for script in pages:
            path = url_path(script)
            problems += _visit(page, f"{server}/{path}?lang=en", SHOTS / f"{Path(script).stem}.png", CONTENT)
            problems += [f"{path}: the modebar covers '{text}'" for text in page.evaluate(COVERED_BY_MODEBAR)]
        browser.close()
    assert problems == []
    assert console == []


def _selectbox(page, label: str):
    return page.get_by_role("combobox", name=label)


def _click_cell(page, true: int, predicted: int, chart: str = "mistakes_confusion", k: int = 10) -> None:
    """Click one cell of the confusion matrix drawn with key ``chart`` (the page names the filtered
    cell in the key) as a person does: once that chart is drawn, point at the cell, wait for its
    tooltip, click. Markers are row-major: true * k + predicted."""
    figure = page.locator(f".st-key-{chart} .js-plotly-plot")
    point = figure.locator(".scatterlayer path.point").nth(true * k + predicted)
    point.wait_for(state="attached", timeout=90_000)
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    figure.locator(".hoverlayer .hovertext").first.wait_for(state="visible", timeout=30_000)
    page.mouse.click(x, y)


def test_a_click_on_a_confusion_cell_filters_and_a_second_click_still_counts(server):
    """Click a cell: both class filters follow. Move a filter away with its selectbox, click the
    same cell again: the filters follow again (the chart's stale selection must not swallow it)."""
    from playwright.sync_api import expect, sync_playwright

    bird, cat, deer = 2, 3, 4
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server}/mistakes?lang=en", wait_until="domcontentloaded")
        page.wait_for_selector(".js-plotly-plot >> nth=1", timeout=90_000)
        true_box, predicted_box = _selectbox(page, "True class"), _selectbox(page, "Predicted class")
        _click_cell(page, cat, deer)
        expect(true_box).to_have_value("cat", timeout=30_000)
        expect(predicted_box).to_have_value("deer", timeout=30_000)

        true_box.click()  # a Streamlit selectbox is searchable: type the class, Enter picks it
        page.keyboard.type("bird")
        page.keyboard.press("Enter")
        expect(true_box).to_have_value("bird", timeout=30_000)
        # a person clicks once the chart is redrawn: a click on the old chart, while the rerun still
        # runs, lands on a figure about to be replaced
        wait_ready(page, timeout_ms=90_000, quiet_polls=10, titled=False)

        _click_cell(page, cat, deer, chart=f"mistakes_confusion_{bird}_{deer}")
        expect(true_box).to_have_value("cat", timeout=30_000)
        expect(predicted_box).to_have_value("deer", timeout=30_000)
        page.screenshot(path=str(SHOTS / "10_mistakes_clicked.png"), full_page=True)
        browser.close()


def test_plotly_js_is_fetched_once_and_streamlits_chart_chunk_never(server):
    """vitviz.app.chart_script: a new tab fetches plotly.js's cartesian bundle as it loads
    (EarlyCharts' preload link) and evaluates it once, for every figure of the page (vitviz's chart
    element, static/chart.js); neither the full plotly.js (three times its size) nor Streamlit's
    own chart chunk (its Plotly, 4.7 MB) is fetched, and each figure is drawn once, not again when
    it is already drawn. The bundle has the trace types its first line names (tools/plotly_bundle)."""
    from playwright.sync_api import sync_playwright

    from vitviz.app.chart_script import CARTESIAN_TRACES, cartesian_script_path, plotly_script_path

    script = cartesian_script_path().rsplit("/", 1)[-1]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(DRAWS_COUNTED)
        page.goto(f"{server}/patches?lang=en", wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)
        page.wait_for_timeout(1000)  # a draw after the page was ready would count too
        resources = page.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
        preload = page.locator(f"link[rel='preload'][as='script'][href$='/{script}']").count()
        draws = page.evaluate("window.vitvizDraws")
        drawn = page.locator(".vitviz-chart[data-drawn]").count()
        traces = page.evaluate("Object.keys(window.Plotly.PlotSchema.get().traces)")
        browser.close()
    assert set(traces) == CARTESIAN_TRACES
    assert sum(name.endswith("/" + script) for name in resources) == 1 and preload == 1
    assert not [name for name in resources if "/PlotlyChart." in name or name.endswith(plotly_script_path())]
    assert drawn >= 3 and draws == drawn  # each figure of the page drawn once


# Records every chart that waits to be drawn (data-waiting set) and whether it lay in the window then.
WAITS_RECORDED = """(() => {
  window.vitvizWaited = [];
  new MutationObserver((changes) => {
    for (const change of changes) {
      const div = change.target;
      if (div.dataset.waiting !== "1") continue;
      const box = div.getBoundingClientRect();
      window.vitvizWaited.push({ key: div.closest('[class*="st-key-"]').className, inWindow: box.bottom > 0 && box.top < innerHeight });
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-waiting"] });
})()"""

NEVER_IDLE = "window.requestIdleCallback = () => 1; window.cancelIdleCallback = () => {};"  # a browser always busy

# The browser idle only when the test says so: requestIdleCallback keeps the callbacks in
# window.vitvizIdle, and the test calls them with a deadline that never runs out.
IDLE_ON_DEMAND = """window.vitvizIdle = [];
window.requestIdleCallback = (callback) => window.vitvizIdle.push(callback);
window.cancelIdleCallback = () => {};"""

# Calls the kept idle callbacks one by one; returns how many figures each drew (those that drew one).
IDLE_NOW = """() => {
  const drawn = () => [...document.querySelectorAll(".vitviz-chart")].filter((div) => div._fullLayout).length;
  const counts = [];
  while (window.vitvizIdle.length) {
    const before = drawn();
    window.vitvizIdle.shift()({ timeRemaining: () => 50, didTimeout: false });
    if (drawn() > before) counts.push(drawn() - before);
  }
  return counts;
}"""


def test_figures_below_the_first_screen_wait_and_are_drawn_when_idle_scrolled_to_or_printed(server):
    """static/chart.js: a figure in the window is drawn at once; one below it waits (data-waiting)
    and is drawn once the browser is idle, with nothing scrolled: as many in one idle callback as
    the browser's idle time holds (not a frame between every two); where the browser never is
    idle, a figure still waiting is drawn when it is scrolled into the window, and all of them
    before the page is printed. Each figure is drawn once."""
    from playwright.sync_api import sync_playwright

    url = f"{server}/{url_path('app_pages/6_block.py')}?lang=en"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.add_init_script(DRAWS_COUNTED)
        page.add_init_script(WAITS_RECORDED)
        page.goto(url, wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)  # every chart drawn, though none was scrolled to
        page.wait_for_timeout(500)
        charts = page.locator(".vitviz-chart").count()
        waited = page.evaluate("window.vitvizWaited")
        draws = page.evaluate("window.vitvizDraws")
        assert page.locator(".vitviz-chart[data-drawn]").count() == charts >= 4 and draws == charts
        assert waited and not [w for w in waited if w["inWindow"]]  # only figures out of the window waited
        assert page.locator(".vitviz-chart[data-waiting]").count() == 0

        idle = browser.new_page(viewport={"width": 1280, "height": 720})
        idle.add_init_script(IDLE_ON_DEMAND)
        idle.goto(url, wait_until="domcontentloaded")
        wait_ready(idle, timeout_ms=90_000, in_view=True)
        idle.wait_for_timeout(2000)  # the run over, every figure below the window waiting
        waiting = idle.locator(".vitviz-chart[data-waiting]").count()
        assert waiting >= 2 and idle.evaluate(IDLE_NOW) == [waiting]  # one idle callback drew them all
        assert idle.locator(".vitviz-chart[data-drawn]").count() == charts
        idle.close()

        busy = browser.new_page(viewport={"width": 1280, "height": 720})
        busy.add_init_script(NEVER_IDLE)
        busy.goto(url, wait_until="domcontentloaded")
        wait_ready(busy, timeout_ms=90_000, in_view=True)  # the first screen drawn ...
        busy.wait_for_timeout(2000)
        waiting = busy.locator(".vitviz-chart[data-waiting]")
        before = waiting.count()
        assert before >= 2  # ... and the figures below it still waiting
        assert busy.locator(".vitviz-chart[data-waiting][data-drawn]").count() == 0
        waiting.first.scroll_into_view_if_needed()
        busy.wait_for_function(
            "(n) => document.querySelectorAll('.vitviz-chart[data-waiting]').length < n", arg=before, timeout=10_000
        )
        busy.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        busy.wait_for_function(
            "() => [...document.querySelectorAll('.vitviz-chart')].every((c) => c.dataset.drawn)", timeout=10_000
        )
        browser.close()


STORED = "vitviz-margins-1"  # static/chart.js's entry in the browser's storage

# Each drawn figure's key, the margins plotly.js was given and drew it with, and its layout's own.
MARGINS = """() => Object.fromEntries([...document.querySelectorAll('.vitviz-chart[data-drawn]')].map((div) => {
  const sides = (margin) => ["l", "r", "t", "b"].map((side) => margin[side]);
  const own = JSON.parse(div.vitvizSpec).layout.margin || {};
  return [div.vitvizKey, [sides(div.layout.margin || {}), sides(div._fullLayout._size), sides(own)]];
}))"""

# Widens the left margin the browser's storage keeps for a figure key in a language, by 30 px.
WIDEN_STORED = """([stored, prefix]) => {
  const entries = JSON.parse(localStorage.getItem(stored));
  const entry = entries.find(([key]) => key.startsWith(prefix));
  entry[1].l += 30;
  localStorage.setItem(stored, JSON.stringify(entries));
  return entry[1].l;
}"""


def test_a_figure_drawn_again_under_its_key_starts_from_the_margins_it_needed(server):
    """static/chart.js: plotly.js draws a figure whose labels, colour bar or legend need more room
    than its layout's margins twice (its automargin); the browser remembers the margins each figure
    key ended with, and the same step seen again gives plotly.js those margins from the start, and
    its figures end where they were (nothing moves). What it remembers is kept in its storage, by
    key and language: a page loaded anew starts from it (before the margins measured when the app
    was made), and the same figure in Korean does not."""
    from playwright.sync_api import sync_playwright

    url = f"{server}/{url_path('app_pages/5_attention.py')}?lang=en"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)
        first = page.evaluate(MARGINS)
        for button in ("nav_prev", "nav_next"):
            title = page.locator("h1").first.inner_text()
            page.locator(f".st-key-{button} button").click()
            wait_ready(page, old_title=title, timeout_ms=90_000)
        again = page.evaluate(MARGINS)
        widened = page.evaluate(WIDEN_STORED, [STORED, "attention_distance|en|"])
        page.goto(url, wait_until="domcontentloaded")  # the page loaded anew: the browser's storage
        wait_ready(page, timeout_ms=90_000)
        reloaded = page.evaluate(MARGINS)
        page.goto(url.replace("lang=en", "lang=ko"), wait_until="domcontentloaded")  # other labels
        wait_ready(page, timeout_ms=90_000)
        korean = page.evaluate(MARGINS)
        browser.close()
    grown = [key for key, (_, drawn, own) in first.items() if drawn != own]
    assert len(grown) >= 3  # the maps' colour bars, the distances' axes and legend, the worked softmax's labels
    assert set(again) == set(first)
    for key, (given, drawn, own) in again.items():
        assert drawn == first[key][1], key  # drawn where it was ...
        assert given == [max(o, math.ceil(d)) for o, d in zip(own, first[key][1], strict=True)], (
            key
        )  # ... from the start
    assert reloaded["attention_distance"][0][0] == widened  # what the storage kept, not the file's
    assert korean["attention_distance"][0][0] != widened  # Korean's own


# Each drawn figure's key, the margins plotly.js was given and drew it with, those its layout's own
# margins grow to (the figure drawn again from them, and again from what it grew to, until plotly.js
# grows it no more: what it needs), and its layout's own.
NEEDED = """async () => {
  const found = {};
  for (const div of document.querySelectorAll('.vitviz-chart[data-drawn]')) {
    const sides = (margin) => ["l", "r", "t", "b"].map((side) => Math.round(margin[side]));
    const given = sides(div.layout.margin), drawn = sides(div._fullLayout._size);
    const own = JSON.parse(div.vitvizSpec).layout.margin;
    let margin = own;
    for (let tries = 0; tries < 12; tries++) { // drawn again from what it grew to, until it stays
      await div.vitvizPlotly.relayout(div, { margin });
      const grown = div._fullLayout._size;
      if (["l", "r", "t", "b"].every((side) => Math.round(grown[side]) === Math.round(margin[side] ?? 0))) break;
      margin = { ...own, l: grown.l, r: grown.r, t: grown.t, b: grown.b };
    }
    found[div.vitvizKey] = [given, drawn, sides(div._fullLayout._size), sides(own)];
  }
  return found;
}"""


def tour_margins(browser, server: str, window: tuple[int, int]) -> dict[str, list[list[int]]]:
    """A browser that remembers nothing walks the tour by Next: NEEDED for every figure."""
    seen = {}
    page = browser.new_page(viewport={"width": window[0], "height": window[1]})
    page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
    wait_ready(page, timeout_ms=90_000)
    for step in range(len(tour.TOUR)):
        if step:
            title = page.locator("h1").first.inner_text()
            page.locator(".st-key-nav_next button").click()
            wait_ready(page, old_title=title, timeout_ms=90_000)
        seen |= page.evaluate(NEEDED)
    page.close()
    return seen


def test_a_first_visit_draws_each_figure_of_the_tour_once_from_the_measured_margins(server):
    """vitviz/assets/margins.json (tools.margins): a browser that remembers nothing walks the tour
    at a projector's 1280 x 720, a window the file was measured at. Every figure starts from
    margins wide enough for its labels, colour bar and legend, so plotly.js draws it once (it grows
    none; a few by a pixel, plotly.js's rounding), and none is given more than a few pixels more
    than it needs (its layout's own margins grown by plotly.js, measured on the page). At 1400 x 1000, between the windows measured, nine
    figures in ten are drawn once. Fails when a figure's labels change and the file was not made
    again (``python -m tools.margins``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        projector = tour_margins(browser, server, (1280, 720))
        between = tour_margins(browser, server, (1400, 1000))
        browser.close()
    grew = {key: (given, drawn) for key, (given, drawn, _, _) in projector.items() if drawn != given}
    assert len(projector) >= 40 and len(grew) <= len(projector) // 20, grew  # drawn once, all but one in 20
    # plotly.js grows a few figures by a pixel from almost any start (a histogram: 55 px from 4,
    # 58 from 57, 59 from 58 ..., 65 from 65), never by more: a figure measured anew grows more
    assert all(0 <= d - g <= 1 for given, drawn in grew.values() for g, d in zip(given, drawn, strict=True)), grew
    started_wider = {key for key, (given, _, _, own) in projector.items() if given != own}
    assert len(started_wider) >= 30  # the figures whose labels need more than 4 px: three in four
    too_wide = {
        key: (given, needed)
        for key, (given, _, needed, _) in projector.items()
        if any(g - n > 2 for g, n in zip(given, needed, strict=True))
    }
    assert not too_wide, too_wide
    once = [key for key, (given, drawn, _, _) in between.items() if drawn == given]
    assert len(once) >= 0.9 * len(between) >= 40, set(between) - set(once)


def test_the_stored_margins_are_bounded_and_a_broken_store_draws_as_before(server):
    """The margins kept in the browser's storage: a store that is not the app's JSON, or holds
    entries of the wrong shape, is left aside (the figures are drawn, with their own margins); one
    that holds more than 400 figure sizes keeps the newest 400, the page's own among them."""
    from playwright.sync_api import sync_playwright

    url = f"{server}/{url_path('app_pages/5_attention.py')}?lang=en"
    many = [[f"old{i}|600|450", {"l": 1, "r": 2, "t": 3, "b": 4}] for i in range(450)]
    broken = [
        ["attention_distance|en|9|9", {"l": "wide"}],
        ["attention_heads|en|9|9", {"l": 1e9}],
        "not an entry",
        [7, {}],
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server}/_stcore/health")  # the app's origin, to write its storage before its page
        page.evaluate("(key) => localStorage.setItem(key, '{not json')", STORED)
        page.goto(url, wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)
        fresh = page.evaluate(MARGINS)
        page.evaluate("([key, value]) => localStorage.setItem(key, JSON.stringify(value))", [STORED, broken + many])
        page.goto(url, wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)
        stored = page.evaluate("(key) => JSON.parse(localStorage.getItem(key))", STORED)
        browser.close()
    assert len(fresh) >= 5 and all(drawn for _, drawn, _ in fresh.values())
    keys = [key for key, _ in stored]
    assert len(keys) == 400 and not any(key.endswith("|9|9") for key in keys)
    page_keys = [key for key in keys if not key.startswith("old")]
    assert len(page_keys) == len(fresh)  # the page's figures, newest, kept
    assert keys[: 400 - len(page_keys)] == [key for key, _ in many[-(400 - len(page_keys)) :]]


# Counts plotly.js's draws (newPlot and react) on the page, from the moment plotly.js loads.
DRAWS_COUNTED = """(() => {
  window.vitvizDraws = 0;
  let plotly;
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: () => plotly,
    set: (value) => {
      plotly = value;
      for (const name of ["newPlot", "react"]) {
        const draw = value[name];
        value[name] = (...args) => { window.vitvizDraws++; return draw(...args); };
      }
    },
  });
})()"""


# Each metric's value as shown, and whether any part of it is cut (wider than its box).
METRICS = """() => Array.from(document.querySelectorAll("[data-testid='stMetricValue']")).map((value) =>
  [value.innerText.replace(/\\s+/g, " ").trim(), [value, ...value.querySelectorAll("*")].some((el) => el.scrollWidth > el.clientWidth + 1)])"""


def test_a_long_number_wraps_in_its_column_and_is_never_cut(server):
    """The patches page's "try it" at 512 px and P = 16, on a projector's 1280 x 720: its metrics
    (three columns of a wide page) show whole, wrapped at their spaces, not "32 x 32 = 1…"."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{server}/patches?lang=en&concept_size=512&concept_patch=16", wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=90_000)
        shown = dict(page.evaluate(METRICS))
        browser.close()
    for value in ("32 x 32 = 1024", "16 x 16 x 3 = 768", "1024 + 1 = 1025"):
        assert value in shown and not shown[value], (value, shown)


def test_random_test_image_and_its_verdict(server):
    """The sidebar's 'Random test image' button picks another CIFAR-10 test image (the URL and the
    class picker follow), and the overview says whether the model got it right. The link is one
    made before test images came from other datasets (``cifar=``): it still opens cat/3."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server}/?lang=en&cifar=cat/3", wait_until="domcontentloaded")
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        verdict = page.locator("[data-testid='stAlert']", has_text="True class (CIFAR-10 test set): cat")
        expect(verdict).to_have_count(1, timeout=30_000)
        seen = {"cat/3"}
        for _ in range(5):  # 200 images: five picks all landing on cat/3 is (1/200)^5
            page.get_by_role("button", name="Random test image").click()
            page.wait_for_timeout(2500)  # the rerun; the checks below wait longer if it is slow
            picked = urllib.parse.unquote(urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["test"][0])
            seen.add(picked)
            class_name = picked.rpartition("/")[0]
            expect(_selectbox(page, "Class")).to_have_value(class_name, timeout=30_000)
            alert = page.locator("[data-testid='stAlert']", has_text=f"True class (CIFAR-10 test set): {class_name}")
            expect(alert).to_have_count(1, timeout=30_000)
            if len(seen) > 1:
                break
        assert len(seen) > 1
        page.screenshot(path=str(SHOTS / "0_home_random.png"), full_page=True)
        browser.close()


def test_every_model_title_fits_the_sidebar_picker(server):
    """The model picker is an <input>, which cuts what does not fit ("CIFAR-10 ViT (shipped, 84.9% tes"):
    every registry title, in every language, is written into the real picker at 1280 x 720 and
    must fit its box; the whole description wraps in the caption below."""
    from playwright.sync_api import sync_playwright

    from vitviz.models import zoo
    from vitviz.render.i18n import LANGUAGES

    titles = sorted({spec.title_in(lang) for spec in zoo.REGISTRY.values() for lang in LANGUAGES})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
        page.wait_for_selector(".st-key-model input", timeout=90_000)
        widths = page.evaluate(
            """(titles) => {
                const box = document.querySelector('.st-key-model input');
                const shown = box.value;
                const out = titles.map((title) => { box.value = title; return [title, box.scrollWidth, box.clientWidth]; });
                box.value = shown;
                return out;
            }""",
            titles,
        )
        browser.close()
    assert [title for title, needed, has in widths if needed > has] == []
