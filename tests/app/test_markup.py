"""No page shows markup it did not mean (issue 55): Streamlit draws almost every string as Markdown,
where two single tildes strike the text between them through ("2.65~7.55 ... 4.47~5.45" read
"2.657.55"), ``$`` starts LaTeX and ``*`` / ``_`` beside a number start emphasis. Every page is
rendered in both languages; its Markdown (titles, captions, text, messages, labels, tables, which
are Markdown too) must have no such character unescaped, and what is not Markdown (figures, the data grid,
widget options) no escape left in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.apptest import charts, open_page_in_one_run
from tests.conftest import SHARED_DATA
from vitviz.analyses import claims
from vitviz.app import tour
from vitviz.render import i18n

PAGES = [script for script, _, _ in tour.TOUR] + [
    pytest.param(script, marks=pytest.mark.cifar10) for script, _, _ in tour.LAB
]  # the lab reads the CIFAR-10 test split

UNMEANT = re.compile(r"(?<!\\)[~$]|(?<=\d)(?<!\\)[*_]|(?<!\\)[*_](?=\d)")  # strike-through, LaTeX, emphasis by a number
LEFT_ESCAPE = re.compile(r"\\[\\`*_~$]")


def unmeant_markup(text: str) -> list[str]:
    """The places in a Markdown text where a character would become markup no sentence means."""
    return [text[max(0, m.start() - 12) : m.end() + 12] for m in UNMEANT.finditer(text)]


def markdown_texts(at) -> list[str]:
    texts = []
    for kind in ("title", "header", "subheader", "caption", "markdown", "info", "success", "warning", "error"):
        texts += [str(element.value) for element in getattr(at, kind)]
    texts += [str(metric.label) for metric in at.metric]
    for kind in ("selectbox", "select_slider", "radio", "multiselect", "number_input", "slider", "checkbox", "toggle"):
        texts += [str(widget.label) for widget in getattr(at, kind)]
    return [text for text in texts if not text.lstrip().startswith("<")]  # the app's own HTML and CSS


def plain_texts(at) -> list[str]:
    texts = []
    for chart in charts(at):
        texts += list(strings(json.loads(chart.proto.spec)))
    for frame in at.dataframe:  # the data grid's cells are text
        table = frame.value
        texts += [str(column) for column in table.columns]
        texts += [cell for cell in table.to_numpy().ravel() if isinstance(cell, str)]
    for kind in ("selectbox", "select_slider", "radio", "multiselect"):
        for widget in getattr(at, kind):
            texts += [str(option) for option in getattr(widget, "options", None) or []]
    texts += [str(metric.value) for metric in at.metric]
    return texts


def strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_markup_it_does_not_mean(page: str, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VITVIZ_DATA", str(SHARED_DATA))
    at = open_page_in_one_run(page, lang=lang)
    assert [e.value for e in at.exception] == []
    found = [f"{place!r} in {text[:60]!r}" for text in markdown_texts(at) for place in unmeant_markup(text)]
    found += [f"an escape left in {text[:80]!r}" for text in plain_texts(at) if LEFT_ESCAPE.search(text)]
    assert found == [], "\n".join(found)


# ---- the escaping itself -------------------------------------------------------------------------


def test_a_korean_range_is_not_struck_through() -> None:
    sentence = claims.text(
        claims.Claim(
            "claims.layernorm.equal",
            {"before_low": 2.65, "before_high": 7.55, "cv_before": 0.165, "after_low": 4.47, "after_high": 5.45}
            | {"cv_after": 0.01, "tokens": 65},
        ),
        "ko",
    )
    assert "2.65\\~7.55" in sentence and "4.47\\~5.45" in sentence
    assert unmeant_markup(sentence) == []
    assert "2.65~7.55" in i18n.plain(sentence)


def test_values_are_escaped_and_sentences_keep_their_markup() -> None:
    sentence = i18n.t("verdict.right", "en", dataset="CIFAR_10", truth="*cat*", pred="$5 dog", p="92%")
    assert "**" in sentence  # the sentence's own bold
    assert "CIFAR\\_10" in sentence and "\\*cat\\*" in sentence and "\\$5" in sentence
    assert i18n.plain(sentence) == i18n.TEXT["verdict.right"]["en"].format(
        dataset="CIFAR_10", truth="*cat*", pred="$5 dog", p="92%"
    )
    nested = i18n.t("error.model", "en", message=i18n.t("error.model", "en", message="a_b"))
    assert nested.count("\\_") == 1  # a sentence that fills another is escaped once


def test_the_check_finds_unmeant_markup() -> None:
    assert unmeant_markup("2.65~7.55(퍼짐 16.5%), 후에는 4.47~5.45")
    assert unmeant_markup("costs $5 and $6")
    assert unmeant_markup("P*3*C") and unmeant_markup("x_1")
    assert unmeant_markup("**Bold** and x_p and 2.65\\~7.55") == []
