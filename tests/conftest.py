"""Fixtures shared by the browser tests: Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import pytest

from service_helpers import chromium_path

# As root in a closed network: no sandbox, and no background connections to refuse.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = chromium_path()
    if executable is None:
        pytest.fail("Chromium is not installed: scripts/setup-system.sh installs Debian's chromium")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()
