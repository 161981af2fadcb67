"""The travel scenario of bench/affordances.py: its catalogs lint clean, every scripted task is
a legal path through trip_booking on a real registry, and only the static side grows with the
catalog."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from bench.affordances import (
    PUBLISHED,
    ScenarioCount,
    ScriptError,
    Step,
    Task,
    count_scenario,
    load_tasks,
)
from indexer.embedding import Embedder
from indexer.formats import parse_catalog
from indexer.formats.lint import lint_catalog

TASKS = load_tasks()


@pytest.fixture(scope="module")
def counted(model: Embedder) -> dict[str, ScenarioCount]:
    return {name: count_scenario(name, model, TASKS) for name in PUBLISHED}


def task(*steps: tuple[str, Mapping[str, object]]) -> Task:
    return Task(
        name="scripted",
        request="",
        workflow="trip_booking",
        steps=tuple(Step(tool=tool, arguments=arguments) for tool, arguments in steps),
    )


SEARCH: tuple[str, Mapping[str, object]] = (
    "search_flights",
    {"origin": "LHR", "destination": "JFK", "departure_date": "2026-12-03", "adults": 1},
)
OFFER: tuple[str, Mapping[str, object]] = ("get_flight_offer", {"offer_id": "off_1"})


@pytest.mark.parametrize("scenario", sorted(PUBLISHED))
def test_the_scenario_catalogs_lint_without_errors_or_warnings(scenario: str) -> None:
    path, _ = PUBLISHED[scenario]
    assert lint_catalog(path.read_text(encoding="utf-8")) == []


def test_the_wide_catalog_widens_the_small_one_around_the_same_workflow() -> None:
    small, wide = (
        parse_catalog(PUBLISHED[name][0].read_text(encoding="utf-8"))
        for name in ("travel-7", "travel-35")
    )
    assert (len(small.tools), len(wide.tools)) == (7, 35)
    by_name = {tool.name: tool for tool in wide.tools}
    assert [by_name[tool.name] for tool in small.tools] == list(small.tools)
    assert wide.workflows == small.workflows
    assert all(tool.output_schema for tool in wide.tools)


def test_every_scripted_task_is_a_legal_path_to_a_terminal_state(
    counted: dict[str, ScenarioCount],
) -> None:
    for scenario in counted.values():
        ends = [count.states[-1] for count in scenario.tasks]
        assert ends == ["booked", "cancelled", "booked", "booked"]
        assert [len(count.states) - 1 for count in scenario.tasks] == [len(t.steps) for t in TASKS]


def test_the_arguments_of_cancel_booking_decide_whether_the_booking_is_cancelled(
    counted: dict[str, ScenarioCount],
) -> None:
    cancelled = next(c for c in counted["travel-7"].tasks if c.task == "book_then_cancel")
    # The refund quote (confirm: false) keeps the booking; confirm: true cancels it.
    assert cancelled.states[-3:] == ("booked", "booked", "cancelled")


def test_a_step_that_is_not_a_legal_move_stops_the_run_naming_it(model: Embedder) -> None:
    illegal = task(
        SEARCH,
        (
            "book_flight",
            {"quote_id": "q", "amount": 1, "currency": "GBP", "payment": {"type": "balance"}},
        ),
    )
    with pytest.raises(
        ScriptError, match=r"step 2 \(book_flight in state 'searching'\).*legal moves"
    ):
        count_scenario("travel-7", model, [illegal])


def test_a_step_whose_arguments_the_tool_refuses_stops_the_run(model: Embedder) -> None:
    with pytest.raises(ScriptError, match=r"step 2 .*arguments the tool refuses"):
        count_scenario("travel-7", model, [task(SEARCH, ("get_flight_offer", {}))])


def test_a_task_left_in_a_state_that_is_not_terminal_is_refused(model: Embedder) -> None:
    with pytest.raises(ScriptError, match="ends in state 'offer_selected'"):
        count_scenario("travel-7", model, [task(SEARCH, OFFER)])


def test_static_tokens_grow_with_the_catalog_while_affordance_tokens_do_not(
    counted: dict[str, ScenarioCount],
) -> None:
    small, wide = counted["travel-7"], counted["travel-35"]
    for seven, thirty_five in zip(small.tasks, wide.tasks, strict=True):
        assert abs(thirty_five.affordances - seven.affordances) <= 0.03 * seven.affordances
        assert thirty_five.static > seven.static
        assert seven.affordances < seven.static
    assert 1 < small.ratio < wide.ratio
