"""What every HTTP answer tells a browser: the console and the API are never shown inside
another site's frame (clickjacking), and the console's policy is sent as a header, where a
`<meta>` tag cannot state frame-ancestors."""

from __future__ import annotations

import re

from registry.http.app import CONSOLE
from tests.registry.http.conftest import Served


def _directives(policy: str) -> dict[str, str]:
    parts = (part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    return {part[0]: part[1] if len(part) > 1 else "" for part in parts}


async def test_the_console_cannot_be_framed(open_api: Served) -> None:
    for path in ("/", "/console/console.js", "/console/console.css"):
        response = await open_api.http.get(path)
        assert response.status_code == 200, path
        assert response.headers["x-frame-options"] == "DENY"
        assert _directives(response.headers["content-security-policy"])["frame-ancestors"] == (
            "'none'"
        )


async def test_api_answers_and_refusals_cannot_be_framed_either(secured_api: Served) -> None:
    for response in (
        await secured_api.http.get("/healthz"),
        await secured_api.http.get("/v1/catalogs"),
        await secured_api.http.get("/no/such/path"),
    ):
        assert response.headers["x-frame-options"] == "DENY"
        policy = _directives(response.headers["content-security-policy"])
        assert policy == {"default-src": "'none'", "frame-ancestors": "'none'"}
        assert response.headers["x-content-type-options"] == "nosniff"


async def test_the_console_header_states_everything_its_page_states(open_api: Served) -> None:
    page = (CONSOLE / "index.html").read_text()
    meta = re.search(r'http-equiv="Content-Security-Policy"\s+content="([^"]+)"', page)
    assert meta is not None
    header = (await open_api.http.get("/")).headers["content-security-policy"]
    assert _directives(header) == {**_directives(meta.group(1)), "frame-ancestors": "'none'"}
