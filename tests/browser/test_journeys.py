"""Journeys through `streamlit run app.py` the way a person clicks them, in headless Chromium.

AppTest renders one page at a time; these walk across pages (Next, Previous, sidebar links, the
lab's "Open in the tour", a language switch, a shared link), where the session's choices must
survive every click.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from benchmarks.bench import url_path, wait_ready
from tests.app.test_app_grayscale import FASHION
from tests.browser.test_browser import ARGS, CHROMIUM, ROOT, SHOTS, server  # noqa: F401 - server is a fixture
from vitviz.app import tour
from vitviz.models import zoo
from vitviz.models.data import class_members, encode_png, load_image, load_split, to_tensor
from vitviz.models.model import VisionTransformer
from vitviz.render.i18n import t
from vitviz.server import values

pytestmark = pytest.mark.cifar10  # the journeys use test_browser's server

ASSETS = zoo.ASSETS / "samples"
NO_IMAGE = "Choose an image"
HANGUL = re.compile("[\uac00-\ud7a3]")
SCROLL_TOP = "() => document.querySelector(\"[data-testid='stMain']\").scrollTop"


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium chromium-driver fonts-noto-cjk"
    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        yield tab
        browser.close()


def settle(page) -> None:
    """Wait until the page is ready (something shown, everything drawn, no script running: the
    benchmark's definition, with or without a title) and has stayed so for half a second, well
    past the moment a click's rerun starts."""
    wait_ready(page, timeout_ms=90_000, quiet_polls=10, titled=False)


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).items()}


def title(page) -> str:
    return page.locator("h1").first.inner_text()


def problems(page) -> list[str]:
    """Error boxes and exceptions on the page."""
    found = []
    for selector in ("[data-testid='stException']", "[data-testid='stAlertContentError']"):
        found += [page.url + ": " + e.inner_text()[:200] for e in page.locator(selector).all()]
    return found


def slide_at(page) -> tuple[int, int, int]:
    """Presenter mode's (step, slide, slides) from the slide counter."""
    counter = page.locator(".vitviz-slide-counter")
    counter.wait_for(timeout=90_000)
    return tuple(int(counter.get_attribute(f"data-{name}")) for name in ("step", "slide", "slides"))


def press_for_slide(page, key: str) -> None:
    """Press a clicker's key and wait until the slide counter moves."""
    before = page.locator(".vitviz-slide-counter").evaluate("(e) => e.dataset.step + ':' + e.dataset.slide")
    page.keyboard.press(key)
    page.wait_for_function(
        "(b) => { const c = document.querySelector('.vitviz-slide-counter'); "
        "return c && c.dataset.step + ':' + c.dataset.slide !== b; }",
        arg=before,
        timeout=90_000,
    )
    settle(page)


def click_button(page, pattern: str, new_page: bool = True) -> None:
    """Click a button; with ``new_page``, wait until another page's title shows."""
    before = title(page)
    page.get_by_role("button", name=re.compile(pattern)).first.click()
    if new_page:
        page.wait_for_function(
            "(before) => { const h = document.querySelector('h1'); return h && h.innerText !== before; }",
            arg=before,
            timeout=90_000,
        )
    settle(page)


def pick(page, label: str, option: str) -> None:
    """Choose an option of a Streamlit selectbox (searchable: type it, Enter picks it)."""
    page.get_by_role("combobox", name=label).click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")
    settle(page)


def shown_choice(page, key: str) -> str:
    """What the select box of session key ``key`` shows as its choice."""
    return page.locator(f".st-key-{key} input").first.input_value()


def sidebar_link(page, index: int) -> None:
    page.locator("[data-testid='stSidebarNav'] a").nth(index).click()
    settle(page)


def test_a_chosen_sample_survives_next_and_previous(server, page):  # noqa: F811
    page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
    settle(page)
    pick(page, "Photo", "coffee")
    assert query(page)["sample"] == "coffee.jpg"
    seen = []
    for step in ("Next", "Next", "Next", "Previous"):
        click_button(page, f"^(← )?{step}( →)?$")
        seen.append((title(page), query(page).get("sample"), page.get_by_role("combobox", name="Photo").input_value()))
    assert [t[:2] for t, _, _ in seen] == ["1.", "2.", "3.", "2."]
    assert all(sample == "coffee.jpg" and shown == "coffee.jpg" for _, sample, shown in seen), seen
    assert problems(page) == []


def test_b_an_upload_survives_next_previous_and_a_sidebar_link(server, page):  # noqa: F811
    page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
    settle(page)
    page.locator(".st-key-source").get_by_text("Upload", exact=True).click()
    settle(page)
    page.get_by_text(NO_IMAGE).wait_for(timeout=90_000)  # no upload yet: the page asks for one
    page.locator(".st-key-upload input[type=file]").set_input_files(str(ASSETS / "astronaut.jpg"))
    page.wait_for_selector("h1", timeout=90_000)
    settle(page)
    overview = page.locator("[data-testid='stMainBlockContainer']").inner_text()  # the upload's prediction and shapes

    def still_the_upload() -> bool:
        return page.get_by_role("radio", name="Upload").is_checked() and "sample" not in query(page)

    assert still_the_upload()
    for move in ("next", "previous", "link"):
        if move == "link":
            sidebar_link(page, 0)
        else:
            click_button(page, "^(← )?(Next|Previous)( →)?$" if move == "next" else "^← Previous$")
        assert still_the_upload(), move
        assert page.get_by_text(re.compile("astronaut.jpg")).count() >= 1, (
            move
        )  # the uploader, or the sentence that it is in use
        assert page.get_by_text(NO_IMAGE).count() == 0, move
        assert problems(page) == [], move
    assert title(page) == "Overview"
    assert (
        page.locator("[data-testid='stMainBlockContainer']").inner_text() == overview
    )  # the same prediction as right after the upload


def test_c_korean_from_page_3_through_next_links_the_lab_and_back(server, page):  # noqa: F811
    page.goto(f"{server}/vectors?lang=en", wait_until="domcontentloaded")
    settle(page)
    page.get_by_text("한국어", exact=True).click()
    settle(page)
    walked = [("switch", title(page), problems(page))]
    # a select box says its choice in the new language too, not the words it was picked in
    assert HANGUL.search(shown_choice(page, "model")) and HANGUL.search(shown_choice(page, "patch"))
    click_button(page, "^다음 →$")
    walked.append(("next", title(page), problems(page)))
    sidebar_link(page, 1)
    walked.append(("link", title(page), problems(page)))
    sidebar_link(page, len(tour.TOUR))  # the lab: the first page after the tour
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    walked.append(("lab", title(page), problems(page)))
    click_button(page, "둘러보기에서 열기")
    walked.append(("open in the tour", title(page), problems(page)))
    page.screenshot(path=str(SHOTS / "journey_korean.png"), full_page=True)
    for where, heading, found in walked:
        assert HANGUL.search(heading), (where, heading)
        assert found == [], (where, found)
    assert query(page)["lang"] == "ko" and query(page)["model"] == "cifar10-vit"
    page.get_by_text("English", exact=True).click()
    settle(page)
    assert not HANGUL.search(title(page)) and problems(page) == []
    assert query(page)["model"] == "cifar10-vit"
    assert shown_choice(page, "model") == zoo.REGISTRY["cifar10-vit"].title_in("en")


def test_d_a_shared_link_opens_exactly_that_view(server, page):  # noqa: F811
    page.goto(
        f"{server}/?lang=ko&model=cifar10-vit&sample=coffee.jpg&step=5&layer=3&head=2", wait_until="domcontentloaded"
    )
    settle(page)
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    assert title(page).startswith("5. 어텐션")
    assert page.get_by_role("combobox", name="사진").input_value() == "coffee.jpg"
    assert (
        page.locator("[data-testid='stSliderThumbValue']").first.inner_text() == "3층"
    )  # the URL counts layers as the screen does
    assert page.get_by_role("combobox", name="헤드").first.input_value() == "헤드 2"
    assert problems(page) == []
    shown = query(page)
    assert (shown["lang"], shown["model"], shown["sample"], shown["layer"], shown["head"]) == (
        "ko",
        "cifar10-vit",
        "coffee.jpg",
        "3",
        "2",
    )
    click_button(page, "^다음 →$")  # on to the encoder block and back: the same view again
    click_button(page, "^← 이전$")
    assert title(page).startswith("5. 어텐션") and problems(page) == []
    assert page.locator("[data-testid='stSliderThumbValue']").first.inner_text() == "3층"
    assert page.get_by_role("combobox", name="헤드").first.input_value() == "헤드 2"
    assert page.get_by_role("combobox", name="사진").input_value() == "coffee.jpg"
    # a link to the CNN's model card opens that card, and it stays through Previous / Next
    page.goto(f"{server}/?lang=en&step=9&card_model=cifar10-cnn", wait_until="domcontentloaded")
    settle(page)
    assert title(page).startswith("9. Model card") and problems(page) == []
    assert page.locator("[data-testid='stMain'] h3").first.inner_text().startswith("CIFAR-10 CNN")
    click_button(page, "^← Previous$")
    click_button(page, "^Next →$")
    assert (
        page.locator("[data-testid='stMain'] h3").first.inner_text().startswith("CIFAR-10 CNN")
        and query(page)["card_model"] == "cifar10-cnn"
    )


def test_e_presenter_mode_hides_the_sidebar_and_a_clicker_walks_the_tour(server, page):  # noqa: F811
    page.goto(f"{server}/?lang=en&present=1&sample=rocket.jpg", wait_until="domcontentloaded")
    settle(page)
    page.locator("[data-testid='stSidebar']").wait_for(
        state="hidden", timeout=30_000
    )  # the presenter's style can land after the title on a busy machine
    assert not page.locator("[data-testid='stSidebar']").is_visible()
    # the clicker's keys are heard once the presenter's script has run (after the style, on a busy machine)
    page.wait_for_function("() => window.__vitvizKeys === true && document.getElementById('vitviz-present')")
    walked = [slide_at(page)]
    keys = ["ArrowRight", "PageDown"] * 3 + ["ArrowLeft", "PageUp"]
    while walked[-1][0] < 2:  # forward, slide by slide, to step 2's first slide
        press_for_slide(page, keys[(len(walked) - 1) % 6])
        walked.append(slide_at(page))
        step, slide, slides = walked[-2]
        expected = (step, slide + 1) if slide + 1 < slides else (step + 1, 0)
        assert walked[-1][:2] == expected, walked
        assert page.evaluate(SCROLL_TOP) == 0, walked  # a slide opens at its title, the sidebar hidden too
        assert query(page).get("present") == "1" and query(page).get("sample") == "rocket.jpg", walked
    for key in keys[6:]:  # and back: the step before opens at its last slide
        press_for_slide(page, key)
        walked.append(slide_at(page))
        step, slide, _ = walked[-2]
        expected = (step, slide - 1) if slide > 0 else (step - 1, walked[-1][2] - 1)
        assert walked[-1][:2] == expected, walked
    page.screenshot(path=str(SHOTS / "journey_presenter.png"), full_page=False)
    assert not page.locator("[data-testid='stSidebar']").is_visible()
    page.keyboard.press("Escape")
    settle(page)
    assert page.locator("[data-testid='stSidebar']").is_visible()
    assert "present" not in query(page) and problems(page) == []


def test_h_next_at_the_foot_of_a_page_opens_the_next_at_its_title_and_a_slider_keeps_the_view(server, page):  # noqa: F811
    page.goto(f"{server}/?lang=ko&test=cat/3", wait_until="domcontentloaded")
    settle(page)
    seen = []
    for _ in range(len(tour.TOUR) - 1):
        before = title(page)
        page.locator(".st-key-nav_next button").click()  # Playwright scrolls down to it first, as a reader does
        page.wait_for_function(
            "(b) => { const h = document.querySelector('h1'); return h && h.innerText !== b; }", arg=before
        )
        settle(page)
        seen.append((title(page), page.evaluate(SCROLL_TOP)))
    assert len({t for t, _ in seen}) == len(tour.TOUR) - 1 and all(top == 0 for _, top in seen), seen
    # a rerun on the same page (a slider moved halfway down) leaves the view where the reader is
    sidebar_link(page, 2)
    assert title(page) == "2. 패치"
    slider = page.get_by_role("slider").nth(1)  # the patch size P of the "try it" section, halfway down
    page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollTo({top: 400})")  # read on
    shown = slider.input_value()
    slider.focus()  # which scrolls it into view
    down = page.evaluate(SCROLL_TOP)
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "(v) => { const s = document.querySelectorAll('input[type=range]')[1]; return s && s.value !== v; }",
        arg=shown,
    )
    settle(page)
    box = page.get_by_role("slider").nth(1).bounding_box()
    assert down > 0 and page.evaluate(SCROLL_TOP) > 0, "the rerun sent the reader back to the title"
    assert box and 0 <= box["y"] <= 1000, box  # the slider is still in view
    assert problems(page) == []


# Every change to the page while a Next click's run draws the next step: whether the new title is
# up, and which section headings can be seen (not hidden, as the last page's stale ones must be).
WATCH_HEADINGS = """(title) => {
  window.__seen = [];
  const look = () => {
    const h1 = document.querySelector("[data-testid='stMain'] h1");
    if (!h1 || !h1.innerText.startsWith(title)) return;
    const shown = Array.from(document.querySelectorAll("[data-testid='stMain'] h2, [data-testid='stMain'] h3"))
      .filter((h) => getComputedStyle(h).visibility !== 'hidden').map((h) => h.innerText);
    window.__seen.push(shown);
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def test_l_next_never_shows_the_last_pages_sections_under_the_new_title(server, page):  # noqa: F811
    """Next draws the new step in the run its click starts (navigation.follow_asked_step), so the
    browser does not clear the page as it does when a run starts on another page: until the new
    step's sections replace them, the last page's must be hidden, never read under the new title."""
    page.goto(f"{server}/block?lang=en&test=cat/3", wait_until="domcontentloaded")
    settle(page)
    headings = "[data-testid='stMain'] h2, [data-testid='stMain'] h3"
    last_page = {h.inner_text() for h in page.locator(headings).all()}
    assert len(last_page) >= 3, last_page
    page.evaluate(WATCH_HEADINGS, "7.")
    page.locator(".st-key-nav_next button").click()
    page.wait_for_function("() => document.querySelector('h1').innerText.startsWith('7.')")
    settle(page)
    seen = page.evaluate("window.__seen")
    assert seen and seen[-1], "the watcher saw the prediction page drawn"
    mixed = [shown for shown in seen if last_page & set(shown)]
    assert mixed == [], mixed[:3]
    here = urllib.parse.urlparse(page.evaluate("location.href"))  # page.url may lag a history.pushState
    assert here.path == "/prediction" and urllib.parse.parse_qs(here.query)["step"] == ["7"], here
    assert problems(page) == []


def _files_changed_since(start: float, roots: list[Path], skip: Path) -> list[Path]:
    """Files under ``roots`` written at or after ``start`` (not ``skip``, nor git's own)."""
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                path = Path(folder) / name
                try:
                    if path != skip and path.stat().st_mtime >= start:
                        found.append(path)
                except OSError:  # gone while we looked
                    continue
    return found


def test_f_an_upload_through_the_widget_leaves_no_file_behind(server, page, tmp_path):  # noqa: F811
    """Nothing a visitor uploads is written to disk: after an upload through the widget (and a
    step of the tour), no file written meanwhile in the repository, the temporary folder, the
    test's caches or the home folder's caches holds its bytes or is a picture."""
    rng = np.random.default_rng(7)
    upload = tmp_path / "unique-upload.png"
    Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(upload)
    data = upload.read_bytes()
    roots = [ROOT, Path(tempfile.gettempdir()), Path.home() / ".cache", Path.home() / ".streamlit"]
    roots = [root for root in roots if root.exists()]
    page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
    settle(page)
    start = time.time() - 1
    page.locator(".st-key-source").get_by_text("Upload", exact=True).click()
    settle(page)
    page.locator(".st-key-upload input[type=file]").set_input_files(str(upload))
    page.wait_for_selector("h1", timeout=90_000)
    settle(page)
    assert page.get_by_text(NO_IMAGE).count() == 0 and problems(page) == []  # the upload is in use
    click_button(page, "^(← )?Next( →)?$")
    written = _files_changed_since(start, roots, skip=upload)
    holding = [p for p in written if p.stat().st_size >= len(data) and data[:512] in p.read_bytes()]
    pictures = [p for p in written if p.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif")]
    assert holding == [] and pictures == [], (holding, pictures)


@pytest.mark.fashion_mnist
def test_g_a_grey_model_walks_fashion_mnist_from_the_picker_through_korean_and_the_lab(server, page, tmp_path):  # noqa: F811
    """A Fashion-MNIST model typed into the sidebar: its test images in the picker, a class kept
    through Next and a switch to Korean, the lab on Fashion-MNIST, and back into the tour."""
    torch.manual_seed(0)
    path = tmp_path / "grey.safetensors"
    zoo.save(VisionTransformer(FASHION).eval(), path)
    page.goto(f"{server}/?lang=en", wait_until="domcontentloaded")
    settle(page)
    page.get_by_text("Your own model", exact=True).click()  # folded away until opened
    box = page.get_by_role("textbox", name="Other model (timm:, hf: or a path)")
    box.fill(str(path))
    box.press("Enter")
    settle(page)
    page.get_by_text("Test image (Fashion-MNIST)", exact=True).click()
    settle(page)
    pick(page, "Class", "Trouser")
    assert query(page)["test"] == "Trouser/0"
    click_button(page, "^Next →$")
    assert title(page).startswith("1.") and page.get_by_text("Resized, cropped and grey: 28 x 28 px").count() == 1
    click_button(page, "^Next →$")
    assert title(page).startswith("2.") and page.get_by_text("4 x 4 = 16").count() >= 1
    page.get_by_text("한국어", exact=True).click()
    settle(page)
    assert HANGUL.search(title(page)) and title(page).startswith("2.")
    assert query(page)["test"] == "Trouser/0" and "Trouser" in page.get_by_role("combobox", name="클래스").input_value()
    sidebar_link(page, len(tour.TOUR))  # the lab: every Fashion-MNIST test image through the grey model
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    assert page.get_by_text("Fashion-MNIST", exact=False).count() >= 1 and problems(page) == []
    click_button(page, "둘러보기에서 열기")
    page.screenshot(path=str(SHOTS / "journey_fashion.png"), full_page=True)
    opened = query(page)["test"]
    class_name, _, index = opened.rpartition("/")
    assert class_name and index.isdigit() and problems(page) == []
    assert class_name in page.get_by_role("combobox", name="클래스").input_value()  # "바지 (Trouser)"


def page_words(page) -> list[str]:
    """What a reader sees: the page's and the sidebar's lines and every select box's choice
    (icon names, which show only while the pointer rests on a button, left out)."""
    lines = page.locator("[data-testid='stMain']").inner_text().splitlines()
    lines += page.locator("[data-testid='stSidebar']").inner_text().splitlines()
    lines += [box.input_value() for box in page.locator("[data-testid='stSelectbox'] input").all()]
    return [line for line in lines if line.strip() and not re.fullmatch(r"[a-z_]+", line)]


def test_i_korean_chosen_on_any_page_reads_as_a_korean_link_does(server, page):  # noqa: F811
    """A teacher switches to Korean on whatever page is on the screen: every page then reads
    exactly as the same page opened in Korean from the start, select boxes included."""
    fresh = page.context.browser.new_page(viewport={"width": 1400, "height": 1000})
    differences = {}
    for script, _, _ in tour.TOUR + tour.LAB:
        path = url_path(script)
        fresh.goto(f"{server}/{path}?lang=ko", wait_until="domcontentloaded")
        settle(fresh)
        page.goto(f"{server}/{path}?lang=en", wait_until="domcontentloaded")
        settle(page)
        page.get_by_text("한국어", exact=True).click()
        settle(page)
        expected, seen = page_words(fresh), page_words(page)
        assert HANGUL.search(title(page)) and problems(page) == [], script
        if seen != expected:
            differences[script] = [d for d in difflib.ndiff(expected, seen) if d[:1] in "+-"][:8]
    assert differences == {}, differences


IN_VIEW = """(selector) => {
  const box = document.querySelector(selector)?.getBoundingClientRect();
  return !!box && box.top >= 0 && box.bottom <= window.innerHeight;
}"""
GALLERY_ROWS = """() => {
  const rows = {};
  for (const button of document.querySelectorAll('.st-key-mistakes_gallery button')) {
    const box = button.getBoundingClientRect();
    (rows[Math.round(box.top)] ??= []).push(Math.round(box.height));
  }
  return Object.values(rows);
}"""


def test_j_a_thumbnail_in_the_lab_brings_its_image_up_close_into_view(server, page):  # noqa: F811
    """At a projector's 1280 x 720, a click on a thumbnail scrolls to "One image up close",
    which sits below the gallery, out of sight; the gallery's buttons are even, row by row, and the
    one clicked is marked as the image up close."""
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{server}/mistakes?lang=en", wait_until="domcontentloaded")
    page.wait_for_selector(".st-key-mistakes_gallery button", timeout=120_000)
    settle(page)
    rows = page.evaluate(GALLERY_ROWS)
    assert len(rows) >= 2 and all(len(set(heights)) == 1 for heights in rows), rows
    thumbnail = page.locator(".st-key-mistakes_gallery button").nth(5)
    thumbnail.scroll_into_view_if_needed()
    assert not page.evaluate(IN_VIEW, ".st-key-mistakes_detail")  # below the gallery's rows
    thumbnail.click()
    page.wait_for_function(IN_VIEW, arg=".st-key-mistakes_detail", timeout=30_000)
    settle(page)
    assert page.evaluate(IN_VIEW, ".st-key-mistakes_detail") and problems(page) == []
    assert page.locator(".st-key-mistake input").input_value() == "6"  # the thumbnail's image is the one up close
    assert page.locator(".st-key-mistakes_gallery button[aria-pressed='true']").all_inner_texts() == [
        thumbnail.inner_text()
    ]


def test_k_a_point_on_the_test_set_map_opens_its_image_in_the_tour(server, page):  # noqa: F811
    """Lab, map of the test set: a click on a point shows that test image, and "Open in the tour"
    makes it the tour's image (issue 43)."""
    page.goto(f"{server}/map", wait_until="domcontentloaded")  # PCA, the first projection
    page.wait_for_selector(".js-plotly-plot", timeout=600_000)  # the map is computed once if it does not ship
    settle(page)
    assert problems(page) == []
    # the pixel position of the first point of the first trace, read from Plotly's own axes
    where = page.evaluate(
        """() => {
          const plot = document.querySelector(".js-plotly-plot");
          const trace = plot._fullData[0], layout = plot._fullLayout, box = plot.getBoundingClientRect();
          return {x: box.left + layout._size.l + layout.xaxis.l2p(trace.x[0]),
                  y: box.top + layout._size.t + layout.yaxis.l2p(trace.y[0]),
                  index: trace.customdata[0]};
        }"""
    )
    page.mouse.click(where["x"], where["y"])
    page.get_by_role("button", name="Open in the tour").wait_for(timeout=60_000)
    settle(page)
    picked = page.locator("[data-testid='stMain'] p", has_text="the true class is").first.inner_text()
    click_button(page, "^Open in the tour$")
    assert title(page).startswith("Overview") and problems(page) == []
    test = query(page)["test"]
    assert page.get_by_role("radio", name=re.compile("Test image")).is_checked()
    cls, _, _ = test.rpartition("/")
    assert f"the true class is {cls}" in picked  # the tour opened the image the map showed


def test_m_a_lab_mistake_opened_in_the_tour_says_the_lab_s_answer_under_its_one_pass(server, page):  # noqa: F811
    """The lab lists the shipped grey ViT's mistakes by its answer, the mean of its logits for the
    image and its mirror image; "Open in the tour", then step 7 by the sidebar: under the one pass
    the tour explains, the page says the lab's answer, in a box where the two differ (both computed
    here, from the shipped model and the test image the tour opened)."""
    page.goto(f"{server}/?model={zoo.SHIPPED_FASHION}&lang=en", wait_until="domcontentloaded")
    settle(page)
    sidebar_link(page, len(tour.TOUR))  # the lab
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    click_button(page, "^Open in the tour$")
    cls, index = values.test_image(query(page)["test"])
    sidebar_link(page, 7)
    assert title(page).startswith("7.") and problems(page) == []
    model, _ = zoo.load(zoo.SHIPPED_FASHION)
    data = load_split("fashion-mnist", "test")
    image = load_image(encode_png(data.images[int(class_members(data, cls)[index])]))
    pixels = to_tensor(image, model.config.preprocess, model.config.in_chans)
    with torch.inference_mode():
        one, both = model.forward_one_view(pixels)[0], model(pixels)[0]
    names = model.config.class_names
    lab_answer, tour_answer = names[int(both.argmax())], names[int(one.argmax())]
    filled = {"pred": lab_answer, "p": f"{float(both.softmax(-1).max()):.1%}", "one": tour_answer}
    key = "prediction.mirror_same" if lab_answer == tour_answer else "prediction.mirror_differs"
    shown = " ".join(page.locator("[data-testid='stMain']").inner_text().split())
    assert " ".join(t(key, "en", **filled).replace("**", "").split()) in shown, (cls, index, key)
    if lab_answer != tour_answer:  # in a box
        assert page.locator("[data-testid='stAlert']", has_text="that answer is another").count() == 1
