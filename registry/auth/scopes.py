"""Permission scopes: validated grants, and which tools a caller with them may see."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

ADMIN_SCOPE = "registry:admin"
WILDCARD = "*"

_SCOPE_RE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# The prefix may be empty, so "*" alone is the same rule; the whole pattern still fits 64 chars.
_PATTERN_RE = re.compile(r"[A-Za-z0-9_.:-]{0,63}\*")


class ScopeError(ValueError):
    """A scope or granted pattern that breaks the scope syntax."""

    def __init__(self, scope: object, reason: str) -> None:
        super().__init__(f"invalid scope {scope!r}: {reason}")
        self.scope = scope


def validate_scope(scope: object) -> str:
    """Return `scope` if it is a valid required scope (no wildcard), else raise ScopeError."""
    if not isinstance(scope, str):
        raise ScopeError(scope, "must be a string")
    # fullmatch, not match with "$": "$" also accepts a trailing newline.
    if not _SCOPE_RE.fullmatch(scope):
        raise ScopeError(scope, "must be 1-64 characters from A-Z a-z 0-9 _ . : -")
    return scope


def validate_pattern(pattern: object) -> str:
    """Return `pattern` if it is a valid granted scope or `prefix*` wildcard, else raise."""
    if isinstance(pattern, str) and _PATTERN_RE.fullmatch(pattern):
        return pattern
    if isinstance(pattern, str) and "*" in pattern:
        raise ScopeError(pattern, "a wildcard must be a single trailing '*' within 64 characters")
    return validate_scope(pattern)


def _reject_bare_string(scopes: Iterable[object]) -> None:
    # A str is an iterable of one-character scopes; accepting it would silently grant "a", "b"...
    if isinstance(scopes, str | bytes):
        raise ScopeError(scopes, "expected a collection of scopes, not a single string")


def parse_required(scopes: Iterable[str]) -> frozenset[str]:
    """Validate the scopes a tool requires; wildcards are only meaningful when granted."""
    _reject_bare_string(scopes)
    return frozenset(validate_scope(scope) for scope in scopes)


@dataclass(frozen=True)
class Grants:
    """The scope patterns granted to a caller. Build with `Grants.parse`."""

    patterns: frozenset[str]
    _exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Validate here too, so a directly constructed Grants cannot skip the rules.
        for pattern in self.patterns:
            validate_pattern(pattern)
        exact = frozenset(p for p in self.patterns if not p.endswith(WILDCARD))
        prefixes = tuple(sorted(p[:-1] for p in self.patterns if p.endswith(WILDCARD)))
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_prefixes", prefixes)

    @classmethod
    def parse(cls, scopes: Iterable[str]) -> Grants:
        """Validate and deduplicate granted patterns; raises ScopeError naming a bad one."""
        _reject_bare_string(scopes)
        return cls(frozenset(validate_pattern(scope) for scope in scopes))

    def covers(self, scope: str) -> bool:
        """Whether one required scope is matched by an exact grant or a wildcard prefix."""
        if scope in self._exact:
            return True
        return any(scope.startswith(prefix) for prefix in self._prefixes)

    def allows(self, required: frozenset[str]) -> bool:
        """Whether a tool needing all of `required` is visible; no requirements means visible."""
        return all(self.covers(scope) for scope in required)

    @property
    def sees_everything(self) -> bool:
        """True for the "*" grant, which covers every scope."""
        return WILDCARD in self.patterns

    @property
    def visibility_class(self) -> str:
        """A stable id shared exactly by grants with the same pattern set.

        Equal classes guarantee equal visibility, so search results may be cached per class.
        The converse does not hold ({"a", "a*"} sees what {"a*"} sees): that costs a cache
        miss, never a leak.
        """
        digest = hashlib.sha256()
        for pattern in sorted(self.patterns):
            # Length-prefixed so no pattern set can collide with another by concatenation,
            # whatever characters the syntax allows in future.
            digest.update(f"{len(pattern)}:{pattern};".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name for logs and audit, and what it may see."""

    name: str
    grants: Grants

    @property
    def can_administer(self) -> bool:
        """Whether the caller may change the registry (e.g. register catalogs)."""
        return self.grants.covers(ADMIN_SCOPE)
