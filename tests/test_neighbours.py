"""Invariant 4 across estimators: two neighbouring datasets give the same exceptions, warnings and attribute names;
only the noised values may differ. Each case is a neighbour pair (or a parameter change after fit) that reaches a
path where the data could otherwise show: a refused refit, set_params after fit, a failing user model, warnings from
threads, numpy's error policy, a copied secret generator."""
import warnings
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import BudgetError
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.datasets import dataset1
from dp_causal_nb.user_models import declare_private


def observe(make, Y, T, X):
    "Everything a user sees of one fit + release: the exception, the warnings, the public attribute names."
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            m = make().fit(Y, T, X=X); m.effect(X[:3]); err = None
        except Exception as e: m, err = None, (type(e).__name__, str(e))
    names = None if m is None else sorted(k for k in vars(m) if k.endswith("_") and not k.startswith("_"))
    return err, [(x.category.__name__, str(x.message)) for x in w], names


class WarnIfExtreme(ClassifierMixin, BaseEstimator):
    "A (declared-private) propensity model that warns when a covariate is extreme, as a solver would."
    def fit(self, X, y):
        if np.abs(X).max() > 0.999: warnings.warn("lbfgs failed to converge", RuntimeWarning)
        self.classes_ = np.array([0, 1]); self.p_ = float(np.clip(np.mean(y), 0.1, 0.9)); return self
    def predict_proba(self, X): return np.column_stack([np.full(len(X), 1 - self.p_), np.full(len(X), self.p_)])


@pytest.mark.parametrize("calibration", ["parameter", "global"])
def test_dpcate_nuisance_warnings_are_not_observable(calibration):
    ds = dataset1(400, random_state=0)
    X0 = np.clip(ds.X, 0.0, 0.99)
    pm = declare_private(WarnIfExtreme(), 0.5, 5e-6, source="test stub")
    make = lambda: DPCATE(calibration=calibration, final="ridge", epsilon=1.0, delta=1e-5, x_bounds=(0, 1),
                          outcome_bounds=ds.outcome_bounds, propensity_model=pm, accountant=PrivacyAccountant(), random_state=0)
    i = make().fit(ds.Y, ds.T, X=X0).split_[0][0]                            # a record of the nuisance half (public split)
    X1 = X0.copy(); X1[i, 0] = 1.0                                            # one covariate moved to the bound
    with pytest.warns(RuntimeWarning): WarnIfExtreme().fit(X1[make().fit(ds.Y, ds.T, X=X0).split_[0]], ds.T[:200])
    o0, o1 = observe(make, ds.Y, ds.T, X0), observe(make, ds.Y, ds.T, X1)
    assert o0 == o1 and o0[0] is None and o0[1] == [], (o0, o1)


def test_dpcate_clipped_outcome_is_not_observable():
    ds = dataset1(400, random_state=0)
    Y1 = ds.Y.copy(); Y1[0] = ds.outcome_bounds[1] + 100.0                         # one outcome far outside: clipped
    make = lambda: DPCATE(epsilon=1.0, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds, out_of_bounds="clip",
                          accountant=PrivacyAccountant(), random_state=0)
    o0, o1 = observe(make, ds.Y, ds.T, ds.X), observe(make, Y1, ds.T, ds.X)
    assert o0 == o1 and o0[0] is None, (o0, o1)


def test_refused_refit_leaves_the_release_unchanged():
    """A refit refused with BudgetError (after set_params(epsilon=np.inf), or other bounds) leaves the fitted state the
    old one: `fit` sets nothing before the budget check, and effect(Q) never returns the non-private second-stage
    predictions."""
    ds = dataset1(400, random_state=0)
    acc = PrivacyAccountant(1.0, 1e-5)
    est = DPCATE(calibration="global", epsilon=1.0, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds, out_of_bounds="clip",
                 accountant=acc, random_state=0).fit(ds.Y, ds.T, X=ds.X)
    before = {k: v for k, v in vars(est).items()}
    for change in (dict(epsilon=np.inf), dict(outcome_bounds=(-0.01, 0.01))):
        est.set_params(**change)
        with pytest.raises(BudgetError): est.fit(ds.Y, ds.T, X=ds.X)            # the budget is spent
        assert set(vars(est)) == set(before)
        for k, v in before.items():
            if k not in ("epsilon", "outcome_bounds"): assert vars(est)[k] is v, k   # the fitted state is the old one
    q = ds.X[:5]
    with pytest.raises(ValueError, match="changed since fit"): est.effect(q)   # parameters differ from the fit's
    est.set_params(epsilon=1.0, outcome_bounds=ds.outcome_bounds)
    out = est.effect(q)                                                       # the one private release, noised
    assert est.release_info_["sigma"] > 1.0 and not np.allclose(out, est.stage_.predict(q))


@pytest.mark.parametrize("final", ["ridge", "kernel"])
def test_set_params_after_fit_cannot_shrink_the_noise(final):
    """A release refuses parameters changed since fit: were it to read `self.lam` at release time, set_params(lam=1e9)
    after fit would cut σ from 108.5 to 3.9e-10 and effect() would return the non-private predictions."""
    ds = dataset1(400, random_state=0)
    est = DPCATE(final=final, calibration="global", epsilon=1.0, delta=1e-5, x_bounds=ds.x_bounds,
                 outcome_bounds=ds.outcome_bounds, accountant=PrivacyAccountant(), random_state=0).fit(ds.Y, ds.T, X=ds.X)
    est.set_params(lam=1e9)
    with pytest.raises(ValueError, match="changed since fit"): est.effect(ds.X[:5])
    assert not hasattr(est, "release_info_") and est._released is None
    est.set_params(lam=0.01)                                                # back to the fitted value: allowed
    out = est.effect(ds.X[:5])
    assert est.release_info_["sigma"] > 1.0 and not np.allclose(out, est.stage_.predict(ds.X[:5]))


@pytest.mark.parametrize("make_model", ["logistic", "tree"])
def test_dpcate_user_nuisance_failure_is_not_observable(make_model):
    """DPCATE is failure-agnostic like DPATE: a failing user model is replaced by a public constant and the charge is
    the same. Neighbours: with declare_private(LogisticRegression()) one without a treated record would raise 'needs
    samples of at least 2 classes' while the other releases; a tree would raise IndexError after the charge."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier
    rng = np.random.default_rng(0)
    n = 40; X = rng.uniform(0, 1, (n, 2)); Y = rng.uniform(-1, 1, n)
    A0 = np.zeros(n, int); A0[0] = 1; A1 = np.zeros(n, int)                 # D: one treated record; D': none
    base = LogisticRegression() if make_model == "logistic" else DecisionTreeClassifier(max_depth=2, random_state=0)
    pm = declare_private(base, 0.5, 5e-6, source="test (not actually private)")
    seen = set()
    for seed in range(6):
        make = lambda: DPCATE(epsilon=1.0, delta=1e-5, x_bounds=(0, 1), outcome_bounds=(-1, 1), propensity_model=pm,
                              accountant=PrivacyAccountant(), random_state=seed)
        o0, o1 = observe(make, Y, A0, X), observe(make, Y, A1, X)
        assert o0 == o1, (seed, o0, o1)
        seen.add(o0[0])
    assert seen == {None}


def test_dpcate_misconfigured_user_model_fails_on_public_data():
    "A configuration error surfaces before any charge, from public synthetic records (the same on every dataset)."
    from sklearn.linear_model import LogisticRegression
    ds = dataset1(200, random_state=0)
    acc = PrivacyAccountant()
    pm = declare_private(LogisticRegression(C=-1.0), 0.5, 5e-6, source="test")
    with pytest.raises(ValueError, match="public synthetic records"):
        DPCATE(epsilon=1.0, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds, propensity_model=pm,
               accountant=acc, random_state=0).fit(ds.Y, ds.T, X=ds.X)
    assert acc.ledger == []


def test_threaded_releases_emit_no_data_warnings():
    "Quiet sections in two threads must not re-enable each other's warnings (joblib threading backend)."
    from joblib import Parallel, delayed, parallel_backend
    from sklearn.base import RegressorMixin
    from dp_causal_nb.ate import DPATE

    class WarnIfLarge(RegressorMixin, BaseEstimator):
        def fit(self, X, y):
            if np.abs(X).max() > 10: warnings.warn("ill-conditioned fit", RuntimeWarning)
            self.m_ = float(np.mean(y)); return self
        def predict(self, X): return np.full(len(X), self.m_)
    rng = np.random.default_rng(0); n = 120
    X = rng.normal(size=(n, 2)); X1 = X.copy(); X1[0, 0] = 1e6; T = np.arange(n) % 2; Y = rng.uniform(-1, 1, n)
    for data in (X, X1):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with parallel_backend("threading", n_jobs=2):
                Parallel()(delayed(lambda: DPATE("aipw", n_folds=6, mu=1.0, outcome_bounds=(-1, 1), n_jobs=2,
                                                 outcome_model=WarnIfLarge(), accountant=PrivacyAccountant(),
                                                 random_state=0).fit(Y, T, X=data))() for _ in range(4))
        assert [str(x.message) for x in w] == [], [str(x.message) for x in w]


def test_numpy_error_policy_cannot_make_an_event():
    "Under np.seterr(all='raise') a kernel underflow must not raise on D (a far record) and not on D'."
    ds = dataset1(200, random_state=0)
    X0 = ds.X.copy(); X1 = ds.X.copy(); X1[:, 0] = np.where(np.arange(200) == 0, 1.0, X1[:, 0])
    make = lambda: DPCATE(final="kernel", bandwidth=0.01, epsilon=1.0, delta=1e-5, x_bounds=ds.x_bounds,
                          outcome_bounds=ds.outcome_bounds, accountant=PrivacyAccountant(), random_state=0)
    with np.errstate(all="raise"):
        o0, o1 = observe(make, ds.Y, ds.T, X0), observe(make, ds.Y, ds.T, X1)
    assert o0 == o1 and o0[0] is None, (o0, o1)


@pytest.mark.os_noise
def test_functional_noise_from_a_copied_generator_is_fresh():
    "One secret Generator given to two workers (a deep copy) must not make their functional releases' noise cancel."
    import copy
    from dp_causal_nb.functional import release_shareable_function
    from dp_causal_nb.rkhs import AbsoluteLoss
    rng = np.random.default_rng(1); X = rng.uniform(0, 1, (40, 1)); phi = rng.uniform(-1, 1, 40)
    kw = dict(bandwidth=0.4, lam=0.05, x_bounds=(0, 1), epsilon=1.0, delta=1e-5, loss=AbsoluteLoss(), n_components=20)
    g = np.random.default_rng(5); twin = copy.deepcopy(g)
    a = release_shareable_function(X, phi, random_state=g, accountant=PrivacyAccountant(), **kw).coef
    b = release_shareable_function(X, phi, random_state=twin, accountant=PrivacyAccountant(), **kw).coef
    assert not np.allclose(a, b)
