"""Constructions shared by several test files (a helper module: pytest collects nothing here).

* DPCATE's near-tight designs: a linear feature map on the box [-1, 1]², declared-private constant nuisance models
  and the estimator's fit with the audits' public inputs (tests/test_audit_cate.py, tests/test_cate_auto_neighbours.py).
* The meta-learners' audit designs: replace-one pairs and the released coefficient as the audit's statistic
  (tests/test_audit_meta*.py, tests/benchmarks/bench_meta.py).
* `fit_outcome`: what an observer sees of one fit apart from the noised values (the neighbour tests)."""
import math, warnings
import numpy as np
from sklearn.base import BaseEstimator
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.erm import DPRidgeRegression, DPLogisticRegression
from dp_causal_nb.user_models import declare_private

XB, YB, EPS, DELTA = ([0.0, 0.0], [1.0, 1.0]), (-1.0, 1.0), 1.0, 1e-5
XB_T = ([-1.0, -1.0], [1.0, 1.0])              # the box of the near-tight constructions


def fit_outcome(fit):
    "Exception (type, message) or None, and the warnings, of one fit."
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            fit()
            exc = None
        except Exception as e: exc = (type(e).__name__, str(e))
    return exc, sorted(str(w.message) for w in rec)


# ---------- DPCATE ----------------------------------------------------------------------------------------------------
def fit_dpcate(X, A, Y, **kw):
    "DPCATE fitted at (EPS, DELTA) on the bounds XB, YB with out-of-bounds records clipped, random_state 7; quiet."
    kw = dict(epsilon=EPS, delta=DELTA, x_bounds=XB, outcome_bounds=YB, out_of_bounds="clip", random_state=7) | kw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPCATE(**kw).fit(Y, A, X=X)


class Linear:                                    # f(x) = x on [-1, 1]^2, no intercept; sup ||f|| = sqrt(2) at corners
    norm_bound = math.sqrt(2)
    def __call__(self, X): return np.atleast_2d(X).astype(float)


class ConstPropensity(BaseEstimator):            # π̂ ≡ 0, clipped to κ: a constant is DP at any level
    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self
    def predict_proba(self, X):
        n = len(np.atleast_2d(X))
        return np.c_[np.ones(n), np.zeros(n)]


class ConstOutcome(BaseEstimator):               # μ̂ ≡ y_lo
    def __init__(self, value=-1.0): self.value = value
    def fit(self, Z, y): return self
    def predict(self, Z): return np.full(len(np.atleast_2d(Z)), self.value)


def shape_design(**kw):
    """The public inputs of the near-tight second-stage pairs: the box XB_T, the linear map and constant nuisance models
    declared private at (EPS/2, DELTA/2) (π̂ ≡ 0, μ̂ ≡ y_lo); `kw` adds or overrides keys."""
    return dict(x_bounds=XB_T, feature_map=Linear(),
                propensity_model=declare_private(ConstPropensity(), EPS / 2, DELTA / 2),
                outcome_model=declare_private(ConstOutcome(YB[0]), EPS / 2, DELTA / 2)) | kw


def forced_centred(rule, **extra):
    "The rule's function-mode parameters with centring forced (a test device); `extra` overrides further keys."
    def forced(n, d, eps, dlt, yb, split=None):
        p = rule(n, d, 1e9, dlt, yb, split=0.8)
        return p | dict(mode="function", ate_share=0.2, center_targets=True) | extra
    return forced


# ---------- meta-learners: the near-tight audit design (described in tests/test_audit_meta.py) ------------------------
U = np.ones(2) / np.sqrt(2)                       # φ(x = 1) under StandardizeToBounds on (-1, 1)
FIXED = dict(propensity_model=DPLogisticRegression(epsilon=1.0, lam=1000.0), outcome_model=DPRidgeRegression(epsilon=1.0, lam=1000.0))


def pair(N, t0, y0, t1, y1, bg_t=0, bg_y=0.0):
    "Replace-one neighbours: N records at x = 1 (arm bg_t, outcome bg_y); record 0 is (t0, y0) in D0, (t1, y1) in D1."
    X = np.ones((N, 1))
    T = np.full(N, bg_t)
    Y = np.full(N, bg_y)
    T[0], Y[0] = t0, y0
    T1, Y1 = T.copy(), Y.copy()
    T1[0], Y1[0] = t1, y1
    return (Y, T, X), (Y1, T1, X)


def coef_mechanism(L, module, epsilon, **kw):
    "One release of learner L on `data`; returns `module`'s released coefficient vector (part of the published model)."
    def run(data, rng):
        Y, T, X = data
        m = L(outcome_bounds=(-1, 1), x_bounds=(-1, 1), epsilon=epsilon, delta=DELTA, accountant=PrivacyAccountant(),
              random_state=int(rng.integers(2**31 - 1)), **kw).fit(Y, T, X=X)
        return m.models_[module].coef_
    return run


def audit_release(L, module, epsilon, D0, D1, n_runs, statistic_direction=U, **kw):
    "Audit of `module`'s released coefficient projected on `statistic_direction` (the direction the record moves it)."
    return audit_mechanism(coef_mechanism(L, module, epsilon, **kw), D0, D1, n_runs=n_runs, batch=False, delta=DELTA,
                           random_state=0, statistic=lambda c: np.asarray(c) @ statistic_direction, progress=False)


# ---------- meta-learners: the original (weak) neighbours (bounds-from-data control, `bench_meta.py audit`) -----------
WEAK_N = 12
Q = np.array([[1.0]])


def neighbours(hi=1.0):
    "D0: records at x=0, y=0, half treated; D1: record 0 replaced by the extreme (x=1, T=1, y=hi)."
    X = np.zeros((WEAK_N, 1))
    T = np.arange(WEAK_N) % 2
    Y = np.zeros(WEAK_N)
    X1, T1, Y1 = X.copy(), T.copy(), Y.copy()
    X1[0], T1[0], Y1[0] = 1.0, 1, hi
    return (Y, T, X), (Y1, T1, X1)


def mechanism(L, **kw):
    "One release of learner L at EPS: its effect at the query point Q."
    def run(data, rng):
        Y, T, X = data
        m = L(outcome_bounds=(-1, 1), x_bounds=(-1, 1), epsilon=EPS, delta=DELTA, accountant=PrivacyAccountant(),
              random_state=int(rng.integers(2**31 - 1)), **kw).fit(Y, T, X=X)
        return m.effect(Q)[0]
    return run
