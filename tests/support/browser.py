"""Launches Debian's chromium under Playwright: the one set of options that the console's
browser tests and its screenshots share."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Playwright

# Debian's package, not a Playwright download: nothing may be fetched at run time, and
# `make test` installs it with apt-get when it is missing.
CHROMIUM = Path("/usr/bin/chromium")
# Headless and quiet: no GPU, no sandbox (CI runs as root), and none of the background
# traffic a first run would start (updates, sync, component downloads).
LAUNCH_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class ChromiumMissing(RuntimeError):
    """Debian's chromium is not installed where the tests expect it."""


async def launch_chromium(playwright: Playwright) -> Browser:
    """Debian's chromium, headless; raises ChromiumMissing (never skips) when it is absent."""
    if not CHROMIUM.is_file():
        raise ChromiumMissing(
            f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`; "
            "`make test` does it)"
        )
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
