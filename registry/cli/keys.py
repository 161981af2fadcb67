"""`capreg keys add|list|revoke`: API keys and their scopes in a keys file (hashes only)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from registry.cli.errors import CommandError
from registry.keys import KeyFileError, add_key, list_principals, revoke


def cmd_keys_add(args: argparse.Namespace) -> int:
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()] if args.scopes else None
    try:
        key = add_key(args.keys, args.name, scopes)
    except (KeyFileError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    print(key)
    print(
        f"(new key for '{args.name}' in {args.keys}; it is shown only this once)", file=sys.stderr
    )
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    try:
        principals = list_principals(args.keys)
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    for p in principals:
        keys = ", ".join(f"{k.id} ({k.created})" for k in p.keys) or "no keys"
        print(f"{p.name}  scopes: {','.join(p.scopes) or '-'}  keys: {keys}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    try:
        done = revoke(args.keys, args.target)
    except (KeyFileError, OSError) as exc:
        raise CommandError(str(exc)) from exc
    what = "principal" if done.kind == "principal" else "key"
    print(f"revoked {what} {args.target} of '{done.principal}' ({len(done.key_ids)} keys)")
    return 0


def add_parser(commands: Any) -> None:
    keys = commands.add_parser("keys", help="manage API keys and their scopes")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    keys_file = argparse.ArgumentParser(add_help=False)
    keys_file.add_argument("--keys", default=os.environ.get("CAPREG_KEYS", "capreg-keys.yaml"))
    keys_add = key_commands.add_parser("add", parents=[keys_file], help="create a key")
    keys_add.add_argument("name")
    keys_add.add_argument("--scopes", help="comma-separated granted scopes, e.g. hr:*,crm:read")
    keys_add.set_defaults(handler=cmd_keys_add)
    keys_list = key_commands.add_parser("list", parents=[keys_file], help="list principals")
    keys_list.set_defaults(handler=cmd_keys_list)
    keys_revoke = key_commands.add_parser(
        "revoke", parents=[keys_file], help="revoke a key id or a whole principal"
    )
    keys_revoke.add_argument("target", help="key id or principal name")
    keys_revoke.set_defaults(handler=cmd_keys_revoke)
