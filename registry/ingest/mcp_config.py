"""Reads an MCP client's configuration file (Claude Desktop, VS Code, Cursor) into the servers
it names, each with the catalog it becomes and where to reach it.

Claude Desktop's `claude_desktop_config.json`, Cursor's `mcp.json` (and Claude Code's, Cline's
and Windsurf's) list servers under `mcpServers`; VS Code's `.vscode/mcp.json` under `servers`
(its user settings under `mcp.servers`), with `inputs` the editor would prompt for. Files may
carry comments and trailing commas, as those editors accept. One bad entry, such as a
`${input:...}` nobody supplied, makes that server's `problem`, never the whole file's: the
other servers still import.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from indexer.errors import CapregError
from indexer.formats.rules import check_catalog_name
from registry.ingest.mcp_import import McpSource
from registry.ingest.placeholders import Placeholders, Unresolved

MAX_CONFIG_BYTES = 1024 * 1024
MAX_CATALOG_NAME = 64
HTTP_TYPES = {"http", "streamable-http", "streamableHttp", "sse"}

# Strings first, so a "//" or "," inside one is left alone.
_COMMENTS = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMAS = re.compile(r'"(?:\\.|[^"\\\n])*"|,(?=\s*[}\]])')


class McpConfigError(CapregError):
    """A configuration file that cannot be read as one; the message names the file and why."""


class EntryProblem(ValueError):
    """Why one server's entry cannot be imported; it becomes that server's `problem`."""


class ConfigShape(StrEnum):
    MCP_SERVERS = "mcpServers"  # Claude Desktop, Cursor, Claude Code, Cline, Windsurf
    SERVERS = "servers"  # VS Code


@dataclass(kw_only=True, frozen=True)
class ConfiguredServer:
    """One entry: the key the file gives it, the catalog it becomes and how to reach it.

    `source` is None when `problem` says why the entry cannot be imported; `disabled` when the
    file switches it off (`"disabled": true`).
    """

    key: str
    catalog: str
    source: McpSource | None = None
    problem: str = ""
    disabled: bool = False

    @property
    def renamed(self) -> bool:
        return bool(self.catalog) and self.catalog != self.key


@dataclass(kw_only=True, frozen=True)
class McpConfig:
    path: Path
    shape: ConfigShape
    servers: tuple[ConfiguredServer, ...] = field(default_factory=tuple)

    def select(self, only: Sequence[str]) -> list[ConfiguredServer]:
        """The servers `only` names (by key or catalog name), in file order; every server not
        disabled when `only` is empty. A name the file lacks is an error listing its keys."""
        if not only:
            return [s for s in self.servers if not s.disabled]
        known = {name for s in self.servers for name in (s.key, s.catalog) if name}
        unknown = [name for name in only if name not in known]
        if unknown:
            keys = ", ".join(s.key for s in self.servers) or "none"
            raise McpConfigError(
                f"{self.path}: no server named {', '.join(map(repr, unknown))} "
                f"(its servers: {keys})"
            )
        return [s for s in self.servers if s.key in only or s.catalog in only]


def catalog_name_for(key: str) -> str:
    """A legal catalog name for a server key: accents dropped, every other character that a
    name cannot hold becomes '-', '__' becomes '_', then trimmed to 64. Empty when nothing of
    the key is left."""
    ascii_key = unicodedata.normalize("NFKD", key).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_key)
    name = re.sub(r"[-_]{2,}", lambda run: "_" if set(run.group()) == {"_"} else "-", name)
    name = name.strip("-_")[:MAX_CATALOG_NAME].rstrip("-_")
    return name if check_catalog_name(name) is None else ""


def read_mcp_config(
    path: Path, *, environ: Mapping[str, str], inputs: Mapping[str, str], home: str
) -> McpConfig:
    """The servers `path` names. `environ` answers `${env:NAME}`, `inputs` VS Code's
    `${input:ID}`, `home` `${userHome}`; the workspace is the folder holding `.vscode` or
    `.cursor` when the file sits in one, else the file's own folder."""
    document = _load(path)
    if isinstance(document.get("mcp"), dict) and "servers" in document["mcp"]:
        document = document["mcp"]  # VS Code's user settings.json
    has_claude, has_vscode = "mcpServers" in document, "servers" in document
    if has_claude == has_vscode:
        found = "both" if has_claude else "neither"
        raise McpConfigError(
            f"{path}: expected an 'mcpServers' object (Claude Desktop, Cursor) or a 'servers' "
            f"object (VS Code) at the top level; found {found}"
        )
    shape = ConfigShape.MCP_SERVERS if has_claude else ConfigShape.SERVERS
    entries = document[shape.value]
    if not isinstance(entries, dict):
        raise McpConfigError(f"{path}: '{shape.value}' must be an object of named servers")
    workspace = path.parent.parent if path.parent.name in (".vscode", ".cursor") else path.parent
    placeholders = Placeholders(
        environ=environ,
        inputs=inputs,
        declared=_declared_inputs(document.get("inputs")),
        variables={
            "userHome": home,
            "workspaceFolder": str(workspace),
            "workspaceFolderBasename": workspace.name,
            "pathSeparator": os.sep,
            "/": os.sep,
        },
        # Claude Code's .mcp.json expands ${NAME} and ${NAME:-default} from the environment.
        bare_env=shape is ConfigShape.MCP_SERVERS,
    )
    servers = [_server(str(key), entry, placeholders, workspace) for key, entry in entries.items()]
    return McpConfig(path=path, shape=shape, servers=tuple(_refuse_shared_names(servers)))


def _load(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise McpConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise McpConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    try:
        document = json.loads(_plain_json(text))
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc
    if not isinstance(document, dict):
        raise McpConfigError(f"{path}: expected a JSON object at the top level")
    return document


def _plain_json(text: str) -> str:
    """JSON with comments (VS Code's JSONC) as plain JSON. A comment becomes spaces, keeping
    its newlines, so an error's line and column still point into the file as written."""

    def blank(match: re.Match[str]) -> str:
        found = match.group()
        return found if found.startswith('"') else re.sub(r"[^\n]", " ", found)

    return _TRAILING_COMMAS.sub(blank, _COMMENTS.sub(blank, text))


def _declared_inputs(inputs: object) -> dict[str, str]:
    """VS Code's `inputs`: id -> what the editor would prompt with."""
    if not isinstance(inputs, list):
        return {}
    return {
        str(entry["id"]): str(entry.get("description") or "")
        for entry in inputs
        if isinstance(entry, dict) and "id" in entry
    }


def _server(
    key: str, entry: object, placeholders: Placeholders, workspace: Path
) -> ConfiguredServer:
    catalog = catalog_name_for(key)
    disabled = isinstance(entry, dict) and entry.get("disabled") is True
    if not catalog:
        problem = f"no catalog name can be made from the key {key!r}; rename it in the file"
        return ConfiguredServer(key=key, catalog="", problem=problem, disabled=disabled)
    try:
        source = _source(entry, placeholders, workspace)
    except (EntryProblem, Unresolved) as exc:
        return ConfiguredServer(key=key, catalog=catalog, problem=str(exc), disabled=disabled)
    return ConfiguredServer(key=key, catalog=catalog, source=source, disabled=disabled)


def _source(entry: object, placeholders: Placeholders, workspace: Path) -> McpSource:
    if not isinstance(entry, dict):
        raise EntryProblem("the entry must be an object")
    kind = entry.get("type")
    if kind is not None and kind != "stdio" and kind not in HTTP_TYPES:
        raise EntryProblem(f"type {kind!r} is not supported (stdio, http or sse)")
    url, command = entry.get("url"), entry.get("command")
    if url is not None and command is not None:
        raise EntryProblem("give either 'command' (stdio) or 'url' (HTTP), not both")
    if kind in HTTP_TYPES or (kind is None and url is not None):
        if not isinstance(url, str) or not url.strip():
            raise EntryProblem("an HTTP server needs a 'url' string")
        return McpSource(
            url=placeholders.resolve(url, "url"),
            headers=placeholders.resolve_map(_strings(entry, "headers"), "headers"),
            sse=kind == "sse",
        )
    if not isinstance(command, str) or not command.strip():
        raise EntryProblem("needs a 'command' to start (stdio) or a 'url' (HTTP)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise EntryProblem("'args' must be a list of strings")
    env = _strings(entry, "env")
    if entry.get("envFile") is not None:
        env_file = placeholders.resolve(str(entry["envFile"]), "envFile")
        env = {**_dotenv(workspace / env_file), **env}  # `env` wins, as in the editors
    cwd = placeholders.resolve(str(entry["cwd"]), "cwd") if entry.get("cwd") else ""
    return McpSource(
        command=(
            placeholders.resolve(command, "command"),
            *(placeholders.resolve(str(a), f"args[{i}]") for i, a in enumerate(args)),
        ),
        env=placeholders.resolve_map(env, "env"),
        cwd=str(workspace / cwd) if cwd else "",
    )


def _strings(entry: dict[str, Any], name: str) -> dict[str, str]:
    """An object of string values (`env`, `headers`); numbers are written as text and a null
    leaves the variable out, as VS Code does."""
    found = entry.get(name, {})
    if not isinstance(found, dict):
        raise EntryProblem(f"'{name}' must be an object of NAME: value")
    values = {}
    for key, value in found.items():
        if value is None:
            continue
        if isinstance(value, dict | list):
            raise EntryProblem(f"'{name}.{key}' must be a string")
        values[str(key)] = value if isinstance(value, str) else json.dumps(value)
    return values


def _dotenv(path: Path) -> dict[str, str]:
    """NAME=VALUE lines (an `export ` prefix, quotes and '#' comment lines allowed)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise EntryProblem(f"cannot read envFile {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise EntryProblem(f"envFile {path}: not UTF-8 text (byte {exc.start})") from exc
    values = {}
    for line in text.splitlines():
        line = line.strip().removeprefix("export ").strip()
        name, found, value = line.partition("=")
        if line.startswith("#") or not found or not name.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def _refuse_shared_names(servers: list[ConfiguredServer]) -> list[ConfiguredServer]:
    """Two keys that become one catalog name would overwrite each other: neither imports."""
    counts = Counter(s.catalog for s in servers if s.catalog)
    keys: dict[str, list[str]] = {}
    for s in servers:
        keys.setdefault(s.catalog, []).append(s.key)
    return [
        ConfiguredServer(
            key=s.key,
            catalog=s.catalog,
            problem=f"servers {', '.join(map(repr, keys[s.catalog]))} would all be catalog "
            f"'{s.catalog}'; rename all but one",
            disabled=s.disabled,
        )
        if s.catalog and counts[s.catalog] > 1
        else s
        for s in servers
    ]
