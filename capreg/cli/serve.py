"""`capreg serve`: options and environment -> one ServerConfig, then the server."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import sys
from pathlib import Path
from typing import Any

from capreg.cli.errors import CommandError
from indexer.embedding import BACKENDS, EmbedderBackend
from indexer.formats.rules import SCOPE
from registry.config import (
    APPROXIMATE_FROM,
    DEFAULT_DB,
    CallerLimits,
    CatalogPolicy,
    SearchSettings,
    ServerConfig,
)
from registry.rpc.server import ServeFailed, run_server
from registry.store import is_postgres
from registry.telemetry import METRICS_SCOPE
from registry.wire import DEFAULT_LISTEN, is_loopback


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of tools >= 1")
    return number


def _backend(value: str) -> EmbedderBackend:
    # A type, not `choices`: argparse checks a type on the environment default too.
    try:
        return EmbedderBackend(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a model backend; use one of {', '.join(BACKENDS)}"
        ) from None


def add_embedder_option(parser: argparse.ArgumentParser) -> None:
    """--embedder (or CAPREG_EMBEDDER), shared by `serve` and `eval`."""
    parser.add_argument(
        "--embedder",
        type=_backend,
        default=os.environ.get("CAPREG_EMBEDDER", EmbedderBackend.ONNX.value),
        metavar="{" + ",".join(BACKENDS) + "}",
        help="model backend: ONNX Runtime (default), its int8 variant, or "
        "sentence-transformers on torch",
    )


def model_cache() -> Path | None:
    """CAPREG_CACHE: where the ONNX export of the model is kept."""
    configured = os.environ.get("CAPREG_CACHE")
    return Path(configured) if configured else None


def results_dir(given: str | None) -> Path | None:
    """--results-dir, else docs/results under the current folder when it exists."""
    if given is None:
        default = Path("docs/results")
        return default.resolve() if default.is_dir() else None
    folder = Path(given)
    if not folder.is_dir():
        raise CommandError(f"--results-dir {given} is not a folder")
    return folder.resolve()


def trusted_proxies(given: str | None) -> tuple[str, ...]:
    """--trusted-proxies: comma-separated addresses and CIDR networks, each checked; never
    a wildcard (believing every peer's X-Forwarded-For is believing no one)."""
    if given is None:
        return ()
    networks = []
    for part in given.split(","):
        text = part.strip()
        try:
            networks.append(str(ipaddress.ip_network(text)))
        except ValueError:
            raise CommandError(
                f"--trusted-proxies: {text!r} is not an address or a network such as "
                "10.0.0.0/8 (host bits zero); name each proxy in front of --http"
            ) from None
    return tuple(networks)


def serve_config(args: argparse.Namespace) -> ServerConfig:
    config = ServerConfig(
        listen=args.listen,
        db=args.db if is_postgres(args.db) else Path(args.db),
        catalogs_dir=Path(args.catalogs) if args.catalogs else None,
        model_path=Path(args.model) if args.model else None,
        embedder=args.embedder,
        model_cache=model_cache(),
        tls_cert=Path(args.tls_cert) if args.tls_cert else None,
        tls_key=Path(args.tls_key) if args.tls_key else None,
        keys_file=Path(args.keys) if args.keys else None,
        search=SearchSettings(
            approximate_from=args.approximate_from,
            result_cache_size=args.cache_size,
            result_cache_ttl=args.cache_ttl,
        ),
        progress=sys.stderr.isatty(),
        watch=args.watch,
        serve_stale=args.serve_stale,
        follow_interval=args.follow_interval,
        metrics_listen=args.metrics,
        http_listen=args.http,
        trusted_proxies=trusted_proxies(args.trusted_proxies),
        results_dir=results_dir(args.results_dir),
        read_workers=args.read_workers,
        catalogs=CatalogPolicy(
            default_scope=args.default_scope, refuse_poisoning=args.refuse_poisoning
        ),
        caller_limits=CallerLimits(
            rate=args.caller_rate, burst=args.caller_burst, concurrency=args.caller_concurrency
        ),
        write_queue=args.write_queue,
        watch_interval=args.watch_interval,
    )
    if bool(config.tls_cert) != bool(config.tls_key):
        raise CommandError("--tls-cert and --tls-key go together")
    try:
        loopback = is_loopback(config.listen)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    # A PostgreSQL store brings the cluster's keys (default-deny when it holds none).
    keys = config.keys_file is not None or isinstance(config.db, str)
    if not loopback and not keys:
        raise CommandError(
            f"refusing to listen on non-loopback address {config.listen} without credentials "
            "configured: pass --keys FILE (see `capreg keys add`) or use 127.0.0.1:PORT"
        )
    template = config.catalogs.default_scope
    if template and not SCOPE.fullmatch(template.replace("{catalog}", "c")):
        raise CommandError(
            f"--default-scope {template!r}: a scope is 1-64 of A-Z a-z 0-9 _ . : - once "
            "{catalog} is replaced"
        )
    if config.caller_limits.rate < 0:
        raise CommandError("--caller-rate must be 0 (no limit) or more")
    if config.metrics_listen:
        check_metrics_listen(config.metrics_listen, keys=keys)
    if config.http_listen:
        check_http_listen(config, insecure=args.insecure_http)
    if config.catalogs_dir and not config.catalogs_dir.is_dir():
        raise CommandError(f"--catalogs {config.catalogs_dir} is not a folder")
    if config.watch and not config.catalogs_dir:
        raise CommandError("--watch needs --catalogs DIR (the folder to watch)")
    return config


def check_metrics_listen(listen: str, *, keys: bool) -> None:
    """The --metrics listener answers anyone who reaches it, and its counts cover every
    catalog: loopback only, and only where no keys are enforced (there every caller is an
    administrator already). With keys, metrics go to a key: GET /metrics on --http
    (decision 0066)."""
    try:
        loopback = is_loopback(listen)
    except ValueError as exc:
        raise CommandError(f"--metrics: {exc}") from exc
    scrape = (
        f"scrape GET /metrics on the --http listener with a key granted '{METRICS_SCOPE}' "
        f"(capreg keys add prometheus --scopes {METRICS_SCOPE})"
    )
    if not loopback:
        raise CommandError(
            f"--metrics {listen}: the metrics listener has no authentication, so it serves "
            f"loopback only (127.0.0.1:PORT); to scrape from another host, {scrape}"
        )
    if keys:
        raise CommandError(
            f"--metrics {listen}: with API keys enforced, metrics are served only to a key: "
            f"{scrape}"
        )


def check_http_listen(config: ServerConfig, *, insecure: bool) -> None:
    """The HTTP listener follows the gRPC one's rules (credentials off loopback), and more:
    bearer keys in clear over HTTP are refused off loopback unless --insecure-http says a
    TLS-terminating proxy is in front (the bridge's rule and flag)."""
    listen = config.http_listen or ""
    try:
        loopback = is_loopback(listen)
    except ValueError as exc:
        raise CommandError(f"--http: {exc}") from exc
    if loopback:
        return
    if config.keys_file is None and not isinstance(config.db, str):
        raise CommandError(
            f"refusing to serve HTTP on non-loopback address {listen} without credentials "
            "configured: pass --keys FILE (see `capreg keys add`) or use 127.0.0.1:PORT"
        )
    if not (config.tls_cert and config.tls_key) and not insecure:
        raise CommandError(
            f"--http {listen} is not a loopback address: clients would send their API keys "
            "in clear text. Pass --tls-cert and --tls-key, or --insecure-http when a "
            "TLS-terminating proxy is in front"
        )


def cmd_serve(args: argparse.Namespace) -> int:
    config = serve_config(args)
    try:
        drained = asyncio.run(run_server(config))
    except ServeFailed as exc:
        raise CommandError(str(exc)) from exc
    if not drained:
        # Worker threads still running would hold the interpreter's exit past the grace
        # period; the store's transactions make leaving them safe.
        logging.shutdown()
        os._exit(0)
    return 0


def add_parser(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the registry (gRPC, and HTTP with --http)")
    serve.add_argument(
        "--db",
        default=os.environ.get("CAPREG_DB", str(DEFAULT_DB)),
        help="a SQLite file (one node), or postgresql://USER@HOST:PORT/DB (replicas sharing "
        "one database; a password belongs in ~/.pgpass or PGPASSWORD, not here)",
    )
    serve.add_argument("--listen", default=os.environ.get("CAPREG_LISTEN", DEFAULT_LISTEN))
    serve.add_argument("--catalogs", help="register every catalog file in this folder at start")
    serve.add_argument("--model", default=os.environ.get("CAPREG_MODEL"), help="model folder")
    serve.add_argument(
        "--approximate-from",
        type=_at_least_one,
        default=APPROXIMATE_FROM,
        metavar="TOOLS",
        help="use the approximate (IVF) vector index from this many tools on "
        f"(default {APPROXIMATE_FROM})",
    )
    add_embedder_option(serve)
    serve.add_argument("--tls-cert", help="PEM certificate chain: serve TLS")
    serve.add_argument("--tls-key", help="PEM private key for --tls-cert")
    serve.add_argument(
        "--keys", default=os.environ.get("CAPREG_KEYS"), help="keys file: enforce API keys"
    )
    defaults = SearchSettings()
    serve.add_argument(
        "--cache-size", type=int, default=defaults.result_cache_size, help="result cache entries"
    )
    serve.add_argument(
        "--cache-ttl", type=float, default=defaults.result_cache_ttl, help="result cache seconds"
    )
    serve.add_argument(
        "--watch", action="store_true", help="register, update and delete as --catalogs changes"
    )
    serve.add_argument(
        "--follow-interval",
        type=float,
        default=ServerConfig().follow_interval,
        help="with a PostgreSQL --db: the most seconds between checks for other replicas' "
        "changes (announced changes are applied at once)",
    )
    serve.add_argument(
        "--serve-stale",
        action="store_true",
        help="while --catalogs registers at start-up, answer from the catalogs already "
        "stored (complete but possibly stale) instead of UNAVAILABLE",
    )
    serve.add_argument(
        "--watch-interval",
        type=float,
        default=ServerConfig().watch_interval,
        help="seconds between scans",
    )
    serve.add_argument(
        "--metrics",
        default=os.environ.get("CAPREG_METRICS"),
        metavar="HOST:PORT",
        help="without --keys: serve Prometheus metrics to anyone at http://HOST:PORT/metrics, "
        "loopback only (e.g. 127.0.0.1:9464); with keys, scrape GET /metrics on --http with a "
        f"key granted {METRICS_SCOPE}",
    )
    serve.add_argument(
        "--http",
        default=os.environ.get("CAPREG_HTTP"),
        metavar="HOST:PORT",
        help="also serve the HTTP/JSON API (docs/http.md) at http://HOST:PORT, in the same "
        "process; loopback unless --tls-cert/--tls-key or --insecure-http",
    )
    serve.add_argument(
        "--insecure-http",
        action="store_true",
        help="allow --http on a non-loopback address without TLS (a TLS-terminating proxy "
        "is in front)",
    )
    serve.add_argument(
        "--trusted-proxies",
        default=os.environ.get("CAPREG_TRUSTED_PROXIES"),
        metavar="CIDR,...",
        help="proxies in front of --http (addresses or networks) whose X-Forwarded-For names "
        "the client; by default no forwarded header is believed and the peer is the client",
    )
    serve.add_argument(
        "--results-dir",
        metavar="DIR",
        help="evaluation plots (PNG) the HTTP API and its console show "
        "(default: docs/results when the current folder has one)",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=os.environ.get("CAPREG_LOG_FORMAT", "text"),
        help="log lines as text or as JSON objects (default: %(default)s)",
    )
    serve.add_argument(
        "--read-workers",
        type=_at_least_one,
        default=ServerConfig().read_workers,
        help="threads for searches and schema lookups (default: one per core, 2 to 4; "
        "here %(default)s)",
    )
    serve.add_argument(
        "--write-queue",
        type=_at_least_one,
        default=ServerConfig().write_queue,
        help="catalog changes that may wait behind the running one (default: %(default)s)",
    )
    policy = CatalogPolicy()
    serve.add_argument(
        "--default-scope",
        default=os.environ.get("CAPREG_DEFAULT_SCOPE", policy.default_scope),
        metavar="TEMPLATE",
        help="scope given to a catalog that declares none ({catalog}: its name); '' makes "
        "such catalogs visible to every key (default: %(default)s)",
    )
    serve.add_argument(
        "--refuse-poisoning",
        action="store_true",
        help="refuse catalogs with text aimed at the model instead of registering them with "
        "warnings",
    )
    limits = CallerLimits()
    serve.add_argument(
        "--caller-rate",
        type=float,
        default=limits.rate,
        help="requests per second per API key or peer host, 0 for no limit (default: %(default)s)",
    )
    serve.add_argument(
        "--caller-burst",
        type=_at_least_one,
        default=limits.burst,
        help="requests one caller may send at once above its rate (default: %(default)s)",
    )
    serve.add_argument(
        "--caller-concurrency",
        type=_at_least_one,
        default=limits.concurrency,
        help="calls of one caller in flight at once (default: %(default)s)",
    )
    serve.set_defaults(handler=cmd_serve)
