"""Weight-stability certificates of dp_causal_nb.weights (Theorems W1–W4) on random replace-one neighbours with exact
re-solves, their dependence on the public inputs, and bad inputs."""
import warnings
import numpy as np, pytest
from dp_causal_nb.core import PrivacyLeakWarning
from dp_causal_nb.weights import (BalancingWeights, WeightCertificate, weight_movement, ipw_known_certificate,
                                  ipw_estimated_certificate, entropy_certificate, mmd_certificate)

SETTINGS = [("ipw_known", dict(propensity_clip=0.1)), ("ipw_estimated", dict(propensity_lam=0.5, propensity_clip=0.1)),
            ("entropy", dict(weight_cap=5.0, ridge=0.3)), ("mmd", dict(weight_cap=5.0, ridge=0.3, n_components=10))]

@pytest.mark.parametrize("method,kw", SETTINGS)
def test_certificate_holds_on_random_neighbours(method, kw):
    rng = np.random.default_rng(123); bw = BalancingWeights(method, x_bounds=(-1, 1), **kw)
    worst = 0.0
    for _ in range(15):
        n = int(rng.integers(3, 25)); X = rng.uniform(-1, 1, (n, 2)); T = (rng.uniform(size=n) < rng.uniform(0.1, 0.9)).astype(int)
        X2, T2 = X.copy(), T.copy(); X2[0] = rng.choice([-1.0, 1.0], 2); T2[0] = rng.integers(2)
        prop, prop2 = rng.uniform(0, 1, n), None
        prop2 = prop.copy(); prop2[0] = rng.uniform()
        (w, c), (w2, c2) = bw.compute(T, X, propensity=prop), bw.compute(T2, X2, propensity=prop2)
        assert c == c2 and (w <= c.weight_bound + 1e-12).all() and (w >= 0).all()
        o, own, S = weight_movement(w, w2)
        assert o <= c.others + 1e-9 and S <= c.total + 1e-9
        worst = max(worst, S / c.total)
    assert worst > 0.005         # not vacuous (entropy balancing reaches only ~1 % of its bound here: the bound is loose)

def test_certificates_monotone_in_public_inputs():
    assert ipw_known_certificate(0.1).total == pytest.approx(20.0)
    a, b = entropy_certificate(100, weight_cap=5, ridge=0.5), entropy_certificate(100, weight_cap=5, ridge=5.0)
    assert a.others > b.others
    assert mmd_certificate(100, weight_cap=5, ridge=1.0).others == pytest.approx(99 / 100 * 16 + 2e-6)
    assert ipw_estimated_certificate(10**4, 3, propensity_lam=1.0, propensity_clip=0.1).others < 2 * 9 * 1.0 + 1e-3
    assert WeightCertificate(1.0, 2.0, "x").total == 5.0

def test_bad_inputs():
    X = np.random.default_rng(0).uniform(-1, 1, (20, 2)); T = np.arange(20) % 2
    with pytest.raises(ValueError, match="binary"): BalancingWeights("mmd", x_bounds=(-1, 1)).compute(T + 2, X)
    with pytest.raises(ValueError, match="declare x_bounds"): BalancingWeights("entropy").compute(T, X)
    with pytest.raises(ValueError, match="not differentially private"):
        BalancingWeights("mmd", x_bounds=(-1, 1), bandwidth="median").compute(T, X)
    with pytest.raises(ValueError, match="propensity_clip"): BalancingWeights("ipw_known", propensity_clip=0.6).compute(T, X, propensity=0.5)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        _, c = BalancingWeights("entropy", allow_inferred_bounds=True).compute(T, X)
    assert c.others == np.inf and any(w.category is PrivacyLeakWarning for w in ws)
