import ast
import json
from pathlib import Path

from vitviz import i18n

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
    files = [ROOT / "app.py", ROOT / "vitviz" / "app" / "ui.py", *sorted((ROOT / "app_pages").glob("*.py"))]
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
    from vitviz.config import FASHION_MNIST_CLASSES

    korean = [i18n.class_label(name, "ko") for name in FASHION_MNIST_CLASSES]
    assert korean[0] == "티셔츠/탑 (T-shirt/top)" and len(set(korean)) == 10
    assert all(label.endswith(f" ({name})") for label, name in zip(korean, FASHION_MNIST_CLASSES, strict=True))
