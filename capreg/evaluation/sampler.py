"""Catalogs of any size drawn from a pool of tools: the labeled sets' or a folder's, mirrored
past the pool's size, written back as native catalog text."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from capreg.evaluation.runner import EvalError, read_queries
from indexer.evaluation.datasets import LabeledQuery, load_dataset
from indexer.formats import CatalogError, parse_catalog
from indexer.model import JsonObject, Tool
from registry.ingest.catalog_dir import catalog_files, read_catalog_file, request_name

# The labeled sets whose tasks are run, and every set whose tools fill the pool.
TASK_SOURCES = ("livemcpbench", "stabletoolbench")
POOL_SOURCES = ("livemcpbench", "stabletoolbench", "seal-tools:dev", "metatool")

# Which of a tool's fields its catalog text carries: "core" (name, description, schemas) keeps
# the document text, and so the stored embeddings, that the dataset benchmarks were run with;
# "all" adds annotations, title, tags, examples and declared links, as a folder's files have.
Fields = Literal["core", "all"]


@dataclass(frozen=True)
class PoolTool:
    tool: Tool
    title: str
    description: str
    # The id of the tool this one copies (its own id for an original).
    origin: str = ""

    @property
    def source(self) -> str:
        return self.origin or self.tool.id


@dataclass(frozen=True, kw_only=True)
class Pool:
    """Tools to draw catalogs from, the labeled tasks to run on them, and where both came
    from, in words for a report."""

    tools: list[PoolTool]
    tasks: list[LabeledQuery]
    origin: str
    fields: Fields = "core"


def load_pool(
    root: str | Path | None, only: str | None = None
) -> tuple[list[PoolTool], list[LabeledQuery]]:
    """Every tool of the pool datasets (unique ids) and the labeled tasks to run; with
    `only` (one of TASK_SOURCES), that set's own tools and tasks alone."""
    tools: dict[str, PoolTool] = {}
    tasks: list[LabeledQuery] = []
    for name in (only,) if only else POOL_SOURCES:
        dataset = load_dataset(name, root)
        for source in dataset.catalogs:
            catalog = parse_catalog(source.content, name=source.name, fmt=source.format)
            for tool in catalog.tools:
                tools.setdefault(
                    tool.id, PoolTool(tool, catalog.title or catalog.name, catalog.description)
                )
        if name in TASK_SOURCES:
            tasks.extend(q for q in dataset.queries if q.relevant)
    return list(tools.values()), tasks


def dataset_pool(root: str | Path | None, only: str | None = None) -> Pool:
    if only is not None and only not in TASK_SOURCES:
        raise EvalError(f"no labeled tasks of {only!r}: expected one of {', '.join(TASK_SOURCES)}")
    try:
        tools, tasks = load_pool(root, only)
    except (ValueError, FileNotFoundError) as exc:
        raise EvalError(str(exc)) from exc
    tasks_from = (only,) if only else TASK_SOURCES
    tools_from = (only,) if only else POOL_SOURCES
    return Pool(
        tools=tools,
        tasks=tasks,
        origin=f"labeled {' and '.join(tasks_from)} tasks; tools drawn from "
        f"{', '.join(tools_from)} ({len(tools):,} unique tools, mirror copies past that)",
    )


def folder_pool(folder: Path, queries: Path) -> Pool:
    """The tools of a folder's catalog files and labeled tasks over them (JSON lines, as
    `capreg eval --queries` reads them)."""
    if not folder.is_dir():
        raise EvalError(f"--catalogs {folder}: not a folder")
    tools: list[PoolTool] = []
    for path in catalog_files(folder):
        try:
            content = read_catalog_file(path)
            catalog = parse_catalog(content, name=request_name(path, content))
        except CatalogError as exc:
            raise EvalError(str(exc)) from exc
        title = catalog.title or catalog.name
        tools.extend(PoolTool(tool, title, catalog.description) for tool in catalog.tools)
    tasks = [task for task in read_queries(queries) if task.relevant]
    return Pool(
        tools=tools,
        tasks=tasks,
        origin=f"the {len(tools):,} tools of {folder.name}/ and the {len(tasks)} labeled tasks "
        f"of {queries.name}",
        fields="all",
    )


def with_variants(pool: list[PoolTool], size: int) -> list[PoolTool]:
    """The pool, grown past `size` with copies under mirror catalogs when it is smaller.

    A mirror keeps the original's title, so its document text (and stored embedding) is
    the same; only the id differs, as for the same server deployed twice.
    """
    grown = list(pool)
    copy = 1
    while len(grown) < size:
        for item in pool:
            if len(grown) >= size:
                break
            tool = item.tool
            # Declared links name tools of the original catalog; the mirror derives its own.
            mirror = replace(tool, catalog=f"{tool.catalog[:58]}-m{copy}", links=())
            grown.append(PoolTool(mirror, item.title, item.description, item.tool.id))
        copy += 1
    return grown


def native_tool(tool: Tool, present: Collection[str], fields: Fields) -> JsonObject:
    """A tool as a native catalog entry; with all fields, of its declared links those whose
    target is among the `present` ids (a link to a tool of its catalog that was not drawn
    would be refused)."""
    entry: JsonObject = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    }
    if tool.output_schema:
        entry["output_schema"] = tool.output_schema
    if fields == "core":
        return entry
    for key, value in (
        ("annotations", tool.annotations),
        ("title", tool.title),
        ("tags", list(tool.tags)),
        ("examples", list(tool.examples)),
    ):
        if value:
            entry[key] = value
    links = [link.to_json() for link in tool.links if link.target_id in present]
    if links:
        entry["links"] = links
    return entry


def catalog_sources(tools: Sequence[PoolTool], *, fields: Fields = "core") -> list[tuple[str, str]]:
    """(name, native catalog text) for the chosen tools, grouped by catalog."""
    groups: dict[str, list[PoolTool]] = {}
    for item in tools:
        groups.setdefault(item.tool.catalog, []).append(item)
    present = {item.tool.id for item in tools}
    sources = []
    for name, items in groups.items():
        document = {
            "capreg": 1,
            "name": name,
            "title": items[0].title,
            "description": items[0].description or items[0].title,
            "tools": [native_tool(i.tool, present, fields) for i in items],
        }
        sources.append((name, json.dumps(document, ensure_ascii=False)))
    return sources
