"""The `capreg bridge` subcommand: reads options and environment once, then runs the bridge."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcp_bridge.config import (
    MAX_SESSIONS,
    MAX_SESSIONS_PER_KEY,
    SESSION_IDLE_SECONDS,
    BridgeConfig,
    HttpListen,
)
from registry.client import DEFAULT_TIMEOUT_SECONDS, RegistryTarget
from registry.wire import DEFAULT_LISTEN, is_loopback, listen_host


class BridgeOptionError(ValueError):
    """An option the bridge cannot start with; the message says which and why."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `capreg bridge` to the `capreg` command."""
    bridge = commands.add_parser(
        "bridge",
        help="serve the registry to MCP clients (stdio, or streamable HTTP with --http)",
        description=(
            "An MCP server with three discovery tools (search_tools, get_tool_schema, "
            "list_catalogs) answered by a capreg registry. Over stdio it sends the key in "
            "CAPREG_API_KEY; over HTTP each client's own 'Authorization: Bearer <key>'."
        ),
    )
    bridge.add_argument(
        "--registry",
        default=os.environ.get("CAPREG_SERVER", DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help="the registry to ask (default: $CAPREG_SERVER or %(default)s)",
    )
    bridge.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any)",
    )
    bridge.add_argument(
        "--http-tls-cert", help="PEM certificate chain: serve the HTTP listener over TLS"
    )
    bridge.add_argument("--http-tls-key", help="PEM private key for --http-tls-cert")
    bridge.add_argument(
        "--insecure-http",
        action="store_true",
        help="allow clear-text HTTP on a non-loopback address (a TLS proxy is in front)",
    )
    bridge.add_argument(
        "--max-sessions",
        type=int,
        default=MAX_SESSIONS,
        help="HTTP sessions open at once (default: %(default)s)",
    )
    bridge.add_argument(
        "--max-sessions-per-key",
        type=int,
        default=MAX_SESSIONS_PER_KEY,
        help="HTTP sessions one key may hold at once (default: %(default)s)",
    )
    bridge.add_argument(
        "--session-idle",
        type=float,
        default=SESSION_IDLE_SECONDS,
        metavar="SECONDS",
        help="close an HTTP session idle this long (default: %(default)s)",
    )
    bridge.add_argument("--ca-file", help="PEM CA certificate: reach the registry over TLS")
    bridge.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="deadline of each registry call, in seconds (default: %(default)s)",
    )
    bridge.set_defaults(handler=cmd_bridge)


def parse_listen(listen: str) -> tuple[str, int]:
    """HOST:PORT; no host means loopback (never every interface)."""
    try:
        host = listen_host(listen) or "127.0.0.1"
    except ValueError as exc:
        raise BridgeOptionError(f"--http: {exc}") from exc
    port = int(listen.rpartition(":")[2])
    if port > 65_535:
        raise BridgeOptionError(f"--http: port {port} is out of range")
    return host, port


def http_listen(args: argparse.Namespace) -> HttpListen:
    host, port = parse_listen(args.http)
    if bool(args.http_tls_cert) != bool(args.http_tls_key):
        raise BridgeOptionError("--http-tls-cert and --http-tls-key go together")
    tls = bool(args.http_tls_cert)
    if not (tls or args.insecure_http or is_loopback(f"[{host}]:{port}")):
        raise BridgeOptionError(
            f"--http {host}:{port} is not a loopback address: clients would send their API "
            "keys in clear text. Pass --http-tls-cert and --http-tls-key, or --insecure-http "
            "when a TLS-terminating proxy is in front"
        )
    if args.max_sessions < 1:
        raise BridgeOptionError("--max-sessions must be at least 1")
    if args.max_sessions_per_key < 1:
        raise BridgeOptionError("--max-sessions-per-key must be at least 1")
    if not args.session_idle > 0:
        raise BridgeOptionError("--session-idle must be a positive number of seconds")
    return HttpListen(
        host=host,
        port=port,
        tls_cert=Path(args.http_tls_cert) if tls else None,
        tls_key=Path(args.http_tls_key) if tls else None,
        max_sessions=args.max_sessions,
        max_sessions_per_key=args.max_sessions_per_key,
        session_idle_seconds=args.session_idle,
    )


def bridge_config(args: argparse.Namespace, environ: Mapping[str, str]) -> BridgeConfig:
    """The bridge's whole configuration, from parsed options and the environment."""
    if not args.timeout > 0:
        raise BridgeOptionError("--timeout must be a positive number of seconds")
    roots = None
    if args.ca_file:
        try:
            roots = Path(args.ca_file).read_bytes()
        except OSError as exc:
            raise BridgeOptionError(
                f"cannot read --ca-file {args.ca_file}: {exc.strerror}"
            ) from exc
    try:
        target = RegistryTarget(
            address=args.registry, root_certificates=roots, timeout=args.timeout
        )
    except ValueError as exc:
        raise BridgeOptionError(f"--registry: {exc}") from exc
    return BridgeConfig(
        registry=target,
        http=http_listen(args) if args.http else None,
        api_key=environ.get("CAPREG_API_KEY") or None,
    )


def cmd_bridge(args: argparse.Namespace) -> int:
    # Errors are printed here rather than raised as capreg.cli.CommandError: under
    # `python -m capreg.cli` that module is __main__, so importing it again would create
    # a second CommandError class that main() does not catch.
    try:
        config = bridge_config(args, os.environ)
    except BridgeOptionError as exc:
        print(f"capreg: {exc}", file=sys.stderr)
        return 1
    from mcp_bridge.transport import CannotListen, run_bridge  # the MCP SDK loads only here

    try:
        asyncio.run(run_bridge(config))
    except CannotListen as exc:
        print(f"capreg: {exc}", file=sys.stderr)
        return 1
    return 0
