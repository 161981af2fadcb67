"""`capreg eval` end to end on small labeled data, and the BM25 anchor through the registry."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from capreg.cli import main
from capreg.evaluation.runner import CatalogRename, follow_renames, generic_catalogs
from indexer.evaluation.datasets import LabeledQuery
from registry.auth.keys import KeyStore, add_key
from registry.config import ServerConfig
from registry.core import Registry
from tests.conftest import DATA, self_signed_certificate, start_server

QUERIES = [
    {
        "id": "q1",
        "query": "will it rain tomorrow in Lyon",
        "relevant": ["mini/get_weather_forecast"],
    },
    {"id": "q2", "query": "how many yen is 30 euros", "relevant": ["mini/convert_currency"]},
    {"id": "q3", "query": "close my account for good", "relevant": ["mini/delete_account"]},
    {"id": "q4", "query": "compose a sonnet about the sea", "relevant": []},
]


@pytest.fixture
def queries_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini-queries.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    return path


@pytest.mark.model  # `capreg eval` embeds the catalog
def test_generic_catalogs_and_queries_produce_every_metric(
    queries_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, plot = tmp_path / "report.json", tmp_path / "recall.png"
    code = main(
        [
            "eval",
            "--catalog",
            str(DATA / "mini.yaml"),
            "--queries",
            str(queries_file),
            "--db",
            str(tmp_path / "eval.db"),
            "--json",
            str(out),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    reports = json.loads(out.read_text())
    assert [r["retriever"] for r in reports] == ["bm25", "dense", "default"]
    dense = reports[1]
    assert (dense["dataset"], dense["tools"], dense["queries"]) == ("mini-queries", 3, 3)
    for key in (
        "precision@1",
        "recall@5",
        "f1@5",
        "ndcg@10",
        "mrr",
        "precision@returned",
        "recall@returned",
        "f1@returned",
    ):
        assert 0.0 <= dense["metrics"][key] <= 1.0
    assert dense["metrics"]["recall@3"] == 1.0
    assert dense["none"]["queries"] == 1
    assert dense["none"]["flagged_weak"] == 1.0
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert "| dense |" in capsys.readouterr().out


def test_a_malformed_queries_file_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "query": "ok", "relevant": []}\n{"id": 2}\n')
    code = main(["eval", "--catalog", str(DATA / "mini.yaml"), "--queries", str(bad)])
    assert code == 1
    assert f"{bad}:2:" in capsys.readouterr().err


def test_an_unknown_dataset_folder_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "--dataset", "metatool", "--datasets", str(tmp_path / "nowhere")])
    assert code == 1
    assert "nowhere" in capsys.readouterr().err


@pytest.mark.datasets
@pytest.mark.model  # `capreg eval` opens its registry with the model
def test_livemcpbench_bm25_through_the_registry_matches_the_anchor_up_to_ties(
    tmp_path: Path,
) -> None:
    out = tmp_path / "bm25.json"
    main(
        [
            "eval",
            "--dataset",
            "livemcpbench",
            "--retriever",
            "bm25",
            "--db",
            str(tmp_path / "l.db"),
            "--json",
            str(out),
        ]
    )
    metrics = json.loads(out.read_text())["metrics"]
    shown = {k: round(v * 100, 2) for k, v in metrics.items()}
    # Published: P@1 28.72, nDCG@10 31.50, R@10 38.51, R@5 31.68. The registry breaks exact
    # score ties by id; the published run broke them otherwise. The README of docs/results
    # shows the tie analysis: every published figure lies between the tie bounds.
    assert shown["precision@1"] == 28.72
    assert shown["recall@10"] == 38.51
    assert shown["recall@5"] == 31.41
    assert shown["ndcg@10"] == 31.49


async def test_eval_measures_a_running_registry_over_grpc(
    empty_registry: Registry, queries_file: Path, tmp_path: Path
) -> None:
    server, address = await start_server(empty_registry)
    out = tmp_path / "remote.json"
    try:
        code = await asyncio.to_thread(
            main,
            [
                "eval",
                "--catalog",
                str(DATA / "mini.yaml"),
                "--queries",
                str(queries_file),
                "--server",
                address,
                "--retriever",
                "default",
                "--json",
                str(out),
            ],
        )
    finally:
        await server.stop(None)
    assert code == 0
    report = json.loads(out.read_text())
    assert (report["retriever"], report["tools"], report["queries"]) == ("default", 3, 3)
    assert report["metrics"]["recall@3"] == 1.0


async def test_eval_measures_a_registry_over_tls_with_a_key(
    empty_registry: Registry, queries_file: Path, tmp_path: Path
) -> None:
    """`--server` goes through registry.client, so TLS and API keys work as for every client."""
    cert, key = self_signed_certificate(tmp_path)
    keys_file = tmp_path / "keys.yaml"
    admin = add_key(keys_file, "evaluator", ["registry:admin", "*"])
    config = ServerConfig(listen="127.0.0.1:0", tls_cert=cert, tls_key=key)
    server, address = await start_server(empty_registry, config, KeyStore.load(keys_file))
    out = tmp_path / "tls.json"
    arguments = ["eval", "--catalog", str(DATA / "mini.yaml"), "--queries", str(queries_file)]
    arguments += ["--server", address.replace("127.0.0.1", "localhost"), "--ca-file", str(cert)]
    arguments += ["--api-key", admin, "--timeout", "10", "--retriever", "default"]
    arguments += ["--json", str(out)]
    try:
        code = await asyncio.to_thread(main, arguments)
        # The same call without the CA is refused by the handshake, and says so in one line.
        index = arguments.index("--ca-file")
        without_ca = arguments[:index] + arguments[index + 2 :]
        plain = await asyncio.to_thread(main, without_ca)
    finally:
        await server.stop(None)
    assert code == 0
    report = json.loads(out.read_text())
    assert (report["tools"], report["metrics"]["recall@3"]) == (3, 1.0)
    assert plain != 0


async def test_a_catalog_file_whose_stem_is_no_catalog_name_is_renamed_and_said_so(
    empty_registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Measured over gRPC: the registry's embedder is the session's model, not a second one."""
    catalog = tmp_path / "Weather Tools.json"
    catalog.write_bytes((DATA / "openai_tools.json").read_bytes())
    queries = tmp_path / "spaced.jsonl"
    judged = [
        ("what is the weather in Lyon right now", "Weather Tools/get_current_weather"),
        ("find me a flight from Paris to Rome", "Weather Tools/search_flights"),
        ("email Bob the meeting notes", "Weather Tools/send_email"),
    ]
    queries.write_text("".join(json.dumps({"query": q, "relevant": [r]}) + "\n" for q, r in judged))
    server, address = await start_server(empty_registry)
    out = tmp_path / "renamed.json"
    arguments = ["eval", "--catalog", str(catalog), "--queries", str(queries)]
    arguments += ["--server", address, "--retriever", "default", "--json", str(out)]
    try:
        code = await asyncio.to_thread(main, arguments)
    finally:
        await server.stop(None)
    assert code == 0
    assert (
        "--catalog 'Weather Tools.json': registered as catalog 'Weather-Tools'\n"
        in capsys.readouterr().err
    )
    assert [c.name for c in empty_registry.catalogs()] == ["Weather-Tools"]
    # Scored against the renamed catalog: the ids under the old stem were followed.
    assert json.loads(out.read_text())["metrics"]["recall@3"] == 1.0


def test_relevant_ids_naming_a_renamed_stem_follow_the_new_name(tmp_path: Path) -> None:
    rename = CatalogRename(path=tmp_path / "my.server.json", stem="my.server", name="my-server")
    query = LabeledQuery(
        id="1",
        query="q",
        relevant=frozenset({"my.server/ping", "my.server/a/b", "mini/ping", "my.server"}),
    )
    (followed,) = follow_renames([query], [rename])
    assert followed.relevant == {"my-server/ping", "my-server/a/b", "mini/ping", "my.server"}
    assert (followed.id, followed.query) == ("1", "q")


def test_a_renamed_catalog_never_takes_a_name_another_file_keeps(tmp_path: Path) -> None:
    tools = (DATA / "openai_tools.json").read_bytes()
    for stem in ("a b", "a-b", "A_B"):
        (tmp_path / f"{stem}.json").write_bytes(tools)
    (tmp_path / "native.yaml").write_bytes((DATA / "mini.yaml").read_bytes())
    sources, renames = generic_catalogs([tmp_path])
    assert sorted(s.name for s in sources) == ["", "A_B", "a-b", "a-b-2"]
    assert [(r.path.name, r.stem, r.name) for r in renames] == [("a b.json", "a b", "a-b-2")]


@pytest.mark.parametrize(
    ("stem", "content", "problem"),
    [
        ("%%%", b'{"tools": []}', "no valid catalog name can be made from '%%%'"),
        ("鸣潮", b'{"tools": []}', "no valid catalog name can be made from"),
        ("latin1", b'{"tools": [{"name": "caf\xe9"}]}', "not UTF-8 text"),
    ],
)
def test_a_catalog_file_evaluation_cannot_use_fails_in_one_line(
    stem: str,
    content: bytes,
    problem: str,
    queries_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    catalog = tmp_path / f"{stem}.json"
    catalog.write_bytes(content)
    code = main(["eval", "--catalog", str(catalog), "--queries", str(queries_file)])
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"capreg: --catalog {catalog}: ")
    assert problem in err
    if "catalog name" in problem:
        assert "rename the file, or make it a native catalog with a `name:`" in err
