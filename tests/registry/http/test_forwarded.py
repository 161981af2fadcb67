"""Whose address a request comes from: the peer's own, unless the operator named the proxies
whose `X-Forwarded-For` is believed. A client cannot rotate the header to escape the
failed-login throttle, nor write someone else's address into the audit log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from registry.auth.keys import add_key
from registry.core import Registry
from tests.registry.http.conftest import Served, serve_both

FORGED = {"authorization": "Bearer capreg_00000000_forged"}
# The bound: 60 wrong keys with rotating X-Forwarded-For are throttled after at most 25.
THROTTLED_BY = 25


def _failure_peers(caplog: pytest.LogCaptureFixture) -> set[str]:
    return {
        str(getattr(record, "peer", ""))
        for record in caplog.records
        if record.name == "capreg.audit" and getattr(record, "event", "") == "auth_failure"
    }


async def test_a_rotating_forwarded_for_neither_escapes_the_throttle_nor_frames_an_address(
    secured_api: Served, caplog: pytest.LogCaptureFixture
) -> None:
    statuses = []
    with caplog.at_level(logging.INFO, logger="capreg.audit"):
        for n in range(60):
            # A new key id each time too: only the address can tie these attempts together.
            forwarded = {
                "authorization": f"Bearer capreg_{n:08x}_forged",
                "x-forwarded-for": f"198.51.100.{n}",
            }
            response = await secured_api.http.get("/v1/catalogs", headers=forwarded)
            statuses.append(response.status_code)
    assert set(statuses) <= {401, 429}
    assert 429 in statuses[:THROTTLED_BY], statuses
    assert _failure_peers(caplog) == {"127.0.0.1"}


async def test_a_named_proxy_passes_on_the_address_of_the_client_behind_it(
    sample_registry: Registry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "keys.yaml"
    add_key(keys, "ops", ["registry:admin", "*"])
    async with serve_both(sample_registry, keys, trusted_proxies=("127.0.0.0/8",)) as served:
        with caplog.at_level(logging.INFO, logger="capreg.audit"):
            forwarded = {**FORGED, "x-forwarded-for": "203.0.113.9"}
            response = await served.http.get("/v1/catalogs", headers=forwarded)
    assert response.status_code == 401
    assert _failure_peers(caplog) == {"203.0.113.9"}
