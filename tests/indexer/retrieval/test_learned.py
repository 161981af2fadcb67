"""The learned stage as served: numpy trees equal LightGBM's prediction, the model file round
trips and is refused when it cannot be served, and the weak-match threshold decides."""

from __future__ import annotations

import json
from pathlib import Path

import lightgbm
import numpy as np
import pytest

from capreg.training.learning import (
    RANKER_PARAMS,
    choose_threshold,
    fit_logistic,
    fit_ranker,
)
from indexer.retrieval.features import FEATURE_NAMES, FEATURES
from indexer.retrieval.learned import (
    CONFIDENCE_FEATURES,
    MODEL_FILE,
    LearnedStage,
    ModelFileError,
    TreeEnsemble,
    WeakMatch,
    WeakReason,
    dumps,
    load_learned_stage,
)
from tests.synthetic import synthetic_shortlists


def test_numpy_trees_score_exactly_like_lightgbm() -> None:
    items = synthetic_shortlists(1)
    x = np.vstack([i.features for i in items]).astype(np.float64)
    y = np.concatenate([i.labels() for i in items])
    booster = lightgbm.train(
        {"objective": "lambdarank", "num_leaves": 7, "verbosity": -1, "num_threads": 1},
        lightgbm.Dataset(x, label=y, group=[len(i.ids) for i in items]),
        num_boost_round=25,
    )
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    probe = np.random.default_rng(2).normal(size=(200, len(FEATURES))).astype(np.float32)
    expected = booster.predict(probe.astype(np.float64), raw_score=True)
    np.testing.assert_allclose(ensemble.predict(probe), expected, rtol=1e-9, atol=1e-9)


def test_a_fitted_ranker_learns_the_synthetic_rule_and_refits_identically() -> None:
    items = synthetic_shortlists(3)
    columns = list(range(len(FEATURES)))
    first = LearnedStage(fit_ranker(items, columns, rounds=30), tuple(columns), None)
    second = LearnedStage(fit_ranker(items, columns, rounds=30), tuple(columns), None)
    assert dumps(first) == dumps(second)
    held_out = synthetic_shortlists(4)
    top_is_gold = [
        item.ids[int(np.argmax(first.score(item.features)))] in item.relevant for item in held_out
    ]
    assert np.mean(top_is_gold) > 0.6  # chance is 1 in 12


def test_a_ranker_fitted_without_a_column_reads_only_the_others(tmp_path: Path) -> None:
    items = synthetic_shortlists(5)
    columns = [c for c in range(len(FEATURES)) if c != 2]
    stage = LearnedStage(fit_ranker(items, columns, rounds=10), tuple(columns), None)
    path = tmp_path / "stage.json"
    path.write_text(dumps(stage))
    loaded = load_learned_stage(path)
    assert loaded is not None
    assert loaded.columns == tuple(columns)
    features = items[0].features.copy()
    before = loaded.score(features)
    features[:, 2] = 1e6  # the dropped column changes nothing
    np.testing.assert_array_equal(loaded.score(features), before)


def test_without_a_model_file_search_falls_back_to_the_blend(tmp_path: Path) -> None:
    assert load_learned_stage(tmp_path / "missing.json") is None
    assert load_learned_stage(None) is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 99}, "model format 99"),
        ({"features": ["no_such_feature"]}, "unknown features: no_such_feature"),
    ],
)
def test_a_model_file_this_code_cannot_serve_is_refused_by_name(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    items = synthetic_shortlists(6)
    stage = LearnedStage(fit_ranker(items, [0, 1], rounds=3), (0, 1), None)
    document = json.loads(dumps(stage)) | change
    path = tmp_path / "stage.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ModelFileError, match=message):
        load_learned_stage(path)


def test_the_committed_model_loads_and_reads_known_features() -> None:
    stage = load_learned_stage(MODEL_FILE)
    assert stage is not None
    assert stage.weak is not None
    assert all(FEATURE_NAMES[c] in FEATURE_NAMES for c in stage.columns)
    assert 0.0 < stage.weak.threshold < 1.0


def test_the_weak_threshold_flags_at_most_the_allowed_share_of_answerable_requests() -> None:
    rng = np.random.default_rng(8)
    answerable = np.concatenate([np.ones(400), np.zeros(400)])
    x = np.concatenate([rng.normal(1.0, 1.0, 400), rng.normal(-1.0, 1.0, 400)])[:, None]
    mean, scale, coef, intercept = fit_logistic(x, answerable)
    assert coef[0] > 0  # higher facts mean answerable
    weak = WeakMatch(mean, scale, coef, intercept, 0.5)
    point = choose_threshold(weak.probability(x), answerable)
    assert point.flagged_answerable <= 0.05
    assert point.flagged_unanswerable > 0.5


def test_an_answer_under_the_cosine_floor_is_weak_whatever_the_classifier_says() -> None:
    columns = list(range(len(FEATURES)))
    ranker = fit_ranker(synthetic_shortlists(9), columns, rounds=3)
    # A classifier that finds every answer confident (a large intercept).
    confident = WeakMatch(
        np.zeros(len(CONFIDENCE_FEATURES)),
        np.ones(len(CONFIDENCE_FEATURES)),
        np.zeros(len(CONFIDENCE_FEATURES)),
        10.0,
        0.5,
        cosine_floor=0.2,
    )
    stage = LearnedStage(ranker, tuple(columns), confident)
    features = np.zeros((3, len(FEATURES)), dtype=np.float32)
    best = FEATURE_NAMES.index("dense_cosine_best_intent")
    features[:, best] = [0.15, 0.1, 0.05]
    assert stage.is_weak(stage.score(features), features)
    features[0, best] = 0.25
    assert not stage.is_weak(stage.score(features), features)


def test_one_fit_can_override_the_ranker_settings_without_changing_them() -> None:
    items = synthetic_shortlists(9)
    columns = list(range(len(FEATURES)))
    before = dict(RANKER_PARAMS)
    default = fit_ranker(items, columns, rounds=10)
    faster = fit_ranker(items, columns, rounds=10, params={"learning_rate": 0.5})
    again = fit_ranker(items, columns, rounds=10, params={})
    assert before == RANKER_PARAMS
    assert np.array_equal(default.leaf_value, again.leaf_value)
    assert np.abs(faster.leaf_value).max() > np.abs(default.leaf_value).max()


def test_a_weak_answer_is_explained_by_the_facts_that_weigh_most_against_it() -> None:
    # Every fact pulls towards "answerable" as it grows; facts are already standardised.
    weak = WeakMatch(
        np.zeros(len(CONFIDENCE_FEATURES)),
        np.ones(len(CONFIDENCE_FEATURES)),
        np.ones(len(CONFIDENCE_FEATURES)),
        0.0,
        0.5,
    )
    # top cosine, above the corpus, above the tenth, learned score, learned margin
    far = np.asarray([-2.0, -2.0, 0.5, -1.0, 0.5])
    alike = np.asarray([0.5, 0.5, -2.0, 0.0, -2.0])
    assert weak.reason(far) == WeakReason.NO_CLOSE_TOOL
    assert weak.reason(alike) == WeakReason.NEAREST_TOOLS_ALIKE
