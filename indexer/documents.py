"""Reading untrusted JSON and YAML text with bounds checked while parsing, not after.

A few hundred bytes of YAML aliases can expand to gigabytes, and JSON or YAML nested a few
thousand levels deep exhausts the parser's recursion. `load_document` refuses both before any
value is built: YAML is composed to its node graph first, where aliases, depth, the expanded
node count and the expanded text are measured (the expansion counted, never performed): one
long string repeated through aliases is shared while parsed, but every later step that writes
the value out (validation, storage, responses) pays for each copy. JSON is decoded by the C
parser and then checked for depth. Every catalog, keys file and folder scan reads through here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from indexer.errors import CapregError

MAX_DEPTH = 64
MAX_ALIASES = 10_000
MAX_EXPANDED_NODES = 2_000_000
# Characters of text (keys and values) once aliases are expanded: what a catalog could hold
# written out without aliases (the 32 MiB content limit), so only repetition is refused.
MAX_EXPANDED_CHARS = 32 * 1024 * 1024


# How much of a source line an error quotes, around the column it points at.
EXCERPT_CHARS = 76
_PROBLEM_CHARS = 300
BOM = "\ufeff"
# An escape that decodes to a UTF-16 surrogate (JSON's and YAML's \ud800, YAML's \U0000d800):
# the only way a decoded value holds a lone surrogate when its source text holds none.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")


class DocumentError(CapregError, ValueError):
    """Text that is not a JSON or YAML document within the bounds; says which bound, or, for
    text that does not parse, the line and column (1-based; 0 when not known) and the source
    line with a caret under the column, on lines of their own."""

    def __init__(self, message: str, *, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting aliases and nesting while it composes nodes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise DocumentError(f"YAML has more than {MAX_ALIASES} aliases")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise DocumentError(f"YAML is nested more than {MAX_DEPTH} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: Node) -> tuple[int, int]:
    """How many nodes, and characters of scalar text, the document has once every alias is
    expanded, without expanding it: each node's size is computed once (aliases share the
    node) and a cycle is refused."""
    sizes: dict[int, tuple[int, int]] = {}
    visiting: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            visiting.discard(key)
            nodes = 1 + sum(sizes[id(child)][0] for child in children)
            chars = sum(sizes[id(child)][1] for child in children)
            if isinstance(node, ScalarNode):
                chars += len(node.value)
            if nodes > MAX_EXPANDED_NODES:
                raise DocumentError(
                    f"YAML expands to more than {MAX_EXPANDED_NODES:,} values (aliases)"
                )
            if chars > MAX_EXPANDED_CHARS:
                raise DocumentError(
                    f"YAML expands to more than {MAX_EXPANDED_CHARS:,} characters of text "
                    "(aliases repeating text): write the text out, or repeat less"
                )
            sizes[key] = (nodes, chars)
            continue
        if key in visiting:
            raise DocumentError("YAML refers to itself through an alias")
        visiting.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _check_values(value: Any, text: str) -> None:
    """Refuses a value decoded from `text` nested deeper than MAX_DEPTH, or holding text that
    is not Unicode (a lone surrogate from a \\ud800 escape). Its strings are looked at only
    when the text could give one: that check was a fifth of reading a catalog."""
    _walk(value, strings=_may_hold_surrogates(text))


def _may_hold_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return _SURROGATE_ESCAPE.search(text) is not None


def _walk(value: Any, *, strings: bool) -> None:
    """The value's depth checked item by item, and with `strings` its keys and strings for
    lone surrogates, iteratively: no recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise DocumentError(f"the document is nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, str):
            if strings:
                _unicode(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if strings and isinstance(key, str):
                    _unicode(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def _unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end].encode("unicode_escape").decode()
        raise DocumentError(f"text holds {bad}, a lone surrogate, which is not Unicode") from None


def _excerpt(text: str, line: int, column: int) -> str:
    """Source line `line` and a caret under `column` (both 1-based), each indented four
    spaces; a long line is cut to EXCERPT_CHARS around the column. Tabs and unprintable
    characters are shown as one character each, so the caret stays under its column."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    source = "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in lines[line - 1])
    at = min(max(column - 1, 0), len(source))
    start = max(0, min(at - EXCERPT_CHARS // 2, len(source) - EXCERPT_CHARS))
    shown = source[start : start + EXCERPT_CHARS]
    lead = "..." if start else ""
    tail = "..." if start + EXCERPT_CHARS < len(source) else ""
    return f"    {lead}{shown}{tail}\n    {' ' * (len(lead) + at - start)}^"


def _position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of character `offset` of `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _unparsable(text: str, problem: str, line: int, column: int, note: str = "") -> DocumentError:
    """The error for text that does not parse: where, what, and the line it is on."""
    problem = " ".join(problem.split())[:_PROBLEM_CHARS]
    if not line:
        return DocumentError(f"not valid JSON or YAML: {problem}{note}")
    excerpt = _excerpt(text, line, column)
    return DocumentError(
        f"not valid JSON or YAML: line {line}, column {column}: {problem}{note}"
        + (f"\n{excerpt}" if excerpt else ""),
        line=line,
        column=column,
    )


def _yaml_error(text: str, exc: yaml.YAMLError) -> DocumentError:
    """A YAML error in words that name the line and column: PyYAML's own text names the
    stream "<unicode string>" and draws carets that only line up on separate lines."""
    if isinstance(exc, ReaderError):
        line, column = _position(text, exc.position)
        what = f"character #x{exc.character:04x}" if isinstance(exc.character, int) else "text"
        return _unparsable(text, f"{what}: {exc.reason}", line, column)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot be parsed"
        note = ""
        if exc.context and exc.problem and exc.context_mark is not None:
            at = exc.context_mark
            note = f" ({exc.context} that starts at line {at.line + 1}, column {at.column + 1})"
        if mark is None:
            return _unparsable(text, problem, 0, 0, note)
        return _unparsable(text, problem, mark.line + 1, mark.column + 1, note)
    return _unparsable(text, str(exc), 0, 0)


def load_document(text: str) -> Any:
    """The value of a JSON (text starting with { or [) or YAML document, within the bounds.
    A leading byte-order mark is ignored: editors on Windows write one.

    Raises DocumentError for a bound broken and for text that does not parse.
    """
    text = text.removeprefix(BOM)
    if text.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(text)
        except RecursionError:
            raise DocumentError(f"JSON is nested more than {MAX_DEPTH} levels deep") from None
        except json.JSONDecodeError as exc:
            raise _unparsable(text, exc.msg, exc.lineno, exc.colno) from exc
        except ValueError as exc:
            raise _unparsable(text, str(exc), 0, 0) from exc
        _check_values(value, text)
        return value
    try:
        # The reader refuses unprintable characters as it is built: inside the try.
        loader = _BoundedLoader(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(text, exc) from exc
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _expanded_size(root)
        value = loader.construct_document(root)
        _check_values(value, text)
        return value
    except yaml.YAMLError as exc:
        raise _yaml_error(text, exc) from exc
    finally:
        loader.dispose()
