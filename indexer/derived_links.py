"""Links the registry derives from one catalog's schemas, and how they meet the declared ones.

Only what the schemas justify is derived, each link marked `derived`:

- `feeds`: tool A's result has a top-level identifier (`id`, `ticket_id`, `flag_key`,
  `invoice_number`) that tool B requires as an input of the same name. Other values are not
  followed: a `currency` or `subject` in one result and another tool's inputs says nothing
  about calling one after the other. Nor is an identifier that more than MAX_LINKS tools
  require: which of them comes next is anyone's guess.
- CRUD families: tools whose names are a verb and a resource (`create_ticket`,
  `list_tickets`, `ticketUpdate`) link within the resource: create -> get (`read`),
  list -> get (`item`), get -> update (`update`), get -> delete (`delete`) and create -> list
  (`collection`), with the target's id-like inputs mapped from the source's result when it
  holds them.

A CRUD relation says more than `feeds`, so a pair of tools gets one derived link, the CRUD
one when there is one, carrying every argument either rule found. Declared links win: a
declared link to a tool replaces the derived link to it (the same relation or another, so a
target is never listed twice). Everything here is a function of the catalog alone, so
nothing derived is stored: a restart derives the same links.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import chain

from indexer.model import MAX_LINKS, JsonObject, Tool, ToolLink

FEEDS = "feeds"
# The verbs of each CRUD role; a name's first (or else last) word is looked up here.
ROLES: Mapping[str, str] = {
    **dict.fromkeys(("create", "add", "new"), "create"),
    **dict.fromkeys(("get", "read", "fetch", "show"), "get"),
    **dict.fromkeys(("update", "edit", "patch"), "update"),
    **dict.fromkeys(("delete", "remove"), "delete"),
    **dict.fromkeys(("list", "search"), "list"),
}
# (source role, target role) -> the relation of the link between them.
FAMILY: Mapping[tuple[str, str], str] = {
    ("create", "get"): "read",
    ("list", "get"): "item",
    ("get", "update"): "update",
    ("get", "delete"): "delete",
    ("create", "list"): "collection",
}

# A property whose name ends in one of these words names a thing rather than describing it.
IDENTIFIER_WORDS = frozenset({"id", "key", "number", "uuid"})

_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CatalogLinks:
    """One catalog's links (`tool_links`), derived the first time a tool's are read: only
    schemas show links, and a restart would otherwise derive every catalog's before serving
    (a seventh of loading 100,000 stored tools)."""

    def __init__(
        self, tools: Sequence[Tool], *, before: Callable[[Sequence[Tool]], None] | None = None
    ) -> None:
        """`before` is called with the tools before their schemas are read (a store reads
        them ahead in one query)."""
        self._tools: Sequence[Tool] = tools
        self._before = before
        self._links: dict[str, tuple[ToolLink, ...]] | None = None
        self._lock = threading.Lock()

    def of(self, name: str) -> tuple[ToolLink, ...]:
        """The links of the tool called `name` (none for a name the catalog lacks)."""
        with self._lock:
            if self._links is None:
                if self._before is not None:
                    self._before(self._tools)
                self._links = tool_links(self._tools)
                self._tools = ()
            return self._links.get(name, ())


def tool_links(tools: Sequence[Tool]) -> dict[str, tuple[ToolLink, ...]]:
    """Each tool's links (by tool name): its declared ones, in the catalog's order, then the
    derived ones to targets it declares nothing for, at most MAX_LINKS in all."""
    derived = derive_links(tools)
    result = {}
    for tool in tools:
        # The author's word on how two tools relate replaces the registry's guess whatever
        # the relation: one target is never listed twice, once declared and once derived.
        declared = {link.target_id for link in tool.links}
        others = [link for link in derived.get(tool.name, ()) if link.target_id not in declared]
        result[tool.name] = (*tool.links, *others)[:MAX_LINKS]
    return result


def derive_links(tools: Sequence[Tool]) -> dict[str, tuple[ToolLink, ...]]:
    """The links one catalog's schemas justify (tool name -> links: the CRUD ones, then
    `feeds`, each by target), at most MAX_LINKS per tool; tools without any are left out."""
    found: dict[str, dict[str, tuple[Tool, str, dict[str, str]]]] = defaultdict(dict)
    for source, target, rel, arguments in chain(_family_links(tools), _feeds_links(tools)):
        pairs = found[source.name]
        known = pairs.get(target.name)
        if known is None:
            pairs[target.name] = (target, rel, dict(arguments))
        else:  # the CRUD relation came first and stays; its arguments gain the feeds ones
            for name, ref in arguments.items():
                known[2].setdefault(name, ref)
    result = {}
    for source_name, pairs in found.items():
        chosen = sorted(pairs.items(), key=lambda item: (item[1][1] == FEEDS, item[0]))
        result[source_name] = tuple(
            ToolLink(
                rel=rel,
                target_id=target.id,
                arguments=dict(sorted(arguments.items())),
                derived=True,
            )
            for _, (target, rel, arguments) in chosen[:MAX_LINKS]
        )
    return result


Found = tuple[Tool, Tool, str, Mapping[str, str]]


def _feeds_links(tools: Sequence[Tool]) -> Iterable[Found]:
    """A -> B for each identifier A returns that B requires (by name)."""
    requiring: dict[str, list[Tool]] = defaultdict(list)
    required: dict[str, frozenset[str]] = {}
    for tool in tools:
        required[tool.name] = frozenset(_required(tool.input_schema))
        for name in required[tool.name]:
            if _id_like(name):
                requiring[name].append(tool)
    # An identifier more tools require than one tool may link to says nothing about which of
    # them comes next (any 32 would be an arbitrary pick); leaving it out also keeps a large
    # catalog's work and links linear in its size.
    followed = {name: found for name, found in requiring.items() if len(found) <= MAX_LINKS}
    for source in tools:
        outputs = sorted(n for n in _properties(source.output_schema) if n in followed)
        targets: dict[str, Tool] = {}
        for name in outputs:
            for target in followed[name]:
                if target.name != source.name:
                    targets.setdefault(target.name, target)
        for target in targets.values():
            wanted = required[target.name]
            yield source, target, FEEDS, {n: reference(n) for n in outputs if n in wanted}


def _family_links(tools: Sequence[Tool]) -> Iterable[Found]:
    """The CRUD links within each resource's family of tools."""
    families: dict[str, dict[str, list[Tool]]] = defaultdict(lambda: defaultdict(list))
    for tool in tools:
        parsed = crud_name(tool.name)
        if parsed is not None:
            role, resource = parsed
            families[resource][role].append(tool)
    for resource, members in families.items():
        for (source_role, target_role), rel in FAMILY.items():
            for source in members.get(source_role, ()):
                for target in members.get(target_role, ())[:MAX_LINKS]:
                    if source.name != target.name:
                        yield source, target, rel, _id_arguments(source, target, resource)


def words_of(name: str) -> list[str]:
    """A name's words, lower-case: snake_case, kebab-case and camelCase split."""
    return [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", name))]


@lru_cache(maxsize=1 << 16)
def crud_name(name: str) -> tuple[str, str] | None:
    """(role, resource) when `name` is a CRUD verb and a resource, the resource's last word
    made singular: `list_tickets` -> ("list", "ticket"), `getCompany` -> ("get", "company")."""
    words = words_of(name)
    if len(words) < 2:
        return None
    if words[0] in ROLES:
        role, rest = ROLES[words[0]], words[1:]
    elif words[-1] in ROLES:
        role, rest = ROLES[words[-1]], words[:-1]
    else:
        return None
    return role, "_".join([*rest[:-1], singular(rest[-1])])


def singular(word: str) -> str:
    """English plural -> singular for resource names (tickets, companies, statuses, boxes)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "uses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=4096)
def reference(name: str, prefix: str = "$") -> str:
    """A JSONPath-like reference to property `name` under `prefix`."""
    return f"{prefix}.{name}" if _IDENTIFIER.fullmatch(name) else f"{prefix}['{name}']"


def _id_arguments(source: Tool, target: Tool, resource: str) -> dict[str, str]:
    """The target's identifier inputs that `source`'s result holds: the same name at the
    top level, a bare `id` for `<resource>_id`, or either in a list's first item. Its
    required identifiers count; a target requiring none (one of several ways to name the
    thing) counts its inputs named for the resource."""
    outputs = _properties(source.output_schema)
    own = (f"{resource}_id", f"{_camel(resource)}Id", "id")
    wanted = [name for name in _required(target.input_schema) if _id_like(name)]
    if not wanted:
        wanted = [name for name in _properties(target.input_schema) if name in own]
    arguments = {}
    for name in wanted:
        aliases = (name, "id") if name in own else (name,)
        found = next((reference(a) for a in aliases if a in outputs), None)
        if found is None:
            found = _in_first_item(outputs, aliases)
        if found is not None:
            arguments[name] = found
    return arguments


def _in_first_item(outputs: JsonObject, aliases: Sequence[str]) -> str | None:
    """A reference into the first item of an array property holding one of `aliases`."""
    for prop, schema in sorted(outputs.items()):
        if not isinstance(schema, dict) or schema.get("type") != "array":
            continue
        items = _properties(schema.get("items"))
        for alias in aliases:
            if alias in items:
                return reference(alias, f"{reference(prop)}[0]")
    return None


@lru_cache(maxsize=4096)
def _id_like(name: str) -> bool:
    words = words_of(name)
    return bool(words) and words[-1] in IDENTIFIER_WORDS


def _camel(resource: str) -> str:
    head, *rest = resource.split("_")
    return head + "".join(word.title() for word in rest)


def _properties(schema: object) -> JsonObject:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, dict) else {}


def _required(schema: JsonObject) -> list[str]:
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    properties = _properties(schema)
    # Unique, in the schema's order; a required name the schema does not describe is no input
    # a link could fill knowingly.
    return [
        name for name in dict.fromkeys(required) if isinstance(name, str) and name in properties
    ]
