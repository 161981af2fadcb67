"""Screenshots of the web console's main screens, taken in Debian's chromium from a real
`capreg serve --http` over the bundled catalogs with a throwaway admin key, into docs/console/.

The plots it shows are redrawn from the results folder's JSON reports with today's plotting
code (into a scratch folder, each with its PNG's date), so the screenshot shows what the next
`make eval` draws without rerunning it or touching the committed PNGs."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.async_api import FloatRect, Page, ViewportSize, async_playwright, expect

from indexer.evaluation.report import Report, plot_recall
from registry.auth.keys import add_key
from tests.support.browser import launch_chromium
from tests.support.server_process import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT: ViewportSize = {"width": 1280, "height": 860}
QUERY = "a customer was charged twice: refund the payment and open a ticket"
WAIT_MS = 60_000


def redraw_plots(results: Path, into: Path) -> None:
    """Each PNG of `results` that has a JSON report beside it, drawn again into `into` from
    that report, with the PNG's modification time (the console lists the newest first)."""
    for png in results.glob("*.png"):
        report = png.with_suffix(".json")
        if not report.is_file():
            continue
        items = json.loads(report.read_text(encoding="utf-8"))
        reports = [
            Report.from_json(item) for item in (items if isinstance(items, list) else [items])
        ]
        plot_recall(reports, into / png.name)
        modified = png.stat().st_mtime
        os.utime(into / png.name, (modified, modified))


def wait_ready(url: str, seconds: float) -> None:
    """Polls /readyz until 200: the HTTP listener starts beside the gRPC one."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as reply:  # noqa: S310 (loopback URL built here)
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready after {seconds}s")


async def show_at_top(page: Page, selector: str) -> None:
    await page.locator(selector).evaluate("node => node.scrollIntoView({block: 'start'})")


async def shoot(url: str, key: str, out: Path) -> list[Path]:
    written: list[Path] = []

    async def save(page: Page, name: str, height: int = VIEWPORT["height"]) -> None:
        path = out / f"{name}.png"
        clip: FloatRect = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height}
        await page.screenshot(path=path, clip=clip)
        written.append(path)

    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        page = await browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(WAIT_MS)
        await page.goto(url)
        await save(page, "key-form", height=380)

        await page.get_by_label("API key", exact=True).fill(key)
        await page.keyboard.press("Enter")
        await expect(page.locator(".catalog").first).to_be_visible(timeout=WAIT_MS)
        await show_at_top(page, "#catalogs-section")
        await save(page, "catalogs")

        await show_at_top(page, "body")
        await page.get_by_label("Hits", exact=True).select_option("5")
        await page.get_by_label("What should the tool do?").fill(QUERY)
        await page.keyboard.press("Enter")
        first_hit = page.locator("#hits .hit-open").first
        await expect(first_hit).to_be_visible(timeout=WAIT_MS)
        await save(page, "search")

        await first_hit.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#schema .tool")).to_be_visible(timeout=WAIT_MS)
        await save(page, "schema")

        plots = page.locator("#results figure img")
        await expect(plots.first).to_be_visible(timeout=WAIT_MS)
        await show_at_top(page, "#results-section")
        await save(page, "plots")
        await browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--catalogs", type=Path, default=ROOT / "catalogs")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "console")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        key = add_key(work / "keys.yaml", "dev-admin", ["registry:admin", "*"])
        plots = work / "results"
        plots.mkdir()
        redraw_plots(args.results, plots)
        http = f"127.0.0.1:{free_port()}"
        extra = ["--catalogs", str(args.catalogs), "--keys", str(work / "keys.yaml")]
        extra += ["--http", http, "--results-dir", str(plots)]
        with serving(work / "registry.db", work / "serve.log", extra):
            wait_ready(f"http://{http}", seconds=60)
            written = asyncio.run(shoot(f"http://{http}/", key, args.out))
    for path in written:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
