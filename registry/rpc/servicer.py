"""The CapabilityRegistry gRPC servicer: translates proto <-> domain and nothing more."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

from indexer.model import canonical_json
from indexer.retrieval.learned import WeakReason
from indexer.retrieval.tool_index import IndexedTool
from registry.auth.authentication import Authenticator, require_admin
from registry.auth.scopes import Grants, Principal
from registry.core import RegisterOutcome, Registry, SearchOutcome
from registry.errors import CapregError, InvalidRequest, NotReady
from registry.lanes import Lanes
from registry.logs import audit
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.rpc.status import Context, mapped, status_for
from registry.wire import MAX_BATCH_CATALOGS
from registry.workflows import Affordances, workflow_id

WEAK_REASONS: dict[WeakReason | None, pb.WeakReason.ValueType] = {
    WeakReason.NO_CLOSE_TOOL: pb.WEAK_REASON_NO_CLOSE_TOOL,
    WeakReason.NEAREST_TOOLS_ALIKE: pb.WEAK_REASON_NEAREST_TOOLS_ALIKE,
    WeakReason.NOTHING_ELIGIBLE: pb.WEAK_REASON_NOTHING_ELIGIBLE,
}

# min_generation: how long a call without a deadline may wait, how often the snapshot is
# looked at meanwhile, and what is kept of a deadline for answering once it is reached.
MAX_GENERATION_WAIT = 10.0
GENERATION_POLL_SECONDS = 0.005
GENERATION_ANSWER_MARGIN = 0.05


def tool_schema(entry: IndexedTool) -> pb.ToolSchema:
    tool = entry.tool
    return pb.ToolSchema(
        id=tool.id,
        name=tool.name,
        catalog=tool.catalog,
        catalog_version=entry.catalog_version,
        description=tool.description,
        input_schema=json.dumps(tool.input_schema, ensure_ascii=False),
        output_schema=(
            json.dumps(tool.output_schema, ensure_ascii=False) if tool.output_schema else ""
        ),
        annotations=json.dumps(tool.annotations, ensure_ascii=False),
        function_name=entry.function_name,
        catalog_revision=entry.catalog_revision,
        links=[
            pb.ToolLink(
                target_id=link.target_id,
                rel=link.rel,
                derived=link.derived,
                arguments=link.arguments,
                next_call=pb.GetSchemaRequest(ids=[link.target_id]),
            )
            for link in entry.links
        ],
    )


def search_response(outcome: SearchOutcome) -> pb.SearchResponse:
    return pb.SearchResponse(
        hits=[
            pb.SearchHit(
                id=hit.entry.id,
                name=hit.entry.tool.name,
                catalog=hit.entry.tool.catalog,
                summary=hit.entry.summary,
                score=hit.score,
                similarity=hit.similarity,
                next_call=pb.GetSchemaRequest(ids=[hit.entry.id]),
            )
            for hit in outcome.hits
        ],
        index_generation=outcome.generation,
        weak_match=outcome.weak_match,
        cached=outcome.cached,
        weak_reason=WEAK_REASONS.get(outcome.weak_reason, pb.WEAK_REASON_UNSPECIFIED),
    )


def affordances_response(
    answer: Affordances, schemas: list[IndexedTool] | None, generation: int
) -> pb.GetAffordancesResponse:
    by_id = {entry.id: entry for entry in schemas or ()}
    return pb.GetAffordancesResponse(
        workflow=answer.workflow_id,
        state=answer.state.name,
        terminal=answer.state.terminal,
        description=answer.state.description,
        affordances=[
            pb.Affordance(
                tool_id=move.entry.id,
                name=move.entry.tool.name,
                summary=move.entry.summary,
                function_name=move.entry.function_name,
                next_state=move.transition.target,
                next_call=pb.GetSchemaRequest(ids=[move.entry.id]),
                then_call=pb.GetAffordancesRequest(
                    workflow=answer.workflow_id, state=move.transition.target
                ),
                schema=tool_schema(by_id[move.entry.id]) if move.entry.id in by_id else None,
                when=canonical_json(dict(move.transition.when)) if move.transition.when else "",
            )
            for move in answer.moves
        ],
        index_generation=generation,
    )


def registered_response(outcome: RegisterOutcome) -> pb.RegisterCatalogResponse:
    return pb.RegisterCatalogResponse(
        catalog=outcome.catalog,
        added=outcome.added,
        updated=outcome.updated,
        removed=outcome.removed,
        unchanged=outcome.unchanged,
        version=outcome.version,
        revision=outcome.revision,
        index_generation=outcome.generation,
        embedded=outcome.embedded,
        warnings=list(outcome.warnings),
        assigned_scope=outcome.assigned_scope,
    )


def _digest(request: pb.RegisterCatalogRequest) -> str:
    return hashlib.sha256(request.content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def audit_registered(
    principal: Principal, request: pb.RegisterCatalogRequest, outcome: RegisterOutcome
) -> None:
    audit(
        "register",
        principal=principal.name,
        catalog=outcome.catalog,
        revision=outcome.revision,
        generation=outcome.generation,
        digest=_digest(request),
        added=outcome.added,
        updated=outcome.updated,
        removed=outcome.removed,
    )


def audit_refused(principal: Principal, request: pb.RegisterCatalogRequest, exc: Exception) -> None:
    audit(
        "register_refused",
        principal=principal.name,
        catalog=request.name[:64],
        digest=_digest(request),
        reason=type(exc).__name__,
    )


class CapabilityRegistryServicer(pb_grpc.CapabilityRegistryServicer):
    def __init__(self, registry: Registry, authenticator: Authenticator, lanes: Lanes) -> None:
        self._registry = registry
        self._auth = authenticator
        self._lanes = lanes

    def _principal(self, context: Context) -> Principal:
        return self._auth.principal(context.invocation_metadata() or (), context.peer())

    def _grants(self, context: Context) -> Grants:
        return self._principal(context).grants

    async def _at_least(self, generation: int, context: Context) -> None:
        """Waits until this replica's snapshot holds `generation` (read-your-writes across
        replicas), up to the call's deadline (at most MAX_GENERATION_WAIT without one)."""
        if not generation:
            return
        remaining = context.time_remaining()
        waited = MAX_GENERATION_WAIT if remaining is None else min(remaining, MAX_GENERATION_WAIT)
        # Keep a little of the deadline for the answer itself.
        ends = time.monotonic() + max(waited - GENERATION_ANSWER_MARGIN, 0.0)
        while True:
            current = self._registry.snapshot.generation
            if current >= generation:
                return
            if time.monotonic() >= ends:
                raise NotReady(
                    f"this replica is at generation {current}; min_generation {generation} "
                    "was not reached in time: retry, or ask another replica"
                )
            await asyncio.sleep(GENERATION_POLL_SECONDS)

    @mapped
    async def Search(self, request: pb.SearchRequest, context: Context) -> pb.SearchResponse:
        grants = self._grants(context)
        await self._at_least(request.min_generation, context)
        reader = self._registry.reader
        checked = reader.prepare(
            request.query,
            request.limit,
            list(request.catalogs),
            grants,
            workflow=request.workflow,
            state=request.state,
        )
        # A cache hit is answered here, never queued behind model work.
        outcome = reader.lookup(checked)
        if outcome is None:
            outcome = await self._lanes.read(context, reader.answer, checked)
        return search_response(outcome)

    @mapped
    async def GetSchema(
        self, request: pb.GetSchemaRequest, context: Context
    ) -> pb.GetSchemaResponse:
        grants = self._grants(context)
        await self._at_least(request.min_generation, context)
        # One snapshot answers the tools and the generation together.
        snapshot = self._registry.snapshot
        # Suggestions for unknown ids are CPU work: off the event loop.
        entries = await self._lanes.read(context, snapshot.schemas, list(request.ids), grants)
        return pb.GetSchemaResponse(
            tools=[tool_schema(entry) for entry in entries],
            index_generation=snapshot.view_generation(grants),
        )

    @mapped
    async def RegisterCatalog(
        self, request: pb.RegisterCatalogRequest, context: Context
    ) -> pb.RegisterCatalogResponse:
        principal = self._principal(context)
        require_admin(principal)
        registry = self._registry

        def register() -> RegisterOutcome:
            # Audited on the write thread, beside the commit: a caller whose deadline passes
            # while the change is made no longer waits for it, and the change still commits.
            try:
                outcome = registry.register(request.content, name=request.name, fmt=request.format)
            except CapregError as exc:
                audit_refused(principal, request, exc)
                raise
            audit_registered(principal, request, outcome)
            return outcome

        return registered_response(await self._lanes.write(context, register))

    @mapped
    async def RegisterCatalogs(
        self, request: pb.RegisterCatalogsRequest, context: Context
    ) -> pb.RegisterCatalogsResponse:
        principal = self._principal(context)
        require_admin(principal)
        if len(request.catalogs) > MAX_BATCH_CATALOGS:
            raise InvalidRequest(
                f"catalogs: at most {MAX_BATCH_CATALOGS} per call (got {len(request.catalogs)});"
                " split the batch"
            )
        entries = [(c.content, c.name, c.format) for c in request.catalogs]
        registry = self._registry

        def register_many() -> list[RegisterOutcome | CapregError]:
            outcomes = registry.register_many(entries)
            for entry, outcome in zip(request.catalogs, outcomes, strict=True):
                if isinstance(outcome, RegisterOutcome):
                    audit_registered(principal, entry, outcome)
                else:
                    audit_refused(principal, entry, outcome)
            return outcomes

        outcomes = await self._lanes.write(context, register_many)
        results = []
        for entry, outcome in zip(request.catalogs, outcomes, strict=True):
            if isinstance(outcome, RegisterOutcome):
                results.append(pb.RegisterCatalogResult(registered=registered_response(outcome)))
            else:
                code, message = status_for(outcome)
                failure = pb.CatalogFailure(code=code.name, message=message, name=entry.name)
                results.append(pb.RegisterCatalogResult(failed=failure))
        generations = [o.generation for o in outcomes if isinstance(o, RegisterOutcome)]
        return pb.RegisterCatalogsResponse(
            results=results,
            index_generation=max(generations, default=self._registry.writer.generation),
        )

    @mapped
    async def DeleteCatalog(
        self, request: pb.DeleteCatalogRequest, context: Context
    ) -> pb.DeleteCatalogResponse:
        principal = self._principal(context)
        require_admin(principal)
        registry = self._registry

        def delete() -> tuple[int, int]:
            removed, generation = registry.delete(request.name)
            audit(
                "delete",
                principal=principal.name,
                catalog=request.name,
                removed=removed,
                generation=generation,
            )
            return removed, generation

        removed, generation = await self._lanes.write(context, delete)
        return pb.DeleteCatalogResponse(
            catalog=request.name, removed=removed, index_generation=generation
        )

    @mapped
    async def ListCatalogs(
        self, request: pb.ListCatalogsRequest, context: Context
    ) -> pb.ListCatalogsResponse:
        grants = self._grants(context)
        await self._at_least(request.min_generation, context)
        snapshot = self._registry.snapshot
        if request.with_warnings:
            # Linting a catalog the first time it is listed is CPU work: off the event loop.
            summaries = await self._lanes.read(
                context, snapshot.catalog_summaries, grants, with_warnings=True
            )
        else:
            summaries = snapshot.catalog_summaries(grants)
        return pb.ListCatalogsResponse(
            catalogs=[
                pb.CatalogInfo(
                    name=c.name,
                    title=c.title,
                    description=c.description,
                    version=c.version,
                    revision=c.revision,
                    tool_count=c.tool_count,
                    workflows=[
                        pb.WorkflowInfo(
                            id=workflow_id(c.name, w.name),
                            title=w.title,
                            description=w.description,
                            initial_state=w.initial,
                            next_call=pb.GetAffordancesRequest(
                                workflow=workflow_id(c.name, w.name), state=w.initial
                            ),
                        )
                        for w in c.workflows
                    ],
                    warnings=list(c.warnings),
                )
                for c in summaries
            ],
            index_generation=snapshot.view_generation(grants),
        )

    @mapped
    async def GetAffordances(
        self, request: pb.GetAffordancesRequest, context: Context
    ) -> pb.GetAffordancesResponse:
        grants = self._grants(context)
        await self._at_least(request.min_generation, context)
        snapshot = self._registry.snapshot
        answer = snapshot.affordances(
            request.workflow, request.state, request.tool, grants, request.arguments
        )
        schemas = None
        if request.with_schemas and answer.moves:
            schemas = await self._lanes.read(context, snapshot.schemas, answer.tool_ids, grants)
        return affordances_response(answer, schemas, snapshot.view_generation(grants))
