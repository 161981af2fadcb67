"""Bridge configuration, built once by the CLI and passed down as values."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.client import RegistryTarget


@dataclass(kw_only=True, frozen=True)
class HttpListen:
    """Where streamable HTTP is served; port 0 picks a free port."""

    host: str = "127.0.0.1"
    port: int = 0
    path: str = "/mcp"


@dataclass(kw_only=True, frozen=True)
class BridgeConfig:
    registry: RegistryTarget
    # None: serve one client over stdio with `api_key`; else serve HTTP, where each client
    # sends its own key and `api_key` is never used.
    http: HttpListen | None = None
    api_key: str | None = field(default=None, repr=False)
