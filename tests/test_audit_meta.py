"""Audits of the DP meta-learners (dp_causal_nb.meta) on adversarial replace-one neighbours, with a broken-on-purpose
control that reads the outcome bounds from the data (the auditor must catch it)."""
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.meta import DPXLearner, DPRLearner, DPDRLearner

EPS, DELTA, N, RUNS = 1.0, 1e-5, 12, 100   # 100 runs: refutes only gross violations (CI time); see bench_meta.py
Q = np.array([[1.0]])   # the query point: the corner where the replaced record sits

def neighbours(hi=1.0):
    "D0: records at x=0, y=0, half treated; D1: record 0 replaced by the extreme (x=1, T=1, y=hi)."
    X = np.zeros((N, 1)); T = np.arange(N) % 2; Y = np.zeros(N)
    X1, T1, Y1 = X.copy(), T.copy(), Y.copy(); X1[0], T1[0], Y1[0] = 1.0, 1, hi
    return (Y, T, X), (Y1, T1, X1)

def mechanism(L, **kw):
    def run(data, rng):
        Y, T, X = data
        m = L(outcome_bounds=(-1, 1), x_bounds=(-1, 1), epsilon=EPS, delta=DELTA, accountant=PrivacyAccountant(),
              random_state=int(rng.integers(2**31 - 1)), **kw).fit(Y, T, X=X)
        return m.effect(Q)[0]
    return run

@pytest.mark.parametrize("L", [DPRLearner, DPDRLearner])   # S, T: test_meta.py; X: test_audit_meta_x.py
def test_meta_audit_within_claim(L):
    D0, D1 = neighbours()
    res = audit_mechanism(mechanism(L), D0, D1, n_runs=RUNS, batch=False, delta=DELTA, random_state=0)
    assert not res.violates(EPS), res

class _LeakyDR(DPDRLearner):
    "Broken on purpose: the outcome bounds are read from the data (what the paper's public code lets DP-EBM do)."
    def fit(self, Y, T, *, X):
        self.outcome_bounds = (float(np.min(Y)) - 1e-3, float(np.max(Y)) + 1e-3)
        return super().fit(Y, T, X=X)

def test_meta_audit_catches_bounds_read_from_data():
    D0, D1 = neighbours(hi=1.0)
    D0 = (D0[0] + np.linspace(-1e-3, 1e-3, N), D0[1], D0[2])   # a tiny public-looking range on D0 ...
    D1 = (np.r_[1.0, D0[0][1:]], D1[1], D1[2])                 # ... and one large outcome on D1
    res = audit_mechanism(mechanism(_LeakyDR), D0, D1, n_runs=RUNS, batch=False, delta=DELTA, random_state=0,
                          statistic=lambda y: np.abs(np.asarray(y)))
    assert res.violates(EPS), res
