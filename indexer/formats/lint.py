"""Offline catalog checks: every validation error, plus warnings that matter for discovery.

Warnings name what makes a tool hard to find or dangerous to show a model: missing or
one-word descriptions, duplicated descriptions, names function-calling APIs reject,
parameters without descriptions, and text aimed at the model rather than at the reader
(the tool-poisoning vector: hidden directives, <IMPORTANT> tags, invisible characters).
"""

from __future__ import annotations

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
    warnings = [f"catalog.description: {rule}" for rule in _directives(catalog.description)]
    seen: dict[str, str] = {}
    for tool in catalog.tools:
        if not tool.name:
            continue  # already an error
        warnings += [f"tool '{tool.name}'{m}" for m in _tool_warnings(tool, seen)]
    return warnings + workflow_warnings(catalog)


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
    texts = [(".description", tool.description), (".title", tool.title)]
    texts += [(f".examples[{i}]", example) for i, example in enumerate(tool.examples)]
    for label, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        texts += [(f" {label} schema at '{p}'", t) for p, t in _schema_texts(schema or {}, "")]
    texts += [(f" annotations at '{p}'", t) for p, t in _strings(tool.annotations, "")]
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


def _schema_texts(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every description, title and string default/enum/example in a schema, with its path."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}/{key}"
            if key == "properties" and isinstance(value, dict):
                # A property's name reaches the model too: text can hide in it, spelled
                # as an identifier ("ignore_previous_instructions").
                for name in value:
                    spelled = re.sub(r"[_\-.]+", " ", str(name))
                    yield f"{where}/{name}", f"{name}\n{spelled}"
            if isinstance(value, str) and key in (
                "description",
                "title",
                "default",
                "examples",
                "const",
            ):
                yield where, value
            else:
                yield from _schema_texts(value, where)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, str):
                yield f"{path}/{index}", value
            else:
                yield from _schema_texts(value, f"{path}/{index}")


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string value anywhere in `node` (annotations are free-form)."""
    if isinstance(node, str):
        yield path or "/", node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}/{index}")


def poisoning_warnings(catalog: Catalog) -> list[str]:
    """The warnings about text aimed at the model (what `--refuse-poisoning` refuses)."""
    return [w for w in discovery_warnings(catalog) if w.endswith(POISONING)]


def _directives(text: str) -> Iterator[str]:
    """A rule broken for each way `text` addresses the model rather than the reader."""
    # Whitespace collapsed, so a directive split across lines reads as one sentence.
    joined = " ".join(text.split())
    for pattern, what in _PATTERNS:
        match = pattern.search(text) or pattern.search(joined)
        if match:
            snippet = " ".join(match.group(0).split())[:_SNIPPET]
            yield f"contains {what} ('{snippet}'), {POISONING}"
    hidden = sorted({c for c in text if _invisible(c)})
    if hidden:
        codes = ", ".join(f"U+{ord(c):04X}" for c in hidden[:5])
        yield (
            f"contains invisible characters ({codes}) that can hide text from reviewers, "
            f"{POISONING}"
        )
    mixed = _mixed_script_word(text)
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
