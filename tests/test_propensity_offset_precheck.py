"""The split and cross-fitted designs check their propensity models' noise plans before any charge, at the largest
|offset| `propensity_offset` can return (nbs/11_dp_ate.ipynb): the offset itself is known only after the treated
count is released, so the check must cover both clip ends, logit(c) and logit(1 − c), whose floating-point
magnitudes can differ in the last bits."""
import numpy as np
import pytest

import dp_causal_nb.ate as ate_mod
from dp_causal_nb.ate import propensity_offset


def _checked_offsets(monkeypatch, c):
    seen = []
    real = ate_mod.logistic_noise
    def recording(*args, offset=0.0, **kw):
        seen.append(offset)
        return real(*args, offset=offset, **kw)
    monkeypatch.setattr(ate_mod, "logistic_noise", recording)
    ate_mod._check_propensity_models([400, 2000], d=2, eps=1.0, dlt=1e-6, lam=None, c=c)
    assert len(seen) == 2
    return seen


@pytest.mark.parametrize("c", [0.1, 0.05, 0.02, 0.3])
def test_precheck_covers_every_offset(monkeypatch, c):
    checked = min(abs(o) for o in _checked_offsets(monkeypatch, c))
    shares = np.concatenate([[-0.3, 0.0, c, 0.5, 1 - c, 1.0, 1.7], np.linspace(0, 1, 401)])
    for sd in (0.0, 1e-3, 0.05):
        worst = max(abs(propensity_offset(s, c, sd)) for s in shares)
        assert worst <= checked


def test_clip_ends_differ_in_floating_point():
    "The case the check must cover: |logit(1 − c)| above |logit(c)| for some c (else the test above cannot fail)."
    cs = np.linspace(0.01, 0.45, 200)
    assert any(abs(propensity_offset(1.0, c)) > abs(propensity_offset(0.0, c)) for c in cs)
