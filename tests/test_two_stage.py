"""DP-2ERM estimator: exact reduction to erm's DPLogisticRegression for record-local weights (same seed, same release),
the objective's normalisation against scikit-learn, and the public-input checks."""
import numpy as np, pytest
from scipy import special
from sklearn.linear_model import LogisticRegression
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.erm import DPLogisticRegression
from dp_causal_nb.features import StandardizeToBounds
from dp_causal_nb.weights import BalancingWeights
from dp_causal_nb.two_stage import DP2ERMClassifier, CompositionBaselineClassifier

def data(n=300, seed=0):
    r = np.random.default_rng(seed); X = r.uniform(-1, 1, (n, 2)); T = (r.uniform(size=n) < 0.5).astype(int)
    y = (r.uniform(size=n) < special.expit(X[:, 0] - T)).astype(int); return X, T, y

@pytest.mark.parametrize("eps,delta", [(0.5, 1e-6), (1.0, 1e-5), (4.0, 1e-5), (np.inf, 0.0)])
@pytest.mark.parametrize("lam", [1e-4, 1e-2])
def test_reduction_to_erm_for_record_local_weights(eps, delta, lam):
    X, T, y = data()
    m = DP2ERMClassifier("ipw_known", epsilon=eps, delta=delta, lam=lam, x_bounds=(-1, 1), propensity_clip=0.5,
                         random_state=11, accountant=PrivacyAccountant()).fit(X, y, T=T, propensity=0.5)
    ref = DPLogisticRegression(epsilon=eps, delta=delta, lam=lam, x_bounds=(-1, 1), weight_bound=2.0, random_state=11,
                               accountant=PrivacyAccountant()).fit(X, y, sample_weight=np.full(len(y), 2.0))
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    assert m.lam_effective_ == pytest.approx(ref.lam_effective_)

@pytest.mark.parametrize("method", ["ipw_estimated", "entropy", "mmd"])
def test_normalisation_matches_sklearn(method):
    X, T, y = data(400, 1); kw = dict(x_bounds=(-1, 1), weight_cap=8.0, ridge=0.5, propensity_clip=0.1, n_components=20)
    m = DP2ERMClassifier(method, epsilon=np.inf, lam=1e-2, accountant=PrivacyAccountant(), **kw).fit(X, y, T=T)
    w, _ = BalancingWeights(method, **kw).compute(T, X); P = StandardizeToBounds((-1, 1)).transform(X)
    sk = LogisticRegression(C=1 / (400 * 1e-2), fit_intercept=False, tol=1e-12, max_iter=10_000).fit(P, y, sample_weight=w)
    np.testing.assert_allclose(m.coef_, sk.coef_.ravel(), rtol=1e-5, atol=1e-6)
    # a sum instead of a mean (or Λ instead of Λ/2) would not be stationary here
    g = P.T @ (w * (special.expit(P @ m.coef_) - y)) / 400 + 1e-2 * m.coef_
    assert np.linalg.norm(g) < 1e-9

def test_bad_inputs_and_budget():
    X, T, y = data()
    acc = PrivacyAccountant(1.0)
    declared = dict(epsilon=1.0, x_bounds=(-1, 1), accountant=acc)
    with pytest.raises(ValueError, match="declare x_bounds"):
        DP2ERMClassifier(epsilon=1.0, accountant=acc).fit(X, y, T=T)
    with pytest.raises(ValueError, match="binary"): DP2ERMClassifier(**declared).fit(X, y, T=T + 3)
    with pytest.raises(ValueError, match="labels"): DP2ERMClassifier(**declared).fit(X, y * 2, T=T)
    assert len(acc.ledger) == 0
    with pytest.raises(Exception, match="budget"): CompositionBaselineClassifier(epsilon=2.0, x_bounds=(-1, 1), accountant=acc).fit(X, y, T=T)
    assert len(acc.ledger) == 0

def test_pure_epsilon_is_refused_before_anything_is_charged():
    "Objective perturbation has no floating-point release at δ = 0 (notebook 04, Theorem 3): DP-2ERM says so, charges nothing."
    X, T, y = data()
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="needs delta > 0"):
        DP2ERMClassifier("ipw_known", epsilon=1.0, delta=0.0, x_bounds=(-1, 1), accountant=acc).fit(X, y, T=T,
                                                                                                     propensity=0.5)
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("cls", [DP2ERMClassifier, CompositionBaselineClassifier])
def test_no_default_budget(cls):
    "ε has no default: a fit without one is refused with the library's sentence, before the data are read or charged."
    X, T, y = data()
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match=rf"give a privacy budget: {cls.__name__}\(epsilon=\.\.\., delta=\.\.\.\)"):
        cls(x_bounds=(-1, 1), accountant=acc).fit(X, y, T=T)
    assert len(acc.ledger) == 0 and cls().epsilon is None

def test_composition_charges_once_before_any_noise():
    "The baseline's two releases are one spend on the caller's accountant, the sum of the two models' parts."
    X, T, y = data()
    acc = PrivacyAccountant()
    m = CompositionBaselineClassifier(epsilon=1.0, delta=1e-6, split=0.3, x_bounds=(-1, 1), accountant=acc,
                                      random_state=0).fit(X, y, T=T)
    assert len(acc.ledger) == 1 and acc.ledger[0].epsilon == m.epsilon_spent_ == 0.3 + (1 - 0.3)
    assert m.delta_spent_ == 1e-6
