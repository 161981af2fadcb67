"""What a dataset loader makes: catalog sources to register and queries labeled with the
tools that answer them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True, frozen=True)
class CatalogSource:
    """One catalog file as a user would register it: its name, text and format."""

    name: str
    content: str
    format: str  # "mcp" or "native", as in docs/catalog-format.md


@dataclass(kw_only=True, frozen=True)
class LabeledQuery:
    """A query and the ids (`<catalog>/<tool name>`) of the tools that answer it."""

    id: str
    query: str
    relevant: frozenset[str]
    # A task annotated step by step: searched one step at a time (the `:steps` splits).
    steps: tuple[str, ...] = ()
    # How the request is written, where a set says (mcp-agentstyle: paraphrase, multi, exact,
    # none); reports give figures per kind.
    kind: str = ""


@dataclass(kw_only=True, frozen=True)
class Dataset:
    """A named benchmark: the catalogs to register and the labeled queries to run on them."""

    name: str
    catalogs: tuple[CatalogSource, ...]
    queries: tuple[LabeledQuery, ...]
