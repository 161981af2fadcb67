"""The README and docs/ link only to files and headings that exist, and the README stays short."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_LIMIT_BYTES = 15_000
DOCS = sorted([README, *(ROOT / "docs").rglob("*.md")])

EXTERNAL = ("http://", "https://", "mailto:")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target), with an optional "title"; text may hold one level of [].
INLINE_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (a fenced line becomes empty)."""
    lines: list[str] = []
    fence: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        marker = FENCE.match(line)
        if fence is None and marker is not None:
            fence = marker.group(1)
            lines.append("")
        elif fence is not None:
            if marker is not None and marker.group(1) == fence:
                fence = None
            lines.append("")
        else:
            lines.append(line)
    return lines


def links(path: Path) -> list[str]:
    """Every link target written in the file's prose (code blocks and code spans ignored)."""
    targets: list[str] = []
    for line in prose_lines(path):
        definition = REFERENCE_DEFINITION.match(line)
        if definition is not None:
            targets.append(definition.group(1))
            continue
        text = CODE_SPAN.sub("code", line)
        targets.extend(match.group(1) for match in INLINE_LINK.finditer(text))
    return targets


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but - and _ dropped, spaces to -."""
    text = LINK_TEXT.sub(r"\1", heading).strip().lower()
    return NOT_IN_SLUG.sub("", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The heading anchors of a Markdown file, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(path):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def local_targets(path: Path) -> list[tuple[str, Path, str]]:
    """(as written, resolved file, fragment) for each link that is not external."""
    result: list[tuple[str, Path, str]] = []
    for target in links(path):
        if not target or target.startswith(EXTERNAL):
            continue
        file_part, _, fragment = target.partition("#")
        file_part = unquote(file_part)
        if not file_part:
            resolved = path
        elif file_part.startswith("/"):
            resolved = ROOT / file_part.lstrip("/")
        else:
            resolved = path.parent / file_part
        result.append((target, resolved.resolve(), unquote(fragment)))
    return result


def test_the_documentation_set_includes_the_readme_and_the_docs_pages() -> None:
    names = {relative(path) for path in DOCS}
    assert {"README.md", "docs/architecture.md", "docs/decisions/README.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_relative_link_in_the_docs_resolves(doc: Path) -> None:
    broken = [written for written, target, _ in local_targets(doc) if not target.is_file()]
    assert not broken, f"{relative(doc)} links to missing files: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=relative)
def test_every_link_fragment_names_an_existing_heading(doc: Path) -> None:
    broken = [
        written
        for written, target, fragment in local_targets(doc)
        if fragment
        and target.suffix == ".md"
        and target.is_file()
        and fragment.lower() not in anchors(target)
    ]
    assert not broken, f"{relative(doc)} links to missing headings: {broken}"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Keeping a folder in sync: `serve --watch`", "keeping-a-folder-in-sync-serve---watch"),
        (
            "OpenAPI 3.0 / 3.1 (`format: openapi`), JSON or YAML",
            "openapi-30--31-format-openapi-json-or-yaml",
        ),
        ("The [API](api.md) and snake_case", "the-api-and-snake_case"),
    ],
)
def test_heading_anchors_follow_github_slug_rules(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_links_inside_code_are_not_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "A [real](real.md) link and `[code](span.md)`.\n\n```text\n[fenced](block.md)\n```\n",
        encoding="utf-8",
    )
    assert links(page) == ["real.md"]


def test_the_readme_stays_under_15000_bytes() -> None:
    size = README.stat().st_size
    assert size < README_LIMIT_BYTES, f"README.md is {size} bytes; move detail into docs/"
