"""Near-tight audit of the DP S-learner (design: see test_audit_meta.py). One module carries the record: its released
coefficient moves by ~0.9 of the ridge sensitivity bound, so the audit's lower bound is a sizeable fraction of the
claim (measured: 0.97 of ε = 4 with 1 200 runs per dataset; the bound grows with the number of runs)."""
import numpy as np
from dp_causal_nb.erm import DPRidgeRegression
from dp_causal_nb.meta import DPSLearner
from _fixtures import pair, audit_release

EPS = 4.0

def test_meta_audit_s_learner_near_tight():
    "S-learner: design [x, t, t·x] (3 features + intercept), background at (x, t, y) = (0, 0, 0); record 0 at (1, 1): y −1 → 1."
    D0, D1 = pair(20, 1, -1.0, 1, 1.0, bg_t=0)
    for D in (D0, D1): D[2][1:] = 0.0                 # background at x = 0
    res = audit_release(DPSLearner, "outcome", EPS, D0, D1, 1200, outcome_model=DPRidgeRegression(lam=100.0),
                        statistic_direction=np.full(4, 0.5))
    assert not res.violates(EPS), res
    assert res.epsilon_lower > 0.15 * EPS, res
