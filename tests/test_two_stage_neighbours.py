"""Regression tests for the adversarial review of the new releases (session 3): each pair of neighbouring datasets
below made a release behave differently other than through its noise before the fix (invariant 4)."""
import warnings
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import spawn_generators


def _outcome(fit):
    "Exception (type, message) or None, and the warnings, of one fit."
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try: fit(); exc = None
        except Exception as e: exc = (type(e).__name__, str(e))
    return exc, sorted(str(w.message) for w in rec)


def test_composition_baseline_weight_bound_rounding():
    "(1/c)·(hi−lo) can round one ulp above (hi−lo)/c: a clipped propensity with the top outcome raised on one neighbour."
    from dp_causal_nb.two_stage import CompositionBaselineClassifier
    clip, lo, hi = 0.07, 0.0, 7.0
    assert (1 / clip) * (hi - lo) > (hi - lo) / clip          # the rounding this test is about
    r = np.random.default_rng(1); n = 200
    X = r.uniform(-1, 1, (n, 2)); X[:, 0] = np.sign(X[:, 0])
    T = (X[:, 0] > 0).astype(int); T[:3] = 0; X[:3, 0] = 1.0
    Y = r.uniform(0, 1, n)
    outs = []
    for top in (7.0, 6.0):                                      # neighbours: record 0's outcome only
        Yv = Y.copy(); Yv[0] = top; acc = PrivacyAccountant(epsilon=10)
        m = CompositionBaselineClassifier(epsilon=4.0, x_bounds=(-1, 1), outcome_bounds=(lo, hi), propensity_clip=clip,
                                          propensity_lam=1e-3, accountant=acc, random_state=0)
        outs.append(_outcome(lambda: m.fit(X, T, T=T, outcome=Yv)) + ([s.label for s in acc.ledger],))
    assert outs[0] == outs[1] and outs[0][0] is None


def test_meta_propensity_class_set_is_public():
    "A part without a treated record: a third-party propensity model failed (or published classes_ = [0]) on one neighbour."
    from dp_causal_nb.erm import declare_private
    from dp_causal_nb.meta import DPDRLearner, split_indices, check_split
    n, RS = 40, 7
    r = np.random.default_rng(0); X = r.uniform(-1, 1, (n, 2)); Y = r.uniform(-1, 1, n)
    names = DPDRLearner._parts
    idx = dict(zip(names, split_indices(n, check_split(DPDRLearner._default_split, names), spawn_generators(RS, len(names) + 1)[0])))
    j = int(idx["propensity"][0]); T1 = np.zeros(n, int); T1[j] = 1
    obs = []
    for T in (T1, np.zeros(n, int)):
        m = DPDRLearner(outcome_bounds=(-1, 1), x_bounds=(-1, 1), epsilon=1.0, accountant=PrivacyAccountant(), random_state=RS,
                        propensity_model=declare_private(LogisticRegression(), 1.0, 1e-5))
        exc, w = _outcome(lambda: m.fit(Y, T, X=X))
        obs.append((exc, w, list(m.models_["propensity"].classes_) if exc is None else None))
    assert obs[0][0] is None and obs[1][0] is None
    assert obs[0][1:] == obs[1][1:] == ([], [0, 1]) or (obs[0][1] == obs[1][1] and obs[0][2] == obs[1][2] == [0, 1])


def test_tiny_propensity_penalty_refused_before_the_data():
    "Below erm's floor the exact solve failed on a collinear dataset only; now refused from the public input alone."
    from dp_causal_nb.two_stage import DP2ERMClassifier
    n = 20; T = np.r_[np.ones(13, int), np.zeros(7, int)]; y = T.copy()
    X0 = np.ones((n, 1)); X1 = X0.copy(); X1[0, 0] = -0.7
    outs = [_outcome(lambda X=X: DP2ERMClassifier("ipw_estimated", propensity_lam=1e-18, x_bounds=(-1, 1), epsilon=1.0,
                                                  accountant=PrivacyAccountant(), random_state=0).fit(X, y, T=T))
            for X in (X0, X1)]
    assert outs[0] == outs[1] and outs[0][0][0] == "ValueError" and "propensity_lam" in outs[0][0][1]
