"""Bounded fuzzing of what callers control: catalog text and request fields. Whatever they
send, the answer is a result or a typed error with a status a client can act on, never
INTERNAL (an exception the servicer did not expect)."""

from __future__ import annotations

import json
from typing import Any

import grpc
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.formats import CatalogError, parse_catalog
from indexer.model import Catalog
from registry.core import Registry
from registry.errors import CapregError
from registry.rpc.status import status_for

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
UNEXPECTED = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
# Shapes close to real catalogs, so the fuzz reaches the validator and not only the parser.
tools = st.fixed_dictionaries(
    {"name": st.text(max_size=20), "description": st.text(max_size=40)},
    optional={"input_schema": documents, "inputSchema": documents, "parameters": documents},
)
near_catalogs = st.fixed_dictionaries(
    {"tools": st.lists(tools, max_size=3)},
    optional={
        "capreg": st.sampled_from([1, 2, "1"]),
        "name": st.text(max_size=20),
        "description": st.text(max_size=30),
        "openapi": st.just("3.1.0"),
    },
)


def _parses_or_names_a_problem(content: str, name: str, fmt: str) -> None:
    outcome: Catalog | CatalogError
    try:
        outcome = parse_catalog(content, name=name, fmt=fmt)
    except CatalogError as exc:
        outcome = exc
    assert isinstance(outcome, Catalog) or outcome.problems


@FUZZ
@given(content=st.text(max_size=300), name=st.text(max_size=20))
def test_any_text_is_a_catalog_or_a_catalog_error(content: str, name: str) -> None:
    _parses_or_names_a_problem(content, name, "")


@FUZZ
@given(
    document=near_catalogs | documents,
    as_yaml=st.booleans(),
    fmt=st.sampled_from(["", "native", "mcp", "openai", "anthropic", "openapi"]),
)
def test_any_document_is_a_catalog_or_a_catalog_error(
    document: Any, as_yaml: bool, fmt: str
) -> None:
    content = yaml.safe_dump(document) if as_yaml else json.dumps(document)
    _parses_or_names_a_problem(content, "fuzz", fmt)


def _answered(call: Any, *args: Any, **kwargs: Any) -> None:
    refusal: CapregError | None = None
    try:
        call(*args, **kwargs)
    except CapregError as exc:
        refusal = exc
    assert refusal is None or status_for(refusal)[0] not in UNEXPECTED, refusal


@FUZZ
@given(
    query=st.text(max_size=200),
    limit=st.integers(min_value=-3, max_value=80),
    catalogs=st.lists(st.text(max_size=70), max_size=3),
)
def test_any_search_request_is_answered_or_refused_with_a_status(
    sample_registry: Registry, query: str, limit: int, catalogs: list[str]
) -> None:
    _answered(sample_registry.search, query, limit, catalogs)


@FUZZ
@given(ids=st.lists(st.text(max_size=220), max_size=60))
def test_any_schema_request_is_answered_or_refused_with_a_status(
    sample_registry: Registry, ids: list[str]
) -> None:
    _answered(sample_registry.schemas, ids)


@FUZZ
@given(
    content=st.text(max_size=200) | near_catalogs.map(json.dumps),
    name=st.text(max_size=70),
    fmt=st.text(max_size=20),
)
def test_any_registration_is_applied_or_refused_with_a_status(
    empty_registry: Registry, content: str, name: str, fmt: str
) -> None:
    _answered(empty_registry.register, content, name=name, fmt=fmt)
