"""The web console in a real browser (Debian's chromium through Playwright) against real
servers on loopback: signing in, searching, schemas by keyboard alone, scopes, refused keys,
the key's storage, workflows, plots, and data that stays text."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.async_api import Browser, Locator, Page, async_playwright, expect

from registry.auth.keys import add_key
from registry.core import Registry
from tests.conftest import ROOT
from tests.registry.http.conftest import Served, serve_both
from tests.support.browser import launch_chromium

# A locator waits this long at most: the first search loads the query path on a busy machine.
WAIT_MS = 30_000
TICKET = "open a support ticket for a customer"
# Nothing in the sample catalogs does this: the registry answers it with weak_match set.
NONSENSE = "launch a rocket to mars and feed the cat"
FORGED = "capreg_00000000_forged"
MARKUP = '<img src="x" onerror="document.title = \'injected\'">'


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One chromium per session; a missing chromium fails every test here, never skips."""
    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        yield browser
        await browser.close()


async def open_page(browser: Browser) -> Page:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    page = await open_page(browser)
    yield page
    await page.context.close()


async def sign_in(page: Page, served: Served, key: str) -> None:
    await page.goto(str(served.http.base_url))
    await page.get_by_label("API key", exact=True).fill(key)
    await page.keyboard.press("Enter")


async def signed_in(page: Page, served: Served, role: str) -> None:
    await sign_in(page, served, served.keys[role])
    await expect(page.locator(".catalog").first).to_be_visible(timeout=WAIT_MS)


async def focused(locator: Locator) -> bool:
    return bool(await locator.evaluate("node => node === document.activeElement"))


async def tab_to(page: Page, target: Locator, most: int = 60) -> int:
    """Presses Tab until `target` has the focus; returns how many presses that took."""
    for presses in range(1, most + 1):
        await page.keyboard.press("Tab")
        if await focused(target):
            return presses
    raise AssertionError(f"Tab never reached {target} in {most} presses")


async def api(served: Served, role: str, method: str, path: str, **kwargs: Any) -> Any:
    headers = {"authorization": f"Bearer {served.keys[role]}"} if role else {}
    response = await served.http.request(method, path, headers=headers, **kwargs)
    return response.json()


async def hit_ids(page: Page) -> list[str]:
    return await page.locator("#hits .hit-open").all_inner_texts()


async def test_a_query_and_enter_show_the_hits_the_api_gives_with_their_scores(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    await page.get_by_label("What should the tool do?").fill(TICKET)
    await page.keyboard.press("Enter")
    await expect(page.locator("#search-status")).to_contain_text("for “")

    answer = await api(secured_api, "admin", "GET", "/v1/search", params={"q": TICKET})
    assert answer["hits"], "the sample catalogs answer this query"
    assert await hit_ids(page) == [hit["id"] for hit in answer["hits"]]
    first = page.locator("#hits .hit").first
    await expect(first).to_contain_text(answer["hits"][0]["summary"])
    await expect(first.locator(".scores")).to_contain_text(
        f"score {answer['hits'][0]['score']:.3f} · similarity {answer['hits'][0]['similarity']:.3f}"
    )
    await expect(page.locator("#weak")).to_be_hidden()


async def test_a_weak_match_is_said_plainly_in_words(secured_api: Served, page: Page) -> None:
    answer = await api(secured_api, "admin", "GET", "/v1/search", params={"q": NONSENSE})
    assert answer["weak_match"] is True
    await signed_in(page, secured_api, "admin")
    await page.get_by_label("What should the tool do?").fill(NONSENSE)
    await page.keyboard.press("Enter")
    await expect(page.locator("#weak")).to_be_visible()
    await expect(page.locator("#weak")).to_contain_text("Weak match: nothing this key can see")
    await expect(page.get_by_role("status").filter(has_text="mars")).to_contain_text("Weak match")


async def test_a_schema_opens_from_a_hit_with_the_keyboard_alone(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    query = page.get_by_label("What should the tool do?")
    assert await focused(query), "signing in leaves the focus in the search box"
    await page.keyboard.type(TICKET)
    await page.keyboard.press("Enter")
    first_hit = page.locator("#hits .hit-open").first
    await expect(first_hit).to_be_visible()
    # The tab order follows the page: the form's fields, its button, then the hits.
    order = [
        page.get_by_label("Catalog", exact=True),
        page.get_by_label("Hits", exact=True),
        page.get_by_role("button", name="Search", exact=True),
        first_hit,
    ]
    for target in order:
        assert await tab_to(page, target, most=1) == 1
    tool_id = await first_hit.inner_text()
    await page.keyboard.press("Enter")

    heading = page.locator("#schema-heading")
    await expect(heading).to_have_text(f"Schema: {tool_id}")
    assert await focused(heading), "the opened schema takes the focus"
    [tool] = (await api(secured_api, "admin", "POST", "/v1/schemas", json={"ids": [tool_id]}))[
        "tools"
    ]
    schema = page.locator("#schema")
    await expect(schema).to_contain_text(tool["description"])
    await expect(schema).to_contain_text(tool["function_name"])
    rows = schema.get_by_role("table", name="Parameters").locator("tbody tr")
    properties = tool["input_schema"].get("properties", {})
    await expect(rows).to_have_count(len(properties))
    await expect(schema.locator("pre").first).to_contain_text('"type": "object"')

    # Each link opens its target's schema, again from the keyboard.
    assert tool["links"], "the sample tools for tickets declare links"
    target = tool["links"][0]["target_id"]
    link = schema.get_by_role("button", name=f"Open schema of {target} (", exact=False).first
    await tab_to(page, link)
    await page.keyboard.press("Enter")
    await expect(heading).to_have_text(f"Schema: {target}")


async def search(page: Page, query: str) -> None:
    """Types `query` into the search box and sends it with Enter."""
    await page.get_by_label("What should the tool do?").fill(query)
    await page.get_by_label("What should the tool do?").press("Enter")


async def test_a_new_search_clears_the_schema_opened_from_the_last_answer(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    await search(page, TICKET)
    await page.locator("#hits .hit-open").first.press("Enter")
    await expect(page.locator("#schema .tool")).to_be_visible()
    await search(page, "look up an employee")
    await expect(page.locator("#search-status")).to_contain_text("look up an employee")
    await expect(page.locator("#schema-section")).to_be_hidden()
    await expect(page.locator("#schema .tool")).to_have_count(0)


async def test_an_error_replaces_the_last_answer_instead_of_sitting_above_it(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    await search(page, TICKET)
    await expect(page.locator("#hits .hit").first).to_be_visible()
    await page.locator("#hits .hit-open").first.press("Enter")
    await expect(page.locator("#schema .tool")).to_be_visible()
    await search(page, "   ")
    await expect(page.get_by_role("alert")).to_contain_text("Type what the tool should do")
    # The alert is the only answer on screen: no hits, counts or schema of the last request.
    await expect(page.locator("#hits .hit")).to_have_count(0)
    await expect(page.locator("#search-status")).to_have_text("")
    await expect(page.locator("#scores-help")).to_be_hidden()
    await expect(page.locator("#schema-section")).to_be_hidden()


async def test_the_scores_say_what_they_measure_and_that_a_score_may_be_negative(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    help_ = page.locator("#scores-help")
    await expect(help_).to_be_hidden()
    await search(page, TICKET)
    await expect(help_).to_be_visible()
    await expect(help_).to_contain_text("can be negative")
    await expect(help_).to_contain_text("from \u22121 to 1")
    scores = page.locator("#hits .scores").first
    await expect(scores).to_have_accessible_description(re.compile("ranks the hits of this answer"))
    await expect(scores).to_have_attribute("title", re.compile("may be negative"))


def _rgb(css: str) -> tuple[int, int, int]:
    red, green, blue = (int(part) for part in re.findall(r"\d+", css)[:3])
    return red, green, blue


async def test_the_focus_ring_is_neutral_not_the_colour_of_an_error(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    catalog = page.get_by_label("Catalog", exact=True)
    await tab_to(page, catalog, most=1)
    ring = await catalog.evaluate(
        "node => { const s = getComputedStyle(node);"
        " return [s.outlineStyle, s.outlineWidth, s.outlineColor]; }"
    )
    style, width, colour = ring
    assert style == "solid"
    assert float(width.removesuffix("px")) >= 2
    red, _green, blue = _rgb(colour)
    # Not a red or orange: those say "error" (the alert's ink is #8a1c1c).
    assert red <= blue, colour
    alert_ink = await page.locator("#alert").evaluate("node => getComputedStyle(node).color")
    assert _rgb(colour) != _rgb(alert_ink)


async def test_the_page_loads_with_no_refused_request_and_a_favicon(
    secured_api: Served, page: Page
) -> None:
    refused: list[str] = []
    page.on("response", lambda r: refused.append(r.url) if r.status >= 400 else None)
    await page.goto(str(secured_api.http.base_url))
    await expect(page.get_by_label("API key", exact=True)).to_be_visible()
    assert refused == []
    icon = await page.locator("link[rel=icon]").get_attribute("href")
    assert icon is not None
    for path in (icon, "/favicon.ico"):
        answer = await page.request.get(f"{secured_api.url}{path}")
        assert answer.status == 200, path
        assert answer.headers["content-type"].startswith("image/svg+xml")
        assert (await answer.text()).startswith("<svg")


async def test_the_key_form_says_where_to_find_a_key(secured_api: Served, page: Page) -> None:
    await page.goto(str(secured_api.http.base_url))
    key = page.get_by_label("API key", exact=True)
    await expect(key).to_have_accessible_description(re.compile(r"\.capreg/dev-keys\.env"))
    await expect(key).to_have_accessible_description(re.compile("capreg keys add"))
    await expect(key).to_have_accessible_description(re.compile("make serve"))


async def test_a_read_only_key_sees_fewer_catalogs_than_the_admin_key(
    secured_api: Served, browser: Browser, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    admin_names = await page.locator(".catalog .terms div:first-child dd").all_inner_texts()
    reader_page = await open_page(browser)
    try:
        await signed_in(reader_page, secured_api, "reader")
        reader_cards = reader_page.locator(".catalog .terms div:first-child dd")
        reader_names = await reader_cards.all_inner_texts()
        options = (
            await reader_page.get_by_label("Catalog", exact=True)
            .locator("option")
            .all_inner_texts()
        )
        summary = await reader_page.locator("#catalogs-summary").inner_text()
    finally:
        await reader_page.context.close()
    listed = await api(secured_api, "reader", "GET", "/v1/catalogs")
    assert (
        sorted(reader_names) == sorted(c["name"] for c in listed["catalogs"]) == ["hr", "support"]
    )
    assert set(reader_names) < set(admin_names)
    assert options == ["All catalogs", *reader_names]
    assert summary.startswith("This key sees 2 catalogs")


async def test_a_bad_key_shows_the_servers_refusal_and_keeps_the_key_form(
    secured_api: Served, page: Page
) -> None:
    refusal = await secured_api.http.get(
        "/v1/catalogs", headers={"authorization": f"Bearer {FORGED}"}
    )
    assert refusal.status_code == 401
    await sign_in(page, secured_api, FORGED)
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("refused this key (401 UNAUTHENTICATED)")
    await expect(alert).to_contain_text(refusal.json()["error"]["message"])
    await expect(page.get_by_label("API key", exact=True)).to_be_visible()
    await expect(page.locator("#console")).to_be_hidden()
    assert await focused(page.get_by_label("API key", exact=True))
    assert await page.evaluate("sessionStorage.length") == 0


async def test_the_key_lives_in_the_tabs_session_storage_only(
    secured_api: Served, page: Page
) -> None:
    key = secured_api.keys["reader"]
    await signed_in(page, secured_api, "reader")
    assert await page.evaluate("sessionStorage.getItem('capreg.apiKey')") == key
    assert await page.context.cookies() == []
    assert key not in page.url
    await page.reload()  # the same tab keeps its key
    await expect(page.locator(".catalog").first).to_be_visible()
    await page.get_by_role("button", name="Forget key").press("Enter")
    await expect(page.get_by_label("API key", exact=True)).to_be_visible()
    assert await page.evaluate("sessionStorage.length") == 0


async def test_a_workflow_shows_the_moves_of_its_state_and_follows_them(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    listed = await api(secured_api, "admin", "GET", "/v1/catalogs")
    workflow = next(w for c in listed["catalogs"] for w in c["workflows"])
    params = {"workflow": workflow["id"], "state": workflow["initial_state"]}
    answer = await api(secured_api, "admin", "GET", "/v1/affordances", params=params)
    await page.get_by_role("button", name=f"Open workflow {workflow['title']}").press("Enter")
    heading = page.locator("#workflow-heading")
    await expect(heading).to_have_text(
        f"Workflow {workflow['id']}: state {workflow['initial_state']}"
    )
    moves = page.locator("#workflow .moves > li")
    await expect(moves).to_have_count(len(answer["affordances"]))
    onward = next(a for a in answer["affordances"] if a["next_state"] != answer["state"])
    await page.get_by_role("button", name=f"state {onward['next_state']}").first.press("Enter")
    await expect(heading).to_have_text(f"Workflow {workflow['id']}: state {onward['next_state']}")


async def test_catalog_text_is_shown_as_text_never_as_markup(
    secured_api: Served, page: Page
) -> None:
    catalog = {
        "capreg": 1,
        "name": "markup",
        "title": f"<b>Markup</b> {MARKUP}",
        "description": f"Tools whose words look like HTML {MARKUP}",
        "tools": [
            {
                "name": "render_markup",
                "description": f"Renders a support ticket as HTML. {MARKUP}",
                "input_schema": {
                    "type": "object",
                    "properties": {"html": {"type": "string", "description": MARKUP}},
                },
            }
        ],
    }
    put = await secured_api.http.put(
        "/v1/catalogs/markup", content=yaml.safe_dump(catalog), headers=secured_api.auth("admin")
    )
    assert put.status_code == 200, put.text
    await signed_in(page, secured_api, "admin")
    await expect(page.locator(".catalog h3").filter(has_text="<b>Markup</b>")).to_have_count(1)
    await page.get_by_label("What should the tool do?").fill("render_markup")
    await page.keyboard.press("Enter")
    await page.get_by_role("button", name="Open schema of markup/render_markup").click()
    await expect(page.locator("#schema tbody")).to_contain_text(MARKUP)
    assert await page.locator("main img, main b").count() == 0
    assert await page.title() == "capreg console"


@pytest.fixture
async def plotted_api(sample_registry: Registry, tmp_path: Path) -> AsyncIterator[Served]:
    """The API with a reader key and a results folder of two plots, `newer` the newer."""
    results = tmp_path / "results"
    results.mkdir()
    plot = ROOT / "docs" / "results" / "livemcpbench.png"
    for name, modified in (("older.png", 1_700_000_000), ("newer.png", 1_800_000_000)):
        shutil.copy(plot, results / name)
        os.utime(results / name, (modified, modified))
    (results / "notes.md").write_text("not a plot")
    keys_file = tmp_path / "keys.yaml"
    reader = add_key(keys_file, "reader", ["hr:read"])
    async with serve_both(sample_registry, keys_file, results=results) as served:
        served.keys["reader"] = reader
        yield served


async def test_the_evaluation_plots_show_newest_first(plotted_api: Served, page: Page) -> None:
    names = await api(plotted_api, "reader", "GET", "/v1/results")
    assert names == ["newer.png", "older.png"]
    await signed_in(page, plotted_api, "reader")
    figures = page.locator("#results figure")
    await expect(figures).to_have_count(2)
    assert await page.locator("#results figcaption").all_inner_texts() == ["newer", "older"]
    image = figures.first.get_by_role("img", name="Evaluation plot newer")
    await expect(image).to_be_visible()
    assert await image.evaluate("img => img.complete && img.naturalWidth") > 0


async def test_without_plots_the_console_shows_no_plot_section(
    secured_api: Served, page: Page
) -> None:
    await signed_in(page, secured_api, "admin")
    await expect(page.locator("#results-section")).to_be_hidden()
    assert await api(secured_api, "admin", "GET", "/v1/results") == []
