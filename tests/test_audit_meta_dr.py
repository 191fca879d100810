"""Audit of the DP DR-learner on near-tight adversarial neighbours (design: test_audit_meta.py): κ = 0.45 and fixed
nuisances (ê = 0.5, μ̂ ≈ 0), so the treated record's DR score moves by R/ê = 4 of the final module's target range ±R/κ. Measured lower bound:
0.17 of ε = 8 with 600 runs per dataset."""
from dp_causal_nb.erm import DPRidgeRegression
from dp_causal_nb.meta import DPDRLearner
from _fixtures import pair, audit_release, FIXED

EPS = 8.0

def test_meta_audit_dr_learner():
    D0, D1 = pair(40, 1, -1.0, 1, 1.0, bg_t=0)
    res = audit_release(DPDRLearner, "final", EPS, D0, D1, 600, split=(0.05, 0.05, 0.9), propensity_clip=0.45,
                        final_model=DPRidgeRegression(lam=100.0), **FIXED)
    assert not res.violates(EPS), res
    assert res.epsilon_lower > 0, res
