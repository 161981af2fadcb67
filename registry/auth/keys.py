"""API keys: the principals file, issuing and revoking keys, and verifying them at request time."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import stat
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

import yaml

from indexer.documents import DocumentError, load_document
from registry.auth.scopes import Grants, Principal, ScopeError, validate_pattern

logger = logging.getLogger(__name__)

KEY_PREFIX = "capreg"
_KEY_ID_RE = re.compile(r"[0-9a-f]{8}")
_HASH_RE = re.compile(r"[0-9a-f]{64}")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
_FILE_HEADER = "# capreg keys file, managed by `capreg keys`. Holds sha256 digests, never keys.\n"

# Keys carry 256 bits from a CSPRNG (token_urlsafe(32)), so guessing one from its digest costs
# about 2**256 hashes however fast each hash is. Slow KDFs (bcrypt, scrypt, argon2) exist to
# stretch low-entropy human passwords; here they would add only per-request latency and a
# cheap way to burn server CPU with bad keys. One sha256 is the right cost.
_DUMMY_DIGEST = hashlib.sha256(secrets.token_bytes(32)).digest()

_Signature = tuple[int, int, int, int]


class KeyFileError(ValueError):
    """A keys file, principal name or scope that breaks the rules; the message names which."""


@dataclass(frozen=True)
class KeyInfo:
    """What may be shown about a key: its public id and when it was issued."""

    id: str
    created: str


@dataclass(kw_only=True, frozen=True)
class PrincipalInfo:
    """What may be shown about a principal; digests are deliberately absent."""

    name: str
    scopes: tuple[str, ...]
    keys: tuple[KeyInfo, ...]


@dataclass(kw_only=True, frozen=True)
class Revocation:
    """What `revoke` removed: one key, or a principal with all of its keys."""

    kind: Literal["key", "principal"]
    principal: str
    key_ids: tuple[str, ...]


@dataclass(kw_only=True, frozen=True)
class KeyRecord:
    id: str
    digest: str
    created: str


@dataclass(kw_only=True, frozen=True)
class PrincipalRecord:
    name: str
    scopes: tuple[str, ...]
    keys: tuple[KeyRecord, ...]


def validate_name(name: object) -> str:
    """Return a valid principal name, or raise KeyFileError saying why it is not."""
    if not isinstance(name, str):
        raise KeyFileError(f"principal name {name!r} must be a string")
    if not _NAME_RE.fullmatch(name):
        raise KeyFileError(
            f"principal name {name!r} must be 1-64 characters from A-Z a-z 0-9 _ . @ -, "
            "starting with a letter or digit"
        )
    # `revoke` takes a name or a key id; forbidding id-shaped names keeps that unambiguous.
    if _KEY_ID_RE.fullmatch(name):
        raise KeyFileError(f"principal name {name!r} looks like a key id (8 hex characters)")
    return name


def _validate_scopes(scopes: object, where: str) -> tuple[str, ...]:
    if isinstance(scopes, str | bytes) or not isinstance(scopes, Iterable):
        raise KeyFileError(f"{where}: scopes must be a list of scopes, got {scopes!r}")
    try:
        return tuple(sorted({validate_pattern(scope) for scope in scopes}))
    except ScopeError as exc:
        raise KeyFileError(f"{where}: {exc}") from exc


def key_id_of(key: str) -> str | None:
    """The id part of a well-formed key (never the secret), or None."""
    # token_urlsafe may itself contain "_", so split at most twice.
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[2]:
        return None
    return parts[1] if _KEY_ID_RE.fullmatch(parts[1]) else None


def _digest(key: str) -> bytes:
    # surrogatepass: any str the transport hands us must hash, never raise.
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _parse_key(raw: object, where: str) -> KeyRecord:
    if not isinstance(raw, Mapping):
        raise KeyFileError(f"{where}: must be a mapping with id, hash, created")
    unknown = set(raw) - {"id", "hash", "created"}
    if unknown:
        raise KeyFileError(f"{where}: unknown fields {sorted(map(str, unknown))}")
    key_id, digest, created = raw.get("id"), raw.get("hash"), raw.get("created")
    # An unquoted id such as 01234567 reads as a number; refusing beats guessing its digits.
    if not isinstance(key_id, str) or not _KEY_ID_RE.fullmatch(key_id):
        raise KeyFileError(f"{where}: id {key_id!r} must be a quoted string of 8 hex characters")
    if not isinstance(digest, str) or not _HASH_RE.fullmatch(digest):
        raise KeyFileError(f"{where} (id {key_id}): hash must be 64 lowercase hex characters")
    # A hand-edited unquoted timestamp reads as a date or datetime; keep it, as text.
    if isinstance(created, date):
        created = created.isoformat()
    if not isinstance(created, str) or not created:
        raise KeyFileError(f"{where} (id {key_id}): created must be a timestamp")
    return KeyRecord(id=key_id, digest=digest, created=created)


def _parse_principal(raw: object, where: str) -> PrincipalRecord:
    if not isinstance(raw, Mapping):
        raise KeyFileError(f"{where}: must be a mapping with name, scopes, keys")
    unknown = set(raw) - {"name", "scopes", "keys"}
    if unknown:
        raise KeyFileError(f"{where}: unknown fields {sorted(map(str, unknown))}")
    try:
        name = validate_name(raw.get("name"))
    except KeyFileError as exc:
        raise KeyFileError(f"{where}: {exc}") from exc
    where = f"{where} ({name})"
    # A blank `scopes:` or `keys:` reads as None; a mapping would iterate as its keys.
    raw_scopes = raw.get("scopes")
    raw_scopes = [] if raw_scopes is None else raw_scopes
    if not isinstance(raw_scopes, list):
        raise KeyFileError(f"{where}: scopes must be a list of scopes, got {raw_scopes!r}")
    scopes = _validate_scopes(raw_scopes, where)
    raw_keys = raw.get("keys")
    raw_keys = [] if raw_keys is None else raw_keys
    if not isinstance(raw_keys, list):
        raise KeyFileError(f"{where}: keys must be a list")
    keys = tuple(_parse_key(k, f"{where}.keys[{i}]") for i, k in enumerate(raw_keys))
    return PrincipalRecord(name=name, scopes=scopes, keys=keys)


def _parse(text: str, path: Path | str) -> list[PrincipalRecord]:
    try:
        document = load_document(text)
    except DocumentError as exc:
        raise KeyFileError(f"{path}: {exc}") from exc
    if document is None:
        return []
    if not isinstance(document, Mapping) or set(document) - {"principals"}:
        raise KeyFileError(f"{path}: must be a mapping with a single 'principals' list")
    raw_principals = document.get("principals")
    if raw_principals is None:
        return []
    if not isinstance(raw_principals, list):
        raise KeyFileError(f"{path}: principals must be a list")
    records = [
        _parse_principal(p, f"{path}: principals[{i}]") for i, p in enumerate(raw_principals)
    ]
    names: set[str] = set()
    key_ids: set[str] = set()
    for record in records:
        if record.name in names:
            raise KeyFileError(f"{path}: principal {record.name!r} appears twice")
        names.add(record.name)
        for key in record.keys:
            if key.id in key_ids:
                raise KeyFileError(f"{path}: key id {key.id} appears twice")
            key_ids.add(key.id)
    return records


def _read(path: Path, *, missing_ok: bool = False) -> tuple[list[PrincipalRecord], _Signature]:
    try:
        with path.open(encoding="utf-8") as handle:
            # fstat the open file, so the signature describes exactly the bytes we parse.
            status = os.fstat(handle.fileno())
            if status.st_mode & stat.S_IWOTH:
                raise KeyFileError(
                    f"{path}: anyone on this machine may write it (mode "
                    f"{stat.S_IMODE(status.st_mode):o}); run chmod o-w {path}"
                )
            signature = _signature(status)
            text = handle.read()
    except FileNotFoundError:
        if missing_ok:
            return [], (0, 0, 0, 0)
        raise KeyFileError(f"{path}: keys file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"{path}: cannot read keys file: {exc}") from exc
    return _parse(text, path), signature


def _signature(st: os.stat_result) -> _Signature:
    # The inode catches atomic replaces even within one mtime tick and at equal size.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def render(records: list[PrincipalRecord]) -> str:
    """The keys document for `records` (what a keys file, or a shared store, holds)."""
    document = {
        "principals": [
            {
                "name": r.name,
                "scopes": list(r.scopes),
                "keys": [{"id": k.id, "hash": k.digest, "created": k.created} for k in r.keys],
            }
            for r in records
        ]
    }
    return _FILE_HEADER + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def parse(text: str, where: str) -> list[PrincipalRecord]:
    """The principals of a keys document; KeyFileError naming `where` and the rule broken."""
    return _parse(text, where)


def _write(path: Path, records: list[PrincipalRecord]) -> None:
    text = render(records)
    # Same directory so os.replace is a rename on one filesystem: readers see old or new, whole.
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot write keys file: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            # mkstemp already uses 0600; say so explicitly because the file guards credentials.
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise KeyFileError(f"{path}: cannot write keys file: {exc}") from exc
        raise


def add_key(path: str | os.PathLike[str], name: str, scopes: Iterable[str] | None = None) -> str:
    """Issue a key for `name`, creating the file or principal as needed; returns it once.

    Scopes, when given, replace the principal's scopes; None keeps them (empty if new).
    """
    file = Path(path)
    records, _ = _read(file, missing_ok=True)
    records, key = with_new_key(records, name, scopes)
    _write(file, records)
    return key


def with_new_key(
    records: list[PrincipalRecord], name: str, scopes: Iterable[str] | None = None
) -> tuple[list[PrincipalRecord], str]:
    """`records` with a new key for `name` (see `add_key`), and the key."""
    records = list(records)
    name = validate_name(name)
    new_scopes = None if scopes is None else _validate_scopes(scopes, f"principal {name!r}")
    taken = {key.id for record in records for key in record.keys}
    key_id = secrets.token_hex(4)
    while key_id in taken:
        key_id = secrets.token_hex(4)
    key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    created = datetime.now(UTC).isoformat(timespec="seconds")
    new_key = KeyRecord(id=key_id, digest=_digest(key).hex(), created=created)

    for i, record in enumerate(records):
        if record.name == name:
            records[i] = PrincipalRecord(
                name=name,
                scopes=record.scopes if new_scopes is None else new_scopes,
                keys=(*record.keys, new_key),
            )
            break
    else:
        records.append(PrincipalRecord(name=name, scopes=new_scopes or (), keys=(new_key,)))
    logger.info("issued key %s for principal %s", key_id, name)
    return records, key


def list_principals(path: str | os.PathLike[str]) -> list[PrincipalInfo]:
    """Principals with their scopes and key ids, in file order; never digests."""
    records, _ = _read(Path(path))
    return principals_of(records)


def principals_of(records: list[PrincipalRecord]) -> list[PrincipalInfo]:
    return [
        PrincipalInfo(
            name=r.name,
            scopes=r.scopes,
            keys=tuple(KeyInfo(id=k.id, created=k.created) for k in r.keys),
        )
        for r in records
    ]


def revoke(path: str | os.PathLike[str], name_or_key_id: str) -> Revocation:
    """Remove one key (given its id) or a whole principal (given its name)."""
    file = Path(path)
    records, _ = _read(file)
    records, revocation = without(records, name_or_key_id, str(file))
    _write(file, records)
    return revocation


def without(
    records: list[PrincipalRecord], name_or_key_id: str, where: str
) -> tuple[list[PrincipalRecord], Revocation]:
    """`records` without one key (given its id) or a principal (given its name)."""
    records = list(records)
    is_key_id = bool(_KEY_ID_RE.fullmatch(name_or_key_id))
    for i, record in enumerate(records):
        if is_key_id and any(key.id == name_or_key_id for key in record.keys):
            kept = tuple(key for key in record.keys if key.id != name_or_key_id)
            records[i] = PrincipalRecord(name=record.name, scopes=record.scopes, keys=kept)
            revocation = Revocation(kind="key", principal=record.name, key_ids=(name_or_key_id,))
            break
        if not is_key_id and record.name == name_or_key_id:
            del records[i]
            revocation = Revocation(
                kind="principal", principal=record.name, key_ids=tuple(k.id for k in record.keys)
            )
            break
    else:
        what = "key id" if is_key_id else "principal"
        raise KeyFileError(f"{where}: no {what} {name_or_key_id!r}")
    logger.info("revoked %s %s", revocation.kind, name_or_key_id)
    return records, revocation


def index_of(records: list[PrincipalRecord]) -> dict[str, tuple[bytes, Principal]]:
    index: dict[str, tuple[bytes, Principal]] = {}
    for record in records:
        principal = Principal(name=record.name, grants=Grants.parse(record.scopes))
        for key in record.keys:
            index[key.id] = (bytes.fromhex(key.digest), principal)
    return index


def authenticate_in(index: dict[str, tuple[bytes, Principal]], key: str) -> Principal | None:
    """The principal owning `key` in `index`, or None; unknown ids and wrong secrets look
    the same, and take the same time."""
    key_id = key_id_of(key)
    entry = index.get(key_id) if key_id is not None else None
    # Hash and compare even when the id is unknown, so timing does not reveal which ids exist.
    expected = entry[0] if entry is not None else _DUMMY_DIGEST
    matches = hmac.compare_digest(_digest(key), expected)
    return entry[1] if matches and entry is not None else None


class KeyStore:
    """The keys file as served: authenticates keys and follows edits to the file."""

    def __init__(self, path: Path, records: list[PrincipalRecord], signature: _Signature) -> None:
        self._path = path
        self._index = index_of(records)
        self._seen: _Signature | None = signature
        # Two locks: authentication only ever waits for a pointer swap, never for a parse.
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Read the keys file; a broken file at startup raises KeyFileError."""
        file = Path(path)
        records, signature = _read(file)
        return cls(file, records, signature)

    @property
    def path(self) -> Path:
        return self._path

    def authenticate(self, key: str) -> Principal | None:
        """The principal owning `key`, or None; unknown ids and wrong secrets look the same."""
        with self._lock:
            index = self._index
        return authenticate_in(index, key)

    def reload_if_changed(self) -> bool:
        """Re-read the file if it changed since the last read; True if new keys took effect.

        A missing or broken file is logged once per change and the previous keys stay in
        force: a typo in the keys file must not take the server down or lock everyone out.
        """
        with self._reload_lock:
            try:
                current: _Signature | None = _signature(os.stat(self._path))
            except OSError as exc:
                if self._seen is not None:
                    logger.error(
                        "keys file %s unreadable, keeping previous keys: %s", self._path, exc
                    )
                self._seen = None
                return False
            if current == self._seen:
                return False
            try:
                records, current = _read(self._path)
                index = index_of(records)
            except KeyFileError as exc:
                logger.error("keeping previous keys: %s", exc)
                self._seen = current
                return False
            except Exception:
                logger.exception("unexpected error reloading %s, keeping previous keys", self._path)
                self._seen = current
                return False
            with self._lock:
                self._index = index
            self._seen = current
            logger.info("reloaded %s: %d principals, %d keys", self._path, len(records), len(index))
            return True
