"""Prometheus metrics over the HTTP listener: global counts (every catalog's tools, the
global generation) are for a key granted `registry:metrics` (or an administrator), never for
whoever can reach a port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from registry.auth.keys import add_key
from registry.core import Registry
from tests.registry.http.conftest import Served, serve_both
from tests.registry.http.test_errors import refusal


@pytest.fixture
async def monitored_api(sample_registry: Registry, tmp_path: Path) -> AsyncIterator[Served]:
    keys_file = tmp_path / "keys.yaml"
    keys = {
        "admin": add_key(keys_file, "ops", ["registry:admin", "*"]),
        "reader": add_key(keys_file, "reader", ["support:read", "hr:read"]),
        "monitor": add_key(keys_file, "prometheus", ["registry:metrics"]),
    }
    async with serve_both(sample_registry, keys_file) as served:
        served.keys.update(keys)
        yield served


async def test_metrics_need_a_key(monitored_api: Served) -> None:
    response = await monitored_api.http.get("/metrics")
    assert refusal(response, 401)["code"] == "UNAUTHENTICATED"
    assert "capreg_index_tools" not in response.text


async def test_a_key_without_the_metrics_scope_is_refused_the_global_counts(
    monitored_api: Served,
) -> None:
    response = await monitored_api.http.get("/metrics", headers=monitored_api.auth("reader"))
    assert refusal(response, 403)["code"] == "PERMISSION_DENIED"
    assert "capreg_index_tools" not in response.text


async def test_the_metrics_scope_or_an_administrator_reads_them(monitored_api: Served) -> None:
    await monitored_api.http.get("/v1/catalogs", headers=monitored_api.auth("reader"))
    for role in ("monitor", "admin"):
        response = await monitored_api.http.get("/metrics", headers=monitored_api.auth(role))
        assert response.status_code == 200, role
        assert response.headers["content-type"].startswith("text/plain")
        assert response.headers["cache-control"] == "private, no-store"
        assert "capreg_index_tools " in response.text
        assert 'capreg_requests_total{code="OK",rpc="ListCatalogs"}' in response.text
