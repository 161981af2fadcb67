"""Whether the learned stage gains from the values a request carries, judged on the tuning splits.

"Save the report to /root/notes/report.md" or "email jo@example.com the summary" carries an
argument, not only a wish: a file path, an address. The tool that can take it has a parameter
of that kind (`path`, `file_name`; `email`, `recipient`). This bench reads each request's
value kinds by shape and each tool's from the words of its input property names, and judges
two appended columns (how many kinds the request carries; the share of them the candidate's
inputs take) as `bench.appended_columns` judges any candidate feature.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.appended_columns import appended, catalog_tools, judged, judged_table
from bench.tables import emit
from bench.tuning import tuning_run
from indexer.evaluation.datasets import TUNING_SETS, load_dataset
from indexer.evaluation.learning import Shortlisted
from indexer.retrieval.features import property_names, words_of
from registry.training import train

VALUE_FEATURES = ("request_value_kinds", "takes_request_values")


class ValueKind(StrEnum):
    PATH = "path"
    URL = "url"
    EMAIL = "email"
    DATE = "date"


_EXTENSIONS = (
    "md|markdown|pdf|txt|csv|tsv|json|jsonl|docx?|pptx?|xlsx?|png|jpe?g|gif|svg|webp|wav|mp3"
    "|mp4|mov|py|html?|zip|tar|gz|xml|ya?ml|toml|log|ipynb|sql|db"
)
_TOP_DOMAINS = "com|org|net|io|cn|gov|edu|ai|dev|co|uk|de|jp|info|app"
# Month names count capitalised only: "you may 5 times" is no date.
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
_SHAPES: dict[ValueKind, re.Pattern[str]] = {
    # An absolute or home-relative path, a Windows drive path, or a file name with an
    # extension people write ("report.pdf").
    ValueKind.PATH: re.compile(
        rf"(?:^|[\s(\"'`])(?:~|\.{{1,2}})?/[\w.-]+|\b[A-Za-z]:\\|\b[\w-]+\.(?:{_EXTENSIONS})\b",
        re.IGNORECASE,
    ),
    ValueKind.URL: re.compile(
        rf"\bhttps?://|\bwww\.|(?<![@\w.-])(?:[a-z0-9-]+\.)+(?:{_TOP_DOMAINS})\b(?!\.\w)",
        re.IGNORECASE,
    ),
    ValueKind.EMAIL: re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"),
    ValueKind.DATE: re.compile(
        rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
        rf"|\b(?:{_MONTHS})[a-z]*\.? \d{{1,2}}(?:st|nd|rd|th)?\b"
        rf"|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTHS})[a-z]*\b"
        r"|\b(?i:today|tomorrow|yesterday|tonight|monday|tuesday|wednesday|thursday|friday"
        r"|saturday|sunday)\b"
    ),
}
# Words of input property names (split as `features.words_of` splits them) that take each kind.
_PARAMETER_WORDS: dict[ValueKind, frozenset[str]] = {
    ValueKind.PATH: frozenset(
        {"path", "paths", "file", "files", "filename", "filepath", "dir", "directory", "folder"}
    ),
    ValueKind.URL: frozenset(
        {"url", "urls", "uri", "link", "links", "website", "webpage", "domain", "site", "href"}
    ),
    ValueKind.EMAIL: frozenset({"email", "emails", "mail", "recipient", "recipients"}),
    ValueKind.DATE: frozenset(
        {"date", "dates", "day", "days", "datetime", "time", "timestamp", "year", "month", "week"}
    ),
}


def request_value_kinds(text: str) -> frozenset[ValueKind]:
    """The kinds of value the request's text carries."""
    return frozenset(kind for kind, shape in _SHAPES.items() if shape.search(text))


def parameter_value_kinds(parameter_words: Iterable[str]) -> frozenset[ValueKind]:
    """The kinds of value a tool's inputs take, from the words of its property names."""
    words = frozenset(parameter_words)
    return frozenset(kind for kind, taking in _PARAMETER_WORDS.items() if words & taking)


def value_columns(
    request: str, ids: Sequence[str], tool_kinds: Mapping[str, frozenset[ValueKind]]
) -> NDArray[np.float32]:
    """The two appended columns for one shortlist."""
    carried = request_value_kinds(request)
    out = np.zeros((len(ids), len(VALUE_FEATURES)), dtype=np.float32)
    out[:, 0] = len(carried)
    if carried:
        out[:, 1] = [len(tool_kinds.get(i, frozenset()) & carried) / len(carried) for i in ids]
    return out


def with_values(
    name: str, items: Sequence[Shortlisted], datasets: Path | None
) -> tuple[list[Shortlisted], dict[str, int]]:
    """`items` with the value columns appended, and how many requests carry each kind."""
    dataset = load_dataset(name, datasets)
    requests = {query.id: query.query for query in dataset.queries}
    tool_kinds = {
        tool.id: parameter_value_kinds(
            w for p in property_names(tool.input_schema) for w in words_of(p)
        )
        for tool, _ in catalog_tools(dataset)
    }
    counts = {kind.value: 0 for kind in ValueKind}
    for text in requests.values():
        for kind in request_value_kinds(text):
            counts[kind.value] += 1
    extended = appended(
        items, lambda item: value_columns(requests[item.query_id], item.ids, tool_kinds)
    )
    return extended, counts


def main() -> None:
    run = tuning_run(__doc__.splitlines()[0])
    tuning = train(run.embedder, datasets=run.datasets, workdir=run.workdir).tuning
    extended: dict[str, list[Shortlisted]] = {}
    carried: dict[str, dict[str, int]] = {}
    for name in TUNING_SETS:
        extended[name], carried[name] = with_values(name, tuning[name], run.datasets)
    cells = judged(extended, VALUE_FEATURES, "with the values columns")
    kinds = ", ".join(kind.value for kind in ValueKind)
    lines = [
        "# Values a request carries, as learned-stage features, judged across the tuning splits",
        "",
        run.header("bench.value_kinds"),
        "",
        f"Requests carrying each kind ({kinds}): "
        + "; ".join(
            f"{name} " + ", ".join(str(carried[name][k.value]) for k in ValueKind)
            for name in TUNING_SETS
        )
        + ".",
        "",
        *judged_table(cells),
    ]
    emit(lines, run.out)


if __name__ == "__main__":
    main()
