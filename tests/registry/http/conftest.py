"""Real servers on loopback: the gRPC server and the HTTP app built the way `run_server`
builds them (one authenticator, one set of lanes, metrics and admission for both)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import httpx2
import pytest
from prometheus_client import generate_latest

from registry.auth.authentication import Authenticator
from registry.auth.keys import KeyStore, add_key
from registry.config import CallerLimits, ServerConfig
from registry.core import Registry
from registry.http.app import CONSOLE, create_app
from registry.http.listener import HttpListener, bind
from registry.lanes import Lanes
from registry.limits import Admission
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.server import create_server, mark_serving
from registry.telemetry import ServiceMetrics

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub


@dataclass
class Served:
    http: httpx2.AsyncClient
    stub: AsyncStub
    metrics: ServiceMetrics
    # The HTTP listener's base URL, for clients that write HTTP by hand (raw_http.py).
    url: str
    keys: dict[str, str] = field(default_factory=dict)

    def auth(self, role: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.keys[role]}"}

    def scrape(self) -> str:
        return generate_latest(self.metrics.registry).decode()


@asynccontextmanager
async def serve_both(
    registry: Registry,
    keys_file: Path | None = None,
    *,
    limits: CallerLimits | None = None,
    console: Path = CONSOLE,
    results: Path | None = None,
    trusted_proxies: Sequence[str] = (),
    tls: tuple[Path, Path] | None = None,
) -> AsyncIterator[Served]:
    limits = limits or CallerLimits()
    config = ServerConfig(listen="127.0.0.1:0", caller_limits=limits)
    keys = KeyStore.load(keys_file) if keys_file else None
    authenticator = Authenticator(keys, reload_interval=0.0)
    lanes = Lanes(read_workers=2, write_queue=8)
    metrics = ServiceMetrics()
    admission = Admission(limits, authenticator=authenticator)
    server, port, health = create_server(config, registry, authenticator, lanes, metrics, admission)
    await server.start()
    if registry.ready:
        mark_serving(health)
    app = create_app(
        registry, authenticator, lanes, metrics, admission, console=console, results=results
    )
    cert, key = tls or (None, None)
    listener = HttpListener(
        app, bind("127.0.0.1:0"), tls_cert=cert, tls_key=key, trusted_proxies=trusted_proxies
    )
    await listener.start()
    try:
        async with (
            httpx2.AsyncClient(
                base_url=listener.url,
                timeout=30.0,
                verify=ssl.create_default_context(cafile=cert) if cert else True,
            ) as http,
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        ):
            yield Served(http, pb_grpc.CapabilityRegistryStub(channel), metrics, listener.url)
    finally:
        await listener.stop()
        await server.stop(None)
        await lanes.drain(5.0)


@pytest.fixture
async def open_api(sample_registry: Registry) -> AsyncIterator[Served]:
    """Both transports over the sample catalogs, without keys (every caller is an admin)."""
    async with serve_both(sample_registry) as served:
        yield served


@pytest.fixture
async def secured_api(sample_registry: Registry, tmp_path: Path) -> AsyncIterator[Served]:
    """Both transports with keys: an admin, and a reader of the support and hr catalogs."""
    keys_file = tmp_path / "keys.yaml"
    keys = {
        "admin": add_key(keys_file, "ops", ["registry:admin", "*"]),
        "reader": add_key(keys_file, "reader", ["support:read", "support:write", "hr:read"]),
    }
    async with serve_both(sample_registry, keys_file) as served:
        served.keys.update(keys)
        yield served
