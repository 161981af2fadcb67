"""How each labeled public dataset's files become catalogs and judged queries, and which of
its queries form the tuning part."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from indexer.documents import load_document
from indexer.evaluation.catalog_names import SlugAllocator
from indexer.evaluation.labeled_sets import CatalogSource, Dataset, LabeledQuery

_STABLETOOLBENCH_FILES = (
    "G1_instruction",
    "G1_category",
    "G1_tool",
    "G2_instruction",
    "G2_category",
    "G3_instruction",
)
# The later upstream tools.json dropped this server; the published numbers use that corpus.
_LIVEMCPBENCH_DROPPED_SERVER = "bing-cn-mcp"


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _read_jsonl(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _dump(document: object) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _native_catalog(
    name: str, description: str, tools: list[dict[str, object]], title: str | None = None
) -> CatalogSource:
    document: dict[str, object] = {"capreg": 1, "name": name}
    if title is not None:
        document["title"] = title
    document["description"] = description
    document["tools"] = tools
    return CatalogSource(name=name, content=_dump(document), format="native")


# --- tuning splits ----------------------------------------------------------------------------
# The learned ranking stage and the weak-match threshold are fitted on these parts only, and
# every reported figure comes from the rest. seal-tools dev was the only tuning set before; it
# is synthetic (queries share their tools' words), so two parts written the way people ask
# are added: a hashed fifth of MetaTool's single-tool queries (by query text, so a repeated
# query never sits on both sides) and StableToolBench's G1_tool group.
TUNING_PERCENT = 20
STABLETOOLBENCH_TUNING_GROUP = "G1_tool"


def in_tuning_part(query: str) -> bool:
    """Whether a MetaTool query belongs to its tuning part: the first 8 bytes of the SHA-256
    of its text, as a big-endian integer, modulo 100, below TUNING_PERCENT."""
    digest = hashlib.sha256(query.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 100 < TUNING_PERCENT


Part = Literal["all", "tuning", "held-out"]
_PART_SUFFIX: dict[str, str] = {"held-out": "", "tuning": ":tuning", "all": ":all"}


# --- livemcpbench ---------------------------------------------------------------------------

_LEADING_NUMBER = re.compile(r"^\s*\d+\s*[.)]")


def _gold_names(annotation: str) -> list[str]:
    """The protocol's step 3: the tool names listed in `Annotator Metadata.Tools`."""
    names = []
    for piece in re.split(r"[\n;]", annotation):
        name = _LEADING_NUMBER.sub("", piece, count=1).strip().strip("`'\"")
        if name:
            names.append(name)
    return names


def _steps(annotation: str) -> tuple[str, ...]:
    """The numbered steps of `Annotator Metadata.Steps`, numbers stripped, empty ones dropped."""
    steps = (_LEADING_NUMBER.sub("", line, count=1).strip() for line in annotation.splitlines())
    return tuple(step for step in steps if step)


def load_livemcpbench(folder: Path, *, steps: bool = False) -> Dataset:
    servers = _read_json(folder / "tools.json")
    allocator = SlugAllocator()
    catalogs: list[CatalogSource] = []
    ids_by_tool_name: dict[str, list[str]] = {}
    for server in servers:
        (key,) = server["config"]["mcpServers"]
        if key == _LIVEMCPBENCH_DROPPED_SERVER:
            continue
        catalog_name = allocator.allocate(key)
        # Tools are kept verbatim (null annotations and descriptions included), so the
        # catalog is exactly the server's tools/list answer.
        tools = server["tools"][key]["tools"]
        document = {
            "tools": tools,
            "_meta": {
                "capreg/title": server["name"],
                "capreg/description": server["description"],
            },
        }
        catalogs.append(CatalogSource(name=catalog_name, content=_dump(document), format="mcp"))
        for tool in tools:
            ids_by_tool_name.setdefault(tool["name"], []).append(f"{catalog_name}/{tool['name']}")
    queries = []
    for task in _read_json(folder / "all_annotations.json"):
        # A gold name counts on every server that has it; unknown names are ignored and a
        # task left without gold is dropped (protocol steps 4 and 6: 95 -> 94 queries).
        relevant = frozenset(
            tool_id
            for name in _gold_names(task["Annotator Metadata"]["Tools"])
            for tool_id in ids_by_tool_name.get(name, ())
        )
        # The steps split searches each annotated step on its own (a task without steps
        # keeps its question as its one step).
        task_steps = (
            (_steps(task["Annotator Metadata"]["Steps"]) or (task["Question"],)) if steps else ()
        )
        if relevant:
            queries.append(
                LabeledQuery(
                    id=task["task_id"], query=task["Question"], relevant=relevant, steps=task_steps
                )
            )
    name = "livemcpbench:steps" if steps else "livemcpbench"
    return Dataset(name=name, catalogs=tuple(catalogs), queries=tuple(queries))


# --- seal-tools -------------------------------------------------------------------------------

_SEAL_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _seal_input_schema(tool: Mapping[str, Any]) -> dict[str, object]:
    properties: dict[str, object] = {}
    for param_name, param in tool["parameters"].items():
        schema: dict[str, object] = {"type": _SEAL_TYPES[param["type"]]}
        schema["description"] = param["description"]
        # The few other per-parameter keys are mostly free-form notes ("examples" is even a
        # plain string at times, which JSON Schema forbids); only these two map cleanly.
        if "default" in param:
            schema["default"] = param["default"]
        if isinstance(param.get("choices"), list):
            schema["enum"] = param["choices"]
        properties[param_name] = schema
    return {"type": "object", "properties": properties, "required": list(tool["required"])}


def load_seal_tools(folder: Path, split: str) -> Dataset:
    tools = [
        {
            "name": tool["api_name"],
            "description": tool["api_description"],
            "input_schema": _seal_input_schema(tool),
            "tags": [tool["field"]],
        }
        for tool in _read_jsonl(folder / "tool.jsonl")
    ]
    catalog = _native_catalog(
        "seal-tools",
        "Seal-Tools: synthetic tools generated with self-instruct, one per api_name.",
        tools,
        title="Seal-Tools",
    )
    queries = tuple(
        LabeledQuery(
            id=row["id"],
            query=row["query"],
            relevant=frozenset(f"seal-tools/{call['api']}" for call in row["calling"]),
        )
        for row in _read_jsonl(folder / f"{split}.jsonl")
    )
    return Dataset(name=f"seal-tools:{split}", catalogs=(catalog,), queries=queries)


# --- stabletoolbench --------------------------------------------------------------------------

# RapidAPI's parameter types (looked up upper-cased: "string" occurs too). ENUM lists no
# values in this data, so it stays a string.
_RAPIDAPI_TYPES: dict[str, dict[str, object]] = {
    "STRING": {"type": "string"},
    "ENUM": {"type": "string"},
    "NUMBER": {"type": "number"},
    "BOOLEAN": {"type": "boolean"},
    "ARRAY": {"type": "array"},
    "OBJECT": {"type": "object"},
    "BINARY": {"type": "string", "format": "binary"},
    "DATE (YYYY-MM-DD)": {"type": "string", "format": "date"},
    "TIME (24-hour HH:MM)": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
}


def _rapidapi_input_schema(api: Mapping[str, Any]) -> dict[str, object]:
    properties: dict[str, object] = {}
    required: list[str] = []
    for is_required, params in (
        (True, api["required_parameters"]),
        (False, api["optional_parameters"]),
    ):
        for param in params:
            name = param["name"]
            if name in properties:
                continue  # two APIs list a parameter twice; the first (required) one wins
            # An unknown type is left open rather than guessed.
            schema = dict(_RAPIDAPI_TYPES.get(str(param["type"]).upper(), {}))
            if param["description"].strip():
                schema["description"] = param["description"]
            # RapidAPI marks "no default" with "".
            if param["default"] != "":
                schema["default"] = param["default"]
            properties[name] = schema
            if is_required:
                required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def load_stabletoolbench(folder: Path, part: Part = "all") -> Dataset:
    files = [(stem, _read_json(folder / f"{stem}.json")) for stem in _STABLETOOLBENCH_FILES]
    # Corpus = union of every api_list keyed by (tool_name, api_name), first definition wins.
    # One catalog per RapidAPI service (tool_name) keeps api names unique inside a catalog
    # ("Search" exists under many services) and carries the service name as the title.
    apis_by_service: dict[str, dict[str, Mapping[str, Any]]] = {}
    for _, rows in files:
        for row in rows:
            for api in row["api_list"]:
                apis_by_service.setdefault(api["tool_name"], {}).setdefault(api["api_name"], api)
    allocator = SlugAllocator()
    catalogs = []
    catalog_of: dict[str, str] = {}
    for service, apis in apis_by_service.items():
        catalog_name = catalog_of[service] = allocator.allocate(service)
        categories = list(dict.fromkeys(api["category_name"] for api in apis.values()))
        tools: list[dict[str, object]] = [
            {
                "name": api_name,
                "description": api["api_description"],
                "input_schema": _rapidapi_input_schema(api),
                "tags": [api["category_name"]],
            }
            for api_name, api in apis.items()
        ]
        description = f"RapidAPI service {service} (category: {', '.join(categories)})."
        catalogs.append(_native_catalog(catalog_name, description, tools, title=service))
    queries = tuple(
        LabeledQuery(
            id=f"{stem}:{row['query_id']}",
            query=row["query"],
            relevant=frozenset(
                f"{catalog_of[service]}/{api_name}" for service, api_name in row["relevant APIs"]
            ),
        )
        for stem, rows in files
        if part == "all" or (stem == STABLETOOLBENCH_TUNING_GROUP) == (part == "tuning")
        for row in rows
    )
    name = "stabletoolbench" + _PART_SUFFIX[part]
    return Dataset(name=name, catalogs=tuple(catalogs), queries=queries)


# --- metatool -------------------------------------------------------------------------------


def _metatool_catalog(folder: Path) -> CatalogSource:
    descriptions: dict[str, str] = _read_json(folder / "plugin_des.json")
    tools: list[dict[str, object]] = [
        {"name": name, "description": text, "input_schema": {"type": "object", "properties": {}}}
        for name, text in descriptions.items()
    ]
    return _native_catalog(
        "metatool",
        "MetaTool benchmark: ChatGPT plugins, described only in prose.",
        tools,
        title="MetaTool",
    )


def load_metatool(folder: Path, part: Part = "all") -> Dataset:
    queries = []
    seen: set[str] = set()
    with (folder / "all_clean_data.csv").open(encoding="utf-8", newline="") as handle:
        for row_number, row in enumerate(csv.DictReader(handle)):
            # 50 query strings repeat (64 extra rows), 11 with conflicting labels; a query
            # must have one label set, so the first row wins and later repeats are skipped.
            # The id is the 0-based data row of the CSV.
            if row["Query"] in seen:
                continue
            seen.add(row["Query"])
            if part != "all" and in_tuning_part(row["Query"]) != (part == "tuning"):
                continue
            queries.append(
                LabeledQuery(
                    id=f"metatool:{row_number}",
                    query=row["Query"],
                    relevant=frozenset({f"metatool/{row['Tool']}"}),
                )
            )
    name = "metatool" + _PART_SUFFIX[part]
    return Dataset(name=name, catalogs=(_metatool_catalog(folder),), queries=tuple(queries))


def load_metatool_multi(folder: Path) -> Dataset:
    queries = tuple(
        LabeledQuery(
            id=f"metatool-multi:{index}",
            query=row["query"],
            relevant=frozenset(f"metatool/{t}" for t in row["tool"]),
        )
        for index, row in enumerate(_read_json(folder / "multi_tool_query_golden.json"))
    )
    return Dataset(name="metatool-multi", catalogs=(_metatool_catalog(folder),), queries=queries)


# --- mcp-agentstyle -------------------------------------------------------------------------
# Real MCP servers' tools/list answers and hand-written requests that state a goal. Part A
# (developer and cloud tooling) is a tuning split; part B (business, productivity, commerce) is
# held out: it is loaded for reports only.
AGENTSTYLE_PARTS = {"tuning": "part-a", "held-out": "part-b"}
AGENTSTYLE_KINDS = ("paraphrase", "multi", "exact", "none")


def load_mcp_agentstyle(folder: Path, part: Literal["tuning", "held-out"]) -> Dataset:
    root = folder / AGENTSTYLE_PARTS[part]
    catalogs = tuple(
        CatalogSource(name=path.stem, content=path.read_text(encoding="utf-8"), format="mcp")
        for path in sorted((root / "catalogs").glob("*.json"))
    )
    name = "mcp-agentstyle" + (":tuning" if part == "tuning" else "")
    return Dataset(name=name, catalogs=catalogs, queries=_kinded_queries(root / "queries.jsonl"))


def _kinded_queries(path: Path) -> tuple[LabeledQuery, ...]:
    """The requests of a JSON-lines file in mcp-agentstyle's form: id, query, relevant ids and
    one of AGENTSTYLE_KINDS."""
    queries = []
    for row in _read_jsonl(path):
        if row["kind"] not in AGENTSTYLE_KINDS:
            raise ValueError(f"{path}: query {row['id']}: unknown kind {row['kind']!r}")
        queries.append(
            LabeledQuery(
                id=row["id"],
                query=row["query"],
                relevant=frozenset(row["relevant"]),
                kind=row["kind"],
            )
        )
    return tuple(queries)


# --- goal-requests ----------------------------------------------------------------------------
# Requests written for this project the way agents and their users ask (a goal, not the tool's
# words), over the bundled catalogs (business services: CRM, finance, HR, legal, support,
# identity, workspace, analytics, DevOps) and part A of mcp-agentstyle. Wholly a tuning set:
# never reported as a held-out figure. It is not in TUNING_SETS: docs/experiments.md records
# what fitting on it gave.
GOAL_REQUESTS = Path(__file__).parent / "goal_requests" / "requests.jsonl"
BUNDLED_CATALOGS = Path(__file__).resolve().parents[2] / "catalogs"


def load_goal_requests(
    folder: Path, *, requests: Path = GOAL_REQUESTS, bundled: Path = BUNDLED_CATALOGS
) -> Dataset:
    """`folder` is mcp-agentstyle's (its part A catalogs); `bundled` the repository's own."""
    part_a = load_mcp_agentstyle(folder, "tuning")
    own = tuple(
        _bundled_source(path)
        for path in sorted(bundled.iterdir())
        if path.suffix in (".json", ".yaml", ".yml")
    )
    catalogs = own + part_a.catalogs
    known = {source.name for source in catalogs}
    queries = _kinded_queries(requests)
    for query in queries:
        unknown = sorted(tool for tool in query.relevant if tool.partition("/")[0] not in known)
        if unknown:
            raise ValueError(f"{requests}: query {query.id}: unknown catalogs in {unknown}")
    return Dataset(name="goal-requests", catalogs=catalogs, queries=queries)


def _bundled_source(path: Path) -> CatalogSource:
    """A bundled catalog as JSON text in its own format (native YAML or an MCP tools list),
    named by its file stem as `capreg serve --catalogs` names it. (Loaders hand text to
    registration and do not parse formats: a native catalog is the one with `capreg: 1`.)"""
    document = load_document(path.read_text(encoding="utf-8"))
    native = isinstance(document, dict) and "capreg" in document
    return CatalogSource(
        name=path.stem, content=json.dumps(document), format="native" if native else "mcp"
    )
