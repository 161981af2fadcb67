"""What operators see: per-RPC counts and latencies by status code, state gauges, a request id
on every call and log record, JSON logs, and an audit trail of catalog changes."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest
from prometheus_client import generate_latest

from registry.auth.authentication import Authenticator
from registry.auth.keys import KeyStore, add_key
from registry.config import ServerConfig
from registry.core import Registry
from registry.logs import JsonFormatter, RequestIdFilter
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.server import create_server, mark_serving, serve_metrics
from registry.telemetry import ServiceMetrics
from tests.conftest import DATA

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub


class Served:
    def __init__(self, stub: AsyncStub, metrics: ServiceMetrics, admin: str) -> None:
        self.stub = stub
        self.metrics = metrics
        self.admin = admin

    def scrape(self) -> str:
        return generate_latest(self.metrics.registry).decode()

    async def scrape_after(self, calls: int) -> str:
        """The metrics once `calls` RPCs are counted. gRPC's abort sends the status before
        the handler unwinds, so a client can see its error a moment before the interceptor
        counts the call; waiting for the count (at most 5 s) keeps the assertions exact."""
        deadline = time.monotonic() + 5.0
        text = self.scrape()
        while _sample(text, "capreg_requests_total{") < calls and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            text = self.scrape()
        return text


@pytest.fixture
async def served(sample_registry: Registry, tmp_path: Path) -> AsyncIterator[Served]:
    keys = tmp_path / "keys.yaml"
    admin = add_key(keys, "ops-admin", ["registry:admin", "*"])
    metrics = ServiceMetrics()
    server, port, health = create_server(
        ServerConfig(listen="127.0.0.1:0"),
        sample_registry,
        Authenticator(KeyStore.load(keys), reload_interval=0.0),
        metrics=metrics,
    )
    await server.start()
    mark_serving(health)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield Served(pb_grpc.CapabilityRegistryStub(channel), metrics, admin)
    await server.stop(None)


def _sample(text: str, line_start: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start)
    )


async def test_rpcs_are_counted_and_timed_by_status_code(served: Served) -> None:
    auth = (("authorization", f"Bearer {served.admin}"),)
    request = pb.SearchRequest(query="open a support ticket for a customer")
    await served.stub.Search(request, metadata=auth)
    await served.stub.Search(request, metadata=auth)
    with pytest.raises(grpc.aio.AioRpcError):
        await served.stub.GetSchema(pb.GetSchemaRequest(ids=["hr/nope"]), metadata=auth)
    with pytest.raises(grpc.aio.AioRpcError):
        await served.stub.Search(request)  # no key
    text = await served.scrape_after(4)
    assert _sample(text, "capreg_requests_total{") == 4
    assert _sample(text, 'capreg_requests_total{code="OK",rpc="Search"}') == 2
    assert _sample(text, 'capreg_requests_total{code="NOT_FOUND",rpc="GetSchema"}') == 1
    assert _sample(text, 'capreg_requests_total{code="UNAUTHENTICATED",rpc="Search"}') == 1
    assert _sample(text, 'capreg_request_seconds_count{rpc="Search"}') == 3
    assert _sample(text, 'capreg_search_cache_total{result="hit"}') == 1
    assert _sample(text, "capreg_index_tools ") == 300
    assert _sample(text, "capreg_index_generation ") > 0
    assert 'capreg_queue_depth{lane="write"} 0.0' in text


async def test_each_call_carries_a_request_id_the_caller_can_set(served: Served) -> None:
    auth = (("authorization", f"Bearer {served.admin}"),)
    call = served.stub.ListCatalogs(
        pb.ListCatalogsRequest(), metadata=(*auth, ("x-request-id", "trace-42"))
    )
    await call
    assert ("x-request-id", "trace-42") in list(await call.trailing_metadata())
    other = served.stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=auth)
    await other
    given = dict(await other.trailing_metadata())["x-request-id"]
    assert len(str(given)) == 16


async def test_catalog_changes_and_refusals_are_audited(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    auth = (("authorization", f"Bearer {served.admin}"),)
    content = (DATA / "mini.yaml").read_text()
    with caplog.at_level(logging.INFO, logger="capreg.audit"):
        await served.stub.RegisterCatalog(pb.RegisterCatalogRequest(content=content), metadata=auth)
        await served.stub.DeleteCatalog(pb.DeleteCatalogRequest(name="mini"), metadata=auth)
        with pytest.raises(grpc.aio.AioRpcError):
            await served.stub.RegisterCatalog(
                pb.RegisterCatalogRequest(content="capreg: 2"), metadata=auth
            )
        with pytest.raises(grpc.aio.AioRpcError):
            await served.stub.DeleteCatalog(
                pb.DeleteCatalogRequest(name="hr"),
                metadata=(("authorization", "Bearer capreg_00000000_wrong"),),
            )
    records = [r for r in caplog.records if r.name == "capreg.audit"]
    events = [(r.event, getattr(r, "principal", None)) for r in records]  # type: ignore[attr-defined]
    assert events == [
        ("register", "ops-admin"),
        ("delete", "ops-admin"),
        ("register_refused", "ops-admin"),
        ("auth_failure", None),
    ]
    register = records[0]
    assert (register.catalog, register.revision) == ("mini", 1)  # type: ignore[attr-defined]
    assert len(register.digest) == 16  # type: ignore[attr-defined]


def test_json_logs_carry_the_request_id_and_the_audit_fields() -> None:
    record = logging.makeLogRecord(
        {"name": "capreg.audit", "levelno": logging.INFO, "levelname": "INFO", "msg": "delete x"}
    )
    record.catalog = "hr"
    RequestIdFilter().filter(record)
    entry = json.loads(JsonFormatter().format(record))
    assert entry["logger"] == "capreg.audit"
    assert entry["catalog"] == "hr"
    assert "request_id" in entry


async def test_metrics_are_served_over_http(served: Served) -> None:
    exporter = serve_metrics("127.0.0.1:0", served.metrics)
    try:
        url = f"http://127.0.0.1:{exporter.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode()
    finally:
        exporter.shutdown()
        exporter.server_close()
    assert "capreg_index_tools" in body


async def test_a_refused_call_still_carries_its_request_id(served: Served) -> None:
    call = served.stub.ListCatalogs(
        pb.ListCatalogsRequest(), metadata=(("x-request-id", "trace-43"),)
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert ("x-request-id", "trace-43") in list(await call.trailing_metadata())
