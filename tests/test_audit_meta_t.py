"""Near-tight audit of the DP T-learner (design: see test_audit_meta.py); measured lower bound 0.64 of ε = 4 with 800
runs per dataset (the record reaches the treated arm's part with probability 0.95)."""
from dp_causal_nb.erm import DPRidgeRegression
from dp_causal_nb.meta import DPTLearner
from _fixtures import pair, audit_release

EPS = 4.0

def test_meta_audit_t_learner_near_tight():
    "T-learner: the treated arm's part holds 95 % of the records; the treated record's outcome −1 → 1 (others untreated)."
    D0, D1 = pair(20, 1, -1.0, 1, 1.0, bg_t=0)
    res = audit_release(DPTLearner, "outcome1", EPS, D0, D1, 800, split=(0.05, 0.95), outcome_model=DPRidgeRegression(lam=100.0))
    assert not res.violates(EPS), res
    assert res.epsilon_lower > 0.05 * EPS, res
