"""The handout in Chromium with the network refused: every figure drawn, no script error, no
request, a hover on the attention map, Korean headings in the Korean file, and a PDF that
puts each step on pages of its own (issue 42)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.chromium import launched
from vitviz.models import zoo
from vitviz.render import handout
from vitviz.render.i18n import t

HANGUL = re.compile(r"[\uac00-\ud7a3]")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The shipped ViT's handouts of the cat, with the CNN beside it, in both languages."""
    folder = tmp_path_factory.mktemp("handouts")
    model, spec = zoo.load(zoo.SHIPPED, device="cpu")
    cnn = zoo.load(handout.matching_cnn(model.config.class_names), device="cpu")
    data = (handout.SAMPLES / "cat-chelsea.jpg").read_bytes()
    made = {}
    for lang in ("en", "ko"):
        made[lang] = folder / f"cat-{lang}.html"
        made[lang].write_text(
            handout.build(model, spec, data, lang, image_name="cat-chelsea.jpg", cnn=cnn), encoding="utf-8"
        )
    return made


@pytest.fixture(scope="module")
def browser():
    with launched() as chromium:
        yield chromium


def open_offline(browser, path: Path):
    """A page on the file with every request that is not file:// refused and counted."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    refused: list[str] = []
    problems: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.goto(path.as_uri(), wait_until="load")
    return page, refused, problems


DRAWN = """() => Array.from(document.querySelectorAll('.plotly-graph-div')).map(
  (div) => div.id + (div.querySelector('.main-svg') && div._fullLayout ? '' : ': not drawn'))"""


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_handout_works_offline(browser, files, lang: str) -> None:
    text = files[lang].read_text(encoding="utf-8")
    page, refused, problems = open_offline(browser, files[lang])
    drawn = page.evaluate(DRAWN)
    assert len(drawn) == text.count("Plotly.newPlot(") - text[: text.index("</head>")].count("Plotly.newPlot(")
    assert len(drawn) >= 25 and not [entry for entry in drawn if entry.endswith("not drawn")], drawn

    page.hover("#fig-attention-readout .nsewdrag")  # a hover reads a value from the map
    page.wait_for_timeout(300)

    headings = page.eval_on_selector_all("h2", "(hs) => hs.map((h) => h.innerText)")
    assert len(headings) >= 9
    if lang == "ko":
        assert all(HANGUL.search(h) for h in headings if h != t("page.compare", "ko")), headings
        assert HANGUL.search(page.inner_text("h1"))
    else:
        assert not any(HANGUL.search(h) for h in headings)
    assert refused == [] and problems == []
    page.close()


def test_the_handout_prints_one_step_per_page(browser, files, tmp_path: Path) -> None:
    page, refused, problems = open_offline(browser, files["en"])
    page.emulate_media(media="print")
    breaks = page.eval_on_selector_all("section.step", "(ss) => ss.map((s) => getComputedStyle(s).breakBefore)")
    pdf = page.pdf(format="A4", print_background=True)
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    # each step starts a page (the first one under the handout's title), then the lab's trust page,
    # map of the test set and how the ViT learned; nothing to select on paper
    assert breaks == ["auto"] + ["page"] * 12 and page.query_selector("select") is None
    assert pages >= len(breaks)
    (tmp_path / "handout.pdf").write_bytes(pdf)
    assert refused == [] and problems == []
    page.close()
