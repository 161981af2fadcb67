"""Fills the `${...}` placeholders of an MCP client configuration, or says which cannot be.

The editors fill them from different places: `${env:NAME}` from the environment (VS Code,
Cursor), `${input:ID}` by prompting (VS Code), `${userHome}` and `${workspaceFolder}` from where
they run, and Claude Code's `${NAME}` / `${NAME:-default}` from the environment. An import has
nobody to prompt, so an input comes from `--input ID=VALUE`; a placeholder left unfilled is
never passed on as text (a server started with "${input:token}" as its token fails later, and
less clearly).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_BARE_ENV = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)


class Unresolved(ValueError):
    """A placeholder that cannot be filled; the message names the field and what is missing."""


@dataclass(kw_only=True, frozen=True)
class Placeholders:
    environ: Mapping[str, str] = field(repr=False)
    inputs: Mapping[str, str] = field(repr=False)
    # VS Code's declared inputs: id -> the prompt's description, quoted in the hint.
    declared: Mapping[str, str] = field(default_factory=dict)
    variables: Mapping[str, str] = field(default_factory=dict)
    bare_env: bool = False

    def resolve(self, text: str, where: str) -> str:
        """`text` with every placeholder filled; Unresolved names each one that cannot be."""
        missing: list[str] = []

        def fill(match: re.Match[str]) -> str:
            value = self._value(match.group(1))
            if value is None:
                missing.append(self._hint(match.group(1)))
                return match.group()
            return value

        filled = _PLACEHOLDER.sub(fill, text)
        if missing:
            raise Unresolved(f"{where}: {'; '.join(missing)}")
        return filled

    def resolve_map(self, values: Mapping[str, str], where: str) -> dict[str, str]:
        return {name: self.resolve(value, f"{where}.{name}") for name, value in values.items()}

    def _value(self, name: str) -> str | None:
        if name in self.variables:
            return self.variables[name]
        kind, _, rest = name.partition(":")
        if kind == "env" and rest:
            return self.environ.get(rest)
        if kind == "input" and rest:
            return self.inputs.get(rest)
        bare = _BARE_ENV.fullmatch(name) if self.bare_env else None
        if bare is not None:
            return self.environ.get(bare.group(1), bare.group(2))
        return None

    def _hint(self, name: str) -> str:
        kind, _, rest = name.partition(":")
        if kind == "input" and rest:
            prompt = self.declared.get(rest)
            about = f" ({prompt})" if prompt else ""
            if rest not in self.declared:
                about = " (the file declares no such input)"
            return f"${{{name}}} needs a value{about}: give --input {rest}=VALUE"
        if (kind == "env" and rest) or (self.bare_env and _BARE_ENV.fullmatch(name)):
            variable = rest if kind == "env" else name
            return f"${{{name}}}: {variable} is not set in the environment"
        return (
            f"${{{name}}} is not a placeholder capreg can fill "
            "(env:NAME, input:ID, userHome, workspaceFolder, workspaceFolderBasename)"
        )
