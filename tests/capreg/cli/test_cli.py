"""The `capreg` command end to end: a real `capreg serve` process and client commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from registry.auth.authentication import RELOAD_INTERVAL_SECONDS
from tests.conftest import CATALOGS, DATA, copy_db
from tests.support.server_process import free_port, wait_serving

CAPREG = [sys.executable, "-m", "capreg.cli"]


@dataclass
class Served:
    address: str
    log: Path
    keys: Path
    admin: str


@pytest.fixture(scope="module")
def served(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`capreg serve --keys` on a copy of the sample database, with the sample catalogs.

    One server for the module (start-up loads the model): tests undo what they change.
    """
    tmp_path = tmp_path_factory.mktemp("served")
    db = copy_db(sample_db, tmp_path)
    keys = tmp_path / "keys.yaml"
    admin = _capreg("keys", "add", "ops", "--scopes", "registry:admin,*", "--keys", str(keys))
    assert admin.returncode == 0, admin.stderr
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "serve.log"
    command = ["serve", "--db", str(db), "--listen", address, "--catalogs", str(CATALOGS)]
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*CAPREG, *command, "--keys", str(keys)], stdout=sink, stderr=sink, text=True
        )
        try:
            wait_serving(address, process, seconds=120, log=log)
            yield Served(address, log, keys, admin.stdout.strip())
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def _capreg(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CAPREG_API_KEY"}
    if key:
        env["CAPREG_API_KEY"] = key
    return subprocess.run([*CAPREG, *args], capture_output=True, text=True, env=env, timeout=120)


def test_served_catalogs_answer_the_cli_without_reembedding(served: Served) -> None:
    address, admin = served.address, served.admin
    result = _capreg(
        "search", "open a support ticket for a customer", "--server", address, key=admin
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1. support/create_ticket")
    assert "(0 tools embedded)" in served.log.read_text()

    found = _capreg("search", "reset my password", "--json", "--server", address, key=admin)
    as_json = json.loads(found.stdout)
    assert as_json["hits"][0]["next_call"]["ids"] == [as_json["hits"][0]["id"]]

    schema = _capreg("schema", "support/create_ticket", "--json", "--server", address, key=admin)
    assert json.loads(schema.stdout)["tools"][0]["function_name"] == "support__create_ticket"

    registered = _capreg("register", str(DATA / "mini.yaml"), "--server", address, key=admin)
    assert "mini: 3 added" in registered.stdout
    listed = _capreg("catalogs", "--server", address, key=admin)
    assert "mini 1.0.0  3 tools" in listed.stdout
    deleted = _capreg("delete", "mini", "--server", address, key=admin)
    assert "deleted mini: 3 tools removed" in deleted.stdout


def test_a_workflow_is_walked_from_the_command_line(served: Served) -> None:
    address, admin = served.address, served.admin
    listed = _capreg("catalogs", "--server", address, key=admin)
    assert "  workflow support/ticket_triage (starts in new)  Ticket triage" in listed.stdout
    start = _capreg("affordances", "support/ticket_triage", "--server", address, key=admin)
    assert start.returncode == 0, start.stderr
    assert start.stdout.startswith("support/ticket_triage: state new\n")
    assert "- support/assign_ticket -> triaged" in start.stdout
    moved = _capreg(
        "affordances",
        "finance/expense_approval",
        "--state",
        "submitted",
        "--tool",
        "finance/review_expense_report",
        "--arguments",
        '{"decision": "reject"}',
        "--server",
        address,
        key=admin,
    )
    assert moved.stdout.startswith(
        "finance/expense_approval: state rejected (the workflow may end here)"
    )
    illegal = _capreg(
        "affordances",
        "support/ticket_triage",
        "--tool",
        "support/close_ticket",
        "--server",
        address,
        key=admin,
    )
    assert illegal.returncode == 1
    assert illegal.stderr.startswith("capreg: FAILED_PRECONDITION: 'support/close_ticket' is not")
    inside = _capreg(
        "search",
        "tell the customer we are on it",
        "--workflow",
        "support/ticket_triage",
        "--state",
        "triaged",
        "--limit",
        "3",
        "--server",
        address,
        key=admin,
    )
    assert inside.stdout.startswith("1. support/reply_to_customer"), inside.stdout


def test_keys_added_while_serving_take_effect_and_scope_the_caller(served: Served) -> None:
    keys = str(served.keys)
    created = _capreg("keys", "add", "hr-bot", "--scopes", "hr:read", "--keys", keys)
    assert created.returncode == 0, created.stderr
    reader = created.stdout.strip()
    assert reader.startswith("capreg_")
    assert reader not in served.keys.read_text()
    listed = _capreg("keys", "list", "--keys", keys)
    assert "hr-bot  scopes: hr:read" in listed.stdout
    # The server looks at the keys file at most once per interval: a request after one has
    # passed since the key was added is the first that must see it (quick CLI calls on a
    # loaded machine came in sooner and were refused).
    time.sleep(RELOAD_INTERVAL_SECONDS + 0.1)
    catalogs = _capreg("catalogs", "--server", served.address, "--api-key", reader)
    assert catalogs.stdout.split()[0] == "hr"
    assert len(catalogs.stdout.strip().splitlines()) == 1
    denied = _capreg("register", str(DATA / "mini.yaml"), "--server", served.address, key=reader)
    assert denied.stderr.startswith("capreg: PERMISSION_DENIED")
    revoked = _capreg("keys", "revoke", "hr-bot", "--keys", keys)
    assert revoked.returncode == 0, revoked.stderr


def test_a_call_without_a_key_is_refused(served: Served) -> None:
    result = _capreg("catalogs", "--server", served.address)
    assert result.returncode == 1
    assert result.stderr.startswith("capreg: UNAUTHENTICATED")


def test_a_call_without_a_key_says_where_the_cli_takes_one_and_where_make_serve_left_them(
    served: Served,
) -> None:
    result = _capreg("catalogs", "--server", served.address)
    # The CLI's own options, not the HTTP header the server names for every transport.
    assert "--api-key" in result.stderr
    assert "CAPREG_API_KEY" in result.stderr
    assert ".capreg/dev-keys.env" in result.stderr
    assert "capreg keys add" in result.stderr
    assert "Bearer" not in result.stderr
    # A key that was given and refused is still the server's word.
    wrong = _capreg("catalogs", "--server", served.address, key="capreg_00000000_wrong")
    assert "unknown or revoked API key" in wrong.stderr


def test_a_bare_tool_name_is_told_the_shape_of_an_id_and_the_nearest_ids(
    served: Served,
) -> None:
    result = _capreg("schema", "get_employe", "--server", served.address, key=served.admin)
    assert result.returncode == 1
    assert "a tool id is <catalog>/<tool name>" in result.stderr
    assert "did you mean: hr/get_employee" in result.stderr
    nothing = _capreg("schema", "nosuchthing", "--server", served.address, key=served.admin)
    assert "'nosuchthing'; a tool id is <catalog>/<tool name>" in nothing.stderr


def test_a_broken_yaml_file_is_named_with_its_line_and_column_and_a_caret_under_it(
    served: Served,
) -> None:
    broken = DATA / "broken.yaml"
    for result in (
        _capreg("register", str(broken), "--server", served.address, key=served.admin),
        _capreg("lint", str(broken)),
    ):
        assert result.returncode == 1
        lines = (result.stderr + result.stdout).splitlines()
        [first] = [line for line in lines if "line 6, column 25" in line]
        assert str(broken) in first
        assert "<unicode string>" not in result.stderr + result.stdout
        source = lines[lines.index(first) + 1]
        caret = lines[lines.index(first) + 2]
        assert source.strip() == "description: Refunds: the last invoice"
        assert source[caret.index("^")] == ":"


def test_cli_errors_are_one_line_and_non_zero(served: Served) -> None:
    result = _capreg("schema", "hr/get_employe", "--server", served.address, key=served.admin)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("capreg: NOT_FOUND: unknown tool id: 'hr/get_employe'")


def test_cli_reports_an_unreachable_registry() -> None:
    result = _capreg("catalogs", "--server", f"127.0.0.1:{free_port()}", "--timeout", "3")
    assert result.returncode == 1
    assert result.stderr.startswith("capreg: UNAVAILABLE")


def test_serve_refuses_a_non_loopback_address_without_credentials(tmp_path: Path) -> None:
    result = _capreg("serve", "--db", str(tmp_path / "x.db"), "--listen", "0.0.0.0:50051")
    assert result.returncode == 1
    assert "refusing to listen on non-loopback address" in result.stderr


def test_a_bad_backend_or_index_threshold_is_named_before_anything_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "x.db"
    monkeypatch.setenv("CAPREG_EMBEDDER", "bogus")
    for command in ("serve", "eval"):
        result = _capreg(command, "--db", str(db))
        assert result.returncode == 2
        assert "'bogus' is not a model backend; use one of onnx, onnx-int8, torch" in result.stderr
    monkeypatch.delenv("CAPREG_EMBEDDER")
    result = _capreg("serve", "--db", str(db), "--approximate-from", "0")
    assert result.returncode == 2
    assert "--approximate-from: '0' is not a whole number of tools >= 1" in result.stderr
    assert not db.exists()


def test_many_files_register_in_one_batch_and_each_failure_is_named(
    served: Served, tmp_path: Path
) -> None:
    good = []
    for name in ("batch-a", "batch-b"):
        path = tmp_path / f"{name}.yaml"
        path.write_text((DATA / "mini.yaml").read_text().replace("name: mini", f"name: {name}"))
        good.append(str(path))
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("capreg: 1\nname: invalid\ntools: 7\n")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    result = _capreg(
        "register", *good, str(invalid), str(latin), "--server", served.address, key=served.admin
    )
    assert result.returncode == 1
    assert "batch-a: 3 added" in result.stdout
    assert "batch-b: 3 added" in result.stdout
    assert f"FAILED {invalid}: INVALID_ARGUMENT" in result.stderr
    assert "UTF-8" in result.stderr
    for name in ("batch-a", "batch-b"):
        assert _capreg("delete", name, "--server", served.address, key=served.admin).returncode == 0
    assert (
        "--name names one catalog"
        in _capreg(
            "register", *good, "--name", "x", "--server", served.address, key=served.admin
        ).stderr
    )
