"""The gRPC server: `create_server` (the service plus health checking and reflection) and
`run_server`, the composition root that opens the store, the model and the registry, and
serves them over gRPC and, with `http_listen`, over HTTP in the same event loop."""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import signal
import socket
import sys
import time
from wsgiref.simple_server import WSGIServer

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from indexer.embedding import Embedder, load_embedder
from indexer.retrieval.vector_index import one_thread_per_search
from registry.auth.authentication import Authenticator, KeySource
from registry.auth.keys import KeyFileError, KeyStore
from registry.auth.shared_keys import SharedKeys
from registry.config import ServerConfig
from registry.core import Registry
from registry.errors import CapregError
from registry.follow import Follower
from registry.http.app import create_app
from registry.http.listener import CannotListen, HttpListener, bind
from registry.ingest.catalog_dir import SyncProgress, sync_folder
from registry.ingest.watch import FolderWatcher
from registry.lanes import Lanes, OpensBelowTheLoop
from registry.limits import Admission, Admit
from registry.proto import registry_pb2, registry_pb2_grpc
from registry.rpc.interceptors import KeyedReflection
from registry.rpc.servicer import CapabilityRegistryServicer
from registry.store import SharedStore, StoreError, is_postgres, open_store
from registry.telemetry import Observed, ServiceMetrics
from registry.wire import MAX_MESSAGE_BYTES, is_loopback, listen_host

logger = logging.getLogger(__name__)
SWITCH_INTERVAL_SECONDS = 0.0005


PORT_TAKEN = "the address is in use (is another capreg serve running?)"
SERVICE_NAME = registry_pb2.DESCRIPTOR.services_by_name["CapabilityRegistry"].full_name


def create_server(
    config: ServerConfig,
    registry: Registry,
    authenticator: Authenticator,
    lanes: Lanes | None = None,
    metrics: ServiceMetrics | None = None,
    admission: Admission | None = None,
) -> tuple[grpc.aio.Server, int, health.HealthServicer]:
    """Builds a server bound to `config.listen`; returns it, the bound port and its health
    servicer (NOT_SERVING until the caller marks it ready). `lanes`, `metrics` and
    `admission` are passed when another transport shares them (build that admission with
    this `authenticator`, so keys are verified before they are charged)."""
    lanes = lanes or Lanes(
        read_workers=config.read_workers,
        write_queue=config.write_queue,
        read_queue=config.read_queue,
    )
    metrics = metrics or ServiceMetrics()
    metrics.watch(registry, lanes)
    server = grpc.aio.server(
        # Outermost first: every call is counted and carries a request id, refusals included.
        interceptors=[
            Observed(metrics),
            Admit(admission or Admission(config.caller_limits, authenticator=authenticator)),
            KeyedReflection(authenticator),
        ],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # gRPC's default shares a port with any other process asking the same: a second
            # registry would start silently and take half the calls, with other keys.
            ("grpc.so_reuseport", 0),
        ],
    )
    registry_pb2_grpc.add_CapabilityRegistryServicer_to_server(
        CapabilityRegistryServicer(registry, authenticator, lanes), server
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in (SERVICE_NAME, ""):
        health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    try:
        if config.tls_cert and config.tls_key:
            credentials = grpc.ssl_server_credentials(
                [(config.tls_key.read_bytes(), config.tls_cert.read_bytes())]
            )
            port = server.add_secure_port(config.listen, credentials)
        else:
            port = server.add_insecure_port(config.listen)
    except RuntimeError as exc:  # gRPC's "Failed to bind to address"
        raise ServeFailed(f"cannot listen on {config.listen}: {PORT_TAKEN}") from exc
    return server, port, health_servicer


def check_listen_free(listen: str) -> None:
    """Refuses a gRPC address another process holds, before anything slow (the store, the
    model) is opened, so a second `capreg serve` fails at once; `create_server` refuses it
    again if the port is taken in between."""
    host, _, port = listen.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError:
        return  # gRPC reports a name it cannot resolve itself
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            # As gRPC binds: a port left in TIME_WAIT is free, one being listened on is not.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                reason = PORT_TAKEN if exc.errno == errno.EADDRINUSE else exc.strerror
                raise ServeFailed(f"cannot listen on {listen}: {reason}") from None


def mark_serving(health_servicer: health.HealthServicer) -> None:
    for name in (SERVICE_NAME, ""):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


def exposure_warnings(config: ServerConfig) -> list[str]:
    """What an operator must hear about how exposed this configuration is."""
    if config.tls_cert and config.tls_key:
        return []
    listeners = [config.listen, *([config.http_listen] if config.http_listen else [])]
    return [
        f"serving on {listen} without TLS: API keys and catalogs cross the network in "
        "clear; pass --tls-cert and --tls-key or put a TLS-terminating proxy in front"
        for listen in listeners
        if not is_loopback(listen)
    ]


def serve_metrics(listen: str, metrics: ServiceMetrics) -> WSGIServer:
    """Prometheus's text format at http://LISTEN/metrics, on its own thread."""
    host = listen_host(listen)
    port = int(listen.rpartition(":")[2])
    try:
        exporter, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ServeFailed(f"cannot serve metrics on {listen}: {exc.strerror}") from exc
    if not is_loopback(listen):
        logger.warning("metrics on %s are readable by anyone who can reach it", listen)
    logger.info("Prometheus metrics at http://%s/metrics", listen)
    return exporter


def settle_long_lived_objects() -> None:
    """Moves everything alive once the index is loaded out of the collector's reach.

    The model's libraries and the loaded catalogs are tens of thousands of objects that live
    as long as the process; every full collection walked them all, holding the GIL (16.5 ms
    at p50 on an idle machine, docs/results/gc-pauses.md), and far longer when it ran in a
    low-priority search worker that the OS then preempted, while cache hits on the event loop
    waited. Frozen objects are still freed by reference counting; only cycles among them
    would outlive their use, so the garbage made while loading is collected first.
    """

    gc.collect()
    gc.freeze()


def load_serving_embedder(config: ServerConfig, opener: OpensBelowTheLoop) -> Embedder:
    """The model `config` names, opening on a thread below the event loop (`opener`): the
    threads its libraries start run below the loop, as the read lane's do. The ONNX backends
    return at once, their session on the way while the store is read (their first encode
    waits for it); `opener.wait()` says when it is open."""
    return load_embedder(
        config.model_path, config.embedder, cache_dir=config.model_cache, opens=opener
    )


class ServeFailed(CapregError):
    """The server cannot start: the message names the setting to change."""


async def run_server(config: ServerConfig) -> bool:
    """Opens everything `config` names, serves until SIGINT or SIGTERM, then stops within
    the grace period. Returns False when work was still running at its end (the caller
    exits regardless: a cut-short write leaves the old or the new catalog whole)."""

    started = time.perf_counter()
    # The event loop answers cache hits between model and ranking work on other threads;
    # a shorter GIL switch interval lets it in sooner than the default 5 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    check_listen_free(config.listen)
    try:
        store = open_store(config.db)
    except StoreError as exc:
        raise ServeFailed(str(exc)) from exc
    keys: KeySource | None
    try:
        if config.keys_file:
            keys = KeyStore.load(config.keys_file)
        elif isinstance(config.db, str) and is_postgres(config.db):
            # Replicas share their keys through the store: none stored, nobody gets in.
            from registry.store.postgres import PostgresStore

            assert isinstance(store, PostgresStore)
            keys = SharedKeys(store)
        else:
            keys = None
    except (KeyFileError, OSError) as exc:
        store.close()
        raise ServeFailed(f"cannot use keys file: {exc}") from exc
    one_thread_per_search()
    opener = OpensBelowTheLoop()
    embedder = load_serving_embedder(config, opener)
    registry = Registry(
        store,
        embedder,
        settings=config.search,
        policy=config.catalogs,
        progress=config.progress,
    )
    lanes = Lanes(
        read_workers=config.read_workers,
        write_queue=config.write_queue,
        read_queue=config.read_queue,
    )
    metrics = ServiceMetrics()
    # One of each for both transports: a caller's budget, failed logins and the read queue
    # are the same whichever way it calls.
    authenticator = Authenticator(keys)
    admission = Admission(config.caller_limits, authenticator=authenticator)
    server, port, health = create_server(config, registry, authenticator, lanes, metrics, admission)
    exporter = serve_metrics(config.metrics_listen, metrics) if config.metrics_listen else None
    if port == 0:
        raise ServeFailed(f"cannot listen on {config.listen}")
    http_api = None
    if config.http_listen:
        try:
            sock = bind(config.http_listen)
        except CannotListen as exc:
            raise ServeFailed(str(exc)) from exc
        app = create_app(
            registry, authenticator, lanes, metrics, admission, results=config.results_dir
        )
        http_api = HttpListener(
            app,
            sock,
            tls_cert=config.tls_cert,
            tls_key=config.tls_key,
            grace_seconds=config.grace_seconds,
            trusted_proxies=config.trusted_proxies,
        )
    await server.start()
    if http_api is not None:
        await http_api.start()
        logger.info("HTTP API at %s (described at %s/openapi.json)", http_api.url, http_api.url)
    for warning in exposure_warnings(config):
        logger.warning("%s", warning)
    if keys is None:
        logger.warning(
            "NO KEYS FILE: every caller is an administrator who sees every tool. "
            "Listening on loopback only; pass --keys FILE to enforce API keys and scopes."
        )
    else:
        logger.info("API keys and scopes enforced from %s", keys.path)
    # The server answers (UNAVAILABLE, health NOT_SERVING) while the index loads, and,
    # unless stale answers are allowed, while the folder registers: a snapshot missing
    # half the folder would answer as if it were complete.
    progress = SyncProgress()
    if config.catalogs_dir and not config.serve_stale:
        registry.reader.hold(progress.describe)
    await asyncio.to_thread(registry.load)
    try:
        await asyncio.to_thread(opener.wait)
    except Exception as exc:
        raise ServeFailed(f"cannot open the embedding model: {exc}") from exc
    follower = None
    if isinstance(store, SharedStore):
        follower = Follower(store, registry.writer, config.follow_interval)
        follower.start()
    watcher = None
    if config.watch and config.catalogs_dir:
        watcher = FolderWatcher(registry, config.catalogs_dir)
        scan = await asyncio.to_thread(watcher.scan_once, progress)
        logger.info(
            "catalogs in %s: %d registered (%d tools embedded), %d failed; watching for changes",
            config.catalogs_dir,
            len(scan.registered),
            scan.embedded,
            len(scan.failed),
        )
    elif config.catalogs_dir:
        report = await asyncio.to_thread(sync_folder, registry, config.catalogs_dir, progress)
        embedded = sum(r.embedded for r in report.registered)
        logger.info(
            "catalogs in %s: %d registered (%d tools embedded), %d failed",
            config.catalogs_dir,
            len(report.registered),
            embedded,
            len(report.failed),
        )
    registry.reader.release()
    settle_long_lived_objects()
    mark_serving(health)
    logger.info(
        "capreg serving %d tools on %s (ready in %.1fs, db %s)",
        len(registry.index),
        config.listen.rsplit(":", 1)[0] + f":{port}",
        time.perf_counter() - started,
        store.location,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    watching = asyncio.create_task(watcher.run(stop, config.watch_interval)) if watcher else None
    await stop.wait()
    logger.info("stopping")
    ends = time.monotonic() + config.grace_seconds
    if watching is not None:
        await watching  # returns at once: it waits on the same stop event
    # New calls are refused at once; calls in flight get the grace period, then are cancelled.
    http_stopped = asyncio.create_task(http_api.stop()) if http_api is not None else None
    await server.stop(config.grace_seconds)
    if http_stopped is not None:
        await http_stopped
    if exporter is not None:
        exporter.shutdown()
        exporter.server_close()
    if follower is not None:
        follower.stop(max(ends - time.monotonic(), 0.0))
    drained = await lanes.drain(ends - time.monotonic())
    if drained:
        store.close()
    else:
        logger.warning("stopping with work still running after %.1fs", config.grace_seconds)
    return drained
