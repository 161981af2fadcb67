"""The windows bench.window_vectors reads a request by, and the columns it appends."""

from __future__ import annotations

import numpy as np

from bench.window_vectors import window_columns, word_windows


def _words(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


def test_a_short_request_has_no_windows() -> None:
    assert word_windows("find a hotel near the station", size=8, stride=4) == []


def test_windows_overlap_by_stride_and_the_last_ends_at_the_last_word() -> None:
    text = "one two three four five six seven eight nine ten"
    spans = word_windows(text, size=4, stride=2)
    assert _words(text, spans) == [
        "one two three four",
        "three four five six",
        "five six seven eight",
        "seven eight nine ten",
    ]
    odd = "one two three four five six seven eight nine"
    assert _words(odd, word_windows(odd, size=4, stride=3)) == [
        "one two three four",
        "four five six seven",
        "seven eight nine",
    ]


def test_each_candidate_keeps_its_best_window_and_its_gap_to_the_shortlists_best() -> None:
    windows = np.asarray([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    candidates = np.asarray([[0.6, 0.8], [0.0, 0.5], [-1.0, 0.0]], dtype=np.float32)
    columns = window_columns(windows, candidates)
    assert columns[:, 0].tolist() == [0.800000011920929, 0.5, 0.0]
    np.testing.assert_allclose(columns[:, 1], [0.0, -0.3, -0.8], atol=1e-6)
