"""Scope syntax, wildcard matching, visibility classes and the monotonicity of grants."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.auth.scopes import (
    ADMIN_SCOPE,
    Grants,
    Principal,
    ScopeError,
    parse_required,
    validate_pattern,
    validate_scope,
)

# A small alphabet makes prefixes and exact collisions between patterns and scopes common.
scopes = st.text(alphabet="ab:.", min_size=1, max_size=6)
patterns = st.one_of(
    scopes,
    st.text(alphabet="ab:.", max_size=5).map(lambda prefix: prefix + "*"),
)
pattern_sets = st.frozensets(patterns, max_size=6)
required_sets = st.frozensets(scopes, max_size=4)


def test_valid_scopes_are_returned_unchanged() -> None:
    for scope in ["finance:read", "a", "A.b_c-d:e", "x" * 64]:
        assert validate_scope(scope) == scope


@pytest.mark.parametrize(
    "bad", ["", "x" * 65, "has space", "semi;colon", "slash/", "finance:*", "line\n", "é"]
)
def test_required_scope_outside_the_syntax_is_rejected(bad: str) -> None:
    with pytest.raises(ScopeError, match="invalid scope"):
        validate_scope(bad)


@pytest.mark.parametrize("good", ["*", "finance:*", "a*", "x" * 63 + "*", "finance:read"])
def test_granted_patterns_may_end_in_one_wildcard(good: str) -> None:
    assert validate_pattern(good) == good


@pytest.mark.parametrize("bad", ["**", "a*b", "*a", "fin*:read", "x" * 64 + "*", "a *", ""])
def test_a_wildcard_anywhere_but_the_end_is_rejected(bad: str) -> None:
    with pytest.raises(ScopeError):
        validate_pattern(bad)


def test_parse_error_names_the_bad_scope() -> None:
    with pytest.raises(ScopeError) as raised:
        Grants.parse(["finance:read", "bad scope"])
    assert raised.value.scope == "bad scope"
    assert "'bad scope'" in str(raised.value)


def test_scope_error_is_a_value_error() -> None:
    assert issubclass(ScopeError, ValueError)


def test_a_bare_string_is_not_mistaken_for_a_list_of_scopes() -> None:
    with pytest.raises(ScopeError, match="not a single string"):
        Grants.parse("finance:read")
    with pytest.raises(ScopeError, match="not a single string"):
        parse_required("finance:read")


def test_non_string_scopes_are_rejected() -> None:
    with pytest.raises(ScopeError, match="must be a string"):
        Grants.parse([42])  # type: ignore[list-item]  # the file loader can hand over anything


def test_directly_constructed_grants_are_validated_too() -> None:
    with pytest.raises(ScopeError):
        Grants(patterns=frozenset({"no spaces allowed"}))


def test_parse_deduplicates_patterns() -> None:
    assert Grants.parse(["a", "a", "b*"]).patterns == frozenset({"a", "b*"})


def test_required_scopes_may_not_be_wildcards() -> None:
    with pytest.raises(ScopeError):
        parse_required(["finance:*"])
    assert parse_required(["a", "b", "a"]) == frozenset({"a", "b"})


def test_a_tool_without_required_scopes_is_visible_to_any_caller() -> None:
    assert Grants.parse([]).allows(frozenset())
    assert Grants.parse(["finance:read"]).allows(frozenset())


def test_every_required_scope_must_be_granted() -> None:
    grants = Grants.parse(["finance:read", "hr:read"])
    assert grants.allows(frozenset({"finance:read"}))
    assert grants.allows(frozenset({"finance:read", "hr:read"}))
    assert not grants.allows(frozenset({"finance:read", "finance:write"}))


def test_exact_grants_do_not_match_longer_scopes() -> None:
    assert not Grants.parse(["finance"]).allows(frozenset({"finance:read"}))


def test_a_prefix_wildcard_matches_every_scope_with_that_prefix() -> None:
    grants = Grants.parse(["finance:*"])
    assert grants.allows(frozenset({"finance:read", "finance:write:ledger"}))
    assert not grants.allows(frozenset({"financial:read"}))
    assert not grants.allows(frozenset({"hr:read"}))


def test_a_lone_star_matches_everything() -> None:
    assert Grants.parse(["*"]).allows(frozenset({"finance:read", "registry:admin", "x"}))


def test_wildcards_match_by_plain_prefix_not_by_segment() -> None:
    # Documented semantics: "fin*" is a string prefix, so it also covers "finance:read".
    grants = Grants.parse(["fin*"])
    assert grants.allows(frozenset({"fin", "finance:read"}))


def test_principal_with_admin_scope_can_administer() -> None:
    assert Principal("root", Grants.parse([ADMIN_SCOPE])).can_administer
    assert Principal("root", Grants.parse(["registry:*"])).can_administer
    assert Principal("root", Grants.parse(["*"])).can_administer
    assert not Principal("reader", Grants.parse(["registry:read"])).can_administer
    assert not Principal("nobody", Grants.parse([])).can_administer


def test_visibility_class_is_a_sha256_hex_digest() -> None:
    cls = Grants.parse(["a"]).visibility_class
    assert len(cls) == 64
    assert int(cls, 16) >= 0


def test_visibility_class_ignores_order_and_duplicates() -> None:
    assert (
        Grants.parse(["b", "a*", "b"]).visibility_class
        == Grants.parse(["a*", "b"]).visibility_class
    )


def test_visibility_class_does_not_collide_by_concatenation() -> None:
    # With a naive join, {"a:b"} and {"a", "b"} could hash the same bytes under some separator.
    assert Grants.parse(["a:b"]).visibility_class != Grants.parse(["a", "b"]).visibility_class
    assert Grants.parse([]).visibility_class != Grants.parse(["*"]).visibility_class


@given(pattern_sets, pattern_sets, required_sets)
def test_more_scopes_never_see_fewer_tools(
    base: frozenset[str], extra: frozenset[str], required: frozenset[str]
) -> None:
    smaller = Grants(patterns=base)
    larger = Grants(patterns=base | extra)
    if smaller.allows(required):
        assert larger.allows(required)


@given(pattern_sets, required_sets)
def test_allows_means_every_scope_has_a_matching_pattern(
    granted: frozenset[str], required: frozenset[str]
) -> None:
    def matches(pattern: str, scope: str) -> bool:
        if pattern.endswith("*"):
            return scope.startswith(pattern[:-1])
        return pattern == scope

    expected = all(any(matches(p, s) for p in granted) for s in required)
    assert Grants(patterns=granted).allows(required) == expected


@given(pattern_sets, required_sets)
def test_a_lone_star_added_to_any_grants_sees_everything(
    granted: frozenset[str], required: frozenset[str]
) -> None:
    assert Grants(patterns=granted | {"*"}).allows(required)


@given(st.text(alphabet="ab:.", max_size=5), scopes)
def test_a_wildcard_covers_exactly_the_scopes_starting_with_its_prefix(
    prefix: str, scope: str
) -> None:
    assert Grants.parse([prefix + "*"]).covers(scope) == scope.startswith(prefix)


@given(pattern_sets, pattern_sets)
def test_visibility_classes_are_equal_iff_pattern_sets_are_equal(
    a: frozenset[str], b: frozenset[str]
) -> None:
    assert (Grants(patterns=a).visibility_class == Grants(patterns=b).visibility_class) == (a == b)


@given(pattern_sets, pattern_sets, required_sets)
def test_equal_visibility_classes_see_the_same_tools(
    a: frozenset[str], b: frozenset[str], required: frozenset[str]
) -> None:
    ga, gb = Grants(patterns=a), Grants(patterns=b)
    if ga.visibility_class == gb.visibility_class:
        assert ga.allows(required) == gb.allows(required)


@given(st.lists(patterns, max_size=6), st.randoms(use_true_random=False))
def test_visibility_class_depends_only_on_the_set_of_patterns(
    listed: list[str], rng: random.Random
) -> None:
    shuffled = [*listed, *listed]
    rng.shuffle(shuffled)
    assert Grants.parse(listed).visibility_class == Grants.parse(shuffled).visibility_class
