"""The one typed client of the registry: targets, TLS, bearer keys, deadlines, typed failures.

The CLI, `capreg eval --server`, the benchmarks and the MCP bridge all call the registry
through this module, so TLS and multi-address targets work the same everywhere. Two faces
share one channel setup and one error mapping: `RegistryClient` (blocking, for the shell)
and `AsyncRegistryClient` (grpc.aio, for the bridge).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from indexer.errors import CapregError
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.wire import MAX_MESSAGE_BYTES, bearer_metadata

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 10.0

# The registry names each unknown id, with its suggestions, in the status message
# ("unknown tool id: 'a/x' (did you mean: a/y, a/z); 'b/q'"): the proto documents that shape
# and gRPC carries no structured details for it.
_MISSING_ID = re.compile(r"'([^']+)'(?: \(did you mean: ([^)]*)\))?")

Request = TypeVar("Request")
Reply = TypeVar("Reply")


class RegistryCallFailed(CapregError):
    """A registry call that did not succeed; `code` and `details` are what the registry said.

    The message (str) is safe to show any client: for unavailability and faults it hides the
    details (addresses, resolver internals), which stay in `details` and the log.
    """

    def __init__(self, code: grpc.StatusCode, details: str, message: str | None = None) -> None:
        super().__init__(message if message is not None else details)
        self.code = code
        self.details = details

    def one_line(self) -> str:
        """`CODE: details` on one line, for a person at a shell."""
        return f"{self.code.name}: {' '.join(self.details.split())}"


class InvalidRequest(RegistryCallFailed):
    """The registry rejected the arguments (INVALID_ARGUMENT); its message names the rule."""


class NotFound(RegistryCallFailed):
    """Unknown ids or catalogs (NOT_FOUND), with the registry's suggestions for each."""

    @property
    def suggestions(self) -> dict[str, list[str]]:
        return parse_suggestions(self.details)


class MoveNotLegal(RegistryCallFailed):
    """A workflow move reported in a state where it is not legal (FAILED_PRECONDITION); the
    message lists the legal moves."""


class AccessRefused(RegistryCallFailed):
    """Missing, unknown or insufficient credentials (UNAUTHENTICATED, PERMISSION_DENIED)."""


class RegistryUnavailable(RegistryCallFailed):
    """The registry is unreachable, still loading, or did not answer within the deadline."""


class RegistryFault(RegistryCallFailed):
    """Anything else the registry answered (INTERNAL, UNKNOWN, ...)."""


@dataclass(frozen=True, kw_only=True)
class RegistryTarget:
    """Where the registry is and how to reach it.

    `address` is HOST:PORT, or several IP:PORT addresses separated by commas (replicas; calls
    are spread round-robin over those that answer).
    """

    address: str
    # PEM roots for TLS; None means a plaintext channel.
    root_certificates: bytes | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        channel_target(self.address)  # refuse a malformed address before any call

    @property
    def metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        return bearer_metadata(self.api_key)


def channel_target(address: str) -> str:
    """The gRPC target for one HOST:PORT or a comma-separated list of IP:PORT addresses; a
    target that already names its resolver (`ipv4:`, `ipv6:`, `dns:`) is used as given."""
    if address.startswith(TARGET_SCHEMES):
        return address
    parts = [p.strip() for p in address.split(",") if p.strip()]
    if not parts:
        raise ValueError("registry address must be HOST:PORT")
    for part in parts:
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"registry address '{part}' must be HOST:PORT")
    if len(parts) == 1:
        return parts[0]
    families = set()
    for part in parts:
        host = part.rpartition(":")[0].strip("[]")
        try:
            families.add(ipaddress.ip_address(host).version)
        except ValueError:
            raise ValueError(
                f"registry address '{part}': several addresses must be IP:PORT literals "
                "(put one DNS name in front of the replicas instead)"
            ) from None
    if len(families) > 1:
        raise ValueError("registry addresses must be all IPv4 or all IPv6")
    return f"ipv{families.pop()}:{','.join(parts)}"


TARGET_SCHEMES = ("ipv4:", "ipv6:", "dns:")
# Reads are idempotent: one a replica answers UNAVAILABLE (loading, a generation it has not
# reached, going away) is tried again, on the next replica with round-robin.
RETRIED_READS = ("Search", "GetSchema", "ListCatalogs", "GetAffordances")
SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [
                    {"service": "capreg.v1.CapabilityRegistry", "method": method}
                    for method in RETRIED_READS
                ],
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "0.5s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }
)


def channel_options(target: RegistryTarget) -> list[tuple[str, Any]]:
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", SERVICE_CONFIG),
    ]
    if "," in target.address:
        options.append(("grpc.lb_policy_name", "round_robin"))
    return options


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
    """The one place a gRPC status becomes a client error."""
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequest(code, details)
    if code is grpc.StatusCode.NOT_FOUND:
        return NotFound(code, details)
    if code is grpc.StatusCode.FAILED_PRECONDITION:
        return MoveNotLegal(code, details)
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return AccessRefused(code, details)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return RegistryUnavailable(
            code, details, "the tool registry is unavailable or did not answer in time"
        )
    return RegistryFault(code, details, "the tool registry failed to answer")


def _failed(exc: grpc.RpcError, request: object, address: str) -> RegistryCallFailed:
    code, details = exc.code(), exc.details() or ""
    if code is grpc.StatusCode.UNAVAILABLE and "connect" in details.lower():
        details = f"no registry at {address} ({details})"
    # The caller decides what to tell whom (the CLI prints one line, the bridge logs a
    # warning for a broken registry); here the details go only to the debug log.
    logger.debug("%s: %s: %s", type(request).__name__, code.name, details)
    return error_for(code, details)


def _key(target: RegistryTarget, key: str | None) -> tuple[tuple[str, str | bytes], ...]:
    # A per-call key (the bridge forwarding its HTTP client's) wins over the target's.
    return bearer_metadata(key) if key is not None else target.metadata


class RegistryClient:
    """Blocking calls to one registry over one channel, each under the target's deadline."""

    def __init__(self, target: RegistryTarget) -> None:
        self._target = target
        options = channel_options(target)
        address = channel_target(target.address)
        if target.root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(root_certificates=target.root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb_grpc.CapabilityRegistryStub(self._channel)

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(
        self, method: Callable[..., Reply], request: Request, key: str | None = None
    ) -> Reply:
        try:
            return method(request, timeout=self._target.timeout, metadata=_key(self._target, key))
        except grpc.RpcError as exc:
            raise _failed(exc, request, self._target.address) from exc

    def search(
        self,
        query: str,
        *,
        limit: int = 0,
        catalogs: list[str] | None = None,
        workflow: str = "",
        state: str = "",
    ) -> pb.SearchResponse:
        request = pb.SearchRequest(
            query=query, limit=limit, catalogs=catalogs or [], workflow=workflow, state=state
        )
        return self._call(self._stub.Search, request)

    def get_schema(self, ids: list[str]) -> pb.GetSchemaResponse:
        return self._call(self._stub.GetSchema, pb.GetSchemaRequest(ids=ids))

    def list_catalogs(self, *, with_warnings: bool = False) -> pb.ListCatalogsResponse:
        request = pb.ListCatalogsRequest(with_warnings=with_warnings)
        return self._call(self._stub.ListCatalogs, request)

    def get_affordances(
        self,
        workflow: str,
        state: str = "",
        *,
        tool: str = "",
        arguments: str = "",
        with_schemas: bool = False,
    ) -> pb.GetAffordancesResponse:
        request = pb.GetAffordancesRequest(
            workflow=workflow,
            state=state,
            tool=tool,
            arguments=arguments,
            with_schemas=with_schemas,
        )
        return self._call(self._stub.GetAffordances, request)

    def register_catalog(
        self, content: str, *, name: str = "", fmt: str = ""
    ) -> pb.RegisterCatalogResponse:
        request = pb.RegisterCatalogRequest(name=name, content=content, format=fmt)
        return self._call(self._stub.RegisterCatalog, request)

    def register_catalogs(
        self, entries: Sequence[pb.RegisterCatalogRequest]
    ) -> pb.RegisterCatalogsResponse:
        """Registers many catalogs in one call (see RegisterCatalogs): one result each."""
        request = pb.RegisterCatalogsRequest(catalogs=list(entries))
        return self._call(self._stub.RegisterCatalogs, request)

    def delete_catalog(self, name: str) -> pb.DeleteCatalogResponse:
        return self._call(self._stub.DeleteCatalog, pb.DeleteCatalogRequest(name=name))


class AsyncRegistryClient:
    """Async calls to one registry over one channel, each under the target's deadline.

    Use as an async context manager: the grpc.aio channel belongs to the running event loop.
    """

    def __init__(self, target: RegistryTarget) -> None:
        self._target = target
        self._channel: grpc.aio.Channel | None = None
        self._stub: AsyncStub | None = None

    async def __aenter__(self) -> AsyncRegistryClient:
        options = channel_options(self._target)
        address = channel_target(self._target.address)
        if self._target.root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=self._target.root_certificates
            )
            channel = grpc.aio.secure_channel(address, credentials, options=options)
        else:
            channel = grpc.aio.insecure_channel(address, options=options)
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
            raise RuntimeError("AsyncRegistryClient used outside `async with`")
        return self._stub

    async def _call(
        self,
        method: grpc.aio.UnaryUnaryMultiCallable[Request, Reply],
        request: Request,
        key: str | None,
    ) -> Reply:
        try:
            return await method(
                request, timeout=self._target.timeout, metadata=_key(self._target, key)
            )
        except grpc.aio.AioRpcError as exc:
            raise _failed(exc, request, self._target.address) from exc

    async def search(
        self,
        query: str,
        limit: int,
        *,
        key: str | None,
        workflow: str = "",
        state: str = "",
    ) -> pb.SearchResponse:
        request = pb.SearchRequest(query=query, limit=limit, workflow=workflow, state=state)
        return await self._call(self._registry.Search, request, key)

    async def get_schema(self, ids: list[str], *, key: str | None) -> pb.GetSchemaResponse:
        return await self._call(self._registry.GetSchema, pb.GetSchemaRequest(ids=ids), key)

    async def list_catalogs(self, *, key: str | None) -> pb.ListCatalogsResponse:
        return await self._call(self._registry.ListCatalogs, pb.ListCatalogsRequest(), key)

    async def get_affordances(
        self,
        workflow: str,
        state: str = "",
        *,
        key: str | None,
        tool: str = "",
        arguments: str = "",
        with_schemas: bool = False,
    ) -> pb.GetAffordancesResponse:
        request = pb.GetAffordancesRequest(
            workflow=workflow,
            state=state,
            tool=tool,
            arguments=arguments,
            with_schemas=with_schemas,
        )
        return await self._call(self._registry.GetAffordances, request, key)
