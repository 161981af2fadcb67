"""The `capreg bridge` subcommand: reads options and environment once, then runs the bridge."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcp_bridge.config import BridgeConfig, HttpListen
from registry.client import DEFAULT_TIMEOUT_SECONDS, RegistryTarget
from registry.wire import DEFAULT_LISTEN, listen_host


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
    bridge.add_argument("--ca-file", help="PEM CA certificate: reach the registry over TLS")
    bridge.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help="deadline of each registry call, in seconds (default: %(default)s)",
    )
    bridge.set_defaults(handler=cmd_bridge)


def parse_listen(listen: str) -> HttpListen:
    try:
        host = listen_host(listen)
    except ValueError as exc:
        raise BridgeOptionError(f"--http: {exc}") from exc
    port = int(listen.rpartition(":")[2])
    if port > 65_535:
        raise BridgeOptionError(f"--http: port {port} is out of range")
    return HttpListen(host=host, port=port)


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
        http=parse_listen(args.http) if args.http else None,
        api_key=environ.get("CAPREG_API_KEY") or None,
    )


def cmd_bridge(args: argparse.Namespace) -> int:
    # Errors are printed here rather than raised as registry.cli.CommandError: under
    # `python -m registry.cli` that module is __main__, so importing it again would create
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
