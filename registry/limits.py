"""Per-caller admission: a request rate and a number of calls in flight for each API key whose
secret verifies, and for each peer host otherwise, so no single caller can take the service
from the others, and knowing a key's id (it is not secret) spends nothing of that key's budget.

A refusal is RESOURCE_EXHAUSTED with the wait in the message and in the standard
`grpc-retry-pushback-ms` trailer, which gRPC's retry policy reads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from registry.auth.authentication import Authenticator, peer_host
from registry.config import CallerLimits
from registry.errors import Overloaded
from registry.rpc.interceptors import Behaviour, UnaryInterceptor
from registry.rpc.status import Context, status_for

PUSHBACK_HEADER = "grpc-retry-pushback-ms"
# Callers tracked at once; the least recently seen is forgotten first.
MAX_CALLERS = 10_000


class _Bucket:
    __slots__ = ("in_flight", "stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp
        self.in_flight = 0


class Admission:
    """Token buckets and in-flight counts per caller.

    With `authenticator`, a call whose key verifies counts against that key and any other
    against its peer host; without one (nothing to verify keys with) every call counts
    against its peer host.
    """

    def __init__(
        self,
        limits: CallerLimits,
        clock: Callable[[], float] = time.monotonic,
        *,
        authenticator: Authenticator | None = None,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._authenticator = authenticator
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def caller_of(self, metadata: Any, peer: str) -> str:
        """Who a call counts against: 'key:<id>' (a verified key, never its secret), else
        'peer:<host>'."""
        if self._authenticator is None:
            return "peer:" + peer_host(peer)
        return self._authenticator.caller(metadata or (), peer)

    def enter(self, caller: str) -> None:
        """Admits one call of `caller` or raises Overloaded saying how long to wait."""
        limits = self._limits
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(caller)
            if bucket is None:
                bucket = _Bucket(float(limits.burst), now)
                self._buckets[caller] = bucket
                if len(self._buckets) > MAX_CALLERS:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(caller)
                bucket.tokens = min(
                    float(limits.burst), bucket.tokens + (now - bucket.stamp) * limits.rate
                )
                bucket.stamp = now
            if bucket.in_flight >= limits.concurrency:
                raise Overloaded(
                    f"{bucket.in_flight} calls of this caller are in flight (at most "
                    f"{limits.concurrency}); retry when one has finished",
                    retry_after=0.1,
                )
            if limits.rate > 0 and bucket.tokens < 1.0:
                wait = (1.0 - bucket.tokens) / limits.rate
                raise Overloaded(
                    f"more than {limits.rate:g} requests per second from this caller; retry in "
                    f"{wait * 1000:.0f} ms",
                    retry_after=wait,
                )
            if limits.rate > 0:
                bucket.tokens -= 1.0
            bucket.in_flight += 1

    def leave(self, caller: str) -> None:
        with self._lock:
            bucket = self._buckets.get(caller)
            if bucket is not None and bucket.in_flight:
                bucket.in_flight -= 1


class Admit(UnaryInterceptor):
    """Applies `Admission` to every registry RPC before its handler runs."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def wrap(self, _rpc: str, behaviour: Behaviour) -> Behaviour:
        admission = self._admission

        async def admitted(request: Any, context: Context) -> Any:
            caller = admission.caller_of(context.invocation_metadata(), context.peer())
            try:
                admission.enter(caller)
            except Overloaded as exc:
                code, message = status_for(exc)
                pushback = str(int(exc.retry_after * 1000))
                await context.abort(code, message, trailing_metadata=((PUSHBACK_HEADER, pushback),))
            try:
                return await behaviour(request, context)
            finally:
                admission.leave(caller)

        return admitted
