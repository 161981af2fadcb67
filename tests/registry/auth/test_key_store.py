"""A loaded keys file: authenticating keys, and reloading the file when it changes."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
from pathlib import Path

import pytest

from registry.auth import keys as keys_module
from registry.auth.keys import (
    KeyStore,
    add_key,
    list_principals,
    revoke,
)
from registry.auth.scopes import Grants
from tests.registry.auth.conftest import key_id, write


def test_an_authenticated_key_yields_its_principal_and_grants(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["finance:*", "hr:read"])
    principal = KeyStore.load(keys_file).authenticate(key)
    assert principal is not None
    assert principal.name == "alice"
    assert principal.grants == Grants.parse(["finance:*", "hr:read"])
    assert not principal.can_administer


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "capreg",
        "capreg__secret",
        "nope_0123abcd_secret",
        "capreg_0123abcd_",
        "capreg_ZZZZZZZZ_secret",
        "\udc80",
        "capreg_0123abcd_\ud800",
    ],
)
def test_malformed_keys_are_rejected_without_raising(keys_file: Path, bad: str) -> None:
    add_key(keys_file, "alice", ["a"])
    assert KeyStore.load(keys_file).authenticate(bad) is None


def test_a_wrong_secret_for_a_real_key_id_is_rejected(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert KeyStore.load(keys_file).authenticate(tampered) is None


def test_unknown_ids_and_wrong_secrets_do_the_same_digest_work(
    keys_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting wrappers (a stated fake): the property is about work done, not results.
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    calls: list[str] = []
    real_sha256, real_compare = hashlib.sha256, hmac.compare_digest

    def counting_sha256(data: bytes) -> hashlib._Hash:
        calls.append("sha256")
        return real_sha256(data)

    def counting_compare(a: bytes, b: bytes) -> bool:
        calls.append(f"compare:{len(a)}:{len(b)}")
        return real_compare(a, b)

    monkeypatch.setattr(hashlib, "sha256", counting_sha256)
    monkeypatch.setattr(hmac, "compare_digest", counting_compare)

    secret = key.split("_", 2)[2]
    assert store.authenticate(f"capreg_{key_id(key)}_{secret[::-1]}") is None
    wrong_secret_work = list(calls)
    calls.clear()
    assert store.authenticate(f"capreg_ffffffff_{secret}") is None
    assert calls == wrong_secret_work == ["sha256", "compare:32:32"]


def test_reload_picks_up_keys_added_after_load(keys_file: Path) -> None:
    old = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    new = add_key(keys_file, "bob", ["b"])
    assert store.authenticate(new) is None
    assert store.reload_if_changed()
    principal = store.authenticate(new)
    assert principal is not None
    assert principal.name == "bob"
    assert store.authenticate(old) is not None


def test_reload_drops_revoked_keys(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    revoke(keys_file, "alice")
    assert store.reload_if_changed()
    assert store.authenticate(key) is None


def test_reload_picks_up_changed_scopes(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    add_key(keys_file, "alice", ["registry:admin"])
    store.reload_if_changed()
    principal = store.authenticate(key)
    assert principal is not None
    assert principal.can_administer


def test_an_unchanged_file_is_not_reread(keys_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)

    def fail_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was re-read although it did not change")

    monkeypatch.setattr(keys_module, "_read", fail_read)
    assert not store.reload_if_changed()


def test_a_broken_file_keeps_the_previous_keys_and_logs_once(
    keys_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    write(keys_file, "principals: [{name: 'bad name'}]\n")
    with caplog.at_level(logging.ERROR, logger="registry.auth.keys"):
        assert not store.reload_if_changed()
        assert not store.reload_if_changed()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert str(keys_file) in errors[0].getMessage()
    assert store.authenticate(key) is not None

    fixed = add_key(keys_file.with_name("other.yaml"), "carol", ["c"])
    os.replace(keys_file.with_name("other.yaml"), keys_file)
    assert store.reload_if_changed()
    assert store.authenticate(fixed) is not None
    assert store.authenticate(key) is None


def test_a_deleted_file_keeps_the_previous_keys(
    keys_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    keys_file.unlink()
    with caplog.at_level(logging.ERROR, logger="registry.auth.keys"):
        assert not store.reload_if_changed()
        assert not store.reload_if_changed()
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
    assert store.authenticate(key) is not None
    second = add_key(keys_file, "alice", ["a"])
    assert store.reload_if_changed()
    assert store.authenticate(second) is not None


def test_an_in_place_edit_is_noticed(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    text = keys_file.read_text(encoding="utf-8")
    with keys_file.open("w", encoding="utf-8") as handle:  # same inode, as `vi` may do
        handle.write(text.replace("- a\n", "- registry:admin\n"))
    st = keys_file.stat()
    os.utime(keys_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert store.reload_if_changed()
    principal = store.authenticate(key)
    assert principal is not None
    assert principal.can_administer


def test_authentication_stays_correct_during_concurrent_reloads(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    store = KeyStore.load(keys_file)
    failures: list[str] = []
    stop = threading.Event()

    def authenticate_repeatedly() -> None:
        while not stop.is_set():
            principal = store.authenticate(key)
            if principal is None or principal.name != "alice":
                failures.append(repr(principal))

    readers = [threading.Thread(target=authenticate_repeatedly) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for i in range(10):
            add_key(keys_file, f"user{i}", ["b"])
            store.reload_if_changed()
    finally:
        stop.set()
        for reader in readers:
            reader.join(timeout=30)
    assert not any(reader.is_alive() for reader in readers)
    assert failures == []
    assert len(list_principals(keys_file)) == 11
