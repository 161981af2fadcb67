"""Prometheus metrics and the request id, both as one gRPC interceptor, plus the gauges read
from the registry when scraped, and who may read them.

Per RPC and status code: a request counter and a latency histogram. At scrape time: the index
size and generation, result-cache hits and misses, tools embedded, and work waiting per lane.
These count every catalog, whoever may see it, so reading them takes a key granted
METRICS_SCOPE (or an administrator's).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import grpc
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from registry.auth.scopes import Principal
from registry.core import Registry
from registry.errors import PermissionDenied
from registry.lanes import Lanes
from registry.logs import REQUEST_ID
from registry.rpc.interceptors import Behaviour, UnaryInterceptor
from registry.rpc.status import Context

REQUEST_ID_HEADER = "x-request-id"
# Latency buckets around the search budget: a cache hit is ~1 ms, a search ~10-30 ms.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0)
# The scope a monitoring key needs (registry:admin covers it too).
METRICS_SCOPE = "registry:metrics"
EXPOSITION_MEDIA_TYPE = CONTENT_TYPE_LATEST


def require_metrics_reader(principal: Principal) -> None:
    """PermissionDenied unless `principal` may read the service-wide counts."""
    if not (principal.grants.covers(METRICS_SCOPE) or principal.can_administer):
        raise PermissionDenied(
            f"'{principal.name}' lacks the '{METRICS_SCOPE}' scope needed to read metrics"
        )


class ServiceMetrics:
    """The metrics of one server (their own registry: several servers can share a process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "capreg_requests",
            "RPCs answered, by method and status code",
            ["rpc", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "capreg_request_seconds",
            "Time to answer an RPC, by method",
            ["rpc"],
            buckets=BUCKETS,
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """Every metric in Prometheus's text format (EXPOSITION_MEDIA_TYPE)."""
        return generate_latest(self.registry)

    def watch(self, registry: Registry, lanes: Lanes) -> None:
        """Reports `registry`'s and `lanes`' state at every scrape."""
        self.registry.register(_StateCollector(registry, lanes))


class _StateCollector(Collector):
    def __init__(self, registry: Registry, lanes: Lanes) -> None:
        self._registry = registry
        self._lanes = lanes

    def collect(self) -> Iterator[Metric]:
        tools = GaugeMetricFamily("capreg_index_tools", "Tools in the served snapshot")
        generation = GaugeMetricFamily("capreg_index_generation", "Generation of the snapshot")
        if self._registry.ready:
            snapshot = self._registry.snapshot
            tools.add_metric([], len(snapshot.index))
            generation.add_metric([], snapshot.generation)
        yield tools
        yield generation
        cache = self._registry.reader.results
        lookups = CounterMetricFamily(
            "capreg_search_cache", "Result-cache lookups, by result", labels=["result"]
        )
        lookups.add_metric(["hit"], cache.hits)
        lookups.add_metric(["miss"], cache.misses)
        yield lookups
        embedded = CounterMetricFamily("capreg_embedded_tools", "Tool documents embedded")
        embedded.add_metric([], self._registry.writer.embedded_total)
        yield embedded
        queue = GaugeMetricFamily(
            "capreg_queue_depth", "Jobs waiting or running, by lane", labels=["lane"]
        )
        queue.add_metric(["read"], self._lanes.pending_reads)
        queue.add_metric(["write"], self._lanes.pending_writes)
        yield queue


class Observed(UnaryInterceptor):
    """Counts and times every unary RPC by status code, and gives each call a request id
    (the caller's `x-request-id` when it sends one, echoed back in the trailing metadata:
    sending initial metadata first would commit the call, and a read a replica refuses as
    UNAVAILABLE could no longer be retried on another)."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._metrics = metrics

    def wrap(self, rpc: str, behaviour: Behaviour) -> Behaviour:
        metrics = self._metrics

        async def observed(request: Any, context: Context) -> Any:
            given = dict(context.invocation_metadata() or ()).get(REQUEST_ID_HEADER)
            request_id = str(given)[:64] if given else secrets.token_hex(8)
            token = REQUEST_ID.set(request_id)
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                context.set_trailing_metadata(((REQUEST_ID_HEADER, request_id),))
                return await behaviour(request, context)
            except grpc.aio.AbortError:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            except BaseException:
                code = grpc.StatusCode.UNKNOWN
                raise
            finally:
                metrics.latency.labels(rpc).observe(time.perf_counter() - started)
                metrics.requests.labels(rpc, code.name).inc()
                REQUEST_ID.reset(token)

        return observed
