"""Offline catalog checks: every validation error, plus warnings that matter for discovery.

Warnings name what makes a tool hard to find or dangerous to show a model: missing or
one-word descriptions, duplicated descriptions, names function-calling APIs reject,
parameters without descriptions, and text aimed at the model rather than at the reader
(the tool-poisoning vector: hidden directives, <IMPORTANT> tags, invisible characters).

Every string the service serves is read for that text (names, titles, descriptions, every key
and string value of the schemas and annotations, link arguments, workflow and state texts),
after NFKC normalisation, so fullwidth or other compatibility forms of a directive match too.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from indexer.formats import CatalogError, parse_catalog
from indexer.formats.workflows import workflow_warnings
from indexer.model import EMBEDDED_DESCRIPTION, Catalog, Tool
from indexer.naming import FUNCTION_NAME, MAX_LENGTH

MAX_DEPTH = 4  # nested parameter levels checked for descriptions
# Every warning about text aimed at the model ends with this: registration can refuse them.
POISONING = "a tool-poisoning sign"
_SNIPPET = 60

# (pattern, what it is). Phrasings seen in published tool-poisoning and prompt-injection
# examples; each is rare in an honest description of what a tool does.
_DIRECTIVES = [
    (
        r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|"
        r"all|other|system|your)\b[^.\n]{0,20}\b(instructions?|prompts?|rules|directions|"
        r"messages|guidelines)\b",
        "an instruction to ignore other instructions",
    ),
    (
        r"</?\s*(important|system|instructions?|secret|hidden|admin|assistant|prompt)\s*>",
        "a tag addressed to the model",
    ),
    (r"<!--.*?-->", "a hidden HTML comment"),
    (
        r"\b(do not|don't|never)\s+(tell|inform|mention|reveal|show|notify|alert)\b[^.\n]{0,30}"
        r"\b(user|human|anyone)\b",
        "an instruction to keep something from the user",
    ),
    (
        r"\bwithout\s+(telling|informing|asking|notifying|alerting)\s+(the\s+)?(user|human)\b",
        "an instruction to act behind the user's back",
    ),
    (
        r"\b(you are now|you must now|from now on|new instructions|system prompt)\b",
        "text that tries to re-instruct the model",
    ),
    (
        r"\b(before|after|when)\s+(using|calling)\s+(this|any|the|other)\s+(tool|function)s?\b"
        r"[^\n]{0,80}\b(read|send|include|pass|upload|fetch|forward)\b",
        "a directive about other tool calls",
    ),
    (
        r"\binstead of\s+(using\s+|calling\s+)?(any|the|other)\b[^.\n]{0,30}\btools?\b",
        "an attempt to shadow other tools",
    ),
    (
        r"(~/\.ssh|\bid_rsa\b|\.aws/credentials|/etc/passwd|\bmcp\.json\b|\.cursor/)",
        "a reference to credentials or client configuration files",
    ),
    (
        r"\b(send|post|upload|forward|transmit|exfiltrate|submit|report)\b[^\n]{0,60}"
        r"\b(to|at)\s+<?https?://",
        "an instruction to send data to a URL",
    ),
    (
        r"https?://[^\s\"'<>]*(\{\{|\$\{|\{[a-z_]+\}|=\s*<)",
        "a URL that carries data into its address (an exfiltration template)",
    ),
    (r"[A-Za-z0-9+/]{80,}={0,2}", "an encoded blob (base64) that reviewers cannot read"),
    # The same directives in other languages (Spanish, Portuguese, French, German, Italian,
    # Russian, Chinese, Japanese).
    (
        r"\b(ignora|ignore[sz]?|ignoriere|ignorare|olvida|oublie|vergiss)\b[^.\n]{0,40}"
        r"\b(instrucciones|instruções|consignes|anweisungen|istruzioni|anteriores|"
        r"précédentes|vorherigen|precedenti)\b",
        "an instruction to ignore other instructions (not in English)",
    ),
    (
        r"(игнорируй|забудь)[^.\n]{0,40}(инструкции|указания)",
        "an instruction to ignore other instructions (not in English)",
    ),
    (
        r"(忽略|无视|忘记)[^。\n]{0,20}(指令|指示|说明|提示)",
        "an instruction to ignore other instructions (not in English)",
    ),
    (
        r"(無視|忘れ)[^。\n]{0,20}(指示|命令|プロンプト)",
        "an instruction to ignore other instructions (not in English)",
    ),
    (
        r"(no (le )?(digas|informes)|ne (le )?dis pas|sag(e)? (es )?nicht|non dirlo)"
        r"[^.\n]{0,30}(usuario|utilisateur|benutzer|nutzer|utente)",
        "an instruction to keep something from the user (not in English)",
    ),
]
_PATTERNS = [(re.compile(p, re.IGNORECASE | re.DOTALL), what) for p, what in _DIRECTIVES]
# For ASCII text, the literals each pattern cannot match without (one of them, lowercased, is
# in the text or in its whitespace-collapsed form): a pattern runs only when one is there.
# Registering 100,000 tools ran 17 million pattern searches, a third of its time; almost
# every text of an honest catalog has none of these. Non-ASCII text runs every pattern: with
# IGNORECASE a pattern matches letters lower() does not give (dotless i, long s, the Kelvin
# sign). None: the pattern always runs; (): it cannot match ASCII text.
# tests/indexer/formats/test_lint_needles.py holds the two ways equal.
_NEEDLES: list[tuple[str, ...] | None] = [
    ("ignore", "disregard", "forget", "override"),
    ("<",),
    ("<!--",),
    ("do not", "don't", "never"),
    ("without",),
    ("you are now", "you must now", "from now on", "new instructions", "system prompt"),
    ("using", "calling"),
    ("instead of",),
    ("~/.ssh", "id_rsa", ".aws/credentials", "/etc/passwd", "mcp.json", ".cursor/"),
    ("http",),
    ("http",),
    None,  # the encoded blob: a character class, no literal
    ("ignor", "olvida", "oublie", "vergiss"),
    (),
    (),
    (),
    ("digas", "informes", "dis pas", "nicht", "non dirlo"),
]
assert len(_NEEDLES) == len(_PATTERNS)
# (literal, pattern index) for one pass over all literals; the patterns that always run.
_LITERALS = [(needle, i) for i, needles in enumerate(_NEEDLES) for needle in needles or ()]
_ALWAYS = frozenset(i for i, needles in enumerate(_NEEDLES) if needles is None)
_EVERY = frozenset(range(len(_PATTERNS)))
_POINTER = re.compile(r"#(/[A-Za-z0-9_.~%$-]*)*")
# Keys that are JSON Schema's own vocabulary: served, but fixed words that carry nothing.
# fmt: off
_SCHEMA_WORDS = frozenset({
    "$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor",
    "$vocabulary", "definitions", "type", "properties", "items", "prefixItems",
    "additionalProperties", "patternProperties", "propertyNames", "required", "enum", "const",
    "default", "examples", "description", "title", "format", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems",
    "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf", "not",
    "if", "then", "else", "readOnly", "writeOnly", "deprecated", "nullable", "contentEncoding",
    "contentMediaType", "contentSchema", "unevaluatedItems", "unevaluatedProperties",
    "additionalItems", "dependencies", "discriminator",
})
# fmt: on


@dataclass(frozen=True)
class Finding:
    severity: Literal["error", "warning"]
    message: str  # "<entry>: <rule>"

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


def lint_catalog(content: str, *, name: str = "", fmt: str = "") -> list[Finding]:
    """Errors (what registration would reject) then warnings, for one catalog file."""
    try:
        catalog: Catalog | None = parse_catalog(content, name=name, fmt=fmt)
        errors: list[str] = []
    except CatalogError as exc:
        catalog, errors = exc.parsed, exc.problems
    findings = [Finding("error", problem) for problem in errors]
    if catalog is not None:
        findings += [Finding("warning", message) for message in discovery_warnings(catalog)]
    return findings


def discovery_warnings(catalog: Catalog) -> list[str]:
    catalog_texts = [
        ("name", _spelled(catalog.name)),
        ("description", catalog.description),
        ("title", catalog.title),
        ("version", catalog.version),
    ]
    warnings = [
        f"catalog.{field}: {rule}" for field, text in catalog_texts for rule in _directives(text)
    ]
    seen: dict[str, str] = {}
    for tool in catalog.tools:
        if not tool.name:
            continue  # already an error
        warnings += [f"tool '{tool.name}'{m}" for m in _tool_warnings(tool, seen)]
    warnings += workflow_warnings(catalog)
    return warnings + [
        f"{where}: {rule}" for where, text in _workflow_texts(catalog) for rule in _directives(text)
    ]


def _tool_warnings(tool: Tool, seen: dict[str, str]) -> Iterator[str]:
    words = tool.description.split()
    if not words:
        yield ": has no description; search can match only its name"
    elif len(words) == 1:
        yield ": its description is one word; say what it does, returns and is for"
    key = " ".join(w.casefold() for w in words)
    if key and key in seen:
        yield f": has the same description as '{seen[key]}'; search cannot tell them apart"
    seen.setdefault(key, tool.name)
    yield from _content_warnings(tool)


# The findings of this many tools' own content are remembered, by content hash: a server
# registered under several names (or a catalog registered again) repeats every tool, and
# scanning its texts costs several times hashing it (decision 0086).
_REMEMBERED_TOOLS = 16384
_tool_findings: dict[str, tuple[str, ...]] = {}


def _content_warnings(tool: Tool) -> tuple[str, ...]:
    """What `_tool_warnings` finds in the tool's own content (`Tool.content_hash` covers every
    field read here), remembered."""
    key = tool.content_hash()
    found = _tool_findings.get(key)
    if found is None:
        found = tuple(_find_content_warnings(tool))
        if len(_tool_findings) >= _REMEMBERED_TOOLS:
            _tool_findings.clear()
        _tool_findings[key] = found
    return found


def _find_content_warnings(tool: Tool) -> Iterator[str]:
    if len(tool.description) > EMBEDDED_DESCRIPTION:
        yield (
            f": description is {len(tool.description):,} characters; search reads the first "
            f"{EMBEDDED_DESCRIPTION:,} (put what the tool does first)"
        )
    if len(tool.name) > MAX_LENGTH:
        yield (
            f": name is {len(tool.name)} characters; function-calling APIs accept at most "
            f"{MAX_LENGTH}, so its function name is shortened and hashed"
        )
    elif not FUNCTION_NAME.fullmatch(tool.name):
        yield ": name has characters function-calling APIs reject; its function name is hashed"
    for path in _undescribed(tool.input_schema, "", 0):
        yield f" parameter '{path}': has no description"
    texts = [(".name", _spelled(tool.name)), (".description", tool.description)]
    texts += [(".title", tool.title)]
    texts += [(f".examples[{i}]", example) for i, example in enumerate(tool.examples)]
    texts += [(f".tags[{i}]", tag) for i, tag in enumerate(tool.tags)]
    for label, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        texts += [(f" {label} schema at '{p}'", t) for p, t in _strings(schema or {}, "")]
    texts += [(f" annotations at '{p}'", t) for p, t in _strings(tool.annotations, "")]
    for link in tool.links:
        where = f" link to '{link.target_id}'"
        texts += [(f"{where} arguments at '{p}'", t) for p, t in _strings(dict(link.arguments), "")]
    for where, text in texts:
        yield from (f"{where}: {rule}" for rule in _directives(text))


def _undescribed(schema: Any, prefix: str, depth: int) -> Iterator[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if depth >= MAX_DEPTH or not isinstance(properties, dict):
        return
    for key, spec in properties.items():
        path = f"{prefix}{key}"
        if not isinstance(spec, dict) or "$ref" in spec:
            continue  # a reference is described where it points
        if not (isinstance(spec.get("description"), str) and spec["description"].strip()):
            yield path
        yield from _undescribed(spec, f"{path}.", depth + 1)
        if isinstance(spec.get("items"), dict):
            yield from _undescribed(spec["items"], f"{path}[].", depth + 1)


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in `node` with its path: each value, and each key that is not one of JSON
    Schema's own words (a key is served too: `$comment`, `x-*`, a property's name, an
    annotation's name), spelled out as words when it is an identifier."""
    if isinstance(node, str):
        yield path or "/", node
    elif isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}/{key}"
            if str(key) not in _SCHEMA_WORDS:
                yield where, _spelled(str(key))
            if key == "$ref" and isinstance(value, str) and _POINTER.fullmatch(value):
                # A deep local reference is a long run of path characters, not a blob: its
                # segments are read as words.
                yield where, _spelled(value.replace("/", " "))
            else:
                yield from _strings(value, where)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}/{index}")


def _spelled(name: str) -> str:
    """A name as written and as words: text can hide in an identifier
    ("ignore_previous_instructions")."""
    spelled = re.sub(r"[_\-.]+", " ", name)
    return name if spelled == name else f"{name}\n{spelled}"


def _workflow_texts(catalog: Catalog) -> Iterator[tuple[str, str]]:
    """What GetAffordances and ListCatalogs serve of each workflow, with where it is."""
    for workflow in catalog.workflows:
        where = f"workflow '{workflow.name}'"
        yield where, _spelled(workflow.name)
        yield f"{where}.title", workflow.title
        yield f"{where}.description", workflow.description
        for state in workflow.states:
            yield f"{where} state '{state.name}'", _spelled(state.name)
            yield f"{where} state '{state.name}'.description", state.description
        for index, transition in enumerate(workflow.transitions):
            for path, text in _strings(dict(transition.when), ""):
                yield f"{where}.transitions[{index}].when at '{path}'", text


def poisoning_warnings(catalog: Catalog) -> list[str]:
    """The warnings about text aimed at the model (what `--refuse-poisoning` refuses)."""
    return [w for w in discovery_warnings(catalog) if w.endswith(POISONING)]


# Texts up to this long have their findings remembered: a catalog repeats its schema words
# and property names, and copies or versions of one catalog repeat every text.
_REMEMBERED_TEXT_CHARS = 512
_REMEMBERED_TEXTS = 16384
# ASCII control characters that render as nothing (what `_invisible` finds in ASCII text).
_ASCII_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _directives(text: str) -> tuple[str, ...]:
    """A rule broken for each way `text` addresses the model rather than the reader."""
    if not text:
        return ()
    if len(text) <= _REMEMBERED_TEXT_CHARS:
        return _remembered_directives(text)
    return tuple(_find_directives(text))


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def _remembered_directives(text: str) -> tuple[str, ...]:
    return tuple(_find_directives(text))


def _find_directives(text: str) -> Iterator[str]:
    # Compatibility forms folded (fullwidth letters, ligatures, circled and styled letters
    # read as their plain letters), so the patterns see what the model reads.
    ascii_text = text.isascii()
    normal = text if ascii_text else unicodedata.normalize("NFKC", text)  # ASCII: as is
    # Whitespace collapsed, so a directive split across lines reads as one sentence.
    joined = " ".join(normal.split())
    runs = _EVERY
    if normal.isascii():  # also text the fold made ASCII (fullwidth letters)
        # Both forms, apart: a literal is in one or the other, never across the two.
        lowered = f"{normal}\n{joined}".lower()
        runs = _ALWAYS.union([i for needle, i in _LITERALS if needle in lowered])
    for index, (pattern, what) in enumerate(_PATTERNS):
        if index not in runs:
            continue
        match = pattern.search(normal) or pattern.search(joined)
        if match:
            snippet = " ".join(match.group(0).split())[:_SNIPPET]
            yield f"contains {what} ('{snippet}'), {POISONING}"
    if ascii_text:
        # No look-alike letters in ASCII, and the only invisible characters are controls:
        # most texts skip a Unicode-database lookup per character.
        hidden = sorted(set(_ASCII_INVISIBLE.findall(text)))
    else:
        hidden = sorted({c for c in text if _invisible(c)})
    if hidden:
        codes = ", ".join(f"U+{ord(c):04X}" for c in hidden[:5])
        yield (
            f"contains invisible characters ({codes}) that can hide text from reviewers, "
            f"{POISONING}"
        )
    mixed = None if ascii_text else _mixed_script_word(normal)
    if mixed:
        yield (
            f"has a word mixing alphabets ('{mixed[:_SNIPPET]}'): look-alike letters "
            f"(homoglyphs) disguise words from reviewers and filters, {POISONING}"
        )


def _mixed_script_word(text: str) -> str | None:
    """The first word that mixes Latin letters with Cyrillic or Greek ones."""
    words: list[str] = re.findall(r"\w{2,}", text)
    for word in words:
        scripts = {_script(c) for c in word if c.isalpha()}
        if "LATIN" in scripts and scripts & {"CYRILLIC", "GREEK"}:
            return word
    return None


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


def _invisible(char: str) -> bool:
    # Format characters (zero-width, bidi overrides, tag characters) render as nothing.
    category = unicodedata.category(char)
    return category == "Cf" or (category == "Cc" and char not in "\t\n\r")
