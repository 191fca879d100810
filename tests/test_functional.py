"Functional DP-CATE release (dp_causal_nb.functional): consistency, one GP path, budget, shareable release."
import copy, dataclasses, math, os, pickle, warnings
import numpy as np
import pytest
from dp_causal_nb.core import BudgetError, PrivacyLeakWarning
from dp_causal_nb.accounting import PrivacyAccountant, GDPAccountant, default_accountant, set_default_accountant
from dp_causal_nb.rkhs import (HuberLoss, AbsoluteLoss, SquaredLoss, gaussian_kernel, fit_kernel_regression,
                               squared_loss_bound, solver_gap, rkhs_distance)
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
    kw = dict(final="kernel", learner="r", epsilon=2.0, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
              out_of_bounds="clip",   # the neighbour tests below put a record far outside the declared ranges
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
    """Points asked one at a time build the same path factor as one batch (the Cholesky factor is unique), and the
    answers are a·L·w with the released whitened values w either way (notebook 10, items 4 and 8)."""
    X, y, kw = small
    f0 = private_kernel_function(X, y, random_state=0, **kw)
    Q = np.random.default_rng(2).uniform(0, 1, (8, 2))
    fa = PrivateCATEFunction(f0._fit, f0.noise_scale, x_bounds=XB2, random_state=5)
    fb = PrivateCATEFunction(f0._fit, f0.noise_scale, x_bounds=XB2, random_state=5)
    batch = fa(Q)
    seq = np.array([fb(Q[i:i + 1])[0] for i in range(len(Q))])
    np.testing.assert_allclose(fa._L[:8, :8], fb._L[:8, :8], rtol=0, atol=1e-9)
    for f, ans in ((fa, batch), (fb, seq)):
        np.testing.assert_allclose(np.exp(f._log_amp) * f._L[:8, :8] @ f._w[:8], ans, rtol=1e-12, atol=1e-12)

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

def test_curator_repr_and_copies_refused(small):
    "A curator's function is not publishable and refuses copies: a copy would answer new points with the same noise."
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    assert "NOT publishable" in repr(f)
    f(X[:3])
    for copier in (pickle.dumps, copy.deepcopy, copy.copy):
        with pytest.raises(TypeError, match="cannot be pickled or copied"): copier(f)

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
    fs = private_kernel_function(X, y, noise="strict", **kw)
    assert fs.noise_scale >= fp.noise_scale and fs.noise_scale >= fs.info["scales"]["hall"]

def test_release_from_dpcate(fitted):
    ds, kw = fitted
    est = DPCATE(random_state=0, **kw).fit(ds.Y, ds.T, X=ds.X)
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
    a = DPCATE(**kw).fit(ds.Y, ds.T, X=ds.X).effect(Q)
    b = DPCATE(**kw).fit(ds.Y, ds.T, X=ds.X).release_function()(Q)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-10)
    assert np.abs(a).max() > 0.5                       # a non-trivial function, so the comparison has teeth
    from dp_causal_nb import cate, rkhs, features, second_stage
    assert cate.gaussian_kernel is rkhs.gaussian_kernel is features.gaussian_kernel is second_stage.gaussian_kernel
    Za, Zb = np.random.default_rng(0).uniform(0, 1, (25, 2)), np.random.default_rng(1).uniform(0, 1, (15, 2))
    h = kw["bandwidth"]
    assert np.abs(features.gaussian_kernel(Za, Zb, h) - features.gaussian_kernel(Za, Zb, 1.01 * h)).max() > 1e-3

def test_dpcate_neighbour_with_y_outside_bounds_within_sensitivity(fitted):
    "Replace one second-stage record by one with Y far outside outcome_bounds: ||f_D - f_D'||_H <= Δ on the real path."
    from dp_causal_nb.rkhs import rkhs_distance
    ds, kw = fitted
    kw = kw | dict(epsilon=1.0, random_state=0)
    est0 = DPCATE(**kw).fit(ds.Y, ds.T, X=ds.X)
    X2 = est0.stage2_["X"]
    j = int(np.flatnonzero((ds.X == X2[0]).all(1))[0])         # a record that lands in the second stage
    f0 = est0.release_function(random_state=0)
    D = f0.info["scales"]["sensitivity"]
    worst = 0.0
    for y_new, a_flip, x_new in [(1e3, True, ds.x_bounds[1]), (-1e3, False, ds.X[j]), (1e3, False, ds.x_bounds[0])]:
        Y1, A1, Xn = ds.Y.copy(), ds.T.copy(), ds.X.copy()
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
    est = DPCATE(random_state=0, **(kw | dict(final="ridge"))).fit(ds.Y, ds.T, X=ds.X)
    with pytest.raises(ValueError, match="final='kernel'"): release_cate_function(est)

def test_shareable_release_contains_no_training_rows(fitted):
    ds, kw = fitted
    est = DPCATE(random_state=0, **kw).fit(ds.Y, ds.T, X=ds.X)
    sh = release_shareable_cate_function(est, n_components=100, random_state=0)
    assert isinstance(sh, SharedCATEFunction)
    blob = pickle.dumps(sh)
    for row in np.vstack([ds.X, est.stage2_["X"]]):
        assert row.tobytes() not in blob
    for v in np.concatenate([ds.Y, est.stage2_["phi"], est.stage2_["X"].ravel()]):
        assert np.float64(v).tobytes() not in blob
    # positive control: the same search finds the rows in the curator object's pickle
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = DPCATE(random_state=1, **kw).fit(ds.Y, ds.T, X=ds.X).release_function()
        cb = pickle.dumps(f._fit)            # the curator's fitted regression (the function itself refuses pickling)
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

def test_publish_grid_membership_warning_is_opt_in(small):
    "The membership check is off by default and, when opted in, names no count."
    X, y, kw = small
    f = private_kernel_function(X, y, random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.publish_grid(np.vstack([X[:2], [[0.5, 0.5]]]))           # default: no warning (it would be a membership oracle)
    g = private_kernel_function(X, y, random_state=0, warn_training_queries=True, **kw)
    with pytest.warns(PrivacyLeakWarning, match="training inputs") as rec:
        g.publish_grid(np.vstack([X[:2], [[0.5, 0.5]]]))
    assert not any(ch.isdigit() for ch in str(rec[0].message))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        g.publish_grid(np.array([[0.123456, 0.654321]]))          # a public grid: no warning


# ---------------------------------------------------------------------------------------------------------------------
# Neighbours behave identically apart from the noise; published objects hold no un-noised data-dependent number; the
# solver's accuracy is part of the mechanism; every standalone release charges an accountant.

def _same(a, b) -> bool:
    if isinstance(a, dict): return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)): return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray): return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    return type(a) is type(b) and a == b

def _assert_same_published(o1, o2, noised):
    assert type(o1) is type(o2) and dataclasses.is_dataclass(o1)
    names = {f.name for f in dataclasses.fields(o1)}
    assert noised <= names
    for name in sorted(names - noised):
        assert _same(getattr(o1, name), getattr(o2, name)), f"published field {name!r} differs between neighbours"

def _hard_pair():
    "A neighbouring pair (n=50, q=1) on which a solver check at a fixed 1e-10 gap raises on D (gap 3.4e-9), not on D'."
    r0 = np.random.default_rng(0); X = r0.uniform(0, 1, (50, 1)); y = r0.uniform(-1, 1, 50)
    X2, y2 = X.copy(), y.copy(); X2[0], y2[0] = r0.uniform(0, 1, 1), r0.uniform(-1, 1)
    return (X2, y2), (X, y)

PAIR_KW = dict(bandwidth=0.4, lam=1e-3, x_bounds=(np.zeros(1), np.ones(1)), epsilon=1.0, delta=1e-5)
LOSSES = [AbsoluteLoss(), HuberLoss(0.5), SquaredLoss(squared_loss_bound(1.0, lam=1e-3, bandwidth=0.4, q=1))]

@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_hard_pair_releases_identically_apart_from_noise(loss):
    "D and D' both release, with no exception and no warning; every published field except the noised values is equal."
    grid = np.linspace(0, 1, 7)[:, None]
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for X, y in _hard_pair():
            f = private_kernel_function(X, y, loss=loss, random_state=1, **PAIR_KW)
            out.append((f, f.publish_grid(grid), release_shareable_function(X, y, loss=loss, n_components=30,
                                                                            random_state=2, **PAIR_KW)))
    (f1, grid1, s1), (f2, grid2, s2) = out
    assert _same(f1.info, f2.info) and f1.noise_scale == f2.noise_scale
    _assert_same_published(grid1, grid2, noised={"values"})
    _assert_same_published(s1, s2, noised={"coef"})
    assert "solver_gap" not in grid1.info and "solver_gap" not in s1.info
    assert f1.info["solver_inflation"] > 0 and s1.info["solver_inflation"] == f1.info["solver_inflation"]
    for f, (X, y) in zip((f1, f2), _hard_pair()):          # the fits are certified: within the public τ
        assert solver_gap(f._fit, y) <= f._fit.solver_tol and f._fit.solver_info["method"] != "a-priori"

def test_published_field_comparison_has_teeth():
    "A data-dependent number in info (the old solver_gap) is caught by the same comparison."
    (X1, y1), (X2, y2) = _hard_pair()
    p = [private_kernel_function(X, y, loss=AbsoluteLoss(), random_state=0, **PAIR_KW) for X, y in ((X1, y1), (X2, y2))]
    pub = [f.publish_grid(np.array([[0.5]])) for f in p]
    bad = [dataclasses.replace(q, info=q.info | dict(solver_gap=solver_gap(f._fit, y)))
           for q, f, y in zip(pub, p, (y1, y2))]
    with pytest.raises(AssertionError, match="info"): _assert_same_published(*bad, noised={"values"})

def test_dpcate_neighbours_publish_identical_fields(fitted):
    "The DPCATE path (squared loss, R-learner weights): replace one record, compare the shareable releases field by field."
    ds, kw = fitted
    kw = kw | dict(random_state=0)
    est0 = DPCATE(**kw).fit(ds.Y, ds.T, X=ds.X)
    j = int(np.flatnonzero((ds.X == est0.stage2_["X"][0]).all(1))[0])    # a record of the second stage
    Y1, X1 = ds.Y.copy(), ds.X.copy(); Y1[j], X1[j] = ds.outcome_bounds[1], ds.x_bounds[0]
    est1 = DPCATE(**kw).fit(Y1, ds.T, X=X1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s0 = release_shareable_cate_function(est0, n_components=50, random_state=3)
        s1 = release_shareable_cate_function(est1, n_components=50, random_state=3)
    _assert_same_published(s0, s1, noised={"coef"})
    f0 = DPCATE(**kw).fit(ds.Y, ds.T, X=ds.X).release_function(random_state=4)
    f1 = DPCATE(**kw).fit(Y1, ds.T, X=X1).release_function(random_state=4)
    lo, hi = (np.asarray(b, float) for b in ds.x_bounds)
    grid = lo + (hi - lo) * np.linspace(0.1, 0.9, 5)[:, None]              # a public grid
    _assert_same_published(f0.publish_grid(grid), f1.publish_grid(grid), noised={"values"})
    assert _same(f0.info, f1.info)

def test_solver_certifies_hard_fits_on_any_cpu():
    "Ill-conditioned absolute/Huber fits (q=1, small λ, duplicates, huge targets): certified within τ, never a count exit."
    rng = np.random.default_rng(5)
    for trial in range(6):
        n = 60; X = rng.uniform(0, 1, (n, 1)); X[40:] = X[:20]; y = rng.uniform(-1, 1, n)
        if trial % 2: y[:2] = [1e9, -1e300]
        for loss in (AbsoluteLoss(), HuberLoss(0.1)):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                f = fit_kernel_regression(X, y, bandwidth=0.35, lam=10 ** -(3 + trial % 3), loss=loss)
            info = f.solver_info
            assert info["method"] in ("direct", "newton", "fista", "polish", "certified")
            assert info["gap_over_tol"] + info["err_over_tol"] <= 1
            assert info["err_over_tol"] < 1e-3                          # the rounding floor is far below τ

def test_standalone_releases_charge_before_noise(small):
    X, y, kw = small
    acc = PrivacyAccountant(0.5, 1e-5)
    for rel in (private_kernel_function, release_shareable_function):
        g = np.random.default_rng(0); state = copy.deepcopy(g.bit_generator.state)
        with pytest.raises(BudgetError): rel(X, y, accountant=acc, random_state=g, **kw)
        assert g.bit_generator.state == state and acc.ledger == []
    old = set_default_accountant(PrivacyAccountant(1.5, 1e-4))
    try:
        private_kernel_function(X, y, random_state=1, **kw)
        assert len(default_accountant().ledger) == 1
        g = np.random.default_rng(0); state = copy.deepcopy(g.bit_generator.state)
        with pytest.raises(BudgetError): release_shareable_function(X, y, random_state=g, **kw)
        assert g.bit_generator.state == state and len(default_accountant().ledger) == 1
    finally:
        set_default_accountant(old)
    gdp = GDPAccountant()
    f = private_kernel_function(X, y, accountant=gdp, random_state=0, **kw)
    assert gdp.spent == pytest.approx(f.info["scales"]["sensitivity"] / f.noise_scale, rel=1e-12)

def test_training_inputs_outside_domain_are_clipped_not_refused(small):
    "No data-dependent error: an out-of-domain training input is clipped (Lemma 1 holds for any x)."
    X, y, kw = small
    Xo = X.copy(); Xo[0] = [5.0, -2.0]; Xc = X.copy(); Xc[0] = [1.0, 0.0]
    Q = np.random.default_rng(3).uniform(0, 1, (4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = private_kernel_function(Xo, y, random_state=7, **kw)(Q)
    assert np.array_equal(a, private_kernel_function(Xc, y, random_state=7, **kw)(Q))
    w = np.full(len(y), 2.0)                                      # weights above rho_max are clipped, not refused
    b = release_shareable_function(X, y, weights=w, random_state=1, **kw)
    c = release_shareable_function(X, y, weights=np.ones(len(y)), random_state=1, **kw)
    assert np.array_equal(b.coef, c.coef)

def test_squared_loss_out_of_range_data_is_not_an_event():
    "The squared loss is extended linearly beyond its range: data violating B fit without error (= Huber_B at λ/2)."
    rng = np.random.default_rng(0); X = rng.uniform(0, 1, (40, 2)); y = 50 * rng.standard_normal(40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fs = fit_kernel_regression(X, y, bandwidth=0.4, lam=0.01, loss=SquaredLoss(0.5))
    fh = fit_kernel_regression(X, y, bandwidth=0.4, lam=0.005, loss=HuberLoss(0.5))
    assert rkhs_distance(fs, fh) <= fs.solver_error + fh.solver_error

def test_messages_name_no_private_value():
    "check_stage2_records names the violated bound only; no value or count of the data."
    from dp_causal_nb.functional import stage2_constants, check_stage2_records
    c = stage2_constants("dr", (-1.0, 1.0), 0.1, lam=0.05, bandwidth=0.4, q=2)
    with pytest.raises(ValueError) as e: check_stage2_records(np.array([123.456, 0.5, 789.25]), np.ones(3), c)
    msg = str(e.value)
    assert "phi" in msg and not any(t in msg for t in ("123", "456", "789", " 2 ", "two"))


def test_save_load_roundtrip_and_refusals(fitted, tmp_path):
    "Releases are shared as .npz + JSON: a crafted file cannot run code, a tampered one is refused."
    ds, kw = fitted
    est = DPCATE(random_state=0, **kw).fit(ds.Y, ds.T, X=ds.X)
    sh = release_shareable_cate_function(est, n_components=50, random_state=0)
    p = sh.save(tmp_path / "f")
    sh2 = SharedCATEFunction.load(p)
    assert np.array_equal(sh2(ds.X[:7]), sh(ds.X[:7])) and sh2.info == sh.info
    with open(p, "rb") as fh: raw = fh.read()
    assert all(row.tobytes() not in raw for row in est.stage2_["X"])      # no training row in the file

    class Boom:
        def __reduce__(self): return (os.system, (f"touch {tmp_path / 'pwned'}",))
    with open(tmp_path / "evil.npz", "wb") as fh: pickle.dump(Boom(), fh)
    with pytest.raises(ValueError, match="not a readable release"): SharedCATEFunction.load(tmp_path / "evil.npz")
    np.savez(tmp_path / "evil2.npz", omega=np.array([Boom()], dtype=object))
    with pytest.raises(ValueError): SharedCATEFunction.load(tmp_path / "evil2.npz")
    assert not (tmp_path / "pwned").exists()
    with np.load(p) as z: arrays = {k: z[k] for k in z.files}
    arrays["omega"] = arrays["omega"][:, :1]                                # tampered: wrong shape
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(ValueError, match="inconsistent"): SharedCATEFunction.load(tmp_path / "tampered.npz")
