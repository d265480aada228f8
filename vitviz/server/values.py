"""One check per kind of value that a visitor sends: a URL parameter, a typed name, a field of an
uploaded file. Each returns the value it accepts, clipped or cut where that makes sense, or None;
none of them raises, whatever the text.

``str.isdigit()`` is True for "²", "①" and "٣", which ``int()`` then refuses, and ``int()``
refuses numbers of over 4,300 digits: integers here are ASCII digits of bounded length.
"""

from __future__ import annotations

import math
import re

MAX_DIGITS = 9  # every index a page takes (a step, a layer, a token, a test image) is far below 10**9
_INTEGER = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
ECHO_CHARS = 80  # how much of a typed name a sentence repeats


def integer(text: object, low: int | None = None, high: int | None = None) -> int | None:
    """An integer written in ASCII digits (with an optional minus sign, at most ``MAX_DIGITS``),
    clipped to [low, high]; None for anything else.

    >>> integer("12"), integer("²"), integer("9" * 5000), integer("40", high=11)
    (12, None, None, 11)
    """
    if not isinstance(text, str) or _INTEGER.fullmatch(text) is None:
        return None
    value = int(text)
    if low is not None:
        value = max(value, low)
    if high is not None:
        value = min(value, high)
    return value


def test_image(text: object) -> tuple[str, int] | None:
    """A test image written as "class/index" ("cat/3"; "T-shirt/top/0", whose class holds a "/"),
    as (class, index), or None when it is not of that form."""
    if not isinstance(text, str):
        return None
    cls, _, index = text.rpartition("/")  # the last "/" ends the class
    number = integer(index)
    return (cls, number) if cls and number is not None and number >= 0 else None


def finite(value: object, low: float, high: float) -> bool:
    """Whether ``value`` is a real number (not a bool, not NaN or infinite) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and low <= value <= high


def whole(value: object, low: int, high: int) -> bool:
    """Whether ``value`` is an int (not a bool, not a float such as 1e10) within [low, high]."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def echo(text: object, limit: int = ECHO_CHARS) -> str:
    """A visitor's text as a sentence may repeat it: one line, cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# A class's join code (vitviz.server.classes): letters and digits with no look-alikes (no 0/O, 1/I/L).
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8  # 31**8: about 39.6 bits
_CODE = re.compile(rf"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")


def class_code(text: object) -> str | None:
    """A class's join code as typed or in a link ("abcd-2345", " ABCD2345 "), in its stored form
    ("ABCD2345"); None for anything else.

    >>> class_code("abcd-2345"), class_code("ABCD0000"), class_code("A" * 5000)
    ('ABCD2345', None, None)
    """
    if not isinstance(text, str) or len(text) > 4 * CODE_LENGTH:
        return None
    code = "".join(text.split()).replace("-", "").upper()
    return code if _CODE.fullmatch(code) else None
