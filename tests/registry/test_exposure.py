"""Files and defaults an operator relies on: owner-only storage, no world-writable keys, keyed
reflection, logged and throttled failed authentication, a warning for clear-text exposure."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from registry.auth.authentication import Authenticator
from registry.auth.keys import KeyFileError, KeyStore, add_key
from registry.config import ServerConfig
from registry.core import Registry
from registry.errors import Overloaded, Unauthenticated
from registry.rpc.server import exposure_warnings
from registry.store import SqliteStore
from tests.conftest import start_server


def test_a_new_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "fresh.db")
    store.close()
    assert stat.S_IMODE((tmp_path / "fresh.db").stat().st_mode) == 0o600


def test_an_existing_database_readable_by_others_is_tightened_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.db"
    SqliteStore(path).close()
    for file in tmp_path.glob("old.db*"):
        file.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="registry.store.sqlite"):
        SqliteStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [f.name for f in tmp_path.glob("old.db*") if f.stat().st_mode & 0o077] == []
    assert f"{path} was readable by other users (mode 644); now 600" in caplog.text


def test_a_world_writable_keys_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    add_key(path, "agent", ["hr:read"])
    path.chmod(0o666)
    with pytest.raises(KeyFileError, match="chmod o-w"):
        KeyStore.load(path)


class Clock:
    """Reason for the fake: the throttle window is ten seconds of wall time."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_failed_authentications_are_logged_then_throttled_per_peer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "keys.yaml"
    good = add_key(path, "agent", ["hr:read"])
    clock = Clock()
    auth = Authenticator(KeyStore.load(path), max_failures=3, failure_window=10.0, clock=clock)
    wrong = [("authorization", "Bearer capreg_0000abcd_wrongsecret")]
    with caplog.at_level(logging.WARNING, logger="registry.auth.authentication"):
        for _ in range(3):
            with pytest.raises(Unauthenticated):
                auth.principal(wrong, "ipv4:10.9.8.7:5000")
    assert "authentication failed from 10.9.8.7 (id 0000abcd)" in caplog.text
    assert "wrongsecret" not in caplog.text
    # The fourth wrong key is throttled; a good key from the same host still passes.
    with pytest.raises(Overloaded, match="retry in"):
        auth.principal([("authorization", "Bearer capreg_0000abce_wrong")], "ipv4:10.9.8.7:6000")
    assert auth.principal([("authorization", f"Bearer {good}")], "ipv4:10.9.8.7:6000").name == (
        "agent"
    )
    # Another peer is not affected, and the window passes.
    with pytest.raises(Unauthenticated):
        auth.principal([("authorization", "Bearer capreg_0000abcf_wrong")], "ipv4:10.9.8.8:1")
    clock.now += 10.5
    with pytest.raises(Unauthenticated):
        auth.principal([("authorization", "Bearer capreg_0000abcf_wrong")], "ipv4:10.9.8.7:1")


async def test_reflection_needs_a_key_when_keys_are_configured(
    sample_registry: Registry, tmp_path: Path
) -> None:
    path = tmp_path / "keys.yaml"
    key = add_key(path, "agent", ["hr:read"])
    server, address = await start_server(sample_registry, keys=KeyStore.load(path))
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.ServerReflectionInfo(iter([request])):
                    pass
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            metadata = (("authorization", f"Bearer {key}"),)
            replies = [
                r async for r in stub.ServerReflectionInfo(iter([request]), metadata=metadata)
            ]
    finally:
        await server.stop(None)
    names = {s.name for s in replies[0].list_services_response.service}
    assert "capreg.v1.CapabilityRegistry" in names


def test_clear_text_beyond_loopback_is_warned_about(tmp_path: Path) -> None:
    assert exposure_warnings(ServerConfig(listen="127.0.0.1:1")) == []
    exposed = exposure_warnings(ServerConfig(listen="0.0.0.0:1", keys_file=tmp_path / "k"))
    assert len(exposed) == 1
    assert "without TLS" in exposed[0]
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    assert exposure_warnings(ServerConfig(listen="0.0.0.0:1", tls_cert=cert, tls_key=key)) == []
