"""`capreg import-mcp`: list a running MCP server's tools and register them as a catalog, or
(`--config`) every server an MCP client's configuration names."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any

from capreg.cli.commands import (
    call,
    client_parser,
    open_client,
    print_json,
    print_registration_notes,
)
from capreg.cli.errors import CommandError
from capreg.cli.mcp_config_import import add_config_options, import_config

HELP = "register a live MCP server's tools as a catalog"
CONFIG_ONLY = ("only", "input", "watch")


def cmd_import_mcp(args: argparse.Namespace) -> int:
    # The MCP SDK takes half a second to import: only this command pays for it, not every
    # `capreg serve` start.
    from registry.ingest.mcp_import import ImportFailed, McpSource, list_tools, tools_list_content

    # argparse cannot take options between NAME and "--": what precedes "--" is parsed again
    # as options, and only what follows is the server's command (argparse itself drops a
    # "--" that directly follows NAME).
    rest = list(args.server_command)
    cut = 0
    if rest and rest[0].startswith("-"):
        cut = rest.index("--") if "--" in rest else len(rest)
    command = rest[cut + 1 :] if cut < len(rest) and rest[cut] == "--" else rest[cut:]
    if cut:
        words = [*rest[:cut], *([args.name] if args.name else [])]
        args = args.import_parser.parse_args(words, namespace=args)
    if args.config:
        if args.name or command or args.http:
            raise CommandError(
                "--config imports the servers its file names: give no NAME, "
                "command or --http with it"
            )
        return import_config(args, _pairs(args.input, "=", "--input"))
    given = [f"--{option}" for option in CONFIG_ONLY if getattr(args, option)]
    if given:
        raise CommandError(f"{', '.join(given)} go with --config FILE")
    if not args.name:
        raise CommandError("import-mcp needs a catalog NAME (or --config FILE)")
    if bool(args.http) == bool(command):
        raise CommandError("import-mcp needs either the server's command after '--' or --http URL")
    source = McpSource(
        command=tuple(command),
        url=args.http or "",
        env=_pairs(args.env, "=", "--env"),
        headers=_pairs(args.header, ":", "--header"),
    )
    try:
        document = asyncio.run(list_tools(source.target(), timeout=args.mcp_timeout))
    except ImportFailed as exc:
        raise CommandError(f"import-mcp {source.describe()}: {exc}") from exc
    content = tools_list_content(document)
    with open_client(args) as client:
        reply = call(client.register_catalog, content, name=args.name, fmt="mcp")
    if args.json:
        print_json(reply)
    else:
        print(
            f"{reply.catalog}: {len(document['tools'])} tools from {source.describe()}: "
            f"{reply.added} added, {reply.updated} updated, {reply.removed} removed, "
            f"{reply.unchanged} unchanged (revision {reply.revision}, "
            f"{reply.embedded} embedded)"
        )
        print_registration_notes(reply)
    return 0


def _pairs(items: Sequence[str] | None, separator: str, option: str) -> dict[str, str]:
    pairs = {}
    for item in items or []:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise CommandError(f"{option} takes NAME{separator}VALUE (got {item!r})")
        pairs[key.strip()] = value.strip()
    return pairs


def add_parser(commands: Any) -> None:
    mcp = client_parser(commands, "import-mcp", cmd_import_mcp, HELP)
    mcp.add_argument("name", nargs="?", help="catalog name (not with --config)")
    mcp.add_argument(
        "server_command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...: the MCP server"
    )
    mcp.add_argument("--http", help="streamable HTTP endpoint URL instead of a command")
    mcp.add_argument("--env", action="append", help="NAME=VALUE for the server (repeatable)")
    mcp.add_argument("--header", action="append", help="NAME: VALUE for --http (repeatable)")
    mcp.add_argument("--mcp-timeout", type=float, default=60.0, help="seconds for the server")
    add_config_options(mcp)
    mcp.set_defaults(import_parser=mcp)
