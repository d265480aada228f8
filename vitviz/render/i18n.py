"""Every sentence a user sees, in English and Korean.

The sentences are data: one file per language in vitviz/locales/ (``<lang>.json``: "text" maps
a key to its sentence, "classes" a dataset's class name to its translation, and Korean's
"kept_terms" lists the English words its pages keep). Keys are grouped by page through their
prefix. ``t(key, lang, **values)`` formats one; a missing key or language is a test failure,
never a blank on screen. Technical names (Conv2d, [CLS], softmax, GELU) stay in English in both
languages, as Korean ML courses write them.

A sentence is Markdown (Streamlit draws almost every string it is given as Markdown): ``t``
escapes what would turn into markup without being meant as markup, in one place, so no page has to
remember it. A filled-in value (a number, a name, a file) has every Markdown character escaped; the
sentence's own text keeps its **bold** and `code` but has its ``~`` and ``$`` escaped, which no
sentence means as strike-through or LaTeX (Korean writes ranges as "2.65~7.55": two of them in one
paragraph struck the text between them through). ``plain`` undoes the escapes for what is not
Markdown: figures, tables, a terminal.
"""

from __future__ import annotations

import functools
import json
import re
import string
from pathlib import Path

LANGUAGES = {"en": "English", "ko": "한국어"}
DEFAULT_LANGUAGE = "en"
LOCALES = Path(__file__).resolve().parents[1] / "locales"


def _read(lang: str) -> dict:
    return json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8"))


_FILES = {lang: _read(lang) for lang in LANGUAGES}

# key -> {language: sentence}, in the order of the English file
TEXT: dict[str, dict[str, str]] = {
    key: {lang: _FILES[lang]["text"].get(key, "") for lang in LANGUAGES} for key in _FILES[DEFAULT_LANGUAGE]["text"]
}

# Class names as models and datasets spell them, in the other languages: CIFAR-10's ten. A class
# with no entry (ImageNet's thousand, a user's own) is shown as the model names it.
CLASS_NAMES: dict[str, dict[str, str]] = {}
for _lang, _file in _FILES.items():
    for _name, _translated in _file.get("classes", {}).items():
        CLASS_NAMES.setdefault(_name, {})[_lang] = _translated

# English words a Korean page keeps on purpose: names of the model's parts and operations as the
# paper and the code write them (Korean ML texts write them so too), library names, units and
# file formats. tests/app/test_korean_pages.py fails on any other English word a Korean page shows.
KEPT_TERMS = frozenset(_FILES["ko"]["kept_terms"])

# One Korean term per concept (locales/glossary.json): English concept -> {"ko": the term, "en":
# other English words for the concept, "forbidden": variants no Korean text may use}.
# tests/unit/test_i18n.py holds every Korean text to it.
GLOSSARY: dict[str, dict] = json.loads((LOCALES / "glossary.json").read_text(encoding="utf-8"))["terms"]


def class_label(name: str, lang: str = DEFAULT_LANGUAGE, short: bool = False) -> str:
    """A class name as users of ``lang`` read it: "고양이 (cat)" in Korean (or "고양이" when
    ``short``, for small captions), the name itself when there is no translation. The name in
    brackets is the one files, folders and downloads use."""
    translated = CLASS_NAMES.get(name, {}).get(lang)
    if not translated:
        return name
    return translated if short else f"{translated} ({name})"


class Markdown(str):
    """Text that is Markdown already (a sentence ``t`` wrote): it fills another sentence as it is."""


MARKUP = re.compile(r"([\\`*_~$])")  # escaped in a value
NEVER_MEANT = re.compile(r"(?<!\\)([~$])")  # escaped in a sentence's own text
ESCAPED = re.compile(r"\\([\\`*_~$])")


def escape(text: str) -> Markdown:
    """``text`` with every Markdown character escaped: it reads the same as Markdown."""
    return Markdown(MARKUP.sub(r"\\\1", text))


def plain(text: str) -> str:
    """A sentence of ``t`` as plain text (for a figure, a table, a terminal): its escapes undone."""
    return ESCAPED.sub(r"\1", text)


class _Filler(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> str:
        written = super().format_field(value, format_spec)
        return written if isinstance(value, Markdown) else escape(written)


_FILLER = _Filler()


def t(key: str, lang: str = DEFAULT_LANGUAGE, **values: object) -> Markdown:
    """The sentence for ``key`` in ``lang`` as Markdown, with ``{name}`` fields filled from
    ``values`` (escaped, unless a value is ``Markdown`` already).

    Raises:
        KeyError: for a key that does not exist (a bug, caught by the tests).
    """
    entry = TEXT[key]
    text = NEVER_MEANT.sub(r"\\\1", entry.get(lang) or entry[DEFAULT_LANGUAGE])
    if not values:
        return Markdown(text)
    parts = _parsed(text)
    if parts is None:  # a field string.Formatter reads in its own way: let it
        return Markdown(_FILLER.vformat(text, (), values))
    return Markdown("".join(_filled(part, values) for part in parts))


@functools.cache
def _parsed(text: str) -> tuple[tuple[str, str | None, str, str | None], ...] | None:
    """``string.Formatter().parse`` of a sentence, once per sentence (a test-set map fills one
    sentence ten thousand times), or None where a field is more than a name with a plain format spec
    (an index, an attribute, a nested field)."""
    parts = tuple(string.Formatter().parse(text))
    simple = all(name is None or (name.isidentifier() and "{" not in spec) for _, name, spec, _ in parts)
    return parts if simple else None


def _filled(part: tuple[str, str | None, str, str | None], values: dict[str, object]) -> str:
    """One literal and the field after it, as ``_FILLER.vformat`` writes them."""
    literal, name, spec, conversion = part
    if name is None:
        return literal
    value = values[name]
    if conversion:
        value = _FILLER.convert_field(value, conversion)
    return literal + _FILLER.format_field(value, spec)


class TranslatedError(Exception):
    """An error whose message is an i18n sentence: ``str(err)`` is English plain text (for a
    terminal or a log), ``sentence(lang)`` gives it as Markdown in any language. Subclasses also derive from the built-in error they stand for.

    Attributes:
        key: the i18n key of the sentence.
        values: the values that fill the sentence's fields.
    """

    def __init__(self, key: str, **values: object) -> None:
        self.key = key
        self.values = values
        super().__init__(plain(t(key, **values)))

    def sentence(self, lang: str) -> Markdown:
        return t(self.key, lang, **self.values)


def missing() -> list[tuple[str, str]]:
    """(key, language) pairs with no text: the i18n test requires this to be empty."""
    return [(key, lang) for key, entry in TEXT.items() for lang in LANGUAGES if not entry.get(lang, "").strip()]
