"""The keys file: issuing, listing and revoking keys, and refusing a malformed file."""

from __future__ import annotations

import hashlib
import re
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

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
from tests.conftest import DATA
from tests.registry.auth.conftest import KEY_RE, key_id, write


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


def test_a_keys_file_with_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text("principals: []\n" + (DATA / "alias_bomb.yaml").read_text())
    with pytest.raises(KeyFileError, match="expands"):
        KeyStore.load(path)
