"""Dataset loaders over the real shared datasets: counts, ids, catalog shapes and quirks kept."""

from __future__ import annotations

import csv
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from indexer.evaluation.catalog_names import CATALOG_NAME_RE, slugify
from indexer.evaluation.datasets import DATASET_NAMES, Dataset, datasets_dir, load_dataset
from indexer.evaluation.loaders import (
    STABLETOOLBENCH_TUNING_GROUP,
    TUNING_PERCENT,
    in_tuning_part,
)
from tests.conftest import DATASETS

pytestmark = pytest.mark.datasets


@cache
def _dataset(name: str) -> Dataset:
    return load_dataset(name, DATASETS)


@cache
def _parsed(name: str) -> dict[str, dict[str, Any]]:
    """Catalog name -> parsed catalog document."""
    return {c.name: json.loads(c.content) for c in _dataset(name).catalogs}


def _tool_ids(name: str) -> list[str]:
    return [
        f"{catalog}/{tool['name']}"
        for catalog, document in _parsed(name).items()
        for tool in document["tools"]
    ]


def _raw(relative: str) -> Any:
    return json.loads((DATASETS / relative).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "tools", "queries"),
    [
        ("livemcpbench", 525, 94),
        ("seal-tools:dev", 4076, 700),
        ("seal-tools:test_in_domain", 4076, 700),
        ("seal-tools:test_out_domain", 4076, 654),
        ("stabletoolbench:all", 2479, 765),
        ("stabletoolbench", 2479, 607),
        ("stabletoolbench:tuning", 2479, 158),
        # 20,614 rows less 64 repeats of an earlier query string (first label kept).
        ("metatool:all", 199, 20550),
        ("metatool", 199, 16555),
        ("metatool:tuning", 199, 3995),
        ("metatool-multi", 199, 497),
        ("livemcpbench:steps", 525, 94),
        ("mcp-agentstyle:tuning", 316, 174),
        ("mcp-agentstyle", 295, 162),
        # The bundled catalogs (300 tools) and part A's servers (316).
        ("goal-requests", 616, 785),
    ],
)
def test_each_dataset_has_its_published_tool_and_query_counts(
    name: str, tools: int, queries: int
) -> None:
    assert len(_tool_ids(name)) == tools
    assert len(_dataset(name).queries) == queries


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_every_gold_id_names_a_tool_in_the_catalogs(name: str) -> None:
    known = set(_tool_ids(name))
    for query in _dataset(name).queries:
        # Only a request labelled "none" may have no gold: nothing in its corpus serves it.
        assert query.relevant or query.kind == "none", query.id
        assert query.relevant <= known, query.id


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        ("mcp-agentstyle:tuning", {"paraphrase": 100, "multi": 37, "exact": 12, "none": 25}),
        ("mcp-agentstyle", {"paraphrase": 85, "multi": 37, "exact": 12, "none": 28}),
        ("goal-requests", {"paraphrase": 500, "multi": 200, "none": 85}),
    ],
)
def test_the_agentstyle_parts_label_each_request_with_its_kind(
    name: str, kinds: dict[str, int]
) -> None:
    queries = _dataset(name).queries
    assert Counter(q.kind for q in queries) == kinds
    assert all(not q.relevant for q in queries if q.kind == "none")


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_tool_ids_and_query_ids_are_unique(name: str) -> None:
    ids = _tool_ids(name)
    assert len(set(ids)) == len(ids)
    query_ids = [q.id for q in _dataset(name).queries]
    assert len(set(query_ids)) == len(query_ids)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_catalog_and_tool_names_follow_the_catalog_rules(name: str) -> None:
    catalogs = _dataset(name).catalogs
    assert len({c.name.casefold() for c in catalogs}) == len(catalogs)
    for catalog in catalogs:
        assert CATALOG_NAME_RE.fullmatch(catalog.name), catalog.name
        assert "__" not in catalog.name
        for tool in _parsed(name)[catalog.name]["tools"]:
            tool_name = tool["name"]
            assert 1 <= len(tool_name) <= 128
            assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in tool_name)


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_catalogs_have_the_shape_of_their_declared_format(name: str) -> None:
    for catalog in _dataset(name).catalogs:
        document = _parsed(name)[catalog.name]
        if catalog.format == "native":
            assert document["capreg"] == 1
            assert document["name"] == catalog.name
            assert isinstance(document["description"], str)
            assert len(document["description"]) <= 2000
            for tool in document["tools"]:
                assert isinstance(tool["description"], str)
                assert len(tool["description"]) <= 8192
                assert tool["input_schema"]["type"] == "object"
        else:
            assert catalog.format == "mcp"
            for tool in document["tools"]:
                assert tool["inputSchema"]["type"] == "object"


def test_livemcpbench_drops_bing_and_keeps_server_order() -> None:
    keys = [next(iter(s["config"]["mcpServers"])) for s in _raw("livemcpbench/tools.json")]
    assert keys[0] == "bing-cn-mcp"
    assert [c.name for c in _dataset("livemcpbench").catalogs] == [slugify(k) for k in keys[1:]]


def test_livemcpbench_slugs_the_server_key_with_spaces() -> None:
    names = [c.name for c in _dataset("livemcpbench").catalogs]
    assert "Ant-Design-Components" in names
    assert "Ant Design Components" not in names


def test_livemcpbench_catalogs_are_the_servers_tool_lists_verbatim() -> None:
    parsed = _parsed("livemcpbench")
    for server in _raw("livemcpbench/tools.json")[1:]:
        key = next(iter(server["config"]["mcpServers"]))
        document = parsed[slugify(key)]
        assert document["_meta"] == {
            "capreg/title": server["name"],
            "capreg/description": server["description"],
        }
        expected = server["tools"][key]["tools"]
        assert document["tools"] == expected
        assert [list(t) for t in document["tools"]] == [list(t) for t in expected]


def test_livemcpbench_empty_descriptions_are_three_empty_strings_and_sixteen_nulls() -> None:
    descriptions = [
        tool.get("description", "missing")
        for document in _parsed("livemcpbench").values()
        for tool in document["tools"]
    ]
    assert descriptions.count("") == 3
    assert descriptions.count(None) == 16
    assert "missing" not in descriptions


def test_livemcpbench_gold_names_count_on_every_server_that_has_them() -> None:
    queries = {q.query: q for q in _dataset("livemcpbench").queries}
    task = next(
        t
        for t in _raw("livemcpbench/all_annotations.json")
        if "whois_domain\n2. get_sitemap_tree" in t["Annotator Metadata"]["Tools"]
    )
    assert queries[task["Question"]].relevant == {
        "whois/whois_domain",
        "sitemap/get_sitemap_tree",
        "desktop-commander/write_file",
        "filesystem/write_file",
    }


def test_seal_tools_parameters_become_a_json_schema_object() -> None:
    tools = {t["name"]: t for t in _parsed("seal-tools:dev")["seal-tools"]["tools"]}
    tool = tools["validatePassword"]
    assert tool["input_schema"]["properties"]["min_length"] == {
        "type": "integer",
        "description": "The minimum length of the password",
        "default": 8,
    }
    assert tool["input_schema"]["properties"]["require_special_char"]["type"] == "boolean"
    assert tools["analyzeEvidence"]["input_schema"]["required"] == [
        "evidence_type",
        "method",
        "sample",
    ]
    assert tools["analyzeEvidence"]["tags"] == ["Chemical Engineering/Forensic engineering"]


def test_seal_tools_gold_is_the_set_of_called_apis() -> None:
    query = next(q for q in _dataset("seal-tools:dev").queries if q.id == "dev-easy-0")
    assert query.relevant == {"seal-tools/getHealthWorkforce"}


def test_stabletoolbench_has_one_catalog_per_service_titled_with_its_name() -> None:
    parsed = _parsed("stabletoolbench")
    assert len(parsed) == 811
    assert parsed["Vimeo"]["title"] == "Vimeo"
    assert parsed["Demo-Project"]["title"] == "👋 Demo Project"


def test_stabletoolbench_keeps_spaces_in_api_names_and_the_first_definition() -> None:
    rows = _raw("stabletoolbench/G1_tool.json")
    first = next(
        api
        for row in rows
        for api in row["api_list"]
        if (api["tool_name"], api["api_name"]) == ("Currency Converter_v2", "Convert")
    )
    tools = {t["name"]: t for t in _parsed("stabletoolbench")["Currency-Converter_v2"]["tools"]}
    assert tools["Convert"]["description"] == first["api_description"]
    assert any(" " in t["name"] for d in _parsed("stabletoolbench").values() for t in d["tools"])


def test_stabletoolbench_parameters_keep_types_descriptions_and_required() -> None:
    tools = {t["name"]: t for t in _parsed("stabletoolbench")["Vimeo"]["tools"]}
    schema = tools["SearchVideos"]["input_schema"]
    assert schema["required"] == ["format", "query"]
    assert schema["properties"]["page"] == {
        "type": "number",
        "description": "The page number to show.",
    }
    assert schema["properties"]["summary_response"]["type"] == "boolean"


def test_stabletoolbench_query_ids_carry_the_file_stem() -> None:
    ids = [q.id for q in _dataset("stabletoolbench:all").queries]
    assert {i.split(":")[0] for i in ids} == {
        "G1_instruction",
        "G1_category",
        "G1_tool",
        "G2_instruction",
        "G2_category",
        "G3_instruction",
    }


@pytest.mark.parametrize("family", ["metatool", "stabletoolbench"])
def test_the_tuning_and_held_out_parts_split_the_whole_set_without_overlap(family: str) -> None:
    whole = {q.id: q for q in _dataset(f"{family}:all").queries}
    tuning = {q.id for q in _dataset(f"{family}:tuning").queries}
    held_out = {q.id for q in _dataset(family).queries}
    assert not tuning & held_out
    assert tuning | held_out == set(whole)
    # No request text sits on both sides (MetaTool repeats some).
    assert not {whole[i].query for i in tuning} & {whole[i].query for i in held_out}


def test_the_metatool_tuning_part_is_the_hashed_fifth_by_query_text() -> None:
    tuning = _dataset("metatool:tuning").queries
    assert all(in_tuning_part(q.query) for q in tuning)
    assert not any(in_tuning_part(q.query) for q in _dataset("metatool").queries)
    share = len(tuning) / len(_dataset("metatool:all").queries)
    assert abs(share - TUNING_PERCENT / 100) < 0.01


def test_the_stabletoolbench_tuning_part_is_one_group() -> None:
    groups = {q.id.split(":")[0] for q in _dataset("stabletoolbench:tuning").queries}
    assert groups == {STABLETOOLBENCH_TUNING_GROUP}


def test_livemcpbench_steps_are_the_annotated_steps_without_numbers() -> None:
    tasks = {t["task_id"]: t for t in _raw("livemcpbench/all_annotations.json")}
    for query in _dataset("livemcpbench:steps").queries:
        annotated = tasks[query.id]["Annotator Metadata"]["Steps"]
        assert query.steps
        assert all(step in annotated and not step[0].isdigit() for step in query.steps)
    plain = _dataset("livemcpbench").queries
    assert [q.relevant for q in plain] == [
        q.relevant for q in _dataset("livemcpbench:steps").queries
    ]


def test_metatool_keeps_the_first_label_of_a_repeated_query() -> None:
    path = DATASETS / "metatool" / "all_clean_data.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    first_label: dict[str, str] = {}
    for row in rows:
        first_label.setdefault(row["Query"], row["Tool"])
    queries = _dataset("metatool:all").queries
    assert len(queries) == len(first_label)
    for query in queries:
        assert query.relevant == {f"metatool/{first_label[query.query]}"}


def test_metatool_multi_queries_have_two_gold_tools() -> None:
    assert all(len(q.relevant) == 2 for q in _dataset("metatool-multi").queries)


def test_an_unknown_dataset_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown dataset 'toolbench'.*livemcpbench"):
        load_dataset("toolbench", DATASETS)


def test_a_missing_datasets_folder_is_named_in_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_dataset("livemcpbench", missing)
    with pytest.raises(FileNotFoundError, match="livemcpbench"):
        load_dataset("livemcpbench", tmp_path)


def test_the_datasets_folder_is_the_configured_one_else_the_shared_one(tmp_path: Path) -> None:
    assert datasets_dir(tmp_path) == tmp_path
    assert datasets_dir(str(tmp_path)) == tmp_path
    assert datasets_dir(None) == Path.cwd() / ".." / "shared" / "datasets"


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Ant Design Components", "Ant-Design-Components"),
        ("👋 Demo Project_v2", "Demo-Project_v2"),
        ("Números a Letras", "Numeros-a-Letras"),
        ("a__b", "a_b"),
        ("-x-", "x"),
        ("鸣潮", ""),
        ("y" * 80, "y" * 64),
    ],
)
def test_slugify_makes_valid_catalog_names(text: str, slug: str) -> None:
    assert slugify(text) == slug
