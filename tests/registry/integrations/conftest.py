"""Real registry servers on loopback for the adapters: open, and enforcing scoped keys."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from registry.auth.keys import KeyStore, add_key
from registry.core import Registry
from tests.conftest import start_server


@dataclass(frozen=True, kw_only=True)
class ScopedRegistry:
    address: str
    read_only_key: str  # support:read, crm:read: the read tools of two catalogs
    support_key: str  # support:read, support:write
    nothing_key: str  # a scope no sample catalog grants: sees no tool


@pytest.fixture
async def registry_address(sample_registry: Registry) -> AsyncIterator[str]:
    """A real registry over the sample catalogs, without keys (every caller sees all)."""
    server, address = await start_server(sample_registry)
    yield address
    await server.stop(None)


@pytest.fixture
async def scoped_registry(
    sample_registry: Registry, tmp_path: Path
) -> AsyncIterator[ScopedRegistry]:
    keys_file = tmp_path / "keys.yaml"
    read_only = add_key(keys_file, "reader", ["support:read", "crm:read"])
    support = add_key(keys_file, "support-agent", ["support:read", "support:write"])
    nothing = add_key(keys_file, "outsider", ["vault:read"])
    server, address = await start_server(sample_registry, keys=KeyStore.load(keys_file))
    yield ScopedRegistry(
        address=address, read_only_key=read_only, support_key=support, nothing_key=nothing
    )
    await server.stop(None)
