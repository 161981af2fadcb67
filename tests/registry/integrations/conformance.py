"""Payloads checked against the official SDKs' own types, with no key left unchecked."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pydantic


def materialized(value: Any) -> Any:
    """A validated value with its lazy parts run: pydantic checks an `Iterable[...]` field
    (the SDKs' lists of blocks and tools) only as it is iterated."""
    if isinstance(value, Iterator):  # pydantic's ValidatorIterator among them
        return [materialized(item) for item in value]
    if isinstance(value, Mapping):
        return {key: materialized(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [materialized(item) for item in value]
    return value


def conforms(sdk_type: Any, payload: Any) -> None:
    """Validates `payload` as the SDK's TypedDict (or union of them) and requires the result
    to equal it: a TypedDict drops keys it does not declare, so a misspelt or unknown key
    anywhere in the payload fails here instead of passing silently."""
    # The adapter must outlive the iteration: its lazy validators refer to its definitions.
    adapter = pydantic.TypeAdapter(sdk_type)
    validated = materialized(adapter.validate_python(payload))
    assert validated == materialized(payload)
