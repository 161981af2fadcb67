"""What the model reads: registry replies and fixable mistakes, shaped as tool results."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent

from registry.client import NotFound, RegistryCallFailed
from registry.proto import registry_pb2 as pb

SEARCH_TOOLS = "search_tools"
GET_TOOL_SCHEMA = "get_tool_schema"
LIST_CATALOGS = "list_catalogs"

Payload = dict[str, Any]

NO_MATCH = "No tool matches. Rephrase the need, or call list_catalogs to see what exists."
WEAK_MATCH = (
    "Weak match: even the best hit scores below the registry's confidence floor. Rephrase "
    "the need, or tell the user no tool fits, rather than relying on these hits."
)
# What a weak answer's reason asks of the agent.
WEAK_NOTES = {
    pb.WEAK_REASON_NO_CLOSE_TOOL: (
        "Weak match: no tool is close to this need. Tell the user no tool here does it, or "
        "rephrase once with other words; do not call these hits for it."
    ),
    pb.WEAK_REASON_NEAREST_TOOLS_ALIKE: (
        "Weak match: these tools score alike and none stands out. Ask the user which is "
        "meant, or search again with the detail that tells them apart."
    ),
}
WEAK_REASON_NAMES = {
    pb.WEAK_REASON_NO_CLOSE_TOOL: "no_close_tool",
    pb.WEAK_REASON_NEAREST_TOOLS_ALIKE: "nearest_tools_alike",
    pb.WEAK_REASON_NOTHING_ELIGIBLE: "nothing_eligible",
}
# One line for every answer instead of a ready call per hit: the bridge's tool names are
# fixed, so a per-hit call repeated the same words five times.
FETCH = f"Fetch the ones you will use with {GET_TOOL_SCHEMA}, ids as shown."
LINKS = (
    f"links: tools that may follow (fetch with {GET_TOOL_SCHEMA}); arguments: their "
    "parameter -> where its value is in this result."
)
# The registry's message states the exact rule broken; these say what a good call looks like.
FIX_SEARCH = "Call search_tools with query set to the capability you need, in words."
FIX_IDS = "Pass 1 to 50 ids exactly as search_tools returned them ('<catalog>/<tool>')."
# Scores order hits within one answer; a third decimal changed no decision and cost tokens.
SCORE_DIGITS = 2
# The listing's columns; a tool name may hold spaces and slashes but never a control
# character, so a tab ends an id unambiguously.
HITS_HEADER = "id\tscore\tsummary"


def call(tool: str, **arguments: Any) -> Payload:
    """A ready-to-send call of one of the bridge's tools."""
    return {"tool": tool, "arguments": arguments}


def result(payload: Payload, *, is_error: bool = False) -> CallToolResult:
    # The text is what most clients show the model; structured content is for programs.
    return CallToolResult(
        content=[TextContent(type="text", text=render(payload))],
        structured_content=payload,
        is_error=is_error,
    )


def render(payload: Payload) -> str:
    """The text the model reads: a search answer (the one payload with hits) as a listing,
    everything else as JSON without the separators' spaces."""
    if "hits" in payload and "error" not in payload:
        return search_text(payload)
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def search_payload(reply: pb.SearchResponse) -> Payload:
    hits = [
        {
            "id": hit.id,
            "name": hit.name,
            "summary": hit.summary,
            "score": round(hit.score, SCORE_DIGITS),
        }
        for hit in reply.hits
    ]
    if not hits:
        note = NO_MATCH
    elif reply.weak_match:
        note = WEAK_NOTES.get(reply.weak_reason, WEAK_MATCH)
    else:
        note = FETCH
    payload: Payload = {"hits": hits, "weak_match": reply.weak_match, "note": note}
    if reply.weak_match and reply.weak_reason in WEAK_REASON_NAMES:
        payload["weak_reason"] = WEAK_REASON_NAMES[reply.weak_reason]
    return payload


def search_text(payload: Payload) -> str:
    """A search answer as the model reads it: the note, then one tab-separated line per hit
    (the name is the id's part after its first '/', so it is not repeated)."""
    lines = [payload["note"]]
    if payload["hits"]:
        lines.append(HITS_HEADER)
        lines.extend(
            f"{hit['id']}\t{hit['score']:g}\t{' '.join(hit['summary'].split())}"
            for hit in payload["hits"]
        )
    return "\n".join(lines)


def tool_definition(tool: pb.ToolSchema) -> Payload:
    """A tool as a function-calling API takes it (`function`), with its registry id beside."""
    definition: Payload = {
        "id": tool.id,
        "function": {
            "name": tool.function_name,
            "description": tool.description,
            "parameters": json.loads(tool.input_schema),
        },
    }
    if tool.output_schema:
        definition["returns"] = json.loads(tool.output_schema)
    annotations = json.loads(tool.annotations or "{}")
    if annotations:
        definition["annotations"] = annotations
    if tool.links:
        definition["links"] = [link_entry(link) for link in tool.links]
    return definition


def link_entry(link: pb.ToolLink) -> Payload:
    """A link as the model reads it: the next tool, how it relates, and which of its
    arguments come from this tool's result. Kept small (a tool may have 32): the schema call
    is implied by the id, and whether the link was derived changes nothing for the model."""
    entry: Payload = {"id": link.target_id, "rel": link.rel}
    if link.arguments:
        entry["arguments"] = dict(sorted(link.arguments.items()))
    return entry


def schema_payload(reply: pb.GetSchemaResponse) -> Payload:
    payload: Payload = {"tools": [tool_definition(tool) for tool in reply.tools]}
    if any(tool.links for tool in reply.tools):
        payload["note"] = LINKS
    return payload


def catalogs_payload(reply: pb.ListCatalogsResponse) -> Payload:
    catalogs = []
    for catalog in reply.catalogs:
        entry: Payload = {"name": catalog.name, "tools": catalog.tool_count}
        for key, value in (
            ("title", catalog.title),
            ("description", catalog.description),
            ("version", catalog.version),
        ):
            if value:
                entry[key] = value
        catalogs.append(entry)
    return {"catalogs": catalogs}


def _words(tool_id: str) -> str:
    """Search words for an id the registry does not know: its tool part, spelled out."""
    name = tool_id.rsplit("/", 1)[-1]
    return " ".join(name.replace("_", " ").replace("-", " ").split()) or tool_id


def plain_recovery(error: RegistryCallFailed) -> Payload:
    """For a call without arguments: nothing to correct, only the registry's word."""
    return {"error": str(error)}


def search_recovery(error: RegistryCallFailed) -> Payload:
    """The way forward after search_tools was refused as malformed."""
    if isinstance(error, NotFound):
        return {"error": str(error), "next_calls": [call(LIST_CATALOGS)]}
    return {"error": str(error), "fix": FIX_SEARCH}


def schema_recovery(error: RegistryCallFailed, ids: list[str]) -> Payload:
    """The way forward after get_tool_schema was refused: corrected ids, or searches."""
    if not isinstance(error, NotFound):
        return {"error": str(error), "fix": FIX_IDS}
    missing = error.suggestions
    if not missing:
        # The message could not be read, so nothing says which ids were unknown: search each.
        return {
            "error": str(error),
            "next_calls": [call(SEARCH_TOOLS, query=_words(tool_id)) for tool_id in ids],
        }
    retry: list[str] = []
    searches: list[Payload] = []
    for tool_id in ids:
        if tool_id not in missing:
            retry.append(tool_id)
        elif missing[tool_id]:
            retry.append(missing[tool_id][0])
        else:
            searches.append(call(SEARCH_TOOLS, query=_words(tool_id)))
    next_calls: list[Payload] = []
    if retry and retry != ids:  # the known ids, with each unknown one's closest suggestion
        next_calls.append(call(GET_TOOL_SCHEMA, ids=list(dict.fromkeys(retry))))
    next_calls.extend(searches)
    payload: Payload = {"error": str(error)}
    suggestions = {tool_id: found for tool_id, found in missing.items() if found}
    if suggestions:
        payload["suggestions"] = suggestions
    payload["next_calls"] = next_calls
    return payload
