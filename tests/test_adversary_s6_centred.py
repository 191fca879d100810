"""Session-6 adversarial review of DPCATE's centred shape release (final='auto', rule key `center_targets`, d > 5).
Two latent findings, unreachable with the shipped rule (it always pairs centring with clipped DR targets at C = R),
each now refused for every dataset alike (a public-parameter error, raised before any noise is drawn):
L1: `center_targets` without `shape_learner='dr'` published the UN-noised ĉ (the stage said it was already noised).
L2: a centred release with target_clip C > R/κ: Δ_shape bounds a target by min(R/κ, C) while a centred target can
    reach R/κ + R (a near-tight pair exceeded parameter_sensitivity() by 10 %)."""
import numpy as np
import pytest
from dp_causal_nb import cate
from dp_causal_nb.cate_defaults import default_cate_params as rule
from dp_causal_nb.erm import declare_private
from test_audit_cate import _fit, _forced_centred, _Linear, _ConstPropensity, _ConstOutcome, XB_T, YB, EPS, DELTA

R = YB[1] - YB[0]
KW = dict(x_bounds=XB_T, lam=1000.0, propensity_clip=0.15, feature_map=_Linear(),
          propensity_model=declare_private(_ConstPropensity(), EPS / 2, DELTA / 2),
          outcome_model=declare_private(_ConstOutcome(YB[0]), EPS / 2, DELTA / 2))
X, A, Y = np.tile([1.0, 1.0], (60, 1)), np.ones(60), np.full(60, YB[1])



def test_L1_centring_without_dr_targets_is_refused(monkeypatch):
    monkeypatch.setattr(cate, "default_cate_params", _forced_centred(rule, shape_learner="r"))
    with pytest.raises(ValueError, match="center_targets needs shape_learner='dr'"):
        _fit(X, A, Y, **KW)


def test_L2_centred_clip_above_R_over_kappa_is_refused(monkeypatch):
    monkeypatch.setattr(cate, "default_cate_params", _forced_centred(rule, target_clip=100 * R))
    with pytest.raises(ValueError, match="exceeds R/κ"):
        _fit(X, A, Y, **KW)
    monkeypatch.setattr(cate, "default_cate_params", _forced_centred(rule, target_clip=R))      # the shipped level fits
    e = _fit(X, A, Y, **KW)
    assert e.stage_.noised == 1 and e.target_clip_ == R
