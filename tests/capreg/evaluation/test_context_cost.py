"""Context accounting: static grows with every turn, discovery re-sends only its own tools,
and the needed tools found are counted from what the searches returned."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from capreg.cli import main
from capreg.evaluation.context_cost import (
    ContextPlan,
    SizeResult,
    TaskCost,
    markdown,
    measure,
    pick_tasks,
    static_tokens,
)
from capreg.evaluation.sampler import Pool, PoolTool
from indexer.evaluation.datasets import LabeledQuery
from indexer.evaluation.tokens import count_tokens
from indexer.model import Tool
from mcp_bridge.accounting import BridgeExchanges
from registry.core import Registry

# A hand-made catalog of twelve unrelated tools in three catalogs: each task's needed tools
# are plainly what its words ask for, except one task labeled with a tool it never names.
TOOLS = {
    "weather": [
        ("get_forecast", "Returns the weather forecast for a city for the next five days."),
        ("get_air_quality", "Returns the air quality index and pollutants for a city."),
        ("get_sunrise", "Returns sunrise and sunset times for a place and date."),
        ("list_storm_warnings", "Lists active storm and flood warnings for a region."),
    ],
    "office": [
        ("send_email", "Sends an email message to one or more recipients."),
        ("create_event", "Creates a calendar event and invites attendees."),
        ("book_room", "Books a meeting room for a time slot."),
        ("translate_text", "Translates text from one language into another, e.g. French."),
    ],
    "money": [
        ("convert_currency", "Converts an amount between two currencies at today's rate."),
        ("get_stock_price", "Returns the latest price of a stock by ticker symbol."),
        ("pay_invoice", "Pays a supplier invoice from the company bank account."),
        ("list_transactions", "Lists bank account transactions in a date range."),
    ],
}
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TASKS = [
    LabeledQuery(
        id="forecast",
        query="what's the weather forecast in Paris this week",
        relevant=frozenset({"weather/get_forecast"}),
    ),
    LabeledQuery(
        id="translate-and-send",
        query="translate this text into French and email it to Bob",
        relevant=frozenset({"office/translate_text", "office/send_email"}),
    ),
    # Labeled with a tool the request does not ask for: the search must not be credited.
    LabeledQuery(
        id="mislabeled",
        query="book a meeting room for tomorrow at ten",
        relevant=frozenset({"money/convert_currency"}),
    ),
]


def tiny_pool() -> Pool:
    tools = [
        PoolTool(
            Tool(catalog=catalog, name=name, description=text, input_schema=SCHEMA),
            catalog.title(),
            f"{catalog.title()} tools",
        )
        for catalog, entries in TOOLS.items()
        for name, text in entries
    ]
    return Pool(tools=tools, tasks=TASKS, origin="a hand-made catalog")


def cost(static: int, bridge: int, discovery: int) -> TaskCost:
    return TaskCost(static=static, bridge=bridge, discovery=discovery, needed=2, found=1)


def test_static_grows_linearly_with_the_turns() -> None:
    result = SizeResult(size=15, costs=(cost(2_000, 400, 700), cost(1_000, 400, 500)))
    assert result.static(1) == 1_500
    assert [result.static(n) for n in (1, 5, 10)] == [1_500, 7_500, 15_000]


def test_discovery_re_sends_its_own_tools_but_counts_searches_and_schemas_once() -> None:
    result = SizeResult(size=15, costs=(cost(2_000, 400, 700), cost(1_000, 400, 500)))
    assert result.discovery(1) == 400 + 600
    assert result.discovery(10) == 10 * 400 + 600
    assert result.discovery(10) - result.discovery(5) == 5 * 400


def test_longer_sessions_save_more_once_discovery_is_cheaper_than_a_turn() -> None:
    result = SizeResult(size=15, costs=(cost(2_000, 400, 700),))
    reductions = [result.reduction(n) for n in (1, 5, 10, 100)]
    assert reductions == sorted(reductions)
    assert result.reduction(1) == pytest.approx(1 - 1_100 / 2_000)


def test_a_size_without_tasks_reports_no_reduction_and_no_share() -> None:
    empty = SizeResult(size=10, costs=())
    assert empty.tasks == 0
    assert empty.reduction(5) == 0.0
    assert empty.found == (0, 0)


def test_static_tokens_grow_with_every_definition() -> None:
    pool = tiny_pool().tools
    one = static_tokens(pool[:1], "o200k_base")
    two = static_tokens(pool[:2], "o200k_base")
    assert 0 < one < two
    assert count_tokens("hello world", "cl100k_base") == 2


def test_tasks_are_picked_only_when_their_tools_exist_and_fit() -> None:
    by_id = {item.tool.id: item for item in tiny_pool().tools}
    missing = LabeledQuery(id="m", query="q", relevant=frozenset({"weather/missing"}))
    chosen, gold = pick_tasks(random.Random(1), [TASKS[0], missing], by_id, 15)
    assert [t.id for t in chosen] == ["forecast"]
    assert gold == {"weather/get_forecast"}


def test_needed_tools_found_are_the_labeled_ones_among_the_hits(
    empty_registry: Registry,
) -> None:
    plan = ContextPlan(sizes=(12,), rounds=1, limit=1)
    report = measure(empty_registry, tiny_pool(), BridgeExchanges(), plan)
    [result] = report.results
    assert result.tasks == 3
    # forecast: its one tool; translate-and-send: one of two (limit 1); mislabeled: none.
    assert result.found == (2, 4)
    assert sorted(c.found for c in result.costs) == [0, 1, 1]
    static = {c.static for c in result.costs}
    assert len(static) == 1  # one catalog, so one static cost for all its tasks
    assert report.bridge == count_tokens(BridgeExchanges().tools_list(), "o200k_base")
    # The mislabeled task fetched no schema: its discovery is its search alone.
    assert min(c.discovery for c in result.costs) < max(c.discovery for c in result.costs)


def test_the_report_has_a_table_per_session_length_with_needed_tools_found(
    empty_registry: Registry,
) -> None:
    plan = ContextPlan(sizes=(12,), rounds=1, limit=1)
    report = measure(empty_registry, tiny_pool(), BridgeExchanges(), plan)
    text = "\n".join(markdown(report, (1, 5, 10)))
    assert "## One turn" in text
    assert "## A session of 5 turns" in text
    assert "## A session of 10 turns" in text
    assert text.count("50.0% (2 of 4)") == 3


def test_a_missing_datasets_folder_is_one_line_and_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.db"
    code = main(["context", "--datasets", str(tmp_path / "nowhere"), "--db", str(db)])
    assert code == 1
    err = capsys.readouterr().err
    assert "nowhere" in err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_a_catalogs_folder_needs_labeled_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "--catalogs", str(tmp_path), "--db", str(tmp_path / "c.db")]) == 1
    assert "--queries" in capsys.readouterr().err


@pytest.mark.model  # `capreg context` embeds the catalogs
def test_capreg_context_writes_the_report_it_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "catalogs"
    folder.mkdir()
    for catalog, entries in TOOLS.items():
        document = {
            "capreg": 1,
            "name": catalog,
            "description": f"{catalog.title()} tools",
            "tools": [
                {"name": name, "description": text, "input_schema": SCHEMA}
                for name, text in entries
            ],
        }
        (folder / f"{catalog}.json").write_text(json.dumps(document))
    queries = tmp_path / "tasks.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps({"id": t.id, "query": t.query, "relevant": sorted(t.relevant)})
            for t in TASKS
        )
    )
    out = tmp_path / "context.md"
    code = main(
        [
            "context",
            "--catalogs",
            str(folder),
            "--queries",
            str(queries),
            "--turns",
            "5,10",
            "--db",
            str(tmp_path / "c.db"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    written = out.read_text()
    assert written.strip() == printed.strip()
    assert "| 12 |" in written
    assert "## A session of 10 turns" in written


def test_a_dataset_and_a_catalogs_folder_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["context", "--catalogs", str(tmp_path), "--dataset", "livemcpbench", "--queries", "q"]
    )
    assert code == 1
    assert "exclude each other" in capsys.readouterr().err
