"""Valid, unique catalog names made from free text (server keys, service names, file stems)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

CATALOG_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?")
_MAX_CATALOG_NAME = 64


def slugify(text: str) -> str:
    """A catalog name made from free text: accents dropped, other runs of characters the
    name rule forbids become "-", no "__", at most 64 characters; "" if nothing is left."""
    decomposed = unicodedata.normalize("NFKD", text)
    ascii_ish = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_ish)
    slug = re.sub(r"_{2,}", "_", slug)
    return slug[:_MAX_CATALOG_NAME].strip("_-")


class SlugAllocator:
    """Hands out catalog names that are valid and unique, even ignoring case, and distinct
    from the names in `taken`."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken: set[str] = {name.casefold() for name in taken}

    def allocate(self, text: str) -> str:
        base = slugify(text) or "catalog"
        candidate, counter = base, 1
        while candidate.casefold() in self._taken:
            counter += 1
            suffix = f"-{counter}"
            candidate = base[: _MAX_CATALOG_NAME - len(suffix)].rstrip("_-") + suffix
        if not CATALOG_NAME_RE.fullmatch(candidate) or "__" in candidate:
            raise ValueError(f"cannot make a valid catalog name from {text!r}")
        self._taken.add(candidate.casefold())
        return candidate
