"""The client subcommands (register, search, schema, catalogs, delete) over `registry.client`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import grpc
from google.protobuf.json_format import MessageToDict

from capreg.cli.errors import CommandError
from indexer.formats import FORMATS, CatalogError
from registry.client import RegistryCallFailed, RegistryClient, RegistryTarget
from registry.ingest.catalog_dir import read_catalog_file, request_name
from registry.proto import registry_pb2 as pb
from registry.wire import DEFAULT_LISTEN, MAX_BATCH_CATALOGS

P = ParamSpec("P")
R = TypeVar("R")

# What a key-less call to a registry with keys is told: where a key goes, and where `make
# serve` left the development keys (the Makefile's DATA folder, .capreg).
NO_KEY = (
    "UNAUTHENTICATED: this registry needs an API key: pass --api-key KEY or set "
    "CAPREG_API_KEY. `make serve` wrote development keys to .capreg/dev-keys.env in the "
    "checkout it ran in (`source .capreg/dev-keys.env` sets CAPREG_API_KEY); "
    "`capreg keys add NAME --scopes SCOPES --keys FILE` adds others"
)


def client_options() -> argparse.ArgumentParser:
    """--server, --api-key, --ca-file and --timeout: how every client command connects."""
    client = argparse.ArgumentParser(add_help=False)
    client.add_argument(
        "--server",
        default=os.environ.get("CAPREG_SERVER", DEFAULT_LISTEN),
        help="HOST:PORT, or several IP:PORT separated by commas",
    )
    client.add_argument("--timeout", type=float, default=120.0, help="seconds")
    client.add_argument("--api-key", default=os.environ.get("CAPREG_API_KEY"), help="API key")
    client.add_argument("--ca-file", help="PEM CA certificate: connect with TLS")
    return client


def registry_target(args: argparse.Namespace) -> RegistryTarget:
    """The registry the options name; a bad option is one line naming it."""
    roots = None
    if args.ca_file:
        try:
            roots = Path(args.ca_file).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read --ca-file {args.ca_file}: {exc.strerror}") from exc
    try:
        return RegistryTarget(
            address=args.server, root_certificates=roots, timeout=args.timeout, api_key=args.api_key
        )
    except ValueError as exc:
        raise CommandError(f"--server: {exc}") from exc


@contextmanager
def open_client(args: argparse.Namespace) -> Iterator[RegistryClient]:
    """A client of the registry the options name. A refusal for want of a key, when none was
    given, says where a key goes instead of the server's header-level wording."""
    with RegistryClient(registry_target(args)) as client:
        try:
            yield client
        except CommandError as exc:
            refused = exc.__cause__
            if (
                not args.api_key
                and isinstance(refused, RegistryCallFailed)
                and refused.code is grpc.StatusCode.UNAUTHENTICATED
            ):
                raise CommandError(NO_KEY) from refused
            raise


def call(method: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """One registry call; a failure becomes `CODE: details`. The details keep their own line
    breaks: a bad catalog's excerpt and the caret under its column are lines of their own."""
    try:
        return method(*args, **kwargs)
    except RegistryCallFailed as exc:
        details = "\n".join(line.rstrip() for line in exc.details.strip().splitlines())
        raise CommandError(f"{exc.code.name}: {details}") from exc


def print_json(message: Any) -> None:
    print(
        json.dumps(
            MessageToDict(message, preserving_proto_field_name=True), indent=2, ensure_ascii=False
        )
    )


# One RegisterCatalogs call carries at most this much catalog text (under the message cap).
BATCH_BYTES = 32 * 1024 * 1024


def cmd_register(args: argparse.Namespace) -> int:
    """One file: RegisterCatalog. Several: RegisterCatalogs, in batches, one index rebuild
    per batch; every file is reported, and the exit status is 1 when any failed."""
    if len(args.files) > 1 and args.name:
        raise CommandError("--name names one catalog: give it with a single file")
    if len(args.files) == 1:
        path = Path(args.files[0])
        content = _read(path)
        name = args.name or request_name(path, content, args.format)
        with open_client(args) as client:
            try:
                reply = call(client.register_catalog, content, name=name, fmt=args.format)
            except CommandError as exc:
                # The registry saw text, not a file: a refused content names the file here.
                cause = exc.__cause__
                if getattr(cause, "code", None) is not grpc.StatusCode.INVALID_ARGUMENT:
                    raise
                raise CommandError(f"{path}: {exc}") from cause
        _print_registered(args, reply)
        return 0
    failed = 0
    batch: list[tuple[Path, pb.RegisterCatalogRequest]] = []
    size = 0
    with open_client(args) as client:
        for file in args.files:
            path = Path(file)
            try:
                content = _read(path)
            except CommandError as exc:
                print(f"FAILED {exc}", file=sys.stderr)
                failed += 1
                continue
            if batch and (len(batch) >= MAX_BATCH_CATALOGS or size + len(content) > BATCH_BYTES):
                failed += _send(args, client, batch)
                batch, size = [], 0
            name = request_name(path, content, args.format)
            batch.append(
                (path, pb.RegisterCatalogRequest(name=name, content=content, format=args.format))
            )
            size += len(content)
        if batch:
            failed += _send(args, client, batch)
    return 1 if failed else 0


def _read(path: Path) -> str:
    try:
        return read_catalog_file(path)
    except CatalogError as exc:
        raise CommandError(f"cannot register {path}: {'; '.join(exc.problems)}") from exc


def _send(
    args: argparse.Namespace,
    client: RegistryClient,
    batch: list[tuple[Path, pb.RegisterCatalogRequest]],
) -> int:
    """Registers one batch; prints each outcome and returns how many failed."""
    reply = call(client.register_catalogs, [request for _, request in batch])
    failed = 0
    for (path, _), result in zip(batch, reply.results, strict=True):
        if result.HasField("registered"):
            _print_registered(args, result.registered)
        else:
            failed += 1
            print(f"FAILED {path}: {result.failed.code}: {result.failed.message}", file=sys.stderr)
    return failed


def _print_registered(args: argparse.Namespace, reply: pb.RegisterCatalogResponse) -> None:
    if args.json:
        print_json(reply)
        return
    print(
        f"{reply.catalog}: {reply.added} added, {reply.updated} updated, "
        f"{reply.removed} removed, {reply.unchanged} unchanged "
        f"(revision {reply.revision}, {reply.embedded} embedded, "
        f"index generation {reply.index_generation})"
    )
    print_registration_notes(reply)


def print_registration_notes(reply: pb.RegisterCatalogResponse) -> None:
    """The scope the registry assigned, and lint's warnings, on stderr."""
    if reply.assigned_scope:
        print(
            f"note: {reply.catalog} declares no scopes; the registry gave it "
            f"'{reply.assigned_scope}' (grant that scope to the keys that should see it)",
            file=sys.stderr,
        )
    for warning in reply.warnings:
        print(f"warning: {warning}", file=sys.stderr)


def cmd_search(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with open_client(args) as client:
        reply = call(
            client.search,
            args.query,
            limit=args.limit,
            catalogs=args.catalog or [],
            workflow=args.workflow,
            state=args.state,
        )
    elapsed = (time.perf_counter() - started) * 1000
    if args.json:
        print_json(reply)
        return 0
    if not reply.hits:
        print("no tools match")
    for rank, hit in enumerate(reply.hits, 1):
        print(f"{rank}. {hit.id}  ({hit.score:.3f})\n   {hit.summary}")
    if reply.weak_match:
        print(f"note: no strong match ({WEAK_HINTS.get(reply.weak_reason, WEAK_HINT)})")
    cached = ", cached" if reply.cached else ""
    print(f"[{elapsed:.1f} ms, index generation {reply.index_generation}{cached}]")
    if reply.hits:
        print(f"next: capreg schema {' '.join(h.id for h in reply.hits[:3])}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        reply = call(client.get_schema, list(args.ids))
    if args.json:
        print_json(reply)
        return 0
    for tool in reply.tools:
        print(f"{tool.id}  (function name: {tool.function_name})")
        version = f" {tool.catalog_version}" if tool.catalog_version else ""
        print(f"  catalog: {tool.catalog}{version}, revision {tool.catalog_revision}")
        print(f"  description: {tool.description}")
        print(f"  input schema: {json.dumps(json.loads(tool.input_schema), indent=2)}")
        if tool.output_schema:
            print(f"  output schema: {json.dumps(json.loads(tool.output_schema), indent=2)}")
        if tool.annotations != "{}":
            print(f"  annotations: {tool.annotations}")
        for link in tool.links:
            arguments = json.dumps(dict(sorted(link.arguments.items()))) if link.arguments else ""
            derived = " (derived)" if link.derived else ""
            print(f"  link {link.rel}{derived}: {link.target_id} {arguments}".rstrip())
    return 0


def cmd_catalogs(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        reply = call(client.list_catalogs)
    if args.json:
        print_json(reply)
        return 0
    if not reply.catalogs:
        print("no catalogs")
    for c in reply.catalogs:
        version = f" {c.version}" if c.version else ""
        print(f"{c.name}{version}  {c.tool_count} tools  r{c.revision}  {c.title or c.description}")
        for flow in c.workflows:
            print(f"  workflow {flow.id} (starts in {flow.initial_state})  {flow.title}".rstrip())
    if any(c.workflows for c in reply.catalogs):
        print("next: capreg affordances <workflow id>")
    return 0


def cmd_affordances(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        reply = call(
            client.get_affordances,
            args.workflow,
            args.state,
            tool=args.tool,
            arguments=args.arguments,
            with_schemas=args.schemas,
        )
    if args.json:
        print_json(reply)
        return 0
    terminal = " (the workflow may end here)" if reply.terminal else ""
    print(f"{reply.workflow}: state {reply.state}{terminal}")
    if reply.description:
        print(f"  {reply.description}")
    if not reply.affordances:
        print("no move is open to this key here")
    for move in reply.affordances:
        when = f" when {move.when}" if move.when else ""
        print(f"- {move.tool_id}{when} -> {move.next_state}\n    {move.summary}")
    if reply.affordances:
        first = reply.affordances[0]
        print(
            f"next: capreg affordances {reply.workflow} --state {reply.state} "
            f"--tool {first.tool_id}  (after calling it)"
        )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        reply = call(client.delete_catalog, args.name)
    if args.json:
        print_json(reply)
    else:
        print(f"deleted {reply.catalog}: {reply.removed} tools removed")
    return 0


WEAK_HINT = "rephrase the need or check the catalogs"
WEAK_HINTS = {
    pb.WEAK_REASON_NO_CLOSE_TOOL: "no tool is close; nothing here may do this",
    pb.WEAK_REASON_NEAREST_TOOLS_ALIKE: "the nearest tools score alike; add what tells them apart",
    pb.WEAK_REASON_NOTHING_ELIGIBLE: "no tool in the catalogs or state asked for is visible",
}


def client_parser(
    commands: Any, name: str, handler: Callable[[argparse.Namespace], int], help_: str
) -> Any:
    """A subcommand that talks to a registry: the connection options and --json."""
    client = client_options()
    client.add_argument("--json", action="store_true", help="print the reply as JSON")
    sub = commands.add_parser(name, parents=[client], help=help_)
    sub.set_defaults(handler=handler)
    return sub


def add_parser(commands: Any) -> None:
    """Every subcommand that talks to a running registry."""

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_: str) -> Any:
        return client_parser(commands, name, handler, help_)

    register = add("register", cmd_register, "register or replace catalogs from files")
    register.add_argument("files", nargs="+")
    register.add_argument("--name", default="", help="catalog name (default: from the file)")
    register.add_argument("--format", default="auto", choices=["auto", *FORMATS])
    search = add("search", cmd_search, "search tools by need")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=0)
    search.add_argument("--catalog", action="append", help="restrict to a catalog (repeatable)")
    search.add_argument("--workflow", default="", help="rank only the moves legal in --state")
    search.add_argument("--state", default="", help="the workflow's state (default: initial)")
    schema = add("schema", cmd_schema, "full schemas for tool ids")
    schema.add_argument("ids", nargs="+")
    add("catalogs", cmd_catalogs, "list catalogs")
    affordances = add("affordances", cmd_affordances, "the moves legal in a workflow state")
    affordances.add_argument("workflow", help="'<catalog>/<workflow>' (see capreg catalogs)")
    affordances.add_argument("--state", default="", help="default: the workflow's initial state")
    affordances.add_argument(
        "--tool", default="", help="the move just made in --state: answer for where it leads"
    )
    affordances.add_argument("--arguments", default="", help="--tool's arguments, as JSON")
    affordances.add_argument("--schemas", action="store_true", help="full schemas too")
    delete = add("delete", cmd_delete, "delete a catalog")
    delete.add_argument("name")
