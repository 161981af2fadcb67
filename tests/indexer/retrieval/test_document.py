"""Document text and summaries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from indexer.model import EMBEDDED_DESCRIPTION, Tool
from indexer.retrieval.document import document_text, split_identifier, summary


def test_identifiers_are_split_into_words() -> None:
    assert split_identifier("getWeatherForecast") == "get weather forecast"
    assert split_identifier("list_open-pull.requests") == "list open pull requests"
    assert split_identifier("HTTPServerStatus") == "http server status"


def test_document_holds_catalog_name_description_and_parameters() -> None:
    tool = Tool(
        catalog="hr",
        name="getEmployee",
        description="Returns one employee.",
        input_schema={
            "type": "object",
            "properties": {"employee_id": {"type": "string", "description": "Id like E1"}},
        },
    )
    text = document_text(tool, "Human Resources")
    for fragment in (
        "Human Resources",
        "get employee",
        "Returns one employee.",
        "employee id",
        "Id like E1",
    ):
        assert fragment in text


def test_a_long_description_is_read_up_to_a_bound() -> None:
    description = "Compares a branch's schema with its parent's. " + "y" * 20_000 + " TAIL"
    tool = Tool(
        catalog="neon", name="compare_database_schema", description=description, input_schema={}
    )
    text = document_text(tool)
    assert "Compares a branch's schema with its parent's." in text
    assert "TAIL" not in text
    assert len(text) < EMBEDDED_DESCRIPTION + 200


def test_summary_is_the_first_sentence() -> None:
    assert summary("Opens a ticket. Then notifies the team.") == "Opens a ticket."


@given(st.text(max_size=2_000))
def test_summary_is_one_line_of_at_most_200_characters(description: str) -> None:
    result = summary(description)
    assert len(result) <= 200
    assert "\n" not in result
