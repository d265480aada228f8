"""The headless Chromium the browser tests drive (Playwright's sync API, the machine's Chromium)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from playwright import sync_api

from benchmarks.bench import CHROMIUM, CHROMIUM_ARGS


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """A Chromium launched for the block and closed after it (Playwright is a requirement of the tests:
    requirements-dev.txt)."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
