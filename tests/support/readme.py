"""The README's fenced blocks as tests/test_readme.py runs them: which run, which a marker
exempts and why, each shell command with the output lines the README shows under it, and the
match of shown lines against real output."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The languages the test runs: shell blocks command by command in one shell, a Python block as
# a program the README says to save and run.
RUNNABLE = frozenset({"sh", "python"})
# A marker is an HTML comment on the line above a block (blank lines allowed between), so it
# is visible in the source and invisible on the rendered page:
#   <!-- readme-test: skip: WHY -->    not run; the reason is required
#   <!-- readme-test: client-config --> an MCP client's JSON configuration: parsed, and each
#                                       server's command line parsed by `capreg bridge`
MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<kind>[a-z-]+)(?::\s*(?P<reason>.*?))?\s*-->$")
MARKER_KINDS = frozenset({"skip", "client-config"})
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
PLACEHOLDER = re.compile(r"<[^<>]+>")
ANY_LINES = "..."


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # the marker's kind
    reason: str


@dataclass(frozen=True)
class Command:
    text: str  # as the shell reads it, continuation lines included
    shown: tuple[str, ...]  # the output the README shows under it, without the "# "


def readme_blocks(text: str) -> tuple[list[Block], list[str]]:
    """Every fenced block with the marker above it, and the problems found on the way (a
    marker with no block under it, an unclosed fence)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    pending: tuple[int, re.Match[str]] | None = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        marker = MARKER.match(line)
        fence = FENCE.match(lines[i])
        if marker is not None:
            if pending is not None:
                problems.append(f"README.md:{pending[0]}: marker with no block under it")
            pending = (i + 1, marker)
        elif fence is not None:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                problems.append(f"README.md:{i + 1}: unclosed fence")
                break
            kind = pending[1]["kind"] if pending else None
            reason = (pending[1]["reason"] or "") if pending else ""
            body = "\n".join(lines[i + 1 : end])
            blocks.append(Block(i + 1, fence["lang"], body, kind, reason.strip()))
            pending = None
            i = end
        elif line and pending is not None:
            problems.append(f"README.md:{pending[0]}: marker with no block under it")
            pending = None
        i += 1
    if pending is not None:
        problems.append(f"README.md:{pending[0]}: marker with no block under it")
    return blocks, problems


def unrunnable(block: Block) -> str | None:
    """Why the test can neither run nor check `block`, or None."""
    where = f"README.md:{block.line} ({block.lang or 'no language'})"
    if block.marker is None:
        if block.lang in RUNNABLE:
            return None
        return (
            f"{where}: neither runnable ({', '.join(sorted(RUNNABLE))}) nor marked; put "
            "<!-- readme-test: skip: WHY --> above it"
        )
    if block.marker not in MARKER_KINDS:
        return f"{where}: unknown marker {block.marker!r} (known: {sorted(MARKER_KINDS)})"
    if block.marker == "skip" and not block.reason:
        return f"{where}: a skip marker says why: <!-- readme-test: skip: WHY -->"
    if block.marker == "client-config" and block.lang != "json":
        return f"{where}: a client-config block is JSON"
    return None


def shell_commands(text: str) -> list[Command]:
    """A shell block's commands. A `#` line right under a command (no blank line between) is
    output the README shows; one above a command, or after a blank line, explains."""
    commands: list[Command] = []
    lines = iter(text.splitlines())
    current: str | None = None
    shown: list[str] = []
    for line in lines:
        if line.startswith("#"):
            if current is not None:
                shown.append(line[2:] if line.startswith("# ") else line[1:])
            continue
        if current is not None:
            commands.append(Command(current, tuple(shown)))
            current, shown = None, []
        if not line.strip():
            continue
        current = line
        while current.endswith("\\"):
            current += "\n" + next(lines)
    if current is not None:
        commands.append(Command(current, tuple(shown)))
    return commands


def python_shown(text: str) -> tuple[str, ...]:
    """The output a Python block shows: the `#` lines that end it."""
    lines = text.rstrip().splitlines()
    shown: list[str] = []
    while lines and lines[-1].startswith("#"):
        line = lines.pop()
        shown.insert(0, line[2:] if line.startswith("# ") else line[1:])
    return tuple(shown)


def line_pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a pattern: `<...>` stands for anything, a run of blanks for any run of
    whitespace (so two spaces in the README match a tab)."""
    literals = [
        r"\s+".join(re.escape(word) for word in re.split(r"\s+", part))
        for part in PLACEHOLDER.split(shown.rstrip())
    ]
    return re.compile(".*".join(literals))


def first_unshown(shown: Sequence[str], output: Iterable[str]) -> str | None:
    """The first shown line with no match in `output` after the previous one's match (shown
    lines are an ordered subset of the output; `...` matches nothing), or None."""
    remaining = iter(line.rstrip() for line in output)
    for expected in shown:
        if expected.strip() == ANY_LINES:
            continue
        pattern = line_pattern(expected)
        if not any(pattern.fullmatch(line) for line in remaining):
            return expected
    return None
