"""Audit of the DP X-learner (five modules, two stages) on near-tight adversarial neighbours (design: test_audit_meta.py):
the effect1 part holds 80 % of the records, the outcome models are fixed by a huge public λ (μ̂ ≈ 0), so the treated
record's imputed effect Y − μ̂₀ moves by the full outcome range R, half the effect module's target range 2R.
Measured lower bound: 0.59 of ε = 8 with 600 runs per dataset."""
from dp_causal_nb.erm import DPRidgeRegression
from dp_causal_nb.meta import DPXLearner
from _fixtures import pair, audit_release, FIXED

EPS = 8.0

def test_meta_audit_x_learner():
    D0, D1 = pair(20, 1, -1.0, 1, 1.0, bg_t=0)
    res = audit_release(DPXLearner, "effect1", EPS, D0, D1, 600, split=(0.05, 0.05, 0.05, 0.05, 0.8),
                        final_model=DPRidgeRegression(lam=100.0), **FIXED)
    assert not res.violates(EPS), res
    assert res.epsilon_lower > 0, res
