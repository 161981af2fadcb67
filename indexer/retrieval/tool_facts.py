"""What a search reads of a tool besides its name, apart from its schemas: the summary a hit
shows, the input and output property names the learned stage compares, and whether calling it
may destroy something (the confident set). Derived once per tool revision and stored in the
catalog's image (`registry.catalog_image`), so a search reads no schema and a registry need
not hold schemas in memory (decision 0081)."""

from __future__ import annotations

from dataclasses import dataclass

from indexer.model import Tool
from indexer.retrieval.document import summary
from indexer.retrieval.effects import is_destructive
from indexer.retrieval.features import property_names

# Joins a tool's property names in one string. A name holding it, or the NUL that separates
# an image's facts, has it replaced by a space: the names are compared as words, never shown.
NAME_SEPARATOR = "\x1f"


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """A tool's summary, its input and output property names (each joined by
    NAME_SEPARATOR, sorted) and whether it is destructive (`effects.is_destructive`)."""

    summary: str
    inputs: str
    outputs: str
    destructive: bool

    @classmethod
    def of(cls, tool: Tool) -> ToolFacts:
        return cls(
            summary=summary(tool.description).replace("\x00", ""),
            inputs=_joined(property_names(tool.input_schema)),
            outputs=_joined(property_names(tool.output_schema)),
            destructive=is_destructive(tool),
        )

    @property
    def input_names(self) -> frozenset[str]:
        return _names(self.inputs)

    @property
    def output_names(self) -> frozenset[str]:
        return _names(self.outputs)


def _joined(names: frozenset[str]) -> str:
    cleaned = (name.replace(NAME_SEPARATOR, " ").replace("\x00", " ") for name in names)
    return NAME_SEPARATOR.join(sorted(cleaned))


def _names(joined: str) -> frozenset[str]:
    return frozenset(joined.split(NAME_SEPARATOR)) if joined else frozenset()
