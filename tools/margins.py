"""The margins plotly.js draws the app's figures with, measured in Chromium: vitviz/assets/margins.json

    python -m tools.margins

The figure builders leave margins of 4 px, and plotly.js grows them to fit the labels, colour bars
and legends (its automargin): it draws the figure, measures, and draws it again. Three figures in
four were drawn twice so, about 0.05 s each in a step (docs/benchmarks.md). A browser remembers
the margins each figure ended with (static/chart.js), but a visitor's first walk through the tour
has nothing to remember: this file gives it what Chromium measured here.

It walks the app with the shipped model and the cat photo, as a fresh visitor does: the tour by
its Next button and every page of the lab by its address, in each language, in windows of
1280 x 720, 1600 x 900 and 1920 x 1080, and presenter mode's slides in the same windows. For each
figure key, language and mode it keeps, for each figure width seen, the margins plotly.js drew the
figure with on the sides it grew, and 0 on the sides it did not. Nothing more: a figure started
wider than where plotly.js settles may settle wider still (the tokens' heatmaps: 86 px from 4,
94 from 89, 94 from 94), so it walks again from what it wrote, as long as a figure still grows,
and keeps the larger margins (``measure``). A few figures grow by a pixel from almost any start
(a histogram: 55 px from 4, 58 from 57, 59 from 58, ... 65 from 65): those are drawn twice, as
before.

``vitviz.app.margins`` sends a figure's entries with it, and chart.js starts the figure from
them: each side at least the entry's of the widest width not wider than the figure's (a legend
needs fewer rows in a wider figure), and the line through the neighbouring widths' (a colour
bar's room grows with the figure's width, about two pixels a hundred). Another image or model
may need a little more (plotly.js still grows it) or less (a few pixels to spare).
tests/browser/test_browser.py checks that the tour's figures are drawn once with this file, at a
window it was measured at and at one between, and that none starts more than 2 px wider than
plotly.js settles from its layout's own margins.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS, SLIDE_AT, app_server, url_path, wait_ready
from vitviz.app import margins, tour
from vitviz.render.i18n import LANGUAGES

log = logging.getLogger("tools.margins")

WINDOWS = ((1280, 720), (1600, 900), (1920, 1080))

# Each drawn figure's key, width, the margins its layout gave plotly.js and those it drew with.
DRAWN = """() => [...document.querySelectorAll('.vitviz-chart[data-drawn]')].map((div) => [
  div.vitvizKey, div._fullLayout.width,
  ["l", "r", "t", "b"].map((side) => (div.layout.margin || {})[side]),
  ["l", "r", "t", "b"].map((side) => div._fullLayout._size[side])])"""


def grown(given: list[float | None], drawn: list[float]) -> list[int] | None:
    """The start a figure needs: each side plotly.js grew, rounded up; 0 where it kept the
    layout's own. None when it grew none."""
    start = [0 if side == (was or 0) else math.ceil(side) for was, side in zip(given, drawn, strict=True)]
    return start if any(start) else None


def widen(widths: dict[int, list[int]], width: int, start: list[int]) -> None:
    """``widths[width]``, each side at least ``start``'s."""
    widths[width] = [max(a, b) for a, b in zip(widths.get(width, start), start, strict=True)]


def keep(found: dict[str, dict[int, list[int]]], page: Any, language: str, mode: str) -> None:
    """The figures drawn on ``page`` now, into ``found``: "key|language|mode" -> width -> start."""
    for key, width, given, drawn in page.evaluate(DRAWN):
        start = grown(given, drawn)
        if key and start:
            widen(found.setdefault(margins.key(key, language, mode == "present"), {}), round(width), start)


def walk_pages(browser: Any, url: str, language: str, window: tuple[int, int], found: dict) -> None:
    """The tour by Next, then every page of the lab by its address."""
    page = browser.new_page(viewport={"width": window[0], "height": window[1]})
    page.goto(f"{url}/?lang={language}", wait_until="domcontentloaded")
    wait_ready(page, timeout_ms=300_000)
    keep(found, page, language, "page")
    for _ in range(len(tour.TOUR) - 1):
        title = page.locator("h1").first.inner_text()
        page.locator(".st-key-nav_next button").click()
        wait_ready(page, old_title=title, timeout_ms=300_000)
        keep(found, page, language, "page")
    for script, _, _ in tour.LAB:
        page.goto(f"{url}/{url_path(script)}?lang={language}", wait_until="domcontentloaded")
        wait_ready(page, timeout_ms=300_000)
        page.wait_for_timeout(1000)  # a page that draws its figures after its metrics
        wait_ready(page, timeout_ms=300_000)
        keep(found, page, language, "page")
    page.close()


def walk_slides(browser: Any, url: str, language: str, window: tuple[int, int], found: dict) -> None:
    """Presenter mode's slides, from the overview's first to the card's last."""
    page = browser.new_page(viewport={"width": window[0], "height": window[1]})
    page.goto(f"{url}/?lang={language}&present=1", wait_until="domcontentloaded")
    wait_ready(page, timeout_ms=300_000)
    keep(found, page, language, "present")
    while page.locator(".st-key-nav_next button").count():
        before = page.evaluate(SLIDE_AT)
        page.locator(".st-key-nav_next button").first.click()
        page.wait_for_function(f"(b) => ({SLIDE_AT})() !== b", arg=before, timeout=300_000)
        wait_ready(page, timeout_ms=300_000)
        keep(found, page, language, "present")
    page.close()


def walk() -> dict[str, dict[int, list[int]]]:
    """The figures a fresh server (reading the file as it is now) and a fresh browser (remembering
    nothing) grew, in every language and window."""
    from playwright.sync_api import sync_playwright

    found: dict[str, dict[int, list[int]]] = {}
    with sync_playwright() as p, app_server(env={"VITVIZ_PRECISION": "float32"}) as server:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for language in LANGUAGES:
            for window in WINDOWS:
                log.info("%s, %d x %d: the pages, then the slides", language, *window)
                walk_pages(browser, server.url, language, window, found)
                walk_slides(browser, server.url, language, window, found)
        browser.close()
    return found


PASSES = 3  # walks at most, the first from the layouts' own margins


def measure(file: Path) -> dict[str, Any]:
    """The file's content. Started from wider margins, plotly.js may settle a few pixels wider
    still (a heatmap's labels: 86 px from 4, 94 from 89, 94 from 94): so the app is walked again
    with the file written so far, each figure that grew again kept at the larger margins, until
    none grows."""
    figures: dict[str, dict[int, list[int]]] = {}
    made: dict[str, Any] = {"windows": [list(window) for window in WINDOWS], "figures": {}}
    for number in range(1, PASSES + 1):
        found = walk()
        log.info("walk %d: %d figure keys grew", number, len(found))
        if not found:
            break
        for key, widths in found.items():
            for width, start in widths.items():
                widen(figures.setdefault(key, {}), width, start)
        made["figures"] = {key: sorted(widths.items()) for key, widths in sorted(figures.items())}
        file.write_text(written(made), encoding="utf-8")
    return made


def written(made: dict[str, Any]) -> str:
    """The file's text: one figure a line (a figure measured anew is one line of the diff)."""
    figures = ",\n".join(f"{json.dumps(key)}: {json.dumps(widths)}" for key, widths in made["figures"].items())
    return f'{{"windows": {json.dumps(made["windows"])}, "figures": {{\n{figures}\n}}}}\n'


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    file = margins.FILE
    old = file.read_bytes() if file.exists() else None
    file.unlink(missing_ok=True)  # measured from the layouts' own margins, not from the last file's
    try:
        made = measure(file)
    except BaseException:
        if old is not None:
            file.write_bytes(old)
        raise
    log.info("%d figure keys written to %s", len(made["figures"]), margins.FILE.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
