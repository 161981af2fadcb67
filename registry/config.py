"""Every default of the service, once: frozen settings built at the edge (the CLI) and passed
down as values. Library code never reads the environment; `capreg.cli` does, once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from indexer.embedding import EmbedderBackend
from indexer.retrieval.learned import MODEL_FILE
from registry.wire import DEFAULT_LISTEN

DEFAULT_DB = Path("capreg.db")
# From this many tools on, vector search is approximate (IVF) and the hybrid blends
# candidates only; below it every tool is scored. bench.performance measures both sides.
APPROXIMATE_FROM = 5_000


@dataclass(frozen=True, kw_only=True)
class SearchSettings:
    """How the domain core searches and caches."""

    # Without the learned stage (or with retrievers that skip it): below this cosine score
    # the best hit is flagged as a weak match. With it, its own calibrated classifier decides.
    weak_score: float = 0.3
    # The learned ranking stage's file (None: the fixed blend only; see
    # indexer.retrieval.learned). The default is the committed model.
    learned_stage: Path | None = MODEL_FILE
    approximate_from: int = APPROXIMATE_FROM
    query_cache_size: int = 4_096
    result_cache_size: int = 2_048
    result_cache_ttl: float = 300.0


@dataclass(frozen=True, kw_only=True)
class CatalogPolicy:
    """What registration does beyond validating a catalog."""

    # The scope a catalog gets when neither it nor any of its tools declares one ("{catalog}"
    # is replaced by its name); "" leaves such a catalog visible to every key.
    default_scope: str = "{catalog}:read"
    # Refuse a catalog with text aimed at the model (lint's tool-poisoning warnings) instead
    # of registering it with those warnings in the response.
    refuse_poisoning: bool = False


@dataclass(frozen=True, kw_only=True)
class CallerLimits:
    """What one caller (an API key, or a peer host without one) may ask of a server."""

    # Sustained requests per second (0: unlimited), and how many may arrive at once.
    rate: float = 200.0
    burst: int = 400
    # Calls in flight at once.
    concurrency: int = 32


def default_read_workers() -> int:
    """One search thread per core this process may run on, from 2 to 4.

    Model and ranking work hold the GIL part of the time, so threads past the cores only
    contend for it: on 2 cores, 2 threads served more searches than 3 or 4 and kept cache hits
    on the event loop fastest (decision 0039).
    """

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 2
    return min(4, max(2, cores))


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    # A SQLite file, or a postgresql:// DSN (see registry.store.open_store).
    db: Path | str = DEFAULT_DB
    catalogs_dir: Path | None = None
    # Keep catalogs_dir registered while serving: files added, changed or removed.
    watch: bool = False
    # While catalogs_dir registers at start-up, answer from the store's snapshot (complete,
    # possibly stale) instead of refusing data calls with UNAVAILABLE.
    serve_stale: bool = False
    # On a shared (PostgreSQL) store: the longest this replica goes without checking for
    # other replicas' changes (announced changes are applied at once).
    follow_interval: float = 1.0
    watch_interval: float = 1.0
    model_path: Path | None = None
    # Where the ONNX export of the model is kept (None: ~/.cache/capreg).
    model_cache: Path | None = None
    # ONNX Runtime (default) or sentence-transformers on torch; same vectors either way.
    embedder: EmbedderBackend = EmbedderBackend.ONNX
    search: SearchSettings = field(default_factory=SearchSettings)
    catalogs: CatalogPolicy = field(default_factory=CatalogPolicy)
    keys_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    grace_seconds: float = 5.0
    # Threads for searches and schema lookups; catalog changes have one thread of their own
    # and at most `write_queue` waiting (more are refused with RESOURCE_EXHAUSTED).
    read_workers: int = field(default_factory=default_read_workers)
    write_queue: int = 8
    # Searches and schema lookups waiting for a read thread; past it, new ones are shed
    # (RESOURCE_EXHAUSTED). Cache hits never wait, so they are never shed.
    read_queue: int = 64
    caller_limits: CallerLimits = field(default_factory=CallerLimits)
    # HOST:PORT of the open Prometheus endpoint (/metrics), loopback and without keys only
    # (decision 0066); None: not served. With keys, GET /metrics on the HTTP listener.
    metrics_listen: str | None = None
    # HOST:PORT of the HTTP/JSON API (registry/http), in the same process; None: not served.
    # It shares the TLS files, keys, admission and metrics of the gRPC listener.
    http_listen: str | None = None
    # Proxies in front of the HTTP listener (addresses and CIDR networks) whose
    # X-Forwarded-For names the client; empty: the peer's own address is the client's.
    trusted_proxies: tuple[str, ...] = ()
    # The evaluation plots (PNGs) the HTTP API and its console show; None: none.
    results_dir: Path | None = None
    progress: bool = False
