"Functional DP-CATE release (dp_causal_nb.functional): consistency, one GP path, budget, shareable release."
import math, pickle, warnings
import numpy as np
import pytest
from dp_causal_nb.core import BudgetError, PrivacyLeakWarning
from dp_causal_nb.rkhs import HuberLoss, AbsoluteLoss, gaussian_kernel, fit_kernel_regression
from dp_causal_nb.functional import (PrivateCATEFunction, SharedCATEFunction, private_kernel_function,
                                     release_cate_function, release_shareable_cate_function,
                                     release_shareable_function, functional_noise_scales)
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.datasets import dataset1

XB2 = (np.zeros(2), np.ones(2))

@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (30, 2)); y = np.cos(3 * X[:, 1]) + 0.1 * rng.standard_normal(30)
    kw = dict(bandwidth=0.4, lam=0.05, loss=HuberLoss(1.0), x_bounds=XB2, epsilon=1.0, delta=1e-5)
    return X, y, kw

@pytest.fixture(scope="module")
def fitted():
    ds = dataset1(400, random_state=1)
    kw = dict(final="kernel", learner="r", epsilon=2.0, delta=1e-5, x_bounds=ds.x_bounds, y_bounds=ds.y_bounds,
              propensity_clip=0.1, lam=0.05, bandwidth=0.4)
    return ds, kw

def test_same_point_same_answer(small):
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    Q = np.random.default_rng(1).uniform(0, 1, (6, 2))
    a = f(Q)
    assert np.array_equal(f(Q[::-1]), a[::-1])
    assert np.array_equal(f(np.vstack([Q[2:3]] * 4)), np.full(4, a[2]))
    assert f.n_points == 6
    # a point just next to an answered one is a new point (different value, still on the same path)
    b = f(Q[:1] + 1e-3)
    assert b[0] != a[0] and f.n_points == 7

def test_sequential_equals_batch(small):
    X, y, kw = small
    f0 = private_kernel_function(X, y, random_state=0, **kw)
    Q = np.random.default_rng(2).uniform(0, 1, (8, 2))
    fa = PrivateCATEFunction(f0._fit, f0.noise_scale, x_bounds=XB2, random_state=5)
    fb = PrivateCATEFunction(f0._fit, f0.noise_scale, x_bounds=XB2, random_state=5)
    seq = np.array([fb(Q[i:i + 1])[0] for i in range(len(Q))])
    np.testing.assert_allclose(fa(Q), seq, rtol=0, atol=1e-9 * f0.noise_scale)

def test_one_path_covariance(small):
    "Answers minus ĝ across fresh releases have covariance r²K: every entry within 5 standard errors."
    X, y, kw = small
    f0 = private_kernel_function(X, y, random_state=0, **kw)
    P = np.array([[0.2, 0.2], [0.25, 0.3], [0.7, 0.6], [0.9, 0.9]])
    g = f0._fit.predict(P); r = f0.noise_scale; N = 2000
    out = np.empty((N, len(P)))
    for i in range(N):   # half the points first, then the rest: tests the conditional draws
        fi = PrivateCATEFunction(f0._fit, r, x_bounds=XB2, random_state=10_000 + i)
        out[i, :2] = fi(P[:2]); out[i, 2:] = fi(P[2:])
    S = r ** 2 * gaussian_kernel(P, P, 0.4)
    se = np.sqrt((np.outer(np.diag(S), np.diag(S)) + S ** 2) / N)
    assert (np.abs(np.cov((out - g).T) - S) / se).max() < 5

def test_curator_repr_and_pickle_warning(small):
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    assert "NOT publishable" in repr(f)
    with pytest.warns(PrivacyLeakWarning): pickle.dumps(f)

def test_bad_inputs(small):
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    with pytest.raises(ValueError, match="X"): f(np.array([[1.2, 0.5]]))
    with pytest.raises(ValueError, match="bandwidth"): private_kernel_function(X, y, **(kw | dict(bandwidth=-1)))
    with pytest.raises(ValueError, match="lam"): private_kernel_function(X, y, **(kw | dict(lam=0)))
    with pytest.raises(ValueError, match="not Lipschitz"): private_kernel_function(X, y, **(kw | dict(loss="squared")))
    with pytest.raises(ValueError, match="noise must be one of"): private_kernel_function(X, y, noise="x", **kw)
    g = PrivateCATEFunction(f._fit, 1.0, x_bounds=XB2, max_points=5)
    with pytest.raises(RuntimeError, match="max_points"): g(np.random.default_rng(0).uniform(0, 1, (6, 2)))

def test_paper_mode_warns_when_below_strict():
    rng = np.random.default_rng(3); q = 8
    X = rng.uniform(0, 1, (10, q)); y = rng.uniform(-1, 1, 10)
    kw = dict(bandwidth=1.0, lam=1.0, loss=AbsoluteLoss(), x_bounds=(np.zeros(q), np.ones(q)), epsilon=1.0, delta=1e-5)
    with pytest.warns(PrivacyLeakWarning, match="NOT"):
        fp = private_kernel_function(X, y, noise="paper", **kw)
    fs = private_kernel_function(X, y, **kw)
    assert fs.noise_scale >= fp.noise_scale and fs.noise_scale >= fs.info["scales"]["hall"]

def test_release_from_dpcate(fitted):
    ds, kw = fitted
    est = DPCATE(random_state=0, **kw).fit(ds.Y, ds.A, X=ds.X)
    f = est.release_function(random_state=0)
    assert isinstance(f, PrivateCATEFunction) and "NOT publishable" in repr(f)
    Q = ds.dgp.sample(20, random_state=5).X
    assert np.array_equal(f(Q), f(Q))
    with pytest.raises(BudgetError): est.release_function()
    with pytest.raises(BudgetError): release_shareable_cate_function(est)


def test_same_kernel_and_lambda_numerically(fitted):
    "At ε=∞ the functional release IS the estimator's second stage (fresh fit per release); kernels agree."
    ds, kw = fitted
    Q = ds.dgp.sample(50, random_state=7).X
    kw = kw | dict(epsilon=np.inf, random_state=0)
    a = DPCATE(**kw).fit(ds.Y, ds.A, X=ds.X).effect(Q)
    b = DPCATE(**kw).fit(ds.Y, ds.A, X=ds.X).release_function()(Q)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)
    assert np.abs(a).max() > 0.5                       # a non-trivial function, so the comparison has teeth
    from dp_causal_nb import ges, rkhs
    Za, Zb = np.random.default_rng(0).uniform(0, 1, (25, 2)), np.random.default_rng(1).uniform(0, 1, (15, 2))
    h = kw["bandwidth"]
    np.testing.assert_allclose(ges.gaussian_kernel(Za, Zb, h), rkhs.gaussian_kernel(Za, Zb, h), rtol=1e-13, atol=0)
    assert np.abs(ges.gaussian_kernel(Za, Zb, h) - rkhs.gaussian_kernel(Za, Zb, 1.01 * h)).max() > 1e-3

def test_dpcate_neighbour_with_y_outside_bounds_within_sensitivity(fitted):
    "Replace one second-stage record by one with Y far outside y_bounds: ||f_D - f_D'||_H <= Δ on the real path."
    from dp_causal_nb.rkhs import rkhs_distance
    ds, kw = fitted
    kw = kw | dict(epsilon=1.0, random_state=0)
    est0 = DPCATE(**kw).fit(ds.Y, ds.A, X=ds.X)
    X2 = est0.stage2_["X"]
    j = int(np.flatnonzero((ds.X == X2[0]).all(1))[0])         # a record that lands in the second stage
    f0 = est0.release_function(random_state=0)
    D = f0.info["scales"]["sensitivity"]
    worst = 0.0
    for y_new, a_flip, x_new in [(1e3, True, ds.x_bounds[1]), (-1e3, False, ds.X[j]), (1e3, False, ds.x_bounds[0])]:
        Y1, A1, Xn = ds.Y.copy(), ds.A.copy(), ds.X.copy()
        Y1[j] = y_new; Xn[j] = x_new
        if a_flip: A1[j] = 1 - A1[j]
        est1 = DPCATE(**kw).fit(Y1, A1, X=Xn)
        # neighbours on the second stage only: the split and the nuisances are unchanged
        assert np.array_equal(np.delete(est1.stage2_["X"], 0, 0), np.delete(X2, 0, 0))
        f1 = est1.release_function(random_state=0)
        assert f1.info["scales"]["sensitivity"] == D
        worst = max(worst, rkhs_distance(f0._fit, f1._fit) / D)
    print(f"worst ||f_D - f_D'||_H / Δ = {worst:.4f}")
    assert 0 < worst <= 1.0

def test_release_rejects_ridge_final(fitted):
    ds, kw = fitted
    est = DPCATE(random_state=0, **(kw | dict(final="ridge"))).fit(ds.Y, ds.A, X=ds.X)
    with pytest.raises(ValueError, match="final='kernel'"): release_cate_function(est)

def test_shareable_release_contains_no_training_rows(fitted):
    ds, kw = fitted
    est = DPCATE(random_state=0, **kw).fit(ds.Y, ds.A, X=ds.X)
    sh = release_shareable_cate_function(est, n_features=100, random_state=0)
    assert isinstance(sh, SharedCATEFunction)
    blob = pickle.dumps(sh)
    for row in np.vstack([ds.X, est.stage2_["X"]]):
        assert row.tobytes() not in blob
    for v in np.concatenate([ds.Y, est.stage2_["phi"], est.stage2_["X"].ravel()]):
        assert np.float64(v).tobytes() not in blob
    # positive control: the same search finds the rows in the curator object's pickle
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = DPCATE(random_state=1, **kw).fit(ds.Y, ds.A, X=ds.X).release_function()
        cb = pickle.dumps(f)
    assert sum(row.tobytes() in cb for row in f._fit.X) == len(f._fit.X)
    # the published object answers any query in the domain
    out = sh(ds.dgp.sample(10, random_state=3).X)
    assert out.shape == (10,) and np.isfinite(out).all()
    sh2 = pickle.loads(blob)
    assert np.array_equal(sh2(ds.X[:5]), sh(ds.X[:5]))

def test_noise_scales_monotone():
    a = functional_noise_scales(0.5, 1e-6, sensitivity=1.0, sensitivity_paper=1.0)
    b = functional_noise_scales(2.0, 1e-6, sensitivity=1.0, sensitivity_paper=1.0)
    assert a["strict"] > b["strict"] > 0

def test_publish_grid_warns_on_training_inputs(small):
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    with pytest.warns(PrivacyLeakWarning, match="training inputs"):
        f.publish_grid(np.vstack([X[:2], [[0.5, 0.5]]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        f.publish_grid(np.array([[0.123456, 0.654321]]))          # a public grid: no warning
