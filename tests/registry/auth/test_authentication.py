"""Failed logins are throttled per host and per claimed key id, yet a correct secret always
passes: behind a proxy or the MCP bridge one host is every user."""

from __future__ import annotations

import secrets
from pathlib import Path

import grpc
import pytest

from registry.auth.authentication import MAX_FAILURES, Authenticator
from registry.auth.keys import KeyStore, add_key, key_id_of
from registry.core import Registry
from registry.errors import Overloaded, Unauthenticated
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import start_server

# What the probe allows before wrong keys are throttled.
THROTTLED_AFTER_AT_MOST = 25


class Clock:
    """Reason for the fake: the throttle window is seconds of wall time."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def bearer(key: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {key}")]


def wrong_key(key_id: str | None = None) -> str:
    return f"capreg_{key_id or secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"


def answers(auth: Authenticator, key: str, peer: str) -> str:
    """'ok', 'unauthenticated' or 'throttled': what `auth` makes of one attempt."""
    try:
        auth.principal(bearer(key), peer)
    except Unauthenticated:
        return "unauthenticated"
    except Overloaded:
        return "throttled"
    return "ok"


def test_a_valid_key_is_answered_from_a_host_that_failed_many_logins(tmp_path: Path) -> None:
    good = add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    auth = Authenticator(KeyStore.load(tmp_path / "keys.yaml"), clock=Clock())
    host = "ipv4:10.0.0.7:5000"
    seen = [answers(auth, wrong_key(), host) for _ in range(40)]
    assert "throttled" in seen
    assert answers(auth, good, "ipv4:10.0.0.7:6000") == "ok"


def test_sixty_wrong_keys_from_one_host_are_throttled_early(tmp_path: Path) -> None:
    add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    auth = Authenticator(KeyStore.load(tmp_path / "keys.yaml"), clock=Clock())
    seen = [answers(auth, wrong_key(), f"ipv4:10.0.0.8:{port}") for port in range(60)]
    first = seen.index("throttled")
    assert first <= THROTTLED_AFTER_AT_MOST
    assert set(seen[first:]) == {"throttled"}


def test_wrong_secrets_for_one_key_id_are_throttled_across_hosts_but_its_owner_passes(
    tmp_path: Path,
) -> None:
    good = add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    key_id = key_id_of(good)
    auth = Authenticator(KeyStore.load(tmp_path / "keys.yaml"), clock=Clock())
    # Every attempt from another host: only the claimed key id ties them together.
    seen = [
        answers(auth, wrong_key(key_id), f"ipv4:10.1.{i // 250}.{i % 250}:1") for i in range(60)
    ]
    assert seen.index("throttled") <= THROTTLED_AFTER_AT_MOST
    assert answers(auth, good, "ipv4:10.1.0.1:1") == "ok"
    # Another key id from a fresh host is not affected.
    assert answers(auth, wrong_key(), "ipv4:10.2.0.1:1") == "unauthenticated"


def test_the_throttle_lifts_when_the_window_has_passed(tmp_path: Path) -> None:
    add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    clock = Clock()
    auth = Authenticator(KeyStore.load(tmp_path / "keys.yaml"), clock=clock)
    host = "ipv4:10.0.0.9:1"
    for _ in range(MAX_FAILURES):
        assert answers(auth, wrong_key(), host) == "unauthenticated"
    assert answers(auth, wrong_key(), host) == "throttled"
    clock.now += 10.5
    assert answers(auth, wrong_key(), host) == "unauthenticated"


def test_admission_charges_a_key_only_once_its_secret_verifies(tmp_path: Path) -> None:
    good = add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    key_id = key_id_of(good)
    auth = Authenticator(KeyStore.load(tmp_path / "keys.yaml"))
    assert auth.caller(bearer(good), "ipv4:1.2.3.4:5") == f"key:{key_id}"
    forged = auth.caller(bearer(wrong_key(key_id)), "ipv4:1.2.3.4:6")
    assert forged == auth.caller([], "ipv4:1.2.3.4:7") == "peer:1.2.3.4"
    # Without a keys file nothing is verified: every call counts against its host.
    assert Authenticator(None).caller(bearer(good), "ipv4:1.2.3.4:5") == "peer:1.2.3.4"


async def test_forty_failed_logins_over_grpc_leave_a_valid_key_from_that_host_answered(
    sample_registry: Registry, tmp_path: Path
) -> None:
    good = add_key(tmp_path / "keys.yaml", "agent", ["hr:read"])
    server, address = await start_server(
        sample_registry, keys=KeyStore.load(tmp_path / "keys.yaml")
    )
    codes = []
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            for _ in range(40):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=bearer(wrong_key()))
                codes.append(caught.value.code())
            listed = await stub.ListCatalogs(pb.ListCatalogsRequest(), metadata=bearer(good))
    finally:
        await server.stop(None)
    first = codes.index(grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert first <= THROTTLED_AFTER_AT_MOST
    assert set(codes[:first]) == {grpc.StatusCode.UNAUTHENTICATED}
    assert set(codes[first:]) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert [c.name for c in listed.catalogs] == ["hr"]
