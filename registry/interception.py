"""The one way the server's interceptors wrap a call: around the registry's coroutine unary
handlers only (the health service's plain-function handlers run on gRPC's own threads and are
left as they are)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc

from registry.status import Context

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
