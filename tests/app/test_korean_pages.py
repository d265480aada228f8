"""Korean pages label their figures in Korean: every figure's title, axis titles, legend
entries, annotations and colour-bar titles, and the sidebar's captions, rendered in AppTest with
lang=ko, may keep an English word only when it is a term the Korean text keeps on purpose
(``i18n.KEPT_TERMS``), a gloss in parentheses after Korean ("고양이 (cat)"), a quotation or code.
A label written straight into a page or a plot function bypasses i18n and fails here.

(The paragraphs come from i18n and are not checked word by word here; their terms are held to
one Korean term per concept by vitviz/locales/glossary.json, in tests/unit/test_i18n.py. Hover
texts are not checked yet.)
"""

from __future__ import annotations

import json
import re

import pytest

from tests.apptest import charts, open_page_in_one_run, tables
from tests.conftest import SHARED_DATA
from vitviz.app import text, tour
from vitviz.models import zoo
from vitviz.render import i18n

WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
# code spans, HTML tags, plotly fields, maths, quotations, and glosses in parentheses after Korean
CODE = re.compile(r"`[^`]*`|<[^>]*>|%\{[^}]*\}|\$[^$]*\$|\"[^\"]*\"|(?<=[\uac00-\ud7a3])\s?\([^)]*\)")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` that a Korean reader would have to translate."""
    found = []
    for chunk in CODE.sub(" ", text).split():
        # a sentence's full stop (or an ellipsis) is not code: "distance." is a word, "cat.png" is not
        bare = re.sub(r"\.+$", "", chunk.strip("()[],:;!?'\""))
        if re.search(r"[\d_./\\=\[\]]", bare):  # file names, identifiers, shapes: code
            continue
        for word in WORD.findall(chunk):
            if word.lower() not in i18n.KEPT_TERMS:
                found.append(word)
    return found


def figure_texts(spec: dict) -> list[str]:
    """Titles, axis and colour-bar titles, legend entries and annotations."""
    texts: list[str] = []

    def walk(node: object, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in ("text", "name", "title"):
            texts.append(node)

    walk(spec.get("layout", {}))
    for trace in spec.get("data", []):
        walk({k: v for k, v in trace.items() if k in ("name", "colorbar")})
    return texts


def page_labels(at) -> list[str]:
    """Every figure label of the page, and the sidebar's captions (where a GPU runs the models, its
    name, "GPU: NVIDIA H200", is the hardware's, not a text to translate)."""
    device = zoo.pick_device()
    gpu = zoo.device_label(device) if device.type != "cpu" else None
    texts = [str(caption.value).replace(gpu, "GPU") if gpu else str(caption.value) for caption in at.sidebar.caption]
    for chart in charts(at):
        texts += figure_texts(json.loads(chart.proto.spec))
    return texts


@pytest.mark.cifar10
@pytest.mark.parametrize("page", [f for f, _, _ in tour.TOUR + tour.LAB])
def test_a_korean_page_shows_no_untranslated_english(page, monkeypatch):
    monkeypatch.setenv("VITVIZ_DATA", str(SHARED_DATA))  # the lab's test images
    at = open_page_in_one_run(page, lang="ko")
    assert [e.value for e in at.exception] == []
    leaks = sorted({f"{word!r} in {text[:80]!r}" for text in page_labels(at) for word in english_words(text)})
    assert leaks == [], "\n".join(leaks)


def test_the_check_catches_a_label_that_bypasses_i18n():
    assert english_words("channel (D)") == ["channel"]
    assert english_words("residual stream ‖x‖") == ["residual", "stream"]
    assert english_words("Mean attention distance.") == ["attention", "distance"]  # a word before a full stop
    assert english_words("헤드의 평균 거리 distance...") == ["distance"]
    assert english_words("cat.png, e.g. `x.mean()`") == []  # names with dots stay code
    assert english_words('고양이 (cat), `blocks[0]`, fc1, softmax(QKᵀ/√d), ViT, "Attention is all you need"') == []


def test_the_model_card_names_its_data_and_hardware_in_korean(monkeypatch):
    at = open_page_in_one_run("app_pages/9_card.py", lang="ko")
    facts = dict(zip(tables(at)[-2].iloc[:, 0], tables(at)[-2].iloc[:, 1], strict=True))
    assert facts["학습 데이터"] == "CIFAR-10 (JPEG 사본), 이미지 50,000장"
    hardware = {label: value for label, value in facts.items() if label.startswith("하드웨어")}
    rows = zoo.load(zoo.default_name()).spec.card.hardware_rows()  # [(stages or None, where)]
    if rows[0][0] is not None:  # a row per machine with its stages, "하드웨어 (1-9단계)"
        assert len(hardware) == len(rows)
        assert all(re.fullmatch(r"하드웨어 \(\d+(-\d+)?(, \d+(-\d+)?)*단계\)", label) for label in hardware), hardware
    else:
        assert list(hardware) == ["하드웨어"]
    monkeypatch.setattr(text, "lang", lambda: "ko")
    assert list(hardware.values()) == [text.hardware_text(where) for _, where in rows]  # each machine, in Korean
    assert text.hardware_text("CPU (AMD EPYC, 2 threads)") == "CPU (AMD EPYC, 스레드 2개)"  # a CPU's threads, in Korean
    assert text.hardware_text("CUDA (NVIDIA H100)") == "CUDA (NVIDIA H100)"  # other labels as written


def test_a_stage_that_moved_between_machines_names_both_in_korean(monkeypatch):
    monkeypatch.setattr(text, "lang", lambda: "ko")
    moved = "NVIDIA H200 + CPU (AMD EPYC, 2 threads)"  # begun on a lent GPU, finished on the CPU
    assert text.hardware_text(moved) == "NVIDIA H200 + CPU (AMD EPYC, 스레드 2개)"


def test_patch_maps_hover_in_korean_counting_from_one():
    at = open_page_in_one_run("app_pages/5_attention.py", lang="ko")
    assert [e.value for e in at.exception] == []
    hovers = [
        trace.get("hovertemplate", "")
        for chart in charts(at)
        for trace in json.loads(chart.proto.spec)["data"]
        if "customdata[2]" in trace.get("hovertemplate", "")
    ]
    assert hovers and all(h.startswith("패치 %{customdata[2]} (%{customdata[0]}행 %{customdata[1]}열)") for h in hovers)
