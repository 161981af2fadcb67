"""Checks a JSON body's shape against its request message before protobuf reads it, so a
value of the wrong type is refused in the API's words ("ids: expected a list of tool ids
like ["catalog/name"], got a string"), not the protobuf parser's ("repeated field ids must be
in [] which is x at GetSchemaRequest")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from registry.errors import InvalidRequest

# What a list field holds, and one of its items, said the way the API documents them, where
# a bare type would say little.
_DESCRIBED: Mapping[str, tuple[str, str]] = {
    "capreg.v1.GetSchemaRequest.ids": (
        'a list of tool ids like ["catalog/name"]',
        'a tool id like "catalog/name"',
    ),
    "capreg.v1.RegisterCatalogsRequest.catalogs": (
        'a list of catalogs like [{"name": "hr", "content": "<the catalog file\'s text>"}]',
        'a catalog like {"name": "hr", "content": "<the catalog file\'s text>"}',
    ),
}
_INTEGERS = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
}
_NUMBERS = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}


def check_shape(document: Mapping[str, Any], message: Descriptor, where: str = "") -> None:
    """Raises InvalidRequest naming the first field of `document` that `message` does not
    have or whose value has the wrong JSON type (a list for a single value, a string for a
    list, a number for text). Values are not judged beyond their type: the domain checks them,
    naming the field, as it does for gRPC."""
    by_name = {**message.fields_by_name, **{f.json_name: f for f in message.fields}}
    for key, value in document.items():
        path = f"{where}.{key}" if where else key
        field = by_name.get(key)
        if field is None:
            known = ", ".join(f.name for f in message.fields)
            raise InvalidRequest(f"{path}: not a field of this call (it takes: {known})")
        if value is None:  # null: the field's default, as the protobuf JSON mapping reads it
            continue
        if field.is_repeated and not _is_map(field):
            if not isinstance(value, list):
                raise InvalidRequest(f"{path}: expected {_list_of(field)}, got {_kind(value)}")
            for position, item in enumerate(value):
                _check_value(item, field, f"{path}[{position}]")
        else:
            _check_value(value, field, path)


def _check_value(value: Any, field: FieldDescriptor, path: str) -> None:
    described = _DESCRIBED.get(field.full_name)
    expected = described[1] if described else _single(field)
    if field.message_type is not None and not _is_map(field):
        if not isinstance(value, dict):
            raise InvalidRequest(f"{path}: expected {expected}, got {_kind(value)}")
        check_shape(value, field.message_type, path)
        return
    if not _fits(value, field):
        # A string is refused only where a number is due: quote it, as it was read.
        got = json.dumps(value[:32]) if isinstance(value, str) else _kind(value)
        raise InvalidRequest(f"{path}: expected {expected}, got {got}")


def _fits(value: Any, field: FieldDescriptor) -> bool:
    if _is_map(field):
        return isinstance(value, dict)
    if field.enum_type is not None:
        return isinstance(value, str | int) and not isinstance(value, bool)
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return isinstance(value, str)
    if kind == FieldDescriptor.TYPE_BOOL:
        return isinstance(value, bool)
    if kind in _INTEGERS:
        # The protobuf JSON mapping writes 64-bit integers as decimal strings: both are read.
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.lstrip("-").isdigit()
        )
    if kind in _NUMBERS:
        return isinstance(value, int | float | str) and not isinstance(value, bool)
    return True


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _single(field: FieldDescriptor) -> str:
    """One value of `field`, in words ("a string", "a whole number", "an object")."""
    if _is_map(field) or field.message_type is not None:
        return "an object"
    if field.enum_type is not None:
        return "one of " + ", ".join(v.name for v in field.enum_type.values)
    if field.type == FieldDescriptor.TYPE_STRING:
        return "a string"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true or false"
    if field.type in _INTEGERS:
        return "a whole number"
    return "a number"


def _list_of(field: FieldDescriptor) -> str:
    described = _DESCRIBED.get(field.full_name)
    if described is not None:
        return described[0]
    plural = {"an object": "objects", "a string": "strings", "a whole number": "whole numbers"}
    single = _single(field)
    return f"a list of {plural.get(single, 'values')}"


def _kind(value: Any) -> str:
    """The JSON type of `value`, in words."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null"
