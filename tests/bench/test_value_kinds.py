"""The rules bench.value_kinds reads request values and tool parameters by."""

from __future__ import annotations

import pytest

from bench.value_kinds import (
    ValueKind,
    parameter_value_kinds,
    request_value_kinds,
    value_columns,
)


@pytest.mark.parametrize(
    ("request_text", "kinds"),
    [
        ("Save the summary to /root/markdown/report.md", {ValueKind.PATH}),
        ("attach quarterly.xlsx to the ticket", {ValueKind.PATH}),
        ("Run a whois lookup on www.baidu.com", {ValueKind.URL}),
        ("fetch https://example.org/feed", {ValueKind.URL}),
        ("check mail.google.com is up", {ValueKind.URL}),
        ("email jo@example.org the invoice", {ValueKind.EMAIL}),
        ("trains from Beijing next Wednesday", {ValueKind.DATE}),
        ("born on August 8, 2008", {ValueKind.DATE}),
        ("rates for 2024-03-01", {ValueKind.DATE}),
    ],
)
def test_a_value_in_the_request_is_read_by_its_shape(
    request_text: str, kinds: set[ValueKind]
) -> None:
    assert request_value_kinds(request_text) == kinds


@pytest.mark.parametrize(
    "request_text",
    [
        "build a Node.js service",
        "speed in km/h and/or mph",
        "e.g. a weather forecast",
        "pay 3.50 USD",
        "you may 5 times",
    ],
)
def test_words_that_only_look_like_values_are_not_read_as_values(request_text: str) -> None:
    assert request_value_kinds(request_text) == frozenset()


def test_a_tools_kinds_come_from_the_words_of_its_input_names() -> None:
    assert parameter_value_kinds({"file", "path", "content"}) == {ValueKind.PATH}
    assert parameter_value_kinds({"recipient", "start", "date"}) == {
        ValueKind.EMAIL,
        ValueKind.DATE,
    }
    assert parameter_value_kinds({"query", "limit"}) == frozenset()


def test_the_columns_count_the_requests_kinds_and_each_candidates_share_of_them() -> None:
    kinds = {"fs/write_file": frozenset({ValueKind.PATH}), "web/fetch": frozenset({ValueKind.URL})}
    columns = value_columns(
        "copy www.example.com into /tmp/page.html", ["fs/write_file", "web/fetch", "x/other"], kinds
    )
    assert columns[:, 0].tolist() == [2.0, 2.0, 2.0]
    assert columns[:, 1].tolist() == [0.5, 0.5, 0.0]
    plain = value_columns("summarise the news", ["fs/write_file"], kinds)
    assert plain.tolist() == [[0.0, 0.0]]
