"""The headless Chromium the browser tests drive (Playwright's sync API, the machine's Chromium)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """A Chromium launched for the block and closed after it; the test is skipped without Playwright."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
