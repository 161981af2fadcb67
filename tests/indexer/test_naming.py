"""Function-calling names: safe, unique and stable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from indexer.formats.rules import CATALOG_NAME, check_catalog_name
from indexer.naming import FUNCTION_NAME, function_name

catalog_names = st.from_regex(CATALOG_NAME, fullmatch=True).filter(
    lambda n: check_catalog_name(n) is None
)
tool_names = (
    st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=1, max_size=128)
    .map(str.strip)
    .filter(bool)
)


def test_plain_ids_keep_a_readable_name() -> None:
    assert function_name("hr", "get_employee") == "hr__get_employee"


def test_unsafe_or_long_names_get_a_hashed_safe_name() -> None:
    name = function_name("stabletoolbench", "Get Video Info (v2)")
    assert FUNCTION_NAME.fullmatch(name)
    assert name.startswith("stabletoolbench__Get_Video_Info")
    assert FUNCTION_NAME.fullmatch(function_name("c", "x" * 128))


@given(catalog_names, tool_names)
def test_function_names_are_always_safe_and_stable(catalog: str, tool: str) -> None:
    name = function_name(catalog, tool)
    assert FUNCTION_NAME.fullmatch(name)
    assert name == function_name(catalog, tool)


@given(catalog_names, tool_names, catalog_names, tool_names)
def test_distinct_ids_get_distinct_function_names(
    catalog_a: str, tool_a: str, catalog_b: str, tool_b: str
) -> None:
    if (catalog_a, tool_a) != (catalog_b, tool_b):
        assert function_name(catalog_a, tool_a) != function_name(catalog_b, tool_b)
