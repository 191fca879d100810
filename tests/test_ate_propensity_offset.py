"""DPATE's split and cross-fitted propensity models are centred at the released treated share (nbs/11_dp_ate.ipynb,
the nuisance models; notebook 04's public logistic offset): each is fitted with offset = logit(ñ₁/n clipped to
[c, 1 − c]), ñ₁ the treated count of Theorem 2e. Protected here: the offset is the exact share's logit at ε = ∞ and a
noisy share's logit otherwise (shrunk toward ½ by the James–Stein factor of its noise; the same for every model of a
release, within the count's noise of the truth); the
g estimator fits no propensity model; and on a rare arm the centred model's mean propensity is near the share where
the model without an offset is pulled toward ½."""
import warnings
import numpy as np
import pytest

import dp_causal_nb.ate as ate_mod
from dp_causal_nb import DPATE
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.erm import DPLogisticRegression
from dp_causal_nb.ate import propensity_offset, treated_count_sd


def _data(n=6000, p=0.2, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(0, 1, (n, 2))
    T = (r.uniform(size=n) < p * (0.5 + X[:, 0])).astype(int)
    return np.clip(40 + 30 * X[:, 0] + 5 * T + r.normal(0, 5, n), 0, 100), T, X


@pytest.fixture
def offsets(monkeypatch):
    "The offsets of the propensity models DPATE fits (a recording subclass in place of DPLogisticRegression)."
    seen = []
    class Recording(DPLogisticRegression):
        def fit(self, X, y, sample_weight=None):
            seen.append(self.offset)
            return super().fit(X, y, sample_weight)
    monkeypatch.setattr(ate_mod, "DPLogisticRegression", Recording)
    return seen


def _fit(Y, T, X, **kw):
    kw = {"epsilon": 4.0, "delta": 1e-6, **kw}
    with warnings.catch_warnings(), reproducible_noise():
        warnings.simplefilter("ignore")
        return DPATE(outcome_bounds=(0, 100), x_bounds=(0, 1), accountant=PrivacyAccountant(), random_state=3,
                     **kw).fit(Y, T, X=X)


@pytest.mark.parametrize("design", ["split", "crossfit"])
def test_exact_share_at_infinite_epsilon(offsets, design):
    Y, T, X = _data()
    _fit(Y, T, X, estimator="aipw", design=design, epsilon=np.inf)
    assert len(offsets) == (1 if design == "split" else 2)
    q = T.mean()
    assert all(o == propensity_offset(q, 0.1) for o in offsets)
    assert offsets[0] == pytest.approx(np.log(q / (1 - q)), rel=1e-12)


@pytest.mark.parametrize("design,estimator", [("split", "ipw"), ("crossfit", "aipw")])
def test_private_share_within_the_count_noise(offsets, design, estimator):
    Y, T, X = _data()
    n, q = len(T), T.mean()
    _fit(Y, T, X, estimator=estimator, design=design)
    assert len(set(offsets)) == 1 and offsets[0] != np.log(q / (1 - q))     # one released share, noisy
    sd = treated_count_sd(4.0, 1e-6)
    lo, hi = (propensity_offset(q + s * 6 * sd / n, 0.1, sd / n) for s in (-1, 1))
    assert lo <= offsets[0] <= hi


def test_g_estimator_fits_no_propensity_model(offsets):
    Y, T, X = _data()
    _fit(Y, T, X, estimator="g", design="crossfit")
    assert offsets == []


def test_centred_model_on_a_rare_arm():
    """On a 2 % arm at ε = 4 the offset model's mean π̂ is within 25 % of the share; without it, more than 40 % above
    it (and at least twice as far off)."""
    r = np.random.default_rng(1)
    n = 8000
    X = r.uniform(0, 1, (n, 3))
    T = (r.uniform(size=n) < 0.02 * (0.5 + X[:, 0])).astype(int)
    q = T.mean()
    means = {}
    for o in (0.0, propensity_offset(q, 0.005)):
        with warnings.catch_warnings(), reproducible_noise():
            warnings.simplefilter("ignore")
            lam = ate_mod.split_nuisance_lam(n, 4.0)
            m = DPLogisticRegression(epsilon=4.0, delta=1e-6, lam=lam, x_bounds=(0, 1), offset=o, random_state=2,
                                     accountant=PrivacyAccountant()).fit(X, T)
        means[o] = m.predict_proba(X)[:, 1].mean()
    (m0, mo) = means.values()
    print(f"share {q:.4f}: mean propensity {m0:.4f} without an offset, {mo:.4f} with it")
    assert abs(mo - q) < 0.25 * q
    assert m0 - q > 0.4 * q and abs(mo - q) < 0.5 * (m0 - q)
