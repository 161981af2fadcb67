"""`capreg import-mcp --config FILE`: every server an MCP client's configuration names, each
listed over MCP and registered as the catalog its key names; `--watch` follows the file."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.protobuf.json_format import MessageToDict

from capreg.cli.commands import call, open_client, print_registration_notes
from capreg.cli.errors import CommandError
from registry.proto import registry_pb2 as pb
from registry.wire import MAX_BATCH_CATALOGS

if TYPE_CHECKING:  # the MCP SDK loads only when this command runs
    from registry.ingest.mcp_config import ConfiguredServer, McpConfig
    from registry.ingest.mcp_import import McpSource

# Servers started at once: each is a process (often `npx` or `uvx`, slow to start), so a
# few in parallel hide most of the start-up without starving a small machine.
JOBS = 4
DEFAULT_WATCH_INTERVAL = 1.0
# One RegisterCatalogs call carries at most this much catalog text (under the message cap).
BATCH_BYTES = 32 * 1024 * 1024


@dataclass(kw_only=True)
class Outcome:
    """What became of one server: its tools registered (`reply`), or `error` says why not."""

    server: ConfiguredServer
    tools: int = 0
    content: str = ""
    reply: pb.RegisterCatalogResponse | None = None
    error: str = ""


def import_config(args: argparse.Namespace, inputs: Mapping[str, str]) -> int:
    """Imports the file's servers once, or, with --watch, whenever it changes (until Ctrl-C).
    The exit status is 1 when any server failed."""
    from registry.ingest.mcp_config import McpConfigError, read_mcp_config

    path = Path(args.config)
    environ, home = dict(os.environ), str(Path.home())

    def read() -> tuple[McpConfig, list[ConfiguredServer]]:
        try:
            config = read_mcp_config(path, environ=environ, inputs=inputs, home=home)
            return config, config.select(args.only or [])
        except McpConfigError as exc:
            raise CommandError(str(exc)) from exc

    if args.watch:
        if not args.watch_interval > 0:
            raise CommandError(f"--watch-interval {args.watch_interval:g}: must be above 0")
        return watch_config(args, path, read)
    config, chosen = read()
    outcomes = import_servers(args, chosen)
    report(args, config, outcomes)
    return 1 if any(o.error for o in outcomes) else 0


def import_servers(args: argparse.Namespace, servers: Sequence[ConfiguredServer]) -> list[Outcome]:
    """Lists every server (a few at a time), then registers what was listed in one batch:
    one index rebuild for the file, and one server's failure leaves the others' import."""
    from registry.ingest.mcp_import import tools_list_content

    outcomes = [Outcome(server=s, error=s.problem) for s in servers]
    ready = [o for o in outcomes if not o.error and o.server.source is not None]
    sources = [o.server.source for o in ready if o.server.source is not None]
    for outcome, listed in zip(
        ready, asyncio.run(_list_all(sources, args.mcp_timeout)), strict=True
    ):
        if isinstance(listed, str):
            outcome.error = listed
        else:
            outcome.tools = len(listed["tools"])
            outcome.content = tools_list_content(listed)
    _register(args, [o for o in ready if not o.error])
    return outcomes


async def _list_all(sources: Sequence[McpSource], timeout: float) -> list[dict[str, Any] | str]:
    from registry.ingest.mcp_import import ImportFailed, list_source_tools

    limit = asyncio.Semaphore(JOBS)

    async def one(source: McpSource) -> dict[str, Any] | str:
        async with limit:
            try:
                return await list_source_tools(source, timeout=timeout)
            except ImportFailed as exc:
                return str(exc)

    return list(await asyncio.gather(*(one(source) for source in sources)))


def _register(args: argparse.Namespace, listed: list[Outcome]) -> None:
    batches: list[list[Outcome]] = []
    size = 0
    for outcome in listed:
        full = size + len(outcome.content) > BATCH_BYTES
        if not batches or len(batches[-1]) >= MAX_BATCH_CATALOGS or (full and batches[-1]):
            batches.append([])
            size = 0
        batches[-1].append(outcome)
        size += len(outcome.content)
    if not batches:
        return
    with open_client(args) as client:
        for batch in batches:
            requests = [
                pb.RegisterCatalogRequest(name=o.server.catalog, content=o.content, format="mcp")
                for o in batch
            ]
            try:
                reply = call(client.register_catalogs, requests)
            except CommandError as exc:  # the registry refused the call: no server got in
                for outcome in batch:
                    outcome.error = str(exc)
                continue
            for outcome, result in zip(batch, reply.results, strict=True):
                if result.HasField("registered"):
                    outcome.reply = result.registered
                else:
                    outcome.error = f"{result.failed.code}: {result.failed.message}"


def report(
    args: argparse.Namespace, config: McpConfig, outcomes: Sequence[Outcome], *, unchanged: int = 0
) -> None:
    """One line per imported server, then the tally; a failed server's reason on stderr."""
    if args.json:
        print(json.dumps(_as_json(config, outcomes), indent=2, ensure_ascii=False), flush=True)
        return
    for outcome in outcomes:
        server = outcome.server
        if server.renamed:
            print(
                f"note: server {server.key!r} is catalog '{server.catalog}' (a catalog name "
                "is letters, digits, '-' and '_')",
                file=sys.stderr,
            )
        reply = outcome.reply
        if reply is None or server.source is None:
            continue
        print(
            f"{reply.catalog}: {outcome.tools} tools from {server.source.describe()}: "
            f"{reply.added} added, {reply.updated} updated, {reply.removed} removed, "
            f"{reply.unchanged} unchanged (revision {reply.revision}, {reply.embedded} embedded)"
        )
        print_registration_notes(reply)
    failed = [o for o in outcomes if o.error]
    for outcome in failed:
        print(f"FAILED {outcome.server.key}: {outcome.error}", file=sys.stderr)
    disabled = sum(s.disabled for s in config.servers if not args.only)
    extras = [f"{unchanged} unchanged, not restarted"] if unchanged else []
    extras += [f"{disabled} disabled, skipped"] if disabled else []
    tally = f"imported {len(outcomes) - len(failed)} of {len(outcomes)} servers from {config.path}"
    tally += f" ({', '.join(extras)})" if extras else ""
    tally += f"; failed: {', '.join(o.server.key for o in failed)}" if failed else ""
    print(tally, flush=True)
    sys.stderr.flush()


def _as_json(config: McpConfig, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    servers = []
    for o in outcomes:
        entry: dict[str, Any] = {"key": o.server.key, "catalog": o.server.catalog}
        if o.reply is not None:
            entry["tools"] = o.tools
            entry["registered"] = MessageToDict(o.reply, preserving_proto_field_name=True)
        else:
            entry["error"] = o.error
        servers.append(entry)
    return {"config": str(config.path), "shape": config.shape.value, "servers": servers}


def watch_config(
    args: argparse.Namespace,
    path: Path,
    read: Callable[[], tuple[McpConfig, list[ConfiguredServer]]],
) -> int:
    """Polls the file's content; on a change, imports the servers whose entry changed and
    those that failed last time. An unchanged server is not started again. A server removed
    from the file keeps its catalog (decision 0073). Runs until interrupted."""
    imported: dict[str, McpSource] = {}  # server key -> the entry it was imported with
    seen: bytes | None = None
    first = True
    while True:
        digest = _digest(path)
        if digest != seen:
            seen = digest
            try:
                config, chosen = read()
            except CommandError as exc:
                if first:
                    raise  # a wrong path or a bad --only is a typo: say so and stop
                print(f"capreg: {exc}; what was imported stays registered", file=sys.stderr)
            else:
                _watch_round(args, config, chosen, imported)
            first = False
            # With --json, stdout holds only the rounds' JSON documents.
            print(
                f"watching {path} (every {args.watch_interval:g}s; Ctrl-C stops)",
                file=sys.stderr if args.json else sys.stdout,
                flush=True,
            )
        time.sleep(args.watch_interval)


def _watch_round(
    args: argparse.Namespace,
    config: McpConfig,
    chosen: list[ConfiguredServer],
    imported: dict[str, McpSource],
) -> None:
    keys = {s.key for s in chosen}
    for key in sorted(set(imported) - keys):
        del imported[key]
        print(
            f"note: server {key!r} left {config.path}; its catalog stays registered "
            "(capreg delete removes it)",
            file=sys.stderr,
        )
    due = [s for s in chosen if s.source is None or imported.get(s.key) != s.source]
    outcomes = import_servers(args, due)
    for outcome in outcomes:
        source = outcome.server.source
        if outcome.error or source is None:
            imported.pop(outcome.server.key, None)  # failed: tried again on the next change
        else:
            imported[outcome.server.key] = source
    report(args, config, outcomes, unchanged=len(chosen) - len(due))


def _digest(path: Path) -> bytes | None:
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        help="an MCP client's configuration (Claude Desktop, VS Code, Cursor): import every "
        "server it names, each as the catalog its key names",
    )
    parser.add_argument(
        "--only", action="append", help="with --config: import only this server (repeatable)"
    )
    parser.add_argument(
        "--input", action="append", help="with --config: ID=VALUE for a VS Code ${input:ID}"
    )
    parser.add_argument(
        "--watch", action="store_true", help="with --config: re-import when the file changes"
    )
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=DEFAULT_WATCH_INTERVAL,
        help="seconds between looks at the file (default 1.0)",
    )
