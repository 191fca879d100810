"""Privacy audit of the sampling statistics behind DPCATE's intervals (`cate.release_statistics`).

The release adds one Gaussian to k bounded means (records in [0, wⱼ], replace-one sensitivity wⱼ/n each) at
VARIANCE_SHARE·(ε, δ). The audited pair moves every mean by its full sensitivity at once, the worst case the
calibration allows (l2 distance √k in the release's units). The audit at the library's σ must hold. The control,
whose noise is calibrated as if each mean had half its sensitivity, must be caught. Then the estimator's own
statistics: replacing one second-stage record never moves them by more than wⱼ/n.
"""
import math, warnings
import numpy as np
import pytest
from dp_causal_nb.cate import DPCATE, release_statistics, VARIANCE_SHARE
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.datasets import dataset1

EPS, DELTA, N = 10.0, 1e-4, 500    # the statistics then run at (1.0, 1e-5): an audit has power there


def _mechanism(widths, n, shrink=1.0):
    "release_statistics on the pair (data 0: all means 0; data 1: every mean moved by its sensitivity wⱼ/n)."
    w = np.asarray(widths, dtype=float)
    def mech(data, size, rng):
        values = np.zeros(len(w)) if data == 0 else w / n
        out, _ = release_statistics(values, w * shrink, n, EPS, DELTA, None, size=size)
        return out.reshape(size, len(w))
    return mech


@pytest.mark.parametrize("widths", [[4.0], [4.0, 0.6]])
def test_statistics_release_tight_pair(widths):
    stat = lambda z: np.asarray(z) @ (1 / np.asarray(widths))        # the likelihood-ratio direction (whitened)
    eps_claim, dlt_claim = VARIANCE_SHARE * EPS, VARIANCE_SHARE * DELTA
    res = audit_mechanism(_mechanism(widths, N), 0, 1, n_runs=200_000, delta=dlt_claim, statistic=stat,
                          random_state=3)
    assert not res.violates(eps_claim), res
    bad = audit_mechanism(_mechanism(widths, N, shrink=0.25), 0, 1, n_runs=200_000, delta=dlt_claim, statistic=stat,
                          random_state=3)
    assert bad.violates(eps_claim), bad
    print(f"k={len(widths)}: ε lower bound {res.epsilon_lower:.3f} (claimed {eps_claim:g}); "
          f"control (noise for a quarter of the sensitivity) {bad.epsilon_lower:.3f}")


@pytest.mark.parametrize("final", ["auto", "ridge"])
def test_estimator_statistics_move_within_sensitivity(final, monkeypatch):
    """The fitted estimator's statistics, recomputed with one second-stage record replaced by extreme records (the
    released θ̃ held fixed, as the adaptive composition conditions on it), move by at most wⱼ/n."""
    from dp_causal_nb import cate
    ds = dataset1(1200, random_state=0)
    seen = []
    real = cate.release_statistics
    def spy(values, widths, n, *a, **k):
        seen.append((np.asarray(values, float), np.asarray(widths, float), n))
        return real(values, widths, n, *a, **k)
    monkeypatch.setattr(cate, "release_statistics", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPCATE(final=final, epsilon=EPS, delta=DELTA, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
                     accountant=PrivacyAccountant(), random_state=0).fit(ds.Y, ds.T, X=ds.X)
    v0, w, n = seen[-1]
    i2 = est.split_[1]
    X2, A2, Y2 = ds.X[i2].copy(), ds.T[i2].astype(float), ds.Y[i2].copy()
    lo_y, hi_y = ds.outcome_bounds
    worst = 0.0
    for x, a, y in [(ds.x_bounds[0], 1.0, hi_y), (ds.x_bounds[1], 0.0, hi_y), (ds.x_bounds[0], 0.0, lo_y),
                    (ds.x_bounds[1], 1.0, lo_y), (ds.x_bounds[1], 1.0, hi_y)]:
        Xn, An, Yn = X2.copy(), A2.copy(), Y2.copy()
        Xn[0], An[0], Yn[0] = x, a, y
        pi2, (m0, m1) = est.propensity(Xn), est.outcome(Xn)
        phi, rho = cate.orthogonal_targets(Yn, An, pi=pi2, mu0=m0, mu1=m1, learner=est.learner)
        seen.clear()
        cate._final_strategy(est.final_).sampling(est, Xn, phi, rho, dict(Y=Yn, A=An, pi=pi2, mu0=m0, mu1=m1))
        v1 = seen[-1][0]
        worst = max(worst, float(np.max(np.abs(v1 - v0) / (w / n))))
    print(f"{final}: largest observed move / sensitivity = {worst:.3f}")
    assert worst <= 1.0 + 1e-9
