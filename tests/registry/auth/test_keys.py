"""The keys file: issuing, listing and revoking keys, authenticating them, and hot reload."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from registry.auth import keys as keys_module
from registry.auth.keys import (
    KeyFileError,
    KeyStore,
    PrincipalInfo,
    Revocation,
    add_key,
    list_principals,
    revoke,
    validate_name,
)
from registry.auth.scopes import Grants
from tests.conftest import DATA

KEY_RE = re.compile(r"capreg_([0-9a-f]{8})_[A-Za-z0-9_-]{43}")


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.yaml"


def key_id(key: str) -> str:
    match = KEY_RE.fullmatch(key)
    assert match is not None
    return match.group(1)


def write(path: Path, text: str) -> None:
    """Replace the file atomically, as an editor or `add_key` would."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def test_add_key_creates_the_file_and_returns_a_well_formed_key(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["finance:*"])
    assert KEY_RE.fullmatch(key)
    [alice] = list_principals(keys_file)
    assert (alice.name, alice.scopes) == ("alice", ("finance:*",))
    assert [k.id for k in alice.keys] == [key_id(key)]


def test_the_file_stores_only_the_sha256_of_the_key(keys_file: Path) -> None:
    key = add_key(keys_file, "alice", ["a"])
    text = keys_file.read_text(encoding="utf-8")
    secret = key.split("_", 2)[2]
    assert secret not in text
    document = yaml.safe_load(text)
    stored = document["principals"][0]["keys"][0]
    assert stored["hash"] == hashlib.sha256(key.encode()).hexdigest()
    assert stored["id"] == key_id(key)


def test_the_keys_file_is_written_with_mode_0600(keys_file: Path) -> None:
    add_key(keys_file, "alice", ["a"])
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    keys_file.chmod(0o644)
    add_key(keys_file, "alice")
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600


def test_writes_leave_no_temporary_files_behind(keys_file: Path) -> None:
    add_key(keys_file, "alice", ["a"])
    add_key(keys_file, "bob", ["b"])
    revoke(keys_file, "bob")
    assert [p.name for p in keys_file.parent.iterdir()] == ["keys.yaml"]


def test_created_is_a_utc_timestamp(keys_file: Path) -> None:
    add_key(keys_file, "alice")
    created = datetime.fromisoformat(list_principals(keys_file)[0].keys[0].created)
    assert created.utcoffset() == timedelta(0)


def test_adding_a_key_to_an_existing_principal_appends_it(keys_file: Path) -> None:
    first = add_key(keys_file, "alice", ["a"])
    second = add_key(keys_file, "alice")
    [alice] = list_principals(keys_file)
    assert [k.id for k in alice.keys] == [key_id(first), key_id(second)]
    assert alice.scopes == ("a",)


def test_adding_a_key_with_scopes_replaces_the_principals_scopes(keys_file: Path) -> None:
    add_key(keys_file, "alice", ["a", "b"])
    add_key(keys_file, "alice", ["c*"])
    assert list_principals(keys_file)[0].scopes == ("c*",)


def test_a_new_principal_without_scopes_gets_none(keys_file: Path) -> None:
    add_key(keys_file, "alice")
    assert list_principals(keys_file)[0].scopes == ()


def test_scopes_are_stored_sorted_and_deduplicated(keys_file: Path) -> None:
    add_key(keys_file, "alice", ["b", "a", "b"])
    assert list_principals(keys_file)[0].scopes == ("a", "b")


def test_principals_are_listed_in_file_order_without_digests(keys_file: Path) -> None:
    add_key(keys_file, "bob", ["b"])
    add_key(keys_file, "alice", ["a"])
    listed = list_principals(keys_file)
    assert [p.name for p in listed] == ["bob", "alice"]
    assert "hash" not in repr(listed)


@pytest.mark.parametrize(
    "name", ["", "-flag", "has space", "x" * 65, "deadbeef", "a/b", "ünïcode", "line\n"]
)
def test_an_invalid_principal_name_is_refused_and_named(keys_file: Path, name: str) -> None:
    with pytest.raises(KeyFileError, match="principal name"):
        add_key(keys_file, name, ["a"])
    assert not keys_file.exists()


def test_names_may_use_letters_digits_and_common_punctuation() -> None:
    for name in ["alice", "svc.search-bot_1", "ops@example.com", "DEADBEEF", "x" * 64]:
        assert validate_name(name) == name


def test_an_invalid_scope_is_refused_and_named(keys_file: Path) -> None:
    with pytest.raises(KeyFileError, match="'bad scope'"):
        add_key(keys_file, "alice", ["ok", "bad scope"])
    assert not keys_file.exists()


def test_a_single_string_of_scopes_is_refused(keys_file: Path) -> None:
    with pytest.raises(KeyFileError, match="list of scopes"):
        add_key(keys_file, "alice", "finance:read")


def test_key_file_error_is_a_value_error() -> None:
    assert issubclass(KeyFileError, ValueError)


def test_revoking_a_key_id_removes_only_that_key(keys_file: Path) -> None:
    first = add_key(keys_file, "alice", ["a"])
    second = add_key(keys_file, "alice")
    assert revoke(keys_file, key_id(first)) == Revocation(
        kind="key", principal="alice", key_ids=(key_id(first),)
    )
    store = KeyStore.load(keys_file)
    assert store.authenticate(first) is None
    assert store.authenticate(second) is not None


def test_revoking_a_name_removes_the_principal_and_all_its_keys(keys_file: Path) -> None:
    first = add_key(keys_file, "alice", ["a"])
    second = add_key(keys_file, "alice")
    bob = add_key(keys_file, "bob", ["b"])
    revocation = revoke(keys_file, "alice")
    assert revocation == Revocation(
        kind="principal", principal="alice", key_ids=(key_id(first), key_id(second))
    )
    assert [p.name for p in list_principals(keys_file)] == ["bob"]
    store = KeyStore.load(keys_file)
    assert store.authenticate(first) is None
    assert store.authenticate(bob) is not None


def test_revoking_something_unknown_is_an_error(keys_file: Path) -> None:
    add_key(keys_file, "alice", ["a"])
    with pytest.raises(KeyFileError, match="no principal 'carol'"):
        revoke(keys_file, "carol")
    with pytest.raises(KeyFileError, match="no key id '00000000'"):
        revoke(keys_file, "00000000")


def test_listing_or_revoking_in_a_missing_file_names_the_file(keys_file: Path) -> None:
    with pytest.raises(KeyFileError, match=re.escape(str(keys_file))):
        list_principals(keys_file)
    with pytest.raises(KeyFileError, match="not found"):
        revoke(keys_file, "alice")


def test_digit_only_key_ids_survive_a_rewrite(keys_file: Path) -> None:
    # Unquoted, 01234567 would read back as an integer; the writer must quote it.
    key = "capreg_01234567_secret"
    digest = hashlib.sha256(key.encode()).hexdigest()
    write(
        keys_file,
        f"principals:\n- name: alice\n  scopes: [a]\n"
        f"  keys:\n  - {{id: '01234567', hash: {digest}, created: '2024-01-01'}}\n",
    )
    add_key(keys_file, "bob")
    assert list_principals(keys_file)[0].keys[0].id == "01234567"
    assert KeyStore.load(keys_file).authenticate(key) is not None


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


def test_loading_a_missing_file_is_an_error(keys_file: Path) -> None:
    with pytest.raises(KeyFileError, match="not found"):
        KeyStore.load(keys_file)


def test_blank_scopes_and_keys_mean_none(keys_file: Path) -> None:
    keys_file.write_text("principals:\n- name: alice\n  scopes:\n  keys:\n", encoding="utf-8")
    assert list_principals(keys_file) == [PrincipalInfo(name="alice", scopes=(), keys=())]


def test_an_empty_file_has_no_principals(keys_file: Path) -> None:
    keys_file.write_text("", encoding="utf-8")
    assert list_principals(keys_file) == []
    assert KeyStore.load(keys_file).authenticate("capreg_00000000_x") is None


VALID_HASH = "0" * 64
KEY_ENTRY = f"{{id: 'abcdef01', hash: '{VALID_HASH}', created: x}}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("principals: [\n", "not valid JSON or YAML"),
        ("- a list\n", "single 'principals' list"),
        ("principals: {}\n", "principals must be a list"),
        ("principals: [42]\n", r"principals\[0\]: must be a mapping"),
        (
            "principals: [{name: alice, role: admin}]\n",
            r"principals\[0\]: unknown fields \['role'\]",
        ),
        ("principals: [{name: 'bad name'}]\n", r"principals\[0\]: principal name 'bad name'"),
        ("principals: [{name: yes}]\n", "principal name True must be a string"),
        ("principals: [{name: a, scopes: ['x y']}]\n", r"principals\[0\] \(a\): invalid scope"),
        ("principals: [{name: a, scopes: read}]\n", "scopes must be a list"),
        ("principals: [{name: a, keys: {}}]\n", r"\(a\): keys must be a list"),
        ("principals: [{name: a, scopes: {b: 1}}]\n", r"\(a\): scopes must be a list"),
        (
            "principals: [{name: a, keys: [{id: 01234567, hash: h, created: x}]}]\n",
            # YAML 1.1 reads 01234567 as octal: exactly why ids must be quoted
            r"principals\[0\] \(a\)\.keys\[0\]: id 342391 must be a quoted string",
        ),
        (
            "principals: [{name: a, keys: [{id: 'abcdef01', hash: nothex, created: x}]}]\n",
            r"keys\[0\] \(id abcdef01\): hash must be 64 lowercase hex",
        ),
        (
            f"principals: [{{name: a, keys: [{{id: 'abcdef01', hash: '{VALID_HASH}'}}]}}]\n",
            "created must be a timestamp",
        ),
        (
            "principals: [{name: a}, {name: a}]\n",
            "principal 'a' appears twice",
        ),
        (
            f"principals: [{{name: a, keys: [{KEY_ENTRY}]}}, {{name: b, keys: [{KEY_ENTRY}]}}]\n",
            "key id abcdef01 appears twice",
        ),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_entry(
    keys_file: Path, text: str, message: str
) -> None:
    keys_file.write_text(text, encoding="utf-8")
    with pytest.raises(KeyFileError, match=message) as raised:
        KeyStore.load(keys_file)
    assert str(raised.value).startswith(str(keys_file))


def test_management_functions_refuse_to_rewrite_a_malformed_file(keys_file: Path) -> None:
    keys_file.write_text("principals: [{name: 'bad name'}]\n", encoding="utf-8")
    with pytest.raises(KeyFileError):
        add_key(keys_file, "alice")
    assert keys_file.read_text(encoding="utf-8") == "principals: [{name: 'bad name'}]\n"


def test_an_unquoted_timestamp_is_accepted_as_text(keys_file: Path) -> None:
    keys_file.write_text(
        f"principals: [{{name: a, keys: [{{id: 'abcdef01', hash: '{VALID_HASH}',"
        " created: 2024-05-01T12:00:00Z}]}]\n",
        encoding="utf-8",
    )
    [info] = list_principals(keys_file)
    assert datetime.fromisoformat(info.keys[0].created).year == 2024


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


def test_a_keys_file_with_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text("principals: []\n" + (DATA / "alias_bomb.yaml").read_text())
    with pytest.raises(KeyFileError, match="expands"):
        KeyStore.load(path)
