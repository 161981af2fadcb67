"""Tables the tuning-split benches share: one column per tuning set left out."""

from __future__ import annotations

from pathlib import Path

from indexer.evaluation.datasets import TUNING_SETS


def left_out_table(first: str, rows: dict[str, list[str]]) -> list[str]:
    """Markdown rows: `first` heads the label column, then one column per TUNING_SETS entry
    (the set scored, fitted on the other two)."""
    return [
        f"| {first} | " + " | ".join(f"{name} left out" for name in TUNING_SETS) + " |",
        "| --- | " + " | ".join("---" for _ in TUNING_SETS) + " |",
        *(f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()),
    ]


def emit(lines: list[str], out: Path | None) -> None:
    """Prints the report and writes it to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text, encoding="utf-8")
