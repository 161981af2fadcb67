"""How the training makes a request unanswerable: its gold tools' catalogs left out, and any
tool of another catalog that carries a gold tool's name, which would still answer it."""

from __future__ import annotations

import numpy as np

from capreg.training.corpus import left_out_rows, name_key

CATALOGS = np.asarray(["aspose-diagram", "aspose-diagram", "aspose-imaging", "weather", "files"])
NAMES = np.asarray(
    [
        name_key(n)
        for n in ("DownloadFile", "ObjectExists", "download_file", "current", "upload_file")
    ]
)


def test_names_share_a_key_across_case_and_separators() -> None:
    assert name_key("DownloadFile") == name_key("download_file") == name_key("Download File")
    assert name_key("DownloadFile") != name_key("UploadFile")


def test_the_gold_catalog_and_same_named_tools_of_other_catalogs_are_left_out() -> None:
    rows, twins = left_out_rows(CATALOGS, NAMES, frozenset({"aspose-diagram/DownloadFile"}))
    assert rows.tolist() == [True, True, True, False, False]
    assert twins


def test_without_a_twin_only_the_gold_catalog_is_left_out() -> None:
    rows, twins = left_out_rows(CATALOGS, NAMES, frozenset({"weather/current"}))
    assert rows.tolist() == [False, False, False, True, False]
    assert not twins


def test_a_twin_inside_a_gold_catalog_is_not_counted_as_another_catalogs() -> None:
    relevant = frozenset({"aspose-diagram/DownloadFile", "aspose-diagram/ObjectExists"})
    rows, twins = left_out_rows(CATALOGS, NAMES, relevant)
    assert rows.tolist() == [True, True, True, False, False]
    assert twins
    rows, twins = left_out_rows(CATALOGS, NAMES, frozenset({"aspose-diagram/ObjectExists"}))
    assert rows.tolist() == [True, True, False, False, False]
    assert not twins
