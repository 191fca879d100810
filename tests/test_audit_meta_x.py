"""Audit of the DP X-learner (five modules, two stages) on adversarial replace-one neighbours (see test_audit_meta.py)."""
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.meta import DPXLearner
from test_audit_meta import neighbours, mechanism, EPS, DELTA, RUNS

def test_meta_audit_within_claim_x():
    D0, D1 = neighbours()
    res = audit_mechanism(mechanism(DPXLearner), D0, D1, n_runs=RUNS, batch=False, delta=DELTA, random_state=0)
    assert not res.violates(EPS), res
