"""The checks of what a visitor sends: every text gets a value or None, never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vitviz.server import values

# Texts that str.isdigit() accepts and int() refuses, or that int() refuses for their length.
HOSTILE_NUMBERS = ("²", "①", "٣", "１", "9" * 5000, "3²", "-²", "", " 3", "3 ", "+3", "0x10", "3.0", "1e3", "--3")


@pytest.mark.parametrize("text", HOSTILE_NUMBERS)
def test_an_integer_is_ascii_digits_of_bounded_length(text):
    assert values.integer(text) is None


def test_integers_read_and_clip():
    assert values.integer("0") == 0 and values.integer("12") == 12 and values.integer("-1") == -1
    assert values.integer("007") == 7
    assert values.integer("9" * values.MAX_DIGITS) == 10**values.MAX_DIGITS - 1
    assert values.integer("9" * (values.MAX_DIGITS + 1)) is None
    assert values.integer("40", low=0, high=11) == 11 and values.integer("-5", low=0) == 0
    assert values.integer(3) is None and values.integer(None) is None  # only text is read


@given(st.text(max_size=30))
def test_any_text_gives_a_value_or_none(text):
    number = values.integer(text, low=-5, high=5)
    assert number is None or -5 <= number <= 5
    assert values.test_image(text) is None or values.test_image(text)[1] >= 0


def test_test_images_keep_the_slash_in_their_class():
    assert values.test_image("cat/3") == ("cat", 3)
    assert values.test_image("T-shirt/top/0") == ("T-shirt/top", 0)
    for text in ("cat/²", "cat/①", "cat/" + "9" * 5000, "cat/-1", "/3", "cat", "cat/", 3, None):
        assert values.test_image(text) is None, text


def test_numbers_of_a_file_are_finite_and_of_their_type():
    assert values.finite(4.0, 0, 16) and values.finite(4, 0, 16)
    for bad in (float("nan"), float("inf"), -1, 1e308, True, "4", None):
        assert not values.finite(bad, 0, 16), bad
    assert values.whole(12, 1, 64) and not values.whole(0, 1, 64) and not values.whole(65, 1, 64)
    for bad in (1e10, 12.0, True, "12", None):
        assert not values.whole(bad, 0, 10**12), bad


def test_an_echo_is_one_line_of_at_most_80_characters():
    assert values.echo("cat") == "cat"
    long = values.echo("x" * 10_000)
    assert len(long) == values.ECHO_CHARS and long.endswith("…")
    assert values.echo("a\nb\tc") == "a b c"


def test_a_links_numbers_come_back_as_the_session_holds_them():
    """``state.from_url`` reads a URL's numbers with ``values.integer``: people count layers and
    heads from 1, code from 0; anything else stays text, which the session then refuses."""
    from vitviz.app import state

    assert state.from_url("layer", "1") == 0 and state.from_url("layer", "12") == 11
    assert state.from_url("head", "mean") == -1 and state.from_url("step", "3") == 3
    for key, text in (("layer", "0"), ("layer", "-1"), ("head", "²"), ("step", "①"), ("query", "9" * 5000)):
        assert state.from_url(key, text) == text and not state.is_valid(key, text), (key, text)
    for text in ("1", "2", "12"):
        assert state.to_url("layer", state.from_url("layer", text)) == text
    assert state.to_url("head", state.from_url("head", "mean")) == "mean"
