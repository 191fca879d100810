"""Refusals of the outcome-weighted learners that depend on public inputs only: raised before any charge, the same
error on every dataset (neighbours included), with an untouched ledger."""
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.erm import DPLogisticRegression
from dp_causal_nb.itr import PrivateITR, weights_ignored
from dp_causal_nb.two_stage import CompositionBaselineClassifier, DP2ERMClassifier

N = 60
R = np.random.default_rng(0)
X, T, LAB = R.uniform(-1, 1, (N, 2)), R.integers(0, 2, N), R.integers(0, 2, N)


def _outcome(extreme: float, lo: float, hi: float) -> tuple:
    "A pair of outcome vectors inside (lo, hi) that differ in record 0 only: ordinary against `extreme`."
    y = np.full(N, lo + 0.25 * (hi - lo))
    y2 = y.copy()
    y2[0] = extreme
    return y, y2


def _refusal(fit) -> tuple:
    "(error type, message, ledger) of a fit charged to a fresh accountant."
    acc = PrivacyAccountant()
    try:
        fit(acc)
        return None, None, acc.spent
    except Exception as e:
        return type(e), str(e), acc.spent


def test_rule_learner_weight_bound_below_the_outcome_range():
    "The weights clip(Y) − lo of a DPLogisticRegression rule reach hi − lo: a smaller weight_bound is refused."
    def fit(y):
        def run(acc):
            m = DPLogisticRegression(epsilon=1.0, lam=1e-2, x_bounds=(-1, 1), weight_bound=1.0, accountant=acc)
            m.outcome_bounds_for_itr = (-2, 2)
            PrivateITR(m).fit(y, T, X=X)
        return run
    y, y2 = _outcome(1.9, -2.0, 2.0)
    a, b = _refusal(fit(y)), _refusal(fit(y2))
    assert a == b and a[0] is ValueError and "weight_bound must be at least" in a[1] and a[2] == (0.0, 0.0)


@pytest.mark.parametrize("make", [
    lambda acc, ob: CompositionBaselineClassifier(epsilon=1.0, x_bounds=(-1, 1), outcome_bounds=ob, accountant=acc),
    lambda acc, ob: DP2ERMClassifier("entropy", epsilon=1.0, x_bounds=(-1, 1), outcome_bounds=ob, accountant=acc),
], ids=["composition", "dp2erm"])
def test_outcome_bounds_beyond_max_bound(make):
    "Outcome bounds whose range overflows are refused from the declaration, not from one record's value."
    ob = (0.0, 1.7e308)
    y, y2 = _outcome(1.6e308, *ob)
    a, b = (_refusal(lambda acc, o=o: make(acc, ob).fit(X, LAB, T=T, outcome=o)) for o in (y, y2))
    assert a == b and a[0] is ValueError and "within ±" in a[1] and a[2] == (0.0, 0.0)


def test_weights_ignored_checks_its_bounds():
    with pytest.raises(ValueError, match="within ±"):
        weights_ignored(1.0, lam=1e-2, x_bounds=(-1, 1), outcome_bounds=(-1e308, 1e308))


@pytest.mark.parametrize("kw, msg", [(dict(lam=1e-12), "lam must be at least"),
                                     (dict(propensity_lam=1e-12), "lam must be at least"),
                                     (dict(epsilon=1e-9), "grid steps")])
def test_composition_refuses_before_its_one_charge(kw, msg):
    "The two inner models' public refusals (penalty floor, noise plan) come before the baseline charges anything."
    def run(acc):
        CompositionBaselineClassifier(**(dict(epsilon=1.0, x_bounds=(-1, 1), accountant=acc) | kw)).fit(X, LAB, T=T)
    err, text, spent = _refusal(run)
    assert err is ValueError and msg in text and spent == (0.0, 0.0)
