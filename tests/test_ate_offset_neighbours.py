"""DPATE's split and cross-fitted designs with propensity models centred at a nonzero offset (the released treated
share's logit, nbs/11_dp_ate.ipynb) replay alike on replace-one neighbours: exception, warnings, published attribute
names and ledger are the same when record 0's outcome, covariate or treatment is replaced by an extreme. The registry's
DPATE entries (n = 200) fit at offset 0 (their share is shrunk to ½), so this bed is larger and unbalanced."""
import numpy as np
import pytest

import dp_causal_nb.ate as ate_mod
from dp_causal_nb import DPATE
from dp_causal_nb.erm import DPLogisticRegression
from _registry import Case, _fit_ate
from test_neighbour_replay import observe

YB = (-2.0, 2.0)


def _bed(n=3000, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, (n, 2))
    T = (r.uniform(size=n) < 0.12 * (1 + X[:, 0])).astype(int)
    return np.clip(0.5 * X[:, 0] + T + r.normal(0, 0.5, n), -2, 2), T, X


def _neighbours(Y, T, X):
    for cell, v in [("Y", 1e300), ("Y", -np.inf), ("X", 1e300), ("X", np.inf), ("X", 1e-320), ("T", None)]:
        Y2, X2, T2 = Y.copy(), X.copy(), T.copy()
        if cell == "Y": Y2[0] = v
        elif cell == "X": X2[0, 0] = v
        else: T2[0] = 1 - T2[0]
        yield (cell, v), (Y2, T2, X2)


@pytest.mark.parametrize("mode", ["default", "seterr_raise"])
@pytest.mark.parametrize("design", ["split", "crossfit"])
def test_offset_designs_replay_alike(monkeypatch, design, mode):
    offsets = []
    class Recording(DPLogisticRegression):
        def fit(self, X, y, sample_weight=None):
            offsets.append(self.offset)
            return super().fit(X, y, sample_weight)
    monkeypatch.setattr(ate_mod, "DPLogisticRegression", Recording)
    case = Case(f"DPATE {design}", lambda acc, yb: DPATE(estimator="aipw", design=design, x_bounds=(-1, 1),
                                                         outcome_bounds=yb, out_of_bounds="clip", accountant=acc,
                                                         epsilon=2.0, delta=1e-5, random_state=0), _fit_ate)
    Y, T, X = _bed()
    ref = observe(case, YB, Y, T, X, mode)
    assert ref["exception"] is None and ref["attributes"]
    assert offsets and all(o < -1 for o in offsets)      # centred near logit(0.12): the offset path is exercised
    for what, (Y2, T2, X2) in _neighbours(Y, T, X):
        assert observe(case, YB, Y2, T2, X2, mode) == ref, what
