"""Bridge configuration, built once by the CLI and passed down as values."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from registry.client import RegistryTarget

# Sessions one HTTP bridge keeps open at once, how many of them one key may hold, and how
# long an idle one lives.
MAX_SESSIONS = 256
MAX_SESSIONS_PER_KEY = 32
SESSION_IDLE_SECONDS = 600.0


@dataclass(kw_only=True, frozen=True)
class HttpListen:
    """Where streamable HTTP is served; port 0 picks a free port."""

    host: str = "127.0.0.1"
    port: int = 0
    path: str = "/mcp"
    # TLS for the HTTP listener itself (PEM files); required beyond loopback unless the
    # operator explicitly accepts clear text (a TLS-terminating proxy in front).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_sessions: int = MAX_SESSIONS
    max_sessions_per_key: int = MAX_SESSIONS_PER_KEY
    session_idle_seconds: float = SESSION_IDLE_SECONDS


@dataclass(kw_only=True, frozen=True)
class BridgeConfig:
    registry: RegistryTarget
    # None: serve one client over stdio with `api_key`; else serve HTTP, where each client
    # sends its own key and `api_key` is never used.
    http: HttpListen | None = None
    api_key: str | None = field(default=None, repr=False)
