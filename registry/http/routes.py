"""The one route table: each RPC of the service, the HTTP method and path that reach it, and
where its request message is read from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from registry.proto import registry_pb2
from registry.wire import MAX_BATCH_CATALOGS, MAX_IDS

SERVICE = registry_pb2.DESCRIPTOR.services_by_name["CapabilityRegistry"]
Method = Literal["GET", "POST", "PUT", "DELETE"]
_PATH_FIELD = re.compile(r"{(\w+)}")


class Source(StrEnum):
    """Where a route reads the fields of its request message from."""

    # Scalar fields from the query string (repeated ones by repeating the parameter).
    QUERY = "query"
    # The whole message as a JSON body, in the protobuf JSON mapping.
    JSON = "json"
    # The raw body fills one string field (`Route.text_field`); the rest come from the query.
    TEXT = "text"


@dataclass(frozen=True, kw_only=True)
class Route:
    rpc: str
    method: Method
    path: str
    source: Source
    summary: str
    # Source.TEXT: the string field the body fills.
    text_field: str = ""
    # Query parameter -> request field, where the HTTP name is shorter than the field's.
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Needs the registry:admin scope (the servicer checks it; the OpenAPI document says it).
    admin: bool = False
    # Source.JSON: the most items each repeated field of the body may hold, checked before
    # the body is read into a message (the domain core checks them again, naming the field).
    max_items: Mapping[str, int] = field(default_factory=dict)

    @property
    def descriptor(self) -> MethodDescriptor:
        return SERVICE.methods_by_name[self.rpc]

    @property
    def request_type(self) -> Descriptor:
        return self.descriptor.input_type

    @property
    def response_type(self) -> Descriptor:
        return self.descriptor.output_type

    def new_request(self) -> Message:
        return GetMessageClass(self.request_type)()

    @property
    def path_fields(self) -> tuple[str, ...]:
        """Request fields named in the path ("/v1/catalogs/{name}" -> ("name",))."""
        return tuple(_PATH_FIELD.findall(self.path))

    @property
    def query_fields(self) -> dict[str, str]:
        """Query parameter -> request field, for the fields the query string carries."""
        if self.source is Source.JSON:
            return {}
        taken = {*self.path_fields, self.text_field}
        by_field = {target: name for name, target in self.aliases.items()}
        return {
            by_field.get(f.name, f.name): f.name
            for f in self.request_type.fields
            if f.name not in taken
        }


def _rows(*routes: Route) -> Mapping[str, Route]:
    return MappingProxyType({route.rpc: route for route in routes})


# Adding an RPC to the service means adding its row here (tests/registry/http checks that
# every RPC has one).
ROUTES: Mapping[str, Route] = _rows(
    Route(
        rpc="Search",
        method="GET",
        path="/v1/search",
        source=Source.QUERY,
        aliases={"q": "query", "catalog": "catalogs"},
        summary="Rank the tools the caller may see against a need in words",
    ),
    Route(
        rpc="GetSchema",
        method="POST",
        path="/v1/schemas",
        source=Source.JSON,
        max_items={"ids": MAX_IDS},
        summary="Full schemas for 1 to 50 tool ids",
    ),
    Route(
        rpc="ListCatalogs",
        method="GET",
        path="/v1/catalogs",
        source=Source.QUERY,
        summary="The catalogs the caller may see, with their workflows",
    ),
    Route(
        rpc="RegisterCatalog",
        method="PUT",
        path="/v1/catalogs/{name}",
        source=Source.TEXT,
        text_field="content",
        admin=True,
        summary="Register or replace a catalog: the body is the catalog file (JSON or YAML)",
    ),
    Route(
        rpc="RegisterCatalogs",
        method="POST",
        path="/v1/catalogs:batch",
        source=Source.JSON,
        admin=True,
        max_items={"catalogs": MAX_BATCH_CATALOGS},
        summary="Register up to 1,000 catalogs; each commits or fails on its own",
    ),
    Route(
        rpc="DeleteCatalog",
        method="DELETE",
        path="/v1/catalogs/{name}",
        source=Source.QUERY,
        admin=True,
        summary="Remove a catalog and all its tools",
    ),
    Route(
        rpc="GetAffordances",
        method="GET",
        path="/v1/affordances",
        source=Source.QUERY,
        summary="The moves legal for the caller in one state of a workflow",
    ),
)
