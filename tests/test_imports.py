"""What each process loads: the server none of the offline tooling, and a client command none of
the model or index libraries. Checked in a fresh interpreter, since this one has loaded
everything the suite needs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Offline work and what only it needs: serving must not pay for it, in memory or start-up.
OFFLINE = (
    "capreg.evaluation",
    "capreg.training",
    "indexer.evaluation",
    "bench",
    "tests",
    "lightgbm",
    "sklearn",
    "torch",
    "sentence_transformers",
    "matplotlib",
)
SERVING = (
    "registry.rpc.server",
    "registry.rpc.servicer",
    "registry.reader",
    "registry.writer",
    "registry.store",
    "registry.http.app",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_serving_process_loads_no_evaluation_or_training_code() -> None:
    loaded = loaded_after("\n".join(f"import {module}" for module in SERVING))
    assert set(SERVING) <= loaded
    assert {m for m in loaded if within(m, *OFFLINE, "mcp_bridge")} == set()


def test_a_node_serving_sqlite_loads_neither_the_postgresql_client_nor_the_schema_checker() -> None:
    # psycopg and its pool were 0.07 s of every start-up's imports, jsonschema another 0.07 s
    # (a restart over a store checks no schema).
    loaded = loaded_after(
        "import capreg.cli.serve\n" + "\n".join(f"import {module}" for module in SERVING)
    )
    deferred = ("psycopg", "psycopg_pool", "registry.store.postgres", "jsonschema")
    assert {m for m in loaded if within(m, *deferred)} == set()
    assert "registry.store.postgres" in loaded_after("from registry.store import PostgresStore")
    assert "jsonschema" in loaded_after(
        "from indexer.formats import parse_catalog\n"
        'parse_catalog(\'{"tools": [{"name": "a", "description": "b", '
        '"input_schema": {"type": "object"}}]}\', name=\'c\')'
    )


@pytest.mark.parametrize("subcommand", ["search", "schema", "catalogs", "register", "delete"])
def test_a_client_command_loads_neither_the_model_nor_the_index(subcommand: str) -> None:
    loaded = loaded_after(
        f"from capreg.cli import build_parser\nbuild_parser([{subcommand!r}, '--help'][:1])"
    )
    heavy = ("numpy", "faiss", "onnxruntime", "tokenizers", "mcp", "registry.core")
    assert {m for m in loaded if within(m, *OFFLINE, *heavy)} == set()


def test_the_bridge_subcommand_is_defined_only_when_it_runs() -> None:
    loaded = loaded_after("from capreg.cli import build_parser\nbuild_parser(['search'])")
    assert {m for m in loaded if within(m, "mcp_bridge")} == set()
    assert "mcp_bridge.cli" in loaded_after(
        "from capreg.cli import build_parser\nbuild_parser(['bridge'])"
    )
