"""The `capreg` command: serve the registry, and talk to one from the shell."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict

from indexer.formats import FORMATS
from registry.config import DEFAULT_DB, DEFAULT_LISTEN, ServerConfig, is_loopback
from registry.evaluate import EvalError, add_embedder_option
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc

logger = logging.getLogger("capreg")


class CommandError(Exception):
    """A failure to report as one line and a non-zero exit."""


# -- serve -------------------------------------------------------------------------------


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of tools >= 1")
    return number


def serve_config(args: argparse.Namespace) -> ServerConfig:
    config = ServerConfig(
        listen=args.listen,
        db=Path(args.db),
        catalogs_dir=Path(args.catalogs) if args.catalogs else None,
        model_path=Path(args.model) if args.model else None,
        embedder=args.embedder,
        approximate_from=args.approximate_from,
        tls_cert=Path(args.tls_cert) if args.tls_cert else None,
        tls_key=Path(args.tls_key) if args.tls_key else None,
        keys_file=Path(args.keys) if args.keys else None,
        result_cache_size=args.cache_size,
        result_cache_ttl=args.cache_ttl,
        progress=sys.stderr.isatty(),
        watch=args.watch,
        watch_interval=args.watch_interval,
    )
    if bool(config.tls_cert) != bool(config.tls_key):
        raise CommandError("--tls-cert and --tls-key go together")
    try:
        loopback = is_loopback(config.listen)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    if not loopback and config.keys_file is None:
        raise CommandError(
            f"refusing to listen on non-loopback address {config.listen} without credentials "
            "configured: pass --keys FILE (see `capreg keys add`) or use 127.0.0.1:PORT"
        )
    if config.catalogs_dir and not config.catalogs_dir.is_dir():
        raise CommandError(f"--catalogs {config.catalogs_dir} is not a folder")
    if config.watch and not config.catalogs_dir:
        raise CommandError("--watch needs --catalogs DIR (the folder to watch)")
    return config


async def run_server(config: ServerConfig) -> None:
    from indexer.embedding import load_embedder
    from indexer.retrieval.vector_index import one_thread_per_search
    from registry.auth import Authenticator
    from registry.catalog_dir import sync_folder
    from registry.engine import Registry
    from registry.keys import KeyFileError, KeyStore
    from registry.server import create_server, mark_serving
    from registry.store import Store
    from registry.watch import FolderWatcher

    started = time.perf_counter()
    try:
        keys = KeyStore.load(config.keys_file) if config.keys_file else None
    except (KeyFileError, OSError) as exc:
        raise CommandError(f"cannot use keys file: {exc}") from exc
    store = Store(config.db)
    one_thread_per_search()
    embedder = load_embedder(config.model_path, config.embedder)
    registry = Registry(
        store,
        embedder,
        weak_score=config.weak_score,
        query_cache_size=config.query_cache_size,
        approximate_from=config.approximate_from,
        result_cache_size=config.result_cache_size,
        result_cache_ttl=config.result_cache_ttl,
        progress=config.progress,
    )
    server, port, health = create_server(config, registry, Authenticator(keys))
    if port == 0:
        raise CommandError(f"cannot listen on {config.listen}")
    await server.start()
    if keys is None:
        logger.warning(
            "NO KEYS FILE: every caller is an administrator who sees every tool. "
            "Listening on loopback only; pass --keys FILE to enforce API keys and scopes."
        )
    else:
        logger.info("API keys and scopes enforced from %s", keys.path)
    # The server answers (UNAVAILABLE, health NOT_SERVING) while the index loads.
    await asyncio.to_thread(registry.load)
    watcher = None
    if config.watch and config.catalogs_dir:
        watcher = FolderWatcher(registry, config.catalogs_dir)
        scan = await asyncio.to_thread(watcher.scan_once)
        logger.info(
            "catalogs in %s: %d registered (%d tools embedded), %d failed; watching for changes",
            config.catalogs_dir, len(scan.registered), scan.embedded, len(scan.failed),
        )  # fmt: skip
    elif config.catalogs_dir:
        report = await asyncio.to_thread(sync_folder, registry, config.catalogs_dir)
        embedded = sum(r.embedded for r in report.registered)
        logger.info(
            "catalogs in %s: %d registered (%d tools embedded), %d failed",
            config.catalogs_dir,
            len(report.registered),
            embedded,
            len(report.failed),
        )
    mark_serving(health)
    logger.info(
        "capreg serving %d tools on %s (ready in %.1fs, db %s)",
        len(registry.index),
        config.listen.rsplit(":", 1)[0] + f":{port}",
        time.perf_counter() - started,
        config.db,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    watching = asyncio.create_task(watcher.run(stop, config.watch_interval)) if watcher else None
    await stop.wait()
    logger.info("stopping")
    if watching is not None:
        await watching  # returns at once: it waits on the same stop event
    await server.stop(config.grace_seconds)
    store.close()


def cmd_serve(args: argparse.Namespace) -> int:
    config = serve_config(args)
    asyncio.run(run_server(config))
    return 0


# -- client commands ----------------------------------------------------------------------


def _stub(args: argparse.Namespace) -> tuple[pb_grpc.CapabilityRegistryStub, grpc.Channel]:
    options = [("grpc.max_send_message_length", 40 * 1024 * 1024)]
    if args.ca_file:
        try:
            root = Path(args.ca_file).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read --ca-file {args.ca_file}: {exc.strerror}") from exc
        credentials = grpc.ssl_channel_credentials(root_certificates=root)
        channel = grpc.secure_channel(args.server, credentials, options=options)
    else:
        channel = grpc.insecure_channel(args.server, options=options)
    return pb_grpc.CapabilityRegistryStub(channel), channel


def _call(args: argparse.Namespace, method: str, request: Any) -> Any:
    stub, channel = _stub(args)
    metadata = [("authorization", f"Bearer {args.api_key}")] if args.api_key else None
    try:
        return getattr(stub, method)(request, timeout=args.timeout, metadata=metadata)
    except grpc.RpcError as exc:
        code = exc.code()
        detail = exc.details()
        if code is grpc.StatusCode.UNAVAILABLE and "connect" in (detail or "").lower():
            detail = f"no registry at {args.server} ({detail})"
        raise CommandError(f"{code.name}: {detail}") from exc
    finally:
        channel.close()


def _print_json(message: Any) -> None:
    print(
        json.dumps(
            MessageToDict(message, preserving_proto_field_name=True), indent=2, ensure_ascii=False
        )
    )


def cmd_register(args: argparse.Namespace) -> int:
    from registry.catalog_dir import request_name

    for file in args.files:
        path = Path(file)
        try:
            content = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        name = args.name or request_name(path, content, args.format)
        reply = _call(
            args,
            "RegisterCatalog",
            pb.RegisterCatalogRequest(name=name, content=content, format=args.format),
        )
        if args.json:
            _print_json(reply)
            continue
        print(
            f"{reply.catalog}: {reply.added} added, {reply.updated} updated, "
            f"{reply.removed} removed, {reply.unchanged} unchanged "
            f"(revision {reply.revision}, {reply.embedded} embedded, "
            f"index generation {reply.index_generation})"
        )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    reply = _call(
        args,
        "Search",
        pb.SearchRequest(query=args.query, limit=args.limit, catalogs=args.catalog or []),
    )
    elapsed = (time.perf_counter() - started) * 1000
    if args.json:
        _print_json(reply)
        return 0
    if not reply.hits:
        print("no tools match")
    for rank, hit in enumerate(reply.hits, 1):
        print(f"{rank}. {hit.id}  ({hit.score:.3f})\n   {hit.summary}")
    if reply.weak_match:
        print("note: no strong match; rephrase the need or check the catalogs")
    cached = ", cached" if reply.cached else ""
    print(f"[{elapsed:.1f} ms, index generation {reply.index_generation}{cached}]")
    if reply.hits:
        print(f"next: capreg schema {' '.join(h.id for h in reply.hits[:3])}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    reply = _call(args, "GetSchema", pb.GetSchemaRequest(ids=args.ids))
    if args.json:
        _print_json(reply)
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
    return 0


def cmd_catalogs(args: argparse.Namespace) -> int:
    reply = _call(args, "ListCatalogs", pb.ListCatalogsRequest())
    if args.json:
        _print_json(reply)
        return 0
    if not reply.catalogs:
        print("no catalogs")
    for c in reply.catalogs:
        version = f" {c.version}" if c.version else ""
        print(f"{c.name}{version}  {c.tool_count} tools  r{c.revision}  {c.title or c.description}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    reply = _call(args, "DeleteCatalog", pb.DeleteCatalogRequest(name=args.name))
    if args.json:
        _print_json(reply)
    else:
        print(f"deleted {reply.catalog}: {reply.removed} tools removed")
    return 0


def cmd_import_mcp(args: argparse.Namespace) -> int:
    from registry.mcp_import import ImportFailed, McpSource, list_tools, tools_list_content

    # argparse cannot take options between NAME and "--": what precedes "--" is parsed again
    # as options, and only what follows is the server's command (argparse itself drops a
    # "--" that directly follows NAME).
    rest = list(args.server_command)
    cut = 0
    if rest and rest[0].startswith("-"):
        cut = rest.index("--") if "--" in rest else len(rest)
    command = rest[cut + 1 :] if cut < len(rest) and rest[cut] == "--" else rest[cut:]
    if cut:
        args = args.import_parser.parse_args([*rest[:cut], args.name], namespace=args)
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
    request = pb.RegisterCatalogRequest(name=args.name, content=content, format="mcp")
    reply = _call(args, "RegisterCatalog", request)
    if args.json:
        _print_json(reply)
    else:
        print(
            f"{reply.catalog}: {len(document['tools'])} tools from {source.describe()}: "
            f"{reply.added} added, {reply.updated} updated, {reply.removed} removed, "
            f"{reply.unchanged} unchanged (revision {reply.revision}, "
            f"{reply.embedded} embedded)"
        )
    return 0


def _pairs(items: Sequence[str] | None, separator: str, option: str) -> dict[str, str]:
    pairs = {}
    for item in items or []:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise CommandError(f"{option} takes NAME{separator}VALUE (got {item!r})")
        pairs[key.strip()] = value.strip()
    return pairs


def cmd_lint(args: argparse.Namespace) -> int:
    from indexer.formats.lint import lint_catalog
    from registry.catalog_dir import request_name

    errors = warnings = 0
    for file in args.files:
        path = Path(file)
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: error: cannot read the file: {exc}")
            errors += 1
            continue
        name = args.name or request_name(path, content, args.format)
        for finding in lint_catalog(content, name=name, fmt=args.format):
            print(f"{path}: {finding}")
            errors += finding.severity == "error"
            warnings += finding.severity == "warning"
    print(f"{len(args.files)} files: {errors} errors, {warnings} warnings", file=sys.stderr)
    return 1 if errors or (args.strict and warnings) else 0


def cmd_keys_add(args: argparse.Namespace) -> int:
    from registry.keys import KeyFileError, add_key

    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()] if args.scopes else None
    try:
        key = add_key(args.keys, args.name, scopes)
    except (KeyFileError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    print(key)
    print(
        f"(new key for '{args.name}' in {args.keys}; it is shown only this once)", file=sys.stderr
    )
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    from registry.keys import KeyFileError, list_principals

    try:
        principals = list_principals(args.keys)
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    for p in principals:
        keys = ", ".join(f"{k.id} ({k.created})" for k in p.keys) or "no keys"
        print(f"{p.name}  scopes: {','.join(p.scopes) or '-'}  keys: {keys}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from registry.keys import KeyFileError, revoke

    try:
        done = revoke(args.keys, args.target)
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    what = "principal" if done.kind == "principal" else "key"
    print(f"revoked {what} {args.target} of '{done.principal}' ({len(done.key_ids)} keys)")
    return 0


# -- parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="capreg", description="Semantic capability registry for LLM agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the registry gRPC server")
    serve.add_argument("--db", default=os.environ.get("CAPREG_DB", str(DEFAULT_DB)))
    serve.add_argument("--listen", default=os.environ.get("CAPREG_LISTEN", DEFAULT_LISTEN))
    serve.add_argument("--catalogs", help="register every catalog file in this folder at start")
    serve.add_argument("--model", default=os.environ.get("CAPREG_MODEL"), help="model folder")
    serve.add_argument(
        "--approximate-from",
        type=_at_least_one,
        default=ServerConfig.approximate_from,
        metavar="TOOLS",
        help="use the approximate (IVF) vector index from this many tools on "
        f"(default {ServerConfig.approximate_from})",
    )
    add_embedder_option(serve)
    serve.add_argument("--tls-cert", help="PEM certificate chain: serve TLS")
    serve.add_argument("--tls-key", help="PEM private key for --tls-cert")
    serve.add_argument(
        "--keys", default=os.environ.get("CAPREG_KEYS"), help="keys file: enforce API keys"
    )
    serve.add_argument("--cache-size", type=int, default=2_048, help="result cache entries")
    serve.add_argument("--cache-ttl", type=float, default=300.0, help="result cache seconds")
    serve.add_argument(
        "--watch", action="store_true", help="register, update and delete as --catalogs changes"
    )
    serve.add_argument("--watch-interval", type=float, default=1.0, help="seconds between scans")
    serve.set_defaults(handler=cmd_serve)

    keys = commands.add_parser("keys", help="manage API keys and their scopes")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    keys_file = argparse.ArgumentParser(add_help=False)
    keys_file.add_argument("--keys", default=os.environ.get("CAPREG_KEYS", "capreg-keys.yaml"))
    keys_add = key_commands.add_parser("add", parents=[keys_file], help="create a key")
    keys_add.add_argument("name")
    keys_add.add_argument("--scopes", help="comma-separated granted scopes, e.g. hr:*,crm:read")
    keys_add.set_defaults(handler=cmd_keys_add)
    keys_list = key_commands.add_parser("list", parents=[keys_file], help="list principals")
    keys_list.set_defaults(handler=cmd_keys_list)
    keys_revoke = key_commands.add_parser(
        "revoke", parents=[keys_file], help="revoke a key id or a whole principal"
    )
    keys_revoke.add_argument("target", help="key id or principal name")
    keys_revoke.set_defaults(handler=cmd_keys_revoke)

    client = argparse.ArgumentParser(add_help=False)
    client.add_argument(
        "--server", default=os.environ.get("CAPREG_SERVER", DEFAULT_LISTEN), help="HOST:PORT"
    )
    client.add_argument("--json", action="store_true", help="print the reply as JSON")
    client.add_argument("--timeout", type=float, default=120.0, help="seconds")
    client.add_argument("--api-key", default=os.environ.get("CAPREG_API_KEY"), help="API key")
    client.add_argument("--ca-file", help="PEM CA certificate: connect with TLS")

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_: str) -> Any:
        sub = commands.add_parser(name, parents=[client], help=help_)
        sub.set_defaults(handler=handler)
        return sub

    register = add("register", cmd_register, "register or replace catalogs from files")
    register.add_argument("files", nargs="+")
    register.add_argument("--name", default="", help="catalog name (default: from the file)")
    register.add_argument("--format", default="auto", choices=["auto", *FORMATS])
    search = add("search", cmd_search, "search tools by need")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=0)
    search.add_argument("--catalog", action="append", help="restrict to a catalog (repeatable)")
    schema = add("schema", cmd_schema, "full schemas for tool ids")
    schema.add_argument("ids", nargs="+")
    add("catalogs", cmd_catalogs, "list catalogs")
    delete = add("delete", cmd_delete, "delete a catalog")
    delete.add_argument("name")
    mcp = add("import-mcp", cmd_import_mcp, "register a live MCP server's tools as a catalog")
    mcp.add_argument("name", help="catalog name")
    mcp.add_argument(
        "server_command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...: the MCP server"
    )
    mcp.add_argument("--http", help="streamable HTTP endpoint URL instead of a command")
    mcp.add_argument("--env", action="append", help="NAME=VALUE for the server (repeatable)")
    mcp.add_argument("--header", action="append", help="NAME: VALUE for --http (repeatable)")
    mcp.add_argument("--mcp-timeout", type=float, default=60.0, help="seconds for the server")
    mcp.set_defaults(import_parser=mcp)
    lint = commands.add_parser("lint", help="check catalog files offline: errors and warnings")
    lint.add_argument("files", nargs="+")
    lint.add_argument("--name", default="", help="catalog name (default: from the file)")
    lint.add_argument("--format", default="auto", choices=["auto", *FORMATS])
    lint.add_argument("--strict", action="store_true", help="exit non-zero on warnings too")
    lint.set_defaults(handler=cmd_lint)

    from registry import evaluate

    evaluate.add_parser(commands)
    from mcp_bridge.cli import add_parser as add_bridge_parser

    add_bridge_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The server narrates at INFO; client commands speak only through their output.
    default_level = "INFO" if args.command == "serve" else "WARNING"
    logging.basicConfig(
        level=os.environ.get("CAPREG_LOG_LEVEL", default_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        code: int = args.handler(args)
    except CommandError as exc:
        print(f"capreg: {exc}", file=sys.stderr)
        return 1
    except EvalError as exc:
        print(f"capreg: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
