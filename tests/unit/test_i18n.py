import ast
import json
import re
from pathlib import Path

import pytest

from vitviz.render import i18n

ROOT = Path(__file__).resolve().parents[2]


def test_every_key_has_english_and_korean():
    assert i18n.missing() == []


def test_korean_is_korean():
    hangul = [key for key, entry in i18n.TEXT.items() if any("\uac00" <= ch <= "\ud7a3" for ch in entry["ko"])]
    # keys whose Korean is only technical names or numbers are allowed, but they are few
    assert len(hangul) >= 0.9 * len(i18n.TEXT)


def test_placeholders_agree_between_languages():
    import string

    for key, entry in i18n.TEXT.items():
        fields = [{f for _, f, _, _ in string.Formatter().parse(text) if f} for text in entry.values()]
        assert all(f == fields[0] for f in fields), key


def _keys_used_in(path: Path) -> set[str]:
    keys = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
            "tr",
            "t",
            "header",
            "download_npz",
            "download_csv",
        ):
            for arg in node.args[:2]:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and "." in arg.value
                    and " " not in arg.value
                ):
                    keys.add(arg.value)
    return keys


def test_every_literal_key_used_by_the_app_exists():
    files = [
        ROOT / "app.py",
        *sorted((ROOT / "vitviz" / "app").glob("*.py")),
        *sorted((ROOT / "app_pages").glob("*.py")),
    ]
    assert len(files) > 10  # the pages are where most keys are used
    used = set().union(*(_keys_used_in(f) for f in files))
    unknown = sorted(k for k in used if k not in i18n.TEXT and not k.endswith((".py", ".npz", ".csv")))
    assert unknown == []


def test_class_labels_translate_cifar10_and_keep_the_name_files_use():
    cifar10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    korean = [i18n.class_label(name, "ko") for name in cifar10]
    assert korean[3] == "고양이 (cat)"
    assert all(
        label.endswith(f" ({name})") and label != f" ({name})" for label, name in zip(korean, cifar10, strict=True)
    )
    assert len(set(korean)) == 10
    assert i18n.class_label("cat", "ko", short=True) == "고양이"
    assert i18n.class_label("cat", "en", short=True) == "cat"
    assert [i18n.class_label(name, "en") for name in cifar10] == cifar10
    assert i18n.class_label("tabby, tabby cat", "ko") == "tabby, tabby cat"  # no translation: the model's own name


def _strings_in(path: Path) -> tuple[set[str], set[str]]:
    """The string literals of a module, and the literal beginnings of its f-strings ("home.step.")."""
    literals, prefixes = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            literals.add(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            start = node.values[0].value
            if "." in start and " " not in start:
                prefixes.add(start)
    return literals, prefixes


def test_every_key_in_the_files_is_used_somewhere():
    files = [ROOT / "app.py", *sorted((ROOT / "vitviz").rglob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))]
    literals, prefixes = set(), set()
    for path in files:
        found, starts = _strings_in(path)
        literals |= found
        prefixes |= starts
    unused = [key for key in i18n.TEXT if key not in literals and not any(key.startswith(p) for p in prefixes)]
    assert unused == []


def test_every_language_file_has_the_same_keys():
    files = {lang: json.loads((i18n.LOCALES / f"{lang}.json").read_text(encoding="utf-8")) for lang in i18n.LANGUAGES}
    keys = {lang: set(data["text"]) for lang, data in files.items()}
    assert all(k == keys[i18n.DEFAULT_LANGUAGE] for k in keys.values())


def test_fashion_mnist_classes_read_in_korean_with_the_datasets_names():
    from vitviz.models.config import FASHION_MNIST_CLASSES

    korean = [i18n.class_label(name, "ko") for name in FASHION_MNIST_CLASSES]
    assert korean[0] == "티셔츠/탑 (T-shirt/top)" and len(set(korean)) == 10
    assert all(label.endswith(f" ({name})") for label, name in zip(korean, FASHION_MNIST_CLASSES, strict=True))


# ---- one Korean term per concept (vitviz/locales/glossary.json) ----------------------------------

# code spans, quotations (a paper's title), placeholders, HTML tags and maths are not prose
NOT_PROSE = re.compile(r"`[^`]*`|\"[^\"]*\"|\{[^}]*\}|<[^>]*>|\$[^$]*\$")


def _names(text: str, words: list[str]) -> bool:
    """Whether ``text`` has one of the English ``words`` as a whole word (any case; "stream" is
    not in "streamlit", "attention" is in "self-attention")."""
    return any(re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text, re.IGNORECASE) for word in words)


def glossary_problems(english: str, korean: str) -> list[str]:
    """How a Korean text breaks the glossary: a concept its English names without the Korean
    term, or a forbidden variant (an English term glossed in brackets right after the Korean
    one, 잔차 스트림(residual stream), is allowed)."""
    english, korean = NOT_PROSE.sub(" ", english), NOT_PROSE.sub(" ", korean)
    for concept, entry in i18n.GLOSSARY.items():
        words = [concept, *entry["en"]]
        gloss = re.compile(rf"{re.escape(entry['ko'])}\s?\(([^)]*)\)")
        korean = gloss.sub(lambda m, w=words, t=entry["ko"]: t if _names(m[1], w) else m[0], korean)
    problems = []
    for concept, entry in i18n.GLOSSARY.items():
        if _names(english, [concept, *entry["en"]]) and entry["ko"] not in korean:
            problems.append(f"{concept!r} without {entry['ko']!r}")
        for variant in entry["forbidden"]:
            if _names(korean, [variant]) if variant.isascii() else variant in korean:
                problems.append(f"{variant!r} for {entry['ko']!r}")
    return problems


def test_every_korean_text_uses_the_glossarys_terms():
    found = {key: p for key, entry in i18n.TEXT.items() if (p := glossary_problems(entry["en"], entry["ko"]))}
    assert found == {}, "\n".join(f"{key}: {', '.join(p)}" for key, p in found.items())


def test_the_glossary_check_catches_mixed_terms():
    assert glossary_problems("the residual stream", "잔차 stream") == [
        "'residual stream' without '잔차 스트림'",
        "'stream' for '잔차 스트림'",
    ]
    assert glossary_problems("Attention branch / stream", "attention 가지 / 잔차 스트림") == [
        "'attention' without '어텐션'",
        "'attention' for '어텐션'",
    ]
    assert glossary_problems("the residual stream", "잔차 스트림(residual stream)") == []  # a gloss
    assert glossary_problems('"Attention is all you need"', '"Attention is all you need"') == []  # a title
    assert glossary_problems("run `streamlit run app.py`", "`streamlit run app.py`을 실행") == []
    entry = i18n.GLOSSARY["residual stream"]
    assert entry["ko"] == "잔차 스트림" and i18n.GLOSSARY["attention"]["ko"] == "어텐션"
    assert all(entry["ko"] not in entry["forbidden"] for entry in i18n.GLOSSARY.values())


def test_korean_titles_keep_no_english_word_but_the_kept_terms():
    """A title is read at a glance: "head와 상위 클래스" made the reader translate a code name."""
    english_before_hangul = re.compile(r"(?<![\w./-])([A-Za-z][A-Za-z-]*[A-Za-z])(?=[\uac00-\ud7a3])")
    found = []
    for key, entry in i18n.TEXT.items():
        if re.search(r"(_title|\.title|_chart)$|^page\.", key):
            text = re.sub(r"`[^`]*`|\{[^}]*\}", "", entry["ko"])
            found += [(key, w) for w in english_before_hangul.findall(text) if w.lower() not in i18n.KEPT_TERMS]
    assert found == []


def test_every_sentence_fills_as_string_formatter_fills_it():
    """``t`` parses a sentence once and fills its fields itself (a test-set map fills one sentence
    ten thousand times): every sentence of both languages, filled with text holding Markdown,
    Markdown itself, numbers and braces, reads exactly as ``string.Formatter.vformat`` writes it."""
    import string

    from vitviz.render import i18n

    checked = 0
    for key, entry in i18n.TEXT.items():
        for lang in i18n.LANGUAGES:
            text = i18n.NEVER_MEANT.sub(r"\\\1", entry.get(lang) or entry[i18n.DEFAULT_LANGUAGE])
            names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
            if not names:
                continue
            for kind, value in enumerate(("a *b* `c` ~d~ {e}", i18n.Markdown("**x**"), 3.25, 7)):
                values = {name: value for name in names} | {"unused": kind}
                try:
                    expected = i18n._FILLER.vformat(text, (), values)
                except ValueError:  # a number's format spec given text: t refuses it too
                    with pytest.raises(ValueError):
                        i18n.t(key, lang, **values)
                    continue
                assert i18n.t(key, lang, **values) == expected, (key, lang, value)
                checked += 1
    assert checked > 500  # the locale files' sentences with fields, four ways each
