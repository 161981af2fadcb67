"""The server's interceptors' shared parts: wrapping the registry's coroutine unary handlers
(the health service's plain-function handlers run on gRPC's own threads and are left as they
are), and keyed reflection."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc

from registry.auth.authentication import Authenticator
from registry.errors import CapregError
from registry.rpc.status import Context

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Behaviour = Callable[[Any, Context], Awaitable[Any]]
# Given the RPC's name and its behaviour, the behaviour to run instead.
Wrapper = Callable[[str, Behaviour], Behaviour]


class UnaryInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic in stubs
    """Applies `wrap` to every coroutine unary handler."""

    def wrap(self, rpc: str, behaviour: Behaviour) -> Behaviour:
        raise NotImplementedError  # each interceptor defines its own

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler = await continuation(details)
        if (
            handler is None
            or handler.unary_unary is None
            or not inspect.iscoroutinefunction(handler.unary_unary)
        ):
            return handler
        rpc = details.method.rsplit("/", 1)[-1]
        return grpc.unary_unary_rpc_method_handler(
            self.wrap(rpc, handler.unary_unary),  # type: ignore[arg-type]  # an aio handler
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class KeyedReflection(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic in the stubs only
    """Server reflection describes the API; with keys configured it needs a valid key too
    (health checks stay open for load balancers)."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._auth = authenticator

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        if self._auth.open or not details.method.startswith("/grpc.reflection."):
            return await continuation(details)
        try:
            self._auth.principal(details.invocation_metadata or (), "reflection")
        except CapregError as exc:
            message = str(exc)

            async def refuse(
                _requests: object, context: grpc.aio.ServicerContext[Any, Any]
            ) -> None:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

            return grpc.stream_stream_rpc_method_handler(refuse)
        return await continuation(details)
