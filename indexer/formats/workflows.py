"""Declared workflows: read and checked against the catalog's tools, and the graph's warnings.

A workflow names its states, its initial state and the transitions between them: each names
the tool whose call moves the task on, the state it leads to (the same state for a lookup)
and, optionally, the scopes a caller must hold to be offered it and the argument values it
applies to (`when`: one review tool approves or rejects by its `decision` argument).

What would make a served answer wrong refuses the catalog: an unknown tool, a transition from
or to a state that is not declared (a dangling target), one call leading to two states. What
only makes the graph poor is a warning from `capreg lint` and registration: states that cannot
be reached from the initial one, and dead ends (non-terminal states nothing leads out of).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from indexer.formats.rules import (
    MAX_DESCRIPTION,
    MAX_STATES,
    MAX_TITLE,
    MAX_TRANSITIONS,
    MAX_WORKFLOWS,
    SCOPE,
    WORKFLOW_NAME,
)
from indexer.formats.validate import Checker
from indexer.model import Catalog, Tool, Transition, Workflow, WorkflowState, canonical_json

WORKFLOW_KEYS = frozenset({"name", "title", "description", "initial", "states", "transitions"})
STATE_KEYS = frozenset({"description", "terminal"})
TRANSITION_KEYS = frozenset({"from", "tool", "to", "scopes", "when"})
Scalar = str | int | float | bool | None


def read_workflows(
    check: Checker, value: object, tools: Mapping[str, Tool], label: str = "workflows"
) -> tuple[Workflow, ...]:
    """The catalog's workflows; every problem is named in `check` with where it is written."""
    if value is None:
        return ()
    if not isinstance(value, list):
        check.add(label, "must be a list of workflows ({name, initial, states, transitions})")
        return ()
    if len(value) > MAX_WORKFLOWS:
        check.add(label, f"must have at most {MAX_WORKFLOWS} workflows (has {len(value)})")
        return ()
    workflows: list[Workflow] = []
    for index, entry in enumerate(value):
        raw = entry.get("name") if isinstance(entry, dict) else None
        where = f"{label}[{index}] '{raw}'" if isinstance(raw, str) and raw else f"{label}[{index}]"
        workflow = _read_workflow(check, entry, tools, where)
        if workflow is None:
            continue
        if any(w.name == workflow.name for w in workflows):
            check.add(f"{where}.name", f"repeats the workflow name '{workflow.name}'")
            continue
        workflows.append(workflow)
    return tuple(workflows)


def _unknown_keys(
    check: Checker, entry: Mapping[str, Any], where: str, known: frozenset[str]
) -> None:
    unknown = sorted(str(key) for key in entry if key not in known)
    if unknown:
        check.add(
            where, f"unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(known))}"
        )


def _name(check: Checker, value: object, where: str, what: str) -> str | None:
    if not isinstance(value, str) or not WORKFLOW_NAME.fullmatch(value):
        shown = f"'{value[:80]}' " if isinstance(value, str) else ""
        check.add(where, f"{shown}must be a {what} name matching {WORKFLOW_NAME.pattern}")
        return None
    return value


def _read_workflow(
    check: Checker, entry: object, tools: Mapping[str, Tool], where: str
) -> Workflow | None:
    if not isinstance(entry, dict):
        check.add(where, "must be an object with name, initial, states and transitions")
        return None
    before = len(check.problems)
    _unknown_keys(check, entry, where, WORKFLOW_KEYS)
    name = _name(check, entry.get("name"), f"{where}.name", "workflow")
    title = check.text(entry, "title", where, limit=MAX_TITLE)
    description = check.text(entry, "description", where, limit=MAX_DESCRIPTION)
    states = _read_states(check, entry.get("states"), f"{where}.states")
    declared = {s.name for s in states}
    initial = _name(check, entry.get("initial"), f"{where}.initial", "state")
    if initial is not None and states and initial not in declared:
        check.add(f"{where}.initial", f"'{initial}' is not one of the workflow's states")
    transitions = _read_transitions(
        check, entry.get("transitions"), tools, declared, f"{where}.transitions"
    )
    if len(check.problems) > before or name is None or initial is None:
        return None
    return Workflow(
        name=name,
        title=title,
        description=description,
        initial=initial,
        states=states,
        transitions=transitions,
    )


def _read_states(check: Checker, value: object, where: str) -> tuple[WorkflowState, ...]:
    if not isinstance(value, dict) or not value:
        check.add(where, "is required: an object of state name -> {description, terminal}")
        return ()
    if len(value) > MAX_STATES:
        check.add(where, f"must have at most {MAX_STATES} states (has {len(value)})")
        return ()
    states = []
    for key, body in value.items():
        name = _name(check, key, f"{where}.{str(key)[:80]}", "state")
        if name is None:
            continue
        body = {} if body is None else body
        if not isinstance(body, dict):
            check.add(f"{where}.{name}", "must be an object {description, terminal} (or empty)")
            continue
        _unknown_keys(check, body, f"{where}.{name}", STATE_KEYS)
        terminal = body.get("terminal", False)
        if not isinstance(terminal, bool):
            check.add(f"{where}.{name}.terminal", "must be true or false")
            terminal = False
        description = check.text(body, "description", f"{where}.{name}", limit=MAX_TITLE * 5)
        states.append(WorkflowState(name=name, description=description, terminal=terminal))
    return tuple(states)


def _read_transitions(
    check: Checker,
    value: object,
    tools: Mapping[str, Tool],
    states: set[str],
    where: str,
) -> tuple[Transition, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        check.add(where, "must be a list of transitions ({from, tool, to, scopes})")
        return ()
    if len(value) > MAX_TRANSITIONS:
        check.add(where, f"must have at most {MAX_TRANSITIONS} transitions (has {len(value)})")
        return ()
    transitions: list[Transition] = []
    seen: dict[tuple[str, str, str], str] = {}
    for index, entry in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(entry, dict):
            check.add(at, "must be an object with from, tool and to")
            continue
        _unknown_keys(check, entry, at, TRANSITION_KEYS)
        tool = entry.get("tool")
        if not isinstance(tool, str) or tool not in tools:
            shown = f"'{tool[:80]}' " if isinstance(tool, str) else ""
            check.add(f"{at}.tool", f"{shown}must name a tool of this catalog")
            continue
        sources = entry.get("from")
        if isinstance(sources, str):
            sources = [sources]
        if not isinstance(sources, list) or not sources:
            check.add(f"{at}.from", "is required: a state, or a list of states")
            continue
        target = entry.get("to")
        scopes = frozenset(check.strings(entry.get("scopes"), f"{at}.scopes", pattern=SCOPE))
        when = _read_when(check, entry.get("when"), tools[tool], f"{at}.when")
        if target is not None and _state(check, target, states, f"{at}.to") is None:
            continue
        for source in sources:
            if _state(check, source, states, f"{at}.from") is None:
                continue
            key = (source, tool, canonical_json(when))
            if key in seen:
                check.add(
                    at,
                    f"'{tool}' with the same 'when' is already a move from '{source}' "
                    f"({seen[key]}): a call leads from one state to one state",
                )
                continue
            seen[key] = at
            transitions.append(
                Transition(
                    source=source,
                    tool=tool,
                    target=target if isinstance(target, str) else source,
                    scopes=scopes,
                    when=when,
                )
            )
    return tuple(transitions)


def _read_when(check: Checker, value: object, tool: Tool, where: str) -> dict[str, Scalar]:
    """Argument conditions: each key an input of the tool, each value a JSON scalar."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        check.add(where, 'must be an object of argument -> value ({"decision": "approve"})')
        return {}
    properties = tool.input_schema.get("properties")
    inputs = set(properties) if isinstance(properties, dict) else set()
    when: dict[str, Scalar] = {}
    for key, expected in value.items():
        if key not in inputs:
            check.add(f"{where}.{str(key)[:80]}", f"is not an input property of '{tool.name}'")
        elif isinstance(expected, dict | list):
            check.add(f"{where}.{key}", "must be a string, number, boolean or null")
        else:
            when[key] = expected
    return when


def _state(check: Checker, value: object, states: set[str], where: str) -> str | None:
    if not isinstance(value, str) or value not in states:
        shown = f"'{value[:80]}' " if isinstance(value, str) else ""
        declared = ", ".join(sorted(states)) or "none"
        check.add(where, f"{shown}is not a declared state (states: {declared})")
        return None
    return value


def workflow_warnings(catalog: Catalog) -> list[str]:
    """What `capreg lint` says about each workflow's graph (see the module docstring)."""
    return [
        f"workflow '{workflow.name}': {warning}"
        for workflow in catalog.workflows
        for warning in _graph_warnings(workflow)
    ]


def _graph_warnings(workflow: Workflow) -> Iterator[str]:
    reachable = reachable_states(workflow)
    for state in workflow.states:
        if state.name not in reachable:
            yield (
                f"state '{state.name}' cannot be reached from '{workflow.initial}'; add a "
                "transition to it or remove it"
            )
        onward = [t for t in workflow.leaving(state.name) if t.target != state.name]
        if not state.terminal and not onward:
            yield (
                f"state '{state.name}' is a dead end: no transition leaves it; mark it "
                "terminal: true or add a way on"
            )


def reachable_states(workflow: Workflow) -> set[str]:
    """The states a task can get to from the initial one."""
    seen = {workflow.initial}
    frontier = [workflow.initial]
    while frontier:
        state = frontier.pop()
        for transition in workflow.leaving(state):
            if transition.target not in seen:
                seen.add(transition.target)
                frontier.append(transition.target)
    return seen
