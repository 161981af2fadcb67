"""Server configuration, built once at the edge (the CLI) and passed down as values."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DB = Path("capreg.db")
MAX_MESSAGE_BYTES = 40 * 1024 * 1024
# From this many tools on, vector search is approximate (IVF) and the hybrid blends
# candidates only; below it every tool is scored. bench.performance measures both sides.
APPROXIMATE_FROM = 5_000


@dataclass(frozen=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    db: Path = DEFAULT_DB
    catalogs_dir: Path | None = None
    # Keep catalogs_dir registered while serving: files added, changed or removed.
    watch: bool = False
    watch_interval: float = 1.0
    model_path: Path | None = None
    # "onnx" (ONNX Runtime) or "torch" (sentence-transformers); same vectors either way.
    embedder: str = "onnx"
    # Below this cosine score the best hit is flagged as a weak match.
    weak_score: float = 0.3
    approximate_from: int = APPROXIMATE_FROM
    query_cache_size: int = 4_096
    result_cache_size: int = 2_048
    result_cache_ttl: float = 300.0
    keys_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    grace_seconds: float = 5.0
    progress: bool = False


def listen_host(listen: str) -> str:
    """The host part of `host:port` or `[v6]:port`."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"listen address '{listen}' must be HOST:PORT")
    return host.strip("[]")


def is_loopback(listen: str) -> bool:
    host = listen_host(listen)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
