"""Workflow declarations: what refuses a catalog, what lint warns about, and the MCP form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from indexer.formats import CatalogError, parse_catalog
from indexer.formats.lint import lint_catalog
from indexer.model import Transition

REVIEW = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "reject"], "description": "Verdict"}
    },
}
TOOLS = [
    {"name": "open_claim", "description": "Opens a claim.", "input_schema": {"type": "object"}},
    {"name": "get_claim", "description": "Reads a claim.", "input_schema": {"type": "object"}},
    {"name": "review_claim", "description": "Reviews a claim.", "input_schema": REVIEW},
    {"name": "pay_claim", "description": "Pays a claim.", "input_schema": {"type": "object"}},
]


def claims_flow(**changes: Any) -> dict[str, Any]:
    flow: dict[str, Any] = {
        "name": "claim_handling",
        "title": "Claim handling",
        "initial": "draft",
        "states": {
            "draft": {},
            "open": {"description": "Waiting for review"},
            "approved": {},
            "rejected": {"terminal": True},
            "paid": {"terminal": True},
        },
        "transitions": [
            {"from": "draft", "tool": "open_claim", "to": "open"},
            {"from": ["open", "approved"], "tool": "get_claim"},
            {
                "from": "open",
                "tool": "review_claim",
                "when": {"decision": "approve"},
                "to": "approved",
            },
            {
                "from": "open",
                "tool": "review_claim",
                "when": {"decision": "reject"},
                "to": "rejected",
            },
            {"from": "approved", "tool": "pay_claim", "to": "paid", "scopes": ["claims:pay"]},
        ],
    }
    flow.update(changes)
    return flow


def catalog_text(*workflows: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "capreg": 1,
            "name": "claims",
            "description": "Insurance claims.",
            "tools": TOOLS,
            "workflows": list(workflows),
        },
        sort_keys=False,
    )


def problems(*workflows: dict[str, Any]) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(catalog_text(*workflows))
    return caught.value.problems


def test_a_declared_workflow_keeps_its_states_transitions_guards_and_conditions() -> None:
    [flow] = parse_catalog(catalog_text(claims_flow())).workflows
    assert flow.name == "claim_handling"
    assert flow.initial == "draft"
    assert [s.name for s in flow.states] == ["draft", "open", "approved", "rejected", "paid"]
    assert [s.name for s in flow.states if s.terminal] == ["rejected", "paid"]
    assert flow.leaving("open") == (
        Transition(source="open", tool="get_claim", target="open"),
        Transition(
            source="open", tool="review_claim", target="approved", when={"decision": "approve"}
        ),
        Transition(
            source="open", tool="review_claim", target="rejected", when={"decision": "reject"}
        ),
    )
    [pay] = flow.leaving("approved")[1:]
    assert pay.scopes == frozenset({"claims:pay"})


def test_a_transition_without_to_keeps_the_state() -> None:
    [flow] = parse_catalog(catalog_text(claims_flow())).workflows
    assert [t.target for t in flow.transitions if t.tool == "get_claim"] == ["open", "approved"]


def test_a_transition_naming_an_unknown_tool_refuses_the_catalog() -> None:
    flow = claims_flow(transitions=[{"from": "draft", "tool": "fly_away", "to": "open"}])
    assert problems(flow) == [
        "workflows[0] 'claim_handling'.transitions[0].tool: 'fly_away' must name a tool of this "
        "catalog"
    ]


def test_a_dangling_target_refuses_the_catalog_and_lint_names_it() -> None:
    flow = claims_flow(transitions=[{"from": "draft", "tool": "open_claim", "to": "limbo"}])
    [problem] = problems(flow)
    assert "transitions[0].to: 'limbo' is not a declared state" in problem
    findings = lint_catalog(catalog_text(flow))
    assert [f.severity for f in findings if "limbo" in f.message] == ["error"]


def test_a_transition_from_an_undeclared_state_refuses_the_catalog() -> None:
    flow = claims_flow(transitions=[{"from": "nowhere", "tool": "open_claim", "to": "open"}])
    [problem] = problems(flow)
    assert "transitions[0].from: 'nowhere' is not a declared state" in problem


def test_an_initial_state_that_is_not_declared_refuses_the_catalog() -> None:
    [problem] = problems(claims_flow(initial="start"))
    assert (
        problem
        == "workflows[0] 'claim_handling'.initial: 'start' is not one of the workflow's states"
    )


def test_one_call_leading_to_two_states_refuses_the_catalog() -> None:
    flow = claims_flow(
        transitions=[
            {"from": "draft", "tool": "open_claim", "to": "open"},
            {"from": "draft", "tool": "open_claim", "to": "approved"},
        ]
    )
    [problem] = problems(flow)
    assert "'open_claim' with the same 'when' is already a move from 'draft'" in problem


def test_a_condition_on_an_argument_the_tool_does_not_take_refuses_the_catalog() -> None:
    flow = claims_flow(
        transitions=[{"from": "open", "tool": "review_claim", "when": {"verdict": "yes"}}]
    )
    [problem] = problems(flow)
    assert problem.endswith("when.verdict: is not an input property of 'review_claim'")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"name": "Claim Handling"}, ".name: 'Claim Handling' must be a workflow name"),
        ({"states": {}}, ".states: is required"),
        ({"states": {"Draft!": {}}}, "must be a state name"),
        ({"states": {"draft": {"terminal": "yes"}}}, ".terminal: must be true or false"),
        ({"states": {"draft": {"colour": "red"}}}, "unknown key(s) colour"),
        ({"transitions": {"from": "draft"}}, ".transitions: must be a list of transitions"),
        ({"steps": []}, "unknown key(s) steps"),
    ],
)
def test_malformed_workflows_are_refused_naming_the_entry(
    changes: dict[str, Any], expected: str
) -> None:
    assert any(expected in problem for problem in problems(claims_flow(**changes)))


def test_two_workflows_with_one_name_are_refused() -> None:
    assert any("repeats the workflow name" in p for p in problems(claims_flow(), claims_flow()))


def test_lint_warns_about_unreachable_states_and_dead_ends_but_not_terminal_ones() -> None:
    flow = claims_flow()
    flow["states"] = {**flow["states"], "archived": {}, "stuck": {}}
    flow["transitions"] = [
        *flow["transitions"],
        {"from": "open", "tool": "open_claim", "to": "stuck"},
    ]
    warnings = [f.message for f in lint_catalog(catalog_text(flow)) if f.severity == "warning"]
    assert warnings == [
        "workflow 'claim_handling': state 'archived' cannot be reached from 'draft'; add a "
        "transition to it or remove it",
        "workflow 'claim_handling': state 'archived' is a dead end: no transition leaves it; "
        "mark it terminal: true or add a way on",
        "workflow 'claim_handling': state 'stuck' is a dead end: no transition leaves it; mark "
        "it terminal: true or add a way on",
    ]


def test_a_state_left_only_by_lookups_is_a_dead_end() -> None:
    flow = claims_flow()
    flow["transitions"] = [
        {"from": "draft", "tool": "open_claim", "to": "open"},
        {"from": "open", "tool": "get_claim"},
    ]
    flow["states"] = {"draft": {}, "open": {}}
    warnings = [f.message for f in lint_catalog(catalog_text(flow)) if f.severity == "warning"]
    assert warnings == [
        "workflow 'claim_handling': state 'open' is a dead end: no transition leaves it; mark "
        "it terminal: true or add a way on"
    ]


def test_an_mcp_tools_list_declares_workflows_in_its_meta() -> None:
    listing = {
        "_meta": {"capreg/workflows": [claims_flow()]},
        "tools": [
            {"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
            for t in TOOLS
        ],
    }
    catalog = parse_catalog(json.dumps(listing), name="claims", fmt="mcp")
    assert [w.name for w in catalog.workflows] == ["claim_handling"]
    broken = {**listing, "_meta": {"capreg/workflows": [claims_flow(initial="start")]}}
    with pytest.raises(CatalogError, match=r"_meta.capreg/workflows\[0\]"):
        parse_catalog(json.dumps(broken), name="claims", fmt="mcp")


def test_the_bundled_catalogs_declare_workflows_that_lint_clean() -> None:
    folder = Path(__file__).parents[3] / "catalogs"
    flows = {}
    for path in sorted(folder.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        flows[path.stem] = [w.name for w in parse_catalog(text).workflows]
        assert [f for f in lint_catalog(text) if "workflow" in f.message] == []
    assert flows["support"] == ["ticket_triage"]
    assert flows["finance"] == ["expense_approval"]
