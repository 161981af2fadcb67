"""MCP client configurations (Claude Desktop, VS Code, Cursor) read into the servers they name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.ingest.mcp_config import (
    ConfigShape,
    ConfiguredServer,
    McpConfig,
    McpConfigError,
    catalog_name_for,
    read_mcp_config,
)

HOME = "/home/someone"


def _read(
    path: Path,
    document: dict[str, Any] | str,
    *,
    environ: dict[str, str] | None = None,
    inputs: dict[str, str] | None = None,
) -> McpConfig:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return read_mcp_config(path, environ=environ or {}, inputs=inputs or {}, home=HOME)


def _by_key(config: McpConfig) -> dict[str, ConfiguredServer]:
    return {server.key: server for server in config.servers}


def test_claude_desktop_servers_are_stdio_commands_with_args_and_env(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "claude_desktop_config.json",
        {
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "PORT": 8080},
                },
            },
        },
    )
    assert config.shape is ConfigShape.MCP_SERVERS
    time, github = config.servers
    assert (time.key, time.catalog, time.problem) == ("time", "time", "")
    assert time.source is not None
    assert github.source is not None
    assert time.source.command == ("uvx", "mcp-server-time", "--local-timezone", "UTC")
    assert github.source.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "PORT": "8080"}
    assert "ghp_x" not in repr(github)


def test_vscode_servers_take_stdio_http_and_sse_with_inputs_filled(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "project" / ".vscode" / "mcp.json",
        {
            "inputs": [
                {
                    "type": "promptString",
                    "id": "api-key",
                    "description": "API key",
                    "password": True,
                }
            ],
            "servers": {
                "files": {
                    "type": "stdio",
                    "command": "npx",
                    "args": ["@modelcontextprotocol/server-filesystem", "${workspaceFolder}"],
                    "env": {"API_KEY": "${input:api-key}"},
                },
                "docs": {
                    "type": "http",
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${input:api-key}"},
                },
                "legacy": {"type": "sse", "url": "https://old.example.com/sse"},
            },
        },
        inputs={"api-key": "s3cret"},
    )
    assert config.shape is ConfigShape.SERVERS
    servers = _by_key(config)
    files, docs, legacy = (servers[k].source for k in ("files", "docs", "legacy"))
    assert files is not None
    assert docs is not None
    assert legacy is not None
    # The workspace is the folder that holds .vscode.
    assert files.command[-1] == str(tmp_path / "project")
    assert files.env == {"API_KEY": "s3cret"}
    assert (docs.url, docs.headers, docs.sse) == (
        "https://mcp.example.com/mcp",
        {"Authorization": "Bearer s3cret"},
        False,
    )
    assert (legacy.url, legacy.sse) == ("https://old.example.com/sse", True)


def test_cursor_servers_take_urls_and_environment_placeholders(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "repo" / ".cursor" / "mcp.json",
        {
            "mcpServers": {
                "linear": {
                    "url": "https://mcp.linear.app/mcp",
                    "headers": {"Authorization": "Bearer ${env:LINEAR_TOKEN}"},
                },
                "notes": {
                    "command": "python",
                    "args": ["${userHome}/notes/server.py", "--root", "${workspaceFolder}"],
                },
            }
        },
        environ={"LINEAR_TOKEN": "lin_123"},
    )
    linear, notes = (server.source for server in config.servers)
    assert linear is not None
    assert notes is not None
    assert (linear.url, linear.headers, linear.command) == (
        "https://mcp.linear.app/mcp",
        {"Authorization": "Bearer lin_123"},
        (),
    )
    assert notes.command == ("python", f"{HOME}/notes/server.py", "--root", str(tmp_path / "repo"))


def test_an_unfilled_input_fails_only_its_server_and_says_how_to_fill_it(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {
            "inputs": [{"type": "promptString", "id": "token", "description": "GitHub PAT"}],
            "servers": {
                "github": {
                    "url": "https://api.example.com/mcp",
                    "headers": {"X": "${input:token}"},
                },
                "time": {"command": "uvx", "args": ["mcp-server-time"]},
            },
        },
    )
    github, time = config.servers
    assert github.source is None
    assert github.problem == (
        "headers.X: ${input:token} needs a value (GitHub PAT): give --input token=VALUE"
    )
    assert time.source is not None
    assert time.problem == ""


def test_an_unset_environment_variable_or_an_unknown_placeholder_is_named(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {
            "servers": {
                "a": {"command": "run", "env": {"TOKEN": "${env:NOT_SET}"}},
                "b": {"command": "${command:pick}"},
            }
        },
    )
    a, b = config.servers
    assert a.problem == "env.TOKEN: ${env:NOT_SET}: NOT_SET is not set in the environment"
    assert b.problem.startswith("command: ${command:pick} is not a placeholder capreg can fill")


def test_claude_code_style_variables_expand_with_defaults(tmp_path: Path) -> None:
    config = _read(
        tmp_path / ".mcp.json",
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "${API_BASE:-https://api.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                }
            }
        },
        environ={"API_KEY": "k"},
    )
    (api,) = config.servers
    assert api.source is not None
    assert (api.source.url, api.source.headers) == (
        "https://api.example.com/mcp",
        {"Authorization": "Bearer k"},
    )


def test_comments_and_trailing_commas_are_read_as_the_editors_read_them(tmp_path: Path) -> None:
    text = """{
      // Servers for this repository.
      "servers": {
        /* the hosted one */
        "docs": {"url": "https://docs.example.com/mcp", "headers": {"X": "a,}"},},
      },
    }"""
    (docs,) = _read(tmp_path / "mcp.json", text).servers
    assert docs.source is not None
    assert (docs.source.url, docs.source.headers) == ("https://docs.example.com/mcp", {"X": "a,}"})


def test_an_env_file_is_read_and_env_wins_over_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("# secrets\nexport TOKEN='from-file'\nREGION=eu\n")
    config = _read(
        tmp_path / ".vscode" / "mcp.json",
        {
            "servers": {
                "s": {
                    "command": "run",
                    "envFile": "${workspaceFolder}/.env",
                    "env": {"REGION": "us"},
                }
            }
        },
    )
    (server,) = config.servers
    assert server.source is not None
    assert server.source.env == {"TOKEN": "from-file", "REGION": "us"}


@pytest.mark.parametrize(
    ("key", "catalog"),
    [
        ("time", "time"),
        ("My Server", "My-Server"),
        ("@modelcontextprotocol/server-github", "modelcontextprotocol-server-github"),
        ("github.com", "github-com"),
        ("a__b", "a_b"),
        ("café", "cafe"),
        ("x" * 70, "x" * 64),
        ("!!!", ""),
    ],
)
def test_a_key_becomes_a_legal_catalog_name(key: str, catalog: str) -> None:
    assert catalog_name_for(key) == catalog


def test_a_renamed_key_is_flagged_and_an_unnameable_one_fails(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {"mcpServers": {"My Server": {"command": "run"}, "???": {"command": "run"}}},
    )
    mine, unnameable = config.servers
    assert (mine.catalog, mine.renamed, mine.problem) == ("My-Server", True, "")
    assert unnameable.problem.startswith("no catalog name can be made from the key '???'")


def test_two_keys_that_become_one_catalog_both_fail(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {"mcpServers": {"a b": {"command": "x"}, "a.b": {"command": "y"}, "c": {"command": "z"}}},
    )
    first, second, other = config.servers
    assert first.source is None
    assert second.source is None
    assert first.problem == "servers 'a b', 'a.b' would all be catalog 'a-b'; rename all but one"
    assert other.problem == ""


def test_bad_entries_fail_their_server_with_the_rule_broken(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {
            "servers": {
                "nothing": {},
                "both": {"command": "x", "url": "https://x"},
                "ws": {"type": "ws", "url": "wss://x"},
                "args": {"command": "x", "args": "--flag"},
                "text": "npx server",
            }
        },
    )
    assert {s.key: s.problem for s in config.servers} == {
        "nothing": "needs a 'command' to start (stdio) or a 'url' (HTTP)",
        "both": "give either 'command' (stdio) or 'url' (HTTP), not both",
        "ws": "type 'ws' is not supported (stdio, http or sse)",
        "args": "'args' must be a list of strings",
        "text": "the entry must be an object",
    }


def test_only_picks_servers_by_key_or_catalog_and_refuses_an_unknown_name(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "mcp.json",
        {
            "mcpServers": {
                "time": {"command": "t"},
                "My Server": {"command": "m"},
                "off": {"command": "o", "disabled": True},
            }
        },
    )
    assert [s.key for s in config.select([])] == ["time", "My Server"]  # disabled left out
    assert [s.key for s in config.select(["My-Server", "off"])] == ["My Server", "off"]
    with pytest.raises(
        McpConfigError, match=r"no server named 'tiem' \(its servers: time, My Server, off\)"
    ):
        config.select(["time", "tiem"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {"a": {"command": "x"}', r"mcp\.json:1:\d+: not JSON"),
        ('{"tools": []}', "expected an 'mcpServers' object .* found neither"),
        ('{"mcpServers": {}, "servers": {}}', "found both"),
        ('{"servers": ["a"]}', "'servers' must be an object of named servers"),
        ("[]", "expected a JSON object at the top level"),
    ],
)
def test_a_file_that_is_no_mcp_configuration_is_refused_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(McpConfigError, match=message):
        _read(tmp_path / "mcp.json", text)


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match=r"cannot read .*absent\.json: No such file"):
        read_mcp_config(tmp_path / "absent.json", environ={}, inputs={}, home=HOME)


def test_vscode_user_settings_hold_servers_under_mcp(tmp_path: Path) -> None:
    config = _read(
        tmp_path / "settings.json",
        {"editor.fontSize": 14, "mcp": {"servers": {"time": {"command": "uvx"}}}},
    )
    assert config.shape is ConfigShape.SERVERS
    assert [s.key for s in config.servers] == ["time"]
