"""Workflows over the real service: GetAffordances offers only the moves a caller may make, a
reported move leads on or is refused with the legal ones, Search ranks inside a state, and
nothing about invisible tools, guards or catalogs leaks through an answer or an error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import yaml

from registry.auth.keys import KeyStore, add_key
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SqliteStore
from tests.conftest import CountingEmbedder, start_server

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from registry.proto.registry_pb2_grpc import CapabilityRegistryAsyncStub as AsyncStub

DECISION = {
    "type": "object",
    "properties": {
        "claim_id": {"type": "string", "description": "Claim number"},
        "decision": {"type": "string", "enum": ["approve", "reject"], "description": "Verdict"},
    },
}


def tool(name: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": {"type": "object"}, **extra}


CLAIMS = yaml.safe_dump(
    {
        "capreg": 1,
        "name": "claims",
        "description": "Insurance claims from first notice to payment.",
        "default_scopes": ["claims:read"],
        "tools": [
            tool("open_claim", "Opens an insurance claim for a policy holder after a loss."),
            tool("get_claim", "Reads one claim: status, amounts, documents and adjuster."),
            tool(
                "review_claim",
                "Approves or rejects a claim after the adjuster's assessment.",
                input_schema=DECISION,
            ),
            tool("pay_claim", "Pays an approved claim out to the policy holder's bank account."),
            tool(
                "flag_fraud",
                "Flags a claim for the special investigations unit as suspected fraud.",
                required_scopes=["claims:siu"],
                # Lint warns about the undescribed parameter, naming this hidden tool.
                input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
            ),
            tool("email_holder", "Emails the policy holder about their claim."),
        ],
        "workflows": [
            {
                "name": "claim_handling",
                "title": "Claim handling",
                "initial": "draft",
                "states": {
                    "draft": {"description": "Nothing filed yet"},
                    "open": {"description": "Filed, waiting for review"},
                    "approved": {},
                    "rejected": {"terminal": True},
                    "paid": {"terminal": True, "description": "Paid out"},
                },
                "transitions": [
                    {"from": "draft", "tool": "open_claim", "to": "open"},
                    {"from": ["open", "approved"], "tool": "get_claim"},
                    {"from": "open", "tool": "flag_fraud"},
                    {"from": "open", "tool": "email_holder"},
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
                    {
                        "from": "approved",
                        "tool": "pay_claim",
                        "to": "paid",
                        "scopes": ["claims:pay"],
                    },
                ],
            }
        ],
    },
    sort_keys=False,
)
OTHER = yaml.safe_dump(
    {
        "capreg": 1,
        "name": "vault",
        "description": "Sealed records.",
        "default_scopes": ["vault:read"],
        "tools": [tool("seal_record", "Seals a record.")],
        "workflows": [
            {
                "name": "claim_sealing",
                "initial": "open",
                "states": {"open": {}, "sealed": {"terminal": True}},
                "transitions": [{"from": "open", "tool": "seal_record", "to": "sealed"}],
            }
        ],
    }
)


@dataclass
class Service:
    stub: AsyncStub
    reader: str  # claims:read
    payer: str  # claims:read and claims:pay
    investigator: str  # claims:* and vault:read
    registry: Registry


@pytest.fixture
def registry(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "claims.db")
    registry = Registry(store, embedder)
    registry.load()
    registry.register(CLAIMS)
    registry.register(OTHER)
    yield registry
    store.close()


@pytest.fixture
async def service(registry: Registry, tmp_path: Path) -> AsyncIterator[Service]:
    keys_file = tmp_path / "keys.yaml"
    reader = add_key(keys_file, "reader", ["claims:read"])
    payer = add_key(keys_file, "payer", ["claims:read", "claims:pay"])
    investigator = add_key(keys_file, "investigator", ["claims:*", "vault:read"])
    server, address = await start_server(registry, keys=KeyStore.load(keys_file))
    async with grpc.aio.insecure_channel(address) as channel:
        yield Service(
            pb_grpc.CapabilityRegistryStub(channel), reader, payer, investigator, registry
        )
    await server.stop(None)


def auth(key: str) -> tuple[tuple[str, str | bytes], ...]:
    return (("authorization", f"Bearer {key}"),)


async def affordances(service: Service, key: str, **fields: Any) -> pb.GetAffordancesResponse:
    request = pb.GetAffordancesRequest(workflow="claims/claim_handling", **fields)
    reply: pb.GetAffordancesResponse = await service.stub.GetAffordances(
        request, metadata=auth(key)
    )
    return reply


async def refusal(service: Service, key: str, **fields: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await affordances(service, key, **fields)
    return caught.value.code(), caught.value.details() or ""


def moves(reply: pb.GetAffordancesResponse) -> list[tuple[str, str, str]]:
    return [(a.tool_id, a.when, a.next_state) for a in reply.affordances]


async def test_the_initial_state_offers_its_moves_each_with_ready_calls(service: Service) -> None:
    reply = await affordances(service, service.reader)
    assert (reply.workflow, reply.state, reply.terminal) == (
        "claims/claim_handling",
        "draft",
        False,
    )
    assert reply.description == "Nothing filed yet"
    [offered] = reply.affordances
    assert (offered.tool_id, offered.next_state) == ("claims/open_claim", "open")
    assert offered.summary.startswith("Opens an insurance claim")
    assert offered.function_name
    assert list(offered.next_call.ids) == ["claims/open_claim"]
    # The ready calls work as given.
    schema = await service.stub.GetSchema(offered.next_call, metadata=auth(service.reader))
    assert [t.id for t in schema.tools] == ["claims/open_claim"]
    after = await service.stub.GetAffordances(offered.then_call, metadata=auth(service.reader))
    assert after.state == "open"


async def test_moves_come_in_declared_order_with_their_conditions(service: Service) -> None:
    reply = await affordances(service, service.reader, state="open")
    assert moves(reply) == [
        ("claims/get_claim", "", "open"),
        ("claims/email_holder", "", "open"),
        ("claims/review_claim", '{"decision":"approve"}', "approved"),
        ("claims/review_claim", '{"decision":"reject"}', "rejected"),
    ]


async def test_a_tool_the_caller_may_not_see_is_never_offered(service: Service) -> None:
    seen = [
        a.tool_id
        for a in (await affordances(service, service.investigator, state="open")).affordances
    ]
    assert "claims/flag_fraud" in seen
    hidden = [
        a.tool_id for a in (await affordances(service, service.reader, state="open")).affordances
    ]
    assert "claims/flag_fraud" not in hidden


async def test_a_guarded_move_is_offered_only_to_callers_holding_its_scopes(
    service: Service,
) -> None:
    reader = await affordances(service, service.reader, state="approved")
    payer = await affordances(service, service.payer, state="approved")
    assert moves(reader) == [("claims/get_claim", "", "approved")]
    assert moves(payer) == [
        ("claims/get_claim", "", "approved"),
        ("claims/pay_claim", "", "paid"),
    ]


async def test_a_reported_move_answers_for_the_state_it_leads_to(service: Service) -> None:
    reply = await affordances(service, service.reader, state="draft", tool="claims/open_claim")
    assert reply.state == "open"
    approved = await affordances(
        service,
        service.reader,
        state="open",
        tool="claims/review_claim",
        arguments='{"claim_id": "C-1", "decision": "approve"}',
    )
    assert approved.state == "approved"
    rejected = await affordances(
        service,
        service.reader,
        state="open",
        tool="claims/review_claim",
        arguments='{"decision": "reject"}',
    )
    assert (rejected.state, rejected.terminal, list(rejected.affordances)) == ("rejected", True, [])


async def test_an_illegal_move_is_refused_listing_the_legal_ones(service: Service) -> None:
    code, message = await refusal(service, service.reader, state="draft", tool="claims/pay_claim")
    assert code is grpc.StatusCode.FAILED_PRECONDITION
    assert message == (
        "'claims/pay_claim' is not a legal move from state 'draft' of workflow "
        "'claims/claim_handling'; legal moves: 'claims/open_claim' -> open"
    )


async def test_a_move_whose_arguments_match_no_condition_is_refused(service: Service) -> None:
    code, message = await refusal(
        service,
        service.reader,
        state="open",
        tool="claims/review_claim",
        arguments='{"decision": "maybe"}',
    )
    assert code is grpc.StatusCode.FAILED_PRECONDITION
    assert """'claims/review_claim' when {"decision":"approve"} -> approved""" in message


async def test_a_move_the_caller_may_not_make_is_refused_like_one_that_does_not_exist(
    service: Service,
) -> None:
    guarded = await refusal(service, service.reader, state="approved", tool="claims/pay_claim")
    missing = await refusal(service, service.reader, state="approved", tool="claims/pay_clam")
    assert guarded[0] is missing[0] is grpc.StatusCode.FAILED_PRECONDITION
    assert guarded[1].replace("pay_claim", "X") == missing[1].replace("pay_clam", "X")
    invisible = await refusal(service, service.reader, state="open", tool="claims/flag_fraud")
    made_up = await refusal(service, service.reader, state="open", tool="claims/flag_fraux")
    assert invisible[1].replace("flag_fraud", "X") == made_up[1].replace("flag_fraux", "X")


async def test_an_unknown_workflow_suggests_close_visible_ones(service: Service) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await service.stub.GetAffordances(
            pb.GetAffordancesRequest(workflow="claims/claim_handlin"), metadata=auth(service.reader)
        )
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == (
        "unknown workflow 'claims/claim_handlin' (did you mean: claims/claim_handling)"
    )


async def test_a_workflow_of_an_invisible_catalog_is_unknown_and_never_suggested(
    service: Service,
) -> None:
    async def details(key: str, workflow: str) -> str:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await service.stub.GetAffordances(
                pb.GetAffordancesRequest(workflow=workflow), metadata=auth(key)
            )
        assert caught.value.code() is grpc.StatusCode.NOT_FOUND
        return caught.value.details() or ""

    hidden = await details(service.reader, "vault/claim_sealing")
    missing = await details(service.reader, "vault/claim_sealin")
    assert hidden.replace("claim_sealing", "X") == missing.replace("claim_sealin", "X")
    assert "vault" not in (await details(service.reader, "claims/claim_sealing")).split("(")[-1]
    visible = await service.stub.GetAffordances(
        pb.GetAffordancesRequest(workflow="vault/claim_sealing"),
        metadata=auth(service.investigator),
    )
    assert visible.state == "open"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"state": "limbo"}, "state: 'limbo' is not a state of workflow 'claims/claim_handling'"),
        ({"state": "x" * 65}, "state: at most 64 characters (got 65)"),
        ({"arguments": "{}"}, "arguments: only with tool"),
        (
            {"tool": "claims/review_claim", "state": "open", "arguments": "[1]"},
            "arguments: must be a JSON object",
        ),
    ],
)
async def test_bad_requests_are_refused_naming_the_field(
    service: Service, fields: dict[str, str], expected: str
) -> None:
    code, message = await refusal(service, service.reader, **fields)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert message.startswith(expected)


async def test_search_inside_a_state_ranks_only_its_legal_tools(service: Service) -> None:
    query = "pay the approved claim to the holder"
    anywhere = await service.stub.Search(
        pb.SearchRequest(query=query, limit=3), metadata=auth(service.payer)
    )
    assert anywhere.hits[0].id == "claims/pay_claim"
    in_open = await service.stub.Search(
        pb.SearchRequest(query=query, limit=3, workflow="claims/claim_handling", state="open"),
        metadata=auth(service.payer),
    )
    legal = {
        a.tool_id for a in (await affordances(service, service.payer, state="open")).affordances
    }
    assert in_open.hits
    assert {h.id for h in in_open.hits} <= legal
    assert "claims/pay_claim" not in {h.id for h in in_open.hits}
    # The same words in another state are another request, not a cache hit of the first.
    in_approved = await service.stub.Search(
        pb.SearchRequest(query=query, limit=3, workflow="claims/claim_handling", state="approved"),
        metadata=auth(service.payer),
    )
    assert not in_approved.cached
    assert in_approved.hits[0].id == "claims/pay_claim"


async def test_search_in_a_state_offering_nothing_is_an_empty_weak_answer(
    service: Service,
) -> None:
    reply = await service.stub.Search(
        pb.SearchRequest(query="anything", workflow="claims/claim_handling", state="paid"),
        metadata=auth(service.reader),
    )
    assert (list(reply.hits), reply.weak_match) == ([], True)
    assert reply.weak_reason == pb.WEAK_REASON_NOTHING_ELIGIBLE


async def test_search_with_a_state_but_no_workflow_is_refused(service: Service) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await service.stub.Search(
            pb.SearchRequest(query="pay", state="open"), metadata=auth(service.reader)
        )
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_with_schemas_returns_each_offered_tools_full_schema(service: Service) -> None:
    reply = await affordances(service, service.reader, state="open", with_schemas=True)
    assert [a.schema.id for a in reply.affordances] == [a.tool_id for a in reply.affordances]
    review = next(a for a in reply.affordances if a.tool_id == "claims/review_claim")
    assert '"decision"' in review.schema.input_schema
    lean = await affordances(service, service.reader, state="open")
    assert not any(a.HasField("schema") for a in lean.affordances)


async def test_catalog_listings_carry_workflows_with_their_first_call(service: Service) -> None:
    listing = await service.stub.ListCatalogs(
        pb.ListCatalogsRequest(), metadata=auth(service.reader)
    )
    [claims] = listing.catalogs
    [flow] = claims.workflows
    assert (flow.id, flow.title, flow.initial_state) == (
        "claims/claim_handling",
        "Claim handling",
        "draft",
    )
    first = await service.stub.GetAffordances(flow.next_call, metadata=auth(service.reader))
    assert first.state == "draft"


async def test_lint_warnings_are_listed_only_to_callers_who_see_the_whole_catalog(
    service: Service,
) -> None:
    async def warnings(key: str) -> list[str]:
        listing = await service.stub.ListCatalogs(
            pb.ListCatalogsRequest(with_warnings=True), metadata=auth(key)
        )
        return [w for c in listing.catalogs if c.name == "claims" for w in c.warnings]

    whole = await warnings(service.investigator)
    assert whole == ["tool 'flag_fraud' parameter 'reason': has no description"]
    # The reader may not see flag_fraud: a warning would name it.
    assert await warnings(service.reader) == []
    plain = await service.stub.ListCatalogs(
        pb.ListCatalogsRequest(), metadata=auth(service.investigator)
    )
    assert all(not c.warnings for c in plain.catalogs)


def test_a_changed_workflow_is_a_new_revision_and_an_unchanged_one_is_not(
    registry: Registry,
) -> None:
    assert registry.register(CLAIMS).revision == 1
    changed = CLAIMS.replace("Claim handling", "Claims, start to end")
    outcome = registry.register(changed)
    assert (outcome.revision, outcome.embedded) == (2, 0)
    [flow] = registry.snapshot.catalogs["claims"].workflows
    assert flow.title == "Claims, start to end"


def test_workflows_survive_a_restart(tmp_path: Path, embedder: CountingEmbedder) -> None:
    store = SqliteStore(tmp_path / "restart.db")
    first = Registry(store, embedder)
    first.load()
    first.register(CLAIMS)
    store.close()
    store = SqliteStore(tmp_path / "restart.db")
    second = Registry(store, embedder)
    second.load()
    answer = second.snapshot.affordances("claims/claim_handling", "open")
    assert [m.entry.id for m in answer.moves][:2] == ["claims/get_claim", "claims/flag_fraud"]
    store.close()
