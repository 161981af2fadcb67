"""The bridge's gRPC client of the registry: deadlines, credentials, and typed failures."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import grpc

from registry.config import MAX_MESSAGE_BYTES
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 10.0

# The registry names each unknown id, with its suggestions, in the status message
# ("unknown tool id: 'a/x' (did you mean: a/y, a/z); 'b/q'"): the proto documents that shape
# and gRPC carries no structured details for it.
_MISSING_ID = re.compile(r"'([^']+)'(?: \(did you mean: ([^)]*)\))?")

REFUSED = "the tool registry refused the credentials"
KEY_HINT = "a stdio bridge sends CAPREG_API_KEY; HTTP clients send 'Authorization: Bearer <key>'"

Request = TypeVar("Request")
Reply = TypeVar("Reply")


class RegistryCallFailed(Exception):
    """Base of every failure of a registry call; the message is safe to show a client."""


class InvalidRequest(RegistryCallFailed):
    """The registry rejected the arguments (INVALID_ARGUMENT); its message names the rule."""


class NotFound(RegistryCallFailed):
    """Unknown ids or catalogs (NOT_FOUND), with the registry's suggestions for each."""

    def __init__(self, message: str, suggestions: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.suggestions = suggestions


class AccessRefused(RegistryCallFailed):
    """Missing, unknown or insufficient credentials (UNAUTHENTICATED, PERMISSION_DENIED)."""


class RegistryUnavailable(RegistryCallFailed):
    """The registry is unreachable, still loading, or did not answer within the deadline."""


class RegistryFault(RegistryCallFailed):
    """Anything else the registry answered (INTERNAL, UNKNOWN, ...)."""


@dataclass(frozen=True)
class RegistryTarget:
    """Where the registry is and how to reach it."""

    address: str
    # PEM roots for TLS; None means a plaintext channel.
    root_certificates: bytes | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_SECONDS


def parse_suggestions(message: str) -> dict[str, list[str]]:
    """Unknown ids and their suggestions, read from a NOT_FOUND message; {} if it has none."""
    _, sep, listing = message.partition(": ")
    if not sep:
        return {}
    return {
        match.group(1): [s.strip() for s in (match.group(2) or "").split(",") if s.strip()]
        for match in _MISSING_ID.finditer(listing)
    }


def error_for(code: grpc.StatusCode, details: str) -> RegistryCallFailed:
    """The one place a gRPC status becomes a bridge error."""
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequest(details)
    if code is grpc.StatusCode.NOT_FOUND:
        return NotFound(details, parse_suggestions(details))
    # The registry's own wording names its CLI's options; say what a bridge user can change.
    if code is grpc.StatusCode.UNAUTHENTICATED:
        return AccessRefused(f"{REFUSED}: a valid API key is required ({KEY_HINT})")
    if code is grpc.StatusCode.PERMISSION_DENIED:
        return AccessRefused(f"{REFUSED}: this API key lacks the scope the call needs")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        # The details may name addresses and resolver internals; keep them in the log only.
        return RegistryUnavailable("the tool registry is unavailable or did not answer in time")
    return RegistryFault("the tool registry failed to answer")


class RegistryClient:
    """Async calls to one registry over one channel, each under a deadline.

    Use as an async context manager: the grpc.aio channel belongs to the running event loop.
    """

    def __init__(self, target: RegistryTarget) -> None:
        self._target = target
        self._channel: grpc.aio.Channel | None = None
        self._stub: AsyncStub | None = None

    async def __aenter__(self) -> RegistryClient:
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        if self._target.root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=self._target.root_certificates
            )
            channel = grpc.aio.secure_channel(self._target.address, credentials, options=options)
        else:
            channel = grpc.aio.insecure_channel(self._target.address, options=options)
        self._channel = channel
        self._stub = pb_grpc.CapabilityRegistryStub(channel)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._channel is not None:
            await self._channel.close(None)
        self._channel = None
        self._stub = None

    @property
    def _registry(self) -> AsyncStub:
        if self._stub is None:
            raise RuntimeError("RegistryClient used outside `async with`")
        return self._stub

    async def _call(
        self,
        method: grpc.aio.UnaryUnaryMultiCallable[Request, Reply],
        request: Request,
        key: str | None,
    ) -> Reply:
        metadata = (("authorization", f"Bearer {key}"),) if key else ()
        try:
            return await method(request, timeout=self._target.timeout, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            error = error_for(exc.code(), exc.details() or "")
            broken = isinstance(error, RegistryUnavailable | RegistryFault)
            level = logging.WARNING if broken else logging.INFO
            logger.log(level, "%s: %s: %s", type(request).__name__, exc.code().name, exc.details())
            raise error from exc

    async def search(self, query: str, limit: int, *, key: str | None) -> pb.SearchResponse:
        request = pb.SearchRequest(query=query, limit=limit)
        return await self._call(self._registry.Search, request, key)

    async def get_schema(self, ids: list[str], *, key: str | None) -> pb.GetSchemaResponse:
        return await self._call(self._registry.GetSchema, pb.GetSchemaRequest(ids=ids), key)

    async def list_catalogs(self, *, key: str | None) -> pb.ListCatalogsResponse:
        return await self._call(self._registry.ListCatalogs, pb.ListCatalogsRequest(), key)
