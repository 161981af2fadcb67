"""Every committed catalog change has its `capreg.audit` record, with its request id, even
when the caller's deadline passed while the change was being made."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import grpc
import pytest

from registry.logs import REQUEST_ID, RequestIdFilter
from registry.proto import registry_pb2 as pb
from tests.registry.test_lanes import BOUNDED_WAIT, GatedEmbedder, _catalog, _held, gated

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

__all__ = ["gated"]  # the fixture, shared with the lane tests


def _records(caplog: pytest.LogCaptureFixture, event: str, catalog: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "capreg.audit"
        and getattr(r, "event", "") == event
        and getattr(r, "catalog", "") == catalog
    ]


async def _audited(caplog: pytest.LogCaptureFixture, event: str, catalog: str) -> logging.LogRecord:
    for _ in range(int(BOUNDED_WAIT * 20)):
        found = _records(caplog, event, catalog)
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no audit record of {event} {catalog}")


async def test_a_registration_committed_after_its_deadline_is_audited(
    gated: tuple[AsyncStub, GatedEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    stub, embedder = gated
    caplog.set_level(logging.INFO, logger="capreg.audit")
    caplog.handler.addFilter(RequestIdFilter())  # as the CLI's handler has
    request = pb.RegisterCatalogRequest(content=_catalog("latecomer"))
    call = stub.RegisterCatalog(
        request, timeout=BOUNDED_WAIT / 10, metadata=(("x-request-id", "late-one"),)
    )
    await _held(embedder)  # the change is being made
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    embedder.gate.set()  # the change goes on without its caller, and commits
    record = await _audited(caplog, "register", "latecomer")
    listed = await stub.ListCatalogs(pb.ListCatalogsRequest())
    assert "latecomer" in [c.name for c in listed.catalogs]
    assert getattr(record, "added", 0) == 3
    assert getattr(record, "request_id", None) == "late-one"
    assert REQUEST_ID.get() == ""
