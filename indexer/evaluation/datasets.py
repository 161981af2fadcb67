"""Loaders that turn the labeled public datasets into registrable catalogs and judged queries."""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATALOG_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?")
_MAX_CATALOG_NAME = 64
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


@dataclass(kw_only=True, frozen=True)
class Dataset:
    """A named benchmark: the catalogs to register and the labeled queries to run on them."""

    name: str
    catalogs: tuple[CatalogSource, ...]
    queries: tuple[LabeledQuery, ...]


def datasets_dir(configured: Path | str | None = None) -> Path:
    """`configured` (the CLI passes CAPREG_DATASETS), else ../shared/datasets seen from the
    working directory."""
    return Path(configured) if configured else Path.cwd() / ".." / "shared" / "datasets"


def slugify(text: str) -> str:
    """A catalog name made from free text: accents dropped, other runs of characters the
    name rule forbids become "-", no "__", at most 64 characters; "" if nothing is left."""
    decomposed = unicodedata.normalize("NFKD", text)
    ascii_ish = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_ish)
    slug = re.sub(r"_{2,}", "_", slug)
    return slug[:_MAX_CATALOG_NAME].strip("_-")


class _SlugAllocator:
    """Hands out catalog names that are valid and unique, even ignoring case."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

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


def _load_livemcpbench(folder: Path) -> Dataset:
    servers = _read_json(folder / "tools.json")
    allocator = _SlugAllocator()
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
        if relevant:
            queries.append(
                LabeledQuery(id=task["task_id"], query=task["Question"], relevant=relevant)
            )
    return Dataset(name="livemcpbench", catalogs=tuple(catalogs), queries=tuple(queries))


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


def _load_seal_tools(folder: Path, split: str) -> Dataset:
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


def _load_stabletoolbench(folder: Path) -> Dataset:
    files = [(stem, _read_json(folder / f"{stem}.json")) for stem in _STABLETOOLBENCH_FILES]
    # Corpus = union of every api_list keyed by (tool_name, api_name), first definition wins.
    # One catalog per RapidAPI service (tool_name) keeps api names unique inside a catalog
    # ("Search" exists under many services) and carries the service name as the title.
    apis_by_service: dict[str, dict[str, Mapping[str, Any]]] = {}
    for _, rows in files:
        for row in rows:
            for api in row["api_list"]:
                apis_by_service.setdefault(api["tool_name"], {}).setdefault(api["api_name"], api)
    allocator = _SlugAllocator()
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
        for row in rows
    )
    return Dataset(name="stabletoolbench", catalogs=tuple(catalogs), queries=queries)


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


def _load_metatool(folder: Path) -> Dataset:
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
            queries.append(
                LabeledQuery(
                    id=f"metatool:{row_number}",
                    query=row["Query"],
                    relevant=frozenset({f"metatool/{row['Tool']}"}),
                )
            )
    return Dataset(name="metatool", catalogs=(_metatool_catalog(folder),), queries=tuple(queries))


def _load_metatool_multi(folder: Path) -> Dataset:
    queries = tuple(
        LabeledQuery(
            id=f"metatool-multi:{index}",
            query=row["query"],
            relevant=frozenset(f"metatool/{t}" for t in row["tool"]),
        )
        for index, row in enumerate(_read_json(folder / "multi_tool_query_golden.json"))
    )
    return Dataset(name="metatool-multi", catalogs=(_metatool_catalog(folder),), queries=queries)


# --- entry point ------------------------------------------------------------------------------

_LOADERS: dict[str, tuple[str, Callable[[Path], Dataset]]] = {
    "livemcpbench": ("livemcpbench", _load_livemcpbench),
    "seal-tools:dev": ("seal-tools", lambda folder: _load_seal_tools(folder, "dev")),
    "seal-tools:test_in_domain": (
        "seal-tools",
        lambda folder: _load_seal_tools(folder, "test_in_domain"),
    ),
    "seal-tools:test_out_domain": (
        "seal-tools",
        lambda folder: _load_seal_tools(folder, "test_out_domain"),
    ),
    "stabletoolbench": ("stabletoolbench", _load_stabletoolbench),
    "metatool": ("metatool", _load_metatool),
    "metatool-multi": ("metatool", _load_metatool_multi),
}

DATASET_NAMES: tuple[str, ...] = tuple(_LOADERS)


def load_dataset(name: str, root: Path | str | None = None) -> Dataset:
    """Load one dataset by name (see DATASET_NAMES) from `root` (default: datasets_dir())."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)}")
    subfolder, loader = _LOADERS[name]
    base = datasets_dir(root)
    if not base.is_dir():
        raise FileNotFoundError(f"datasets folder not found: {base} (set CAPREG_DATASETS)")
    folder = base / subfolder
    if not folder.is_dir():
        raise FileNotFoundError(f"dataset {name!r} not found: no folder {folder}")
    return loader(folder)
