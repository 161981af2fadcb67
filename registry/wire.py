"""Rules both ends of the wire share: request limits, the bearer header, loopback addresses.

A leaf with no heavy imports: the server, the one client and the MCP bridge all read it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

DEFAULT_LISTEN = "127.0.0.1:50051"
MAX_MESSAGE_BYTES = 40 * 1024 * 1024
# Search: a request that names no limit gets the registry's confident set, at most this many.
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
MAX_QUERY_CHARS = 32_000
# GetSchema: ids per call.
MAX_IDS = 50
# Catalogs in one RegisterCatalogs call (all of them within MAX_MESSAGE_BYTES).
MAX_BATCH_CATALOGS = 1_000
# Every name a request carries is bounded before any work is done with it: a catalog name is
# at most 64 characters and a tool name 128, so an id ('<catalog>/<tool>') at most 193.
MAX_CATALOG_NAME_CHARS = 64
MAX_TOOL_ID_CHARS = MAX_CATALOG_NAME_CHARS + 1 + 128
MAX_CATALOG_FILTERS = 50
MAX_FORMAT_CHARS = 16
# A workflow id is '<catalog>/<workflow>'; workflow and state names are at most 64 characters.
MAX_STATE_CHARS = 64
MAX_WORKFLOW_ID_CHARS = MAX_CATALOG_NAME_CHARS + 1 + MAX_STATE_CHARS
# The arguments a reported workflow move was called with (JSON text).
MAX_ARGUMENTS_CHARS = 64 * 1024
# A status message is at most this long: gRPC carries it in a header, and an error must never
# cost more than the request that caused it.
MAX_ERROR_CHARS = 2_000

Metadata = tuple[tuple[str, str | bytes], ...]


def bearer_key(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The key of an `authorization: Bearer <key>` header, if there is one."""
    for name, value in metadata:
        if name.lower() != "authorization":
            continue
        text = value.decode() if isinstance(value, bytes) else value
        scheme, _, key = text.strip().partition(" ")
        if scheme.lower() == "bearer" and key.strip():
            return key.strip()
    return None


def bearer_metadata(key: str | None) -> Metadata:
    """gRPC call metadata carrying `key` (nothing without one): the one place it is built."""
    return (("authorization", f"Bearer {key}"),) if key else ()


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
