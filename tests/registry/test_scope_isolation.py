"""What a caller observes is a function of what it may see: registering, changing or deleting a
catalog it may not see never changes any response it gets (hits, scores, order, similarity,
weak_match, generation, listings, schemas)."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.auth.scopes import Grants
from registry.core import Registry

CALLER = Grants.parse(["hr:read", "support:read", "support:write"])
QUERIES = (
    "open a support ticket for a customer",
    "look up an employee's manager and start date",
    "check the status of ticket 4411, then email the customer a summary",
    "approve a leave request",
)
VISIBLE_IDS = ["support/create_ticket", "hr/get_employee"]
# Words of the caller's own requests: a hidden catalog full of them is the hardest case, as
# it would shift word weights and score scales if they were computed over every tool.
WORDS = sorted({w for q in QUERIES for w in q.replace(",", "").split()} | {"ticket", "leave"})

hidden_tools = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.from_regex(r"[a-z]{3,10}_[a-z]{3,10}", fullmatch=True),
            "description": st.lists(st.sampled_from(WORDS), min_size=3, max_size=12).map(" ".join),
        }
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda tool: tool["name"],
)
actions = st.lists(
    st.tuples(st.sampled_from(["register", "change", "delete"]), hidden_tools),
    min_size=1,
    max_size=3,
)


def hidden_catalog(tools: list[dict[str, str]], serial: int) -> str:
    for tool in tools:
        tool["description"] += f" (variant {serial})"
    document = {
        "capreg": 1,
        "name": "vault",
        "description": "Secret tools the caller may not see.",
        "default_scopes": ["secret:read"],
        "tools": [{**t, "input_schema": {"type": "object"}} for t in tools],
    }
    return yaml.safe_dump(document)


def observe(registry: Registry) -> list[Any]:
    seen: list[Any] = []
    for query in QUERIES:
        for limit in (0, 10):
            outcome = registry.search(query, limit, viewer=CALLER)
            seen.append(
                (
                    [(h.entry.id, h.score, h.similarity) for h in outcome.hits],
                    outcome.weak_match,
                    outcome.weak_reason,
                    outcome.generation,
                )
            )
    snapshot = registry.snapshot
    seen.append([e.id for e in snapshot.schemas(VISIBLE_IDS, CALLER)])
    seen.append(snapshot.catalog_summaries(CALLER))
    seen.append(snapshot.view_generation(CALLER))
    return seen


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=actions)
def test_changes_to_an_invisible_catalog_never_change_what_a_caller_observes(
    sample_registry: Registry, steps: list[tuple[str, list[dict[str, str]]]]
) -> None:
    before = observe(sample_registry)
    present = any(c.name == "vault" for c in sample_registry.catalogs())
    for serial, (action, tools) in enumerate(steps):
        if action == "delete" and present:
            sample_registry.delete("vault")
            present = False
        elif action != "delete":
            sample_registry.register(hidden_catalog(tools, serial))
            present = True
        assert observe(sample_registry) == before


def test_a_visible_change_does_change_the_callers_generation(sample_registry: Registry) -> None:
    before = sample_registry.snapshot.view_generation(CALLER)
    content = yaml.safe_dump(
        {
            "capreg": 1,
            "name": "helpdesk",
            "description": "More support tools.",
            "default_scopes": ["support:read"],
            "tools": [
                {
                    "name": "merge_tickets",
                    "description": "Merges two tickets into one.",
                    "input_schema": {"type": "object"},
                }
            ],
        }
    )
    sample_registry.register(content)
    assert sample_registry.snapshot.view_generation(CALLER) > before
