"""The session's choices: one table, and everything that keeps them (validation, the URL, page
switches) derived from it.

Each choice is declared once in ``CHOICES``: its widget key, what a valid value is, whether the URL
mirrors it, whether a person counts it from 1, and which page draws it. A page draws a persisted
widget with one call that returns its value, ``state.widget(st.slider, "layer", label, 1, 12)``,
and reads or sets a choice with ``state.get`` / ``state.set``; it never touches st.session_state.

Why the URL is written here rather than by ``bind="query-params"``, and why ``persist_state``:
docs/architecture.md ("The session's choices: one table"). A select box whose translated labels
come back as the old language's label after a switch: ``sync`` refuses the value and gives back
the last valid one (``_kept``); ``relabel_after_language_switch`` redraws every widget's value.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st

from vitviz.analyses import analysis, compare, lab
from vitviz.app.caches import sample_names
from vitviz.app.models import tour_model, tour_models
from vitviz.app.testset import test_images
from vitviz.render.i18n import DEFAULT_LANGUAGE, LANGUAGES
from vitviz.server import values

T = TypeVar("T")

SOURCES = ("sample", "upload", "test")
APP = "app"  # a choice of the whole app: the sidebar's, and the tour's shared view (layer, head)


@dataclass(frozen=True)
class Choice:
    """One choice a session keeps.

    Attributes:
        key: the widget's key, the name in session state and (with ``url``) in the URL.
        kind: what a valid value is: int (never a bool), bool, str, tuple (a (low, high) range)
            or list (of numbers).
        url: mirrored in the URL, so a shared link opens the same view.
        from_one: an index counted from 0 in code, from 1 on screen and in the URL (a layer, a head).
        scope: APP, or the page script that draws it.
        options: the valid values, where they are a list (evaluated when a value is checked).
        check: what else a valid value passes (a class's join code: ``values.class_code``).
    """

    key: str
    kind: type
    url: bool = False
    from_one: bool = False
    scope: str = APP
    options: Callable[[], Collection[Any]] | None = None
    check: Callable[[Any], bool] | None = None


def _test_classes() -> Collection[str]:
    """The classes of the sidebar model's test split (none where it has none here)."""
    images = test_images(tour_model(get("model"), get("custom_model")))
    return images.classes() if images is not None else ()


TOUR_VIEW = "app_pages/[5-6]_*.py"  # the pages that share the view of one layer, head and query
ATTENTION = "app_pages/5_attention.py"
LAB = "app_pages/10_mistakes.py"
COMPARE, CARD = "app_pages/8_compare.py", "app_pages/9_card.py"
TRUST, MAP, LEARN = "app_pages/11_trust.py", "app_pages/12_map.py", "app_pages/13_learn.py"

CHOICES = (
    Choice("lang", str, url=True, options=lambda: LANGUAGES),
    Choice("present", bool, url=True),  # presenter mode: no sidebar, larger type, keys for a clicker
    Choice("model", str, url=True, options=tour_models),  # the URL's "model" may be any name: see sidebar
    Choice("custom_model", str),  # a typed name (timm:, hf:, a path the server allows)
    Choice("source", str, options=lambda: SOURCES),
    Choice("sample", str, url=True, options=sample_names),  # a file name in vitviz/assets/samples
    Choice("test", str, url=True),  # a test image as "class/index" ("cat/3", "T-shirt/top/0")
    Choice("test_class", str, options=_test_classes),
    Choice("test_index", int),
    Choice("step", int, url=True),  # the tour page, 0 = overview
    Choice("slide", str),  # presenter mode's slide as "step:index" (index -1: the step's last)
    Choice("class", str, url=True, check=lambda code: values.class_code(code) is not None),  # the class followed
    Choice("layer", int, url=True, from_one=True, scope=TOUR_VIEW),
    Choice("head", int, url=True, from_one=True, scope=TOUR_VIEW),  # -1: the mean of the heads
    Choice("query", int, url=True, scope=TOUR_VIEW),  # a token index, [CLS] = 0
    Choice("attention_heads_of", str, scope=ATTENTION, options=lambda: ("readout", "query")),  # the small multiples'
    Choice("attention_fusion", str, scope=ATTENTION, options=lambda: analysis.HEAD_FUSIONS),  # rollout's head fusion
    Choice("concept_size", int, scope="app_pages/2_patches.py"),  # the concept figure's image side
    Choice("concept_p", int, scope="app_pages/2_patches.py"),  # the patch side of the concept figure
    Choice("patch", int, scope="app_pages/3_vectors.py"),
    Choice("pos", int, scope="app_pages/4_tokens.py"),
    Choice("mistakes_true", int, scope=LAB),  # class indices, or the lab's "any"
    Choice("mistakes_predicted", int, scope=LAB),
    Choice("mistakes_range", tuple, scope=LAB, check=lambda v: 0 <= v[0] <= v[1] <= 1),  # the confidence range
    Choice("mistakes_page", int, scope=LAB),  # the gallery page, from 1
    Choice("mistake", int, scope=LAB),  # the image up close: its # in the filtered list, from 1
    Choice("mistakes_other", str, scope=LAB),  # a second model (a registry name, or a file)
    Choice("mistakes_other_path", str, scope=LAB),
    Choice("mistakes_pair", str, scope=LAB, options=lambda: lab.PAIRS),  # which of the two gets it wrong
    Choice("topk", int, scope="app_pages/7_prediction.py"),  # how many classes the bars show
    Choice("compare_cnn", str, scope=COMPARE),  # the registry's CNN, or a file
    Choice("compare_cnn_path", str, scope=COMPARE),
    Choice("compare_class", int, scope=COMPARE),
    Choice("compare_ig", bool, scope=COMPARE),
    Choice("compare_experiment", str, scope=COMPARE, options=lambda: compare.EXPERIMENTS),
    Choice("compare_hidden", list, scope=COMPARE),  # the patches the hiding experiment hides
    Choice("compare_shift", int, scope=COMPARE),  # the shift experiment's pixels
    Choice("compare_seed", int, scope=COMPARE),  # the shuffle experiment's order
    Choice("card_model", str, url=True, scope=CARD),  # whose card: the sidebar's ViT, or a CNN
    Choice("trust_heads", list, scope=TRUST),  # heads switched off, as layer * heads + head
    Choice("trust_layers", list, scope=TRUST),  # layers skipped
    Choice("trust_mode", str, scope=TRUST, options=lambda: ("zero", "mean")),
    Choice("map_method", str, scope=MAP),
    Choice("map_token", str, scope=MAP),
    Choice("map_layer", int, scope=MAP),
    Choice("map_colour", str, scope=MAP, options=lambda: ("class", "right")),
    Choice("map_point", int, scope=MAP),  # the test image of the point clicked on the map
    Choice("learn_epoch", int, url=True, scope=LEARN),  # the snapshot: epochs trained (0: before training)
    Choice("learn_head", int, scope=LEARN),  # a head of the last layer, -1: the mean of the heads
    Choice("learn_sample", int, scope=LEARN),  # the run's test image shown where the session's model reads others
)
BY_KEY = {choice.key: choice for choice in CHOICES}
URL_KEYS = tuple(choice.key for choice in CHOICES if choice.url)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_valid(key: str, value: object) -> bool:
    """Whether ``value`` is one of choice ``key``'s values (see the module's note on translated labels)."""
    choice = BY_KEY[key]
    if value is None:
        return False
    if choice.kind is int:
        valid = isinstance(value, int) and not isinstance(value, bool)
    elif choice.kind is tuple:
        valid = isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_number(v) for v in value)
    elif choice.kind is list:
        valid = isinstance(value, list) and all(_is_number(v) for v in value)
    else:
        valid = isinstance(value, choice.kind)
    return (
        valid
        and (choice.options is None or value in choice.options())
        and (choice.check is None or choice.check(value))
    )


def _kept() -> dict[str, Any]:
    """The last valid value of every choice this session made."""
    return st.session_state.setdefault("_kept", {})


def sync() -> None:
    """Keep the widgets' newest valid values; give back the ones a language switch garbled, or a
    page switch dropped, from the last valid ones."""
    kept = _kept()
    for choice in CHOICES:
        value = st.session_state.get(choice.key)
        if choice.key in st.session_state and is_valid(choice.key, value):
            kept[choice.key] = value
        elif kept.get(choice.key) is not None:
            st.session_state[choice.key] = kept[choice.key]
        elif choice.key in st.session_state:
            del st.session_state[choice.key]


def get(key: str, default: T | None = None) -> Any | T:
    """A choice's value this run (``default`` when none was made)."""
    BY_KEY[key]  # a KeyError names a choice missing from the table
    value = st.session_state.get(key)
    return default if value is None else value


def set(**values: object) -> None:  # noqa: A001 (state.set reads as what it does)
    """Set choices from code (a click's callback, before a page switch): what the widgets will show."""
    kept = _kept()
    for key, value in values.items():
        BY_KEY[key]
        kept[key] = value
        st.session_state[key] = value


def default(key: str, value: object) -> Any:
    """A choice's value, set to ``value`` first when none was made (or the one made is no longer valid)."""
    if not is_valid(key, st.session_state.get(key)):
        set(**{key: value})
    return st.session_state[key]


def clip(key: str, default: int, low: int, high: int) -> int:
    """A numeric choice clipped to [low, high] (a new model has fewer layers or patches)."""
    value = st.session_state.get(key, default)
    value = default if not is_valid(key, value) else min(max(value, low), high)
    set(**{key: value})
    return value


def widget(draw: Callable[..., T], key: str, *args: Any, mirror: bool = True, **kwargs: Any) -> T:
    """Draw a persisted widget and return its value: ``draw`` is st.slider, st.selectbox,
    a column's st.radio ...; the key is the choice's, its value outlives page switches
    (``persist_state``), and the URL follows it when the table says so (``mirror=False``: the
    caller writes the URL itself, as the sidebar does for a typed model's name)."""
    choice = BY_KEY[key]
    value = draw(*args, key=key, persist_state="session", **kwargs)
    if choice.url and mirror:
        set_param(key, value)
    return value


# ---------------------------------------------------------------------------------------------
# The URL
# ---------------------------------------------------------------------------------------------


def to_url(key: str, value: object) -> str:
    """A choice as the URL writes it: counted from 1 where people count so (the mean of the heads
    as "mean"), a flag as 1, everything else as it is."""
    choice = BY_KEY[key]
    if choice.from_one and _is_number(value):
        return "mean" if value < 0 else str(value + 1)
    if choice.kind is bool:
        return "1"
    return str(value)


def from_url(key: str, text: str) -> object:
    """A URL parameter as session state holds it (the inverse of ``to_url``); anything else comes
    back as text, which ``sync`` then refuses. Numbers are read by ``values.integer``: "²" or a
    number of 5,000 digits is such text, never an exception."""
    choice = BY_KEY[key]
    if choice.from_one:
        if key == "head" and text == "mean":
            return -1
        number = values.integer(text)
        return number - 1 if number is not None and number >= 1 else text
    if choice.kind is bool:
        return text in ("1", "true", "True")
    if choice.kind is int:
        number = values.integer(text)
        return text if number is None else number
    return text


def url_params() -> dict[str, str]:
    """The URL's query parameters for the session's choices."""
    return {key: to_url(key, st.session_state[key]) for key in URL_KEYS if not _absent(st.session_state.get(key))}


def _absent(value: object) -> bool:
    return value is None or value is False or value == ""


def set_param(key: str, value: object | None) -> None:
    """Mirror one choice in the URL (None, "" or False removes it; 0 is a value), as ``to_url`` writes it."""
    if _absent(value):
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != to_url(key, value):
        st.query_params[key] = to_url(key, value)


def _load_url() -> None:
    params = st.query_params
    if "cifar" in params:  # a link from before test images came from other datasets than CIFAR-10
        st.session_state.setdefault("test", params["cifar"])
        del st.query_params["cifar"]
    for key in URL_KEYS:
        if key in params and key not in st.session_state:
            st.session_state[key] = from_url(key, params[key])
    if st.session_state.get("lang") not in LANGUAGES:
        st.session_state["lang"] = DEFAULT_LANGUAGE
    st.session_state["_url_loaded"] = True


def init() -> None:
    """Every run: on the session's first, copy the URL's query parameters into session state;
    then bring back the choices a page switch dropped or a language switch garbled."""
    if not st.session_state.get("_url_loaded"):
        _load_url()
    sync()
    relabel_after_language_switch()


def relabel_after_language_switch() -> None:
    """A select box shows the words its option had when it was picked, and Streamlit sends it
    its value only when that value changes: after a switch to Korean the sidebar's model would
    still read "CIFAR-10 ViT (shipped, ...)" among Korean options. On the run a switch starts,
    every choice is set again, which makes Streamlit send each widget its value anew, in the
    new language's words."""
    shown = st.session_state.get("_lang_shown")
    st.session_state["_lang_shown"] = st.session_state.get("lang", DEFAULT_LANGUAGE)
    if shown is None or shown == st.session_state["_lang_shown"]:
        return
    for choice in CHOICES:
        if choice.key != "lang" and choice.key in st.session_state:
            st.session_state[choice.key] = st.session_state[choice.key]
