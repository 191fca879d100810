"""DP-ERM's refusals that depend on public inputs only (the penalty floor, a noise too wide for the release grid) come
before any charge: the ledger stays empty and the estimator unfitted."""
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.erm import DPLogisticRegression, DPRidgeRegression, logistic_noise, ridge_noise

def _data():
    r = np.random.default_rng(0)
    X = r.uniform(-1, 1, (200, 3))
    return X, X[:, 0], (X[:, 1] > 0).astype(int)

MODELS = {
    "ridge": lambda **kw: DPRidgeRegression(delta=1e-6, outcome_bounds=(-1, 1), x_bounds=(-1, 1), **kw),
    "logistic, output": lambda **kw: DPLogisticRegression(delta=1e-6, x_bounds=(-1, 1), method="output", **kw),
    "logistic, auto": lambda **kw: DPLogisticRegression(delta=1e-6, x_bounds=(-1, 1), **kw),
}

@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("epsilon, lam, match", [(1e-6, 0.1, "grid steps"), (1.0, 1e-12, "lam must be at least"), (1.0, 0.0, "lam must lie in")])
def test_refused_before_any_charge(name, epsilon, lam, match):
    X, y, t = _data()
    acc = PrivacyAccountant()
    m = MODELS[name](epsilon=epsilon, lam=lam, accountant=acc)
    with pytest.raises(ValueError, match=match):
        m.fit(X, y if name == "ridge" else t)
    assert acc.spent == (0.0, 0.0) and not hasattr(m, "coef_")

def test_the_public_noise_functions_refuse_the_same_inputs():
    "The pre-checks other releases call (DPATE's nuisance models) say what the fit would say, before it runs."
    with pytest.raises(ValueError, match="grid steps"):
        ridge_noise(200, 4, epsilon=1e-6, delta=1e-6, lam=0.1, half_range=1.0, norm_bound=1.0)
    with pytest.raises(ValueError, match="grid steps"):
        logistic_noise(200, 4, epsilon=1e-6, delta=1e-6, lam=0.1, norm_bound=1.0, method="output")
    assert ridge_noise(200, 4, epsilon=1.0, delta=1e-6, lam=0.1, half_range=1.0, norm_bound=1.0)[2].kind == "gaussian"
