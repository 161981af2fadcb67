"""`capreg keys add|list|revoke`: API keys and their scopes, in a keys file or, with
`--db postgresql://...`, in the store a cluster of replicas shares (hashes only, both)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from capreg.cli.errors import CommandError
from registry.auth import keys as key_file
from registry.auth import shared_keys
from registry.auth.keys import KeyFileError, PrincipalInfo, Revocation
from registry.store import PostgresStore, StoreError, is_postgres


@contextmanager
def _shared(args: argparse.Namespace) -> Iterator[PostgresStore | None]:
    """The shared store `--db` names (None: the keys file)."""
    if not args.db:
        yield None
        return
    if not is_postgres(args.db):
        raise CommandError("--db: keys are kept in a PostgreSQL store (postgresql://...)")
    try:
        store = PostgresStore(args.db)
    except StoreError as exc:
        raise CommandError(str(exc)) from exc
    try:
        yield store
    finally:
        store.close()


def cmd_keys_add(args: argparse.Namespace) -> int:
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()] if args.scopes else None
    try:
        with _shared(args) as store:
            if store is None:
                key, where = key_file.add_key(args.keys, args.name, scopes), args.keys
            else:
                key, where = shared_keys.add_key(store, args.name, scopes), store.location
    except (KeyFileError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    print(key)
    print(f"(new key for '{args.name}' in {where}; it is shown only this once)", file=sys.stderr)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    try:
        with _shared(args) as store:
            principals: list[PrincipalInfo] = (
                key_file.list_principals(args.keys)
                if store is None
                else shared_keys.list_principals(store)
            )
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    for p in principals:
        keys = ", ".join(f"{k.id} ({k.created})" for k in p.keys) or "no keys"
        print(f"{p.name}  scopes: {','.join(p.scopes) or '-'}  keys: {keys}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    try:
        with _shared(args) as store:
            done: Revocation = (
                key_file.revoke(args.keys, args.target)
                if store is None
                else shared_keys.revoke(store, args.target)
            )
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    what = "principal" if done.kind == "principal" else "key"
    print(f"revoked {what} {args.target} of '{done.principal}' ({len(done.key_ids)} keys)")
    return 0


def add_parser(commands: Any) -> None:
    keys = commands.add_parser("keys", help="manage API keys and their scopes")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--keys", default=os.environ.get("CAPREG_KEYS", "capreg-keys.yaml"))
    where.add_argument(
        "--db",
        help="postgresql://... : the keys of the replicas sharing that store, instead of --keys",
    )
    keys_add = key_commands.add_parser("add", parents=[where], help="create a key")
    keys_add.add_argument("name")
    keys_add.add_argument("--scopes", help="comma-separated granted scopes, e.g. hr:*,crm:read")
    keys_add.set_defaults(handler=cmd_keys_add)
    keys_list = key_commands.add_parser("list", parents=[where], help="list principals")
    keys_list.set_defaults(handler=cmd_keys_list)
    keys_revoke = key_commands.add_parser(
        "revoke", parents=[where], help="revoke a key id or a whole principal"
    )
    keys_revoke.add_argument("target", help="key id or principal name")
    keys_revoke.set_defaults(handler=cmd_keys_revoke)
