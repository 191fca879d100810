"Contract tests for dp_causal_nb.learners: the API other modules (GES, DP-CATE, functional release) rely on."
import inspect
import numpy as np
import pytest
from dp_causal_nb.learners import (orthogonal_targets, orthogonal_weights, pseudo_outcomes, target_bounds,
                                   clip_nuisances, RLearner, DRLearner, WeightFunction)
from dp_causal_nb.datasets import dataset1


def test_signatures():
    assert list(inspect.signature(orthogonal_targets).parameters) == ["Y", "T", "pi", "mu0", "mu1", "m", "learner"]
    assert list(inspect.signature(target_bounds).parameters) == ["learner", "outcome_bounds", "propensity_clip"]
    assert set(target_bounds("r", (0, 1), 0.1)) == {"phi", "rho", "rho_phi", "tau"}


@pytest.mark.parametrize("learner", ["r", "dr"])
@pytest.mark.parametrize("yb,kappa", [((-1.0, 6.63), 0.05), ((0.0, 1.0), 0.3)])
def test_bounds_brute_force(learner, yb, kappa):
    v = np.linspace(*yb, 5); P = np.linspace(kappa, 1 - kappa, 21)
    Y, M0, M1, Pi, A = (g.ravel() for g in np.meshgrid(v, v, v, P, [0, 1], indexing="ij"))
    phi, rho = orthogonal_targets(Y, A, pi=Pi, mu0=M0, mu1=M1, learner=learner)
    tb = target_bounds(learner, yb, kappa)
    for key, val in (("phi", phi), ("rho", rho), ("rho_phi", rho * phi)):
        lo, hi = tb[key]
        assert val.min() >= lo - 1e-9 and val.max() <= hi + 1e-9
        assert np.isclose(val.min(), lo) and np.isclose(val.max(), hi)   # tight


def test_r_forms_agree_and_bad_inputs():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 2, 100); p = rng.uniform(0.1, 0.9, 100); y, m0, m1 = rng.normal(size=(3, 100))
    phi, rho = orthogonal_targets(y, A, pi=p, mu0=m0, mu1=m1, learner="r")
    np.testing.assert_allclose(phi, pseudo_outcomes(y, A, p, m=p * m1 + (1 - p) * m0, learner="r"))
    np.testing.assert_allclose(rho, orthogonal_weights(A, p, "r"))
    with pytest.raises(ValueError, match="pi"): orthogonal_weights(A, np.r_[p[:-1], 1.0], "dr")
    with pytest.raises(ValueError, match="binary"): orthogonal_weights(A + 1, p, "r")
    with pytest.raises(ValueError, match="propensity_clip"): target_bounds("dr", (0, 1), 0.5)
    with pytest.raises(ValueError, match="probabilities"): clip_nuisances(p * 2, propensity_clip=0.1)


def test_reference_learners_fit():
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import SplineTransformer
    from sklearn.pipeline import make_pipeline
    ds = dataset1(1500, random_state=0); q = ds.dgp.sample(500, random_state=1)
    for cls in (RLearner, DRLearner):
        est = cls(LogisticRegression(), make_pipeline(SplineTransformer(), Ridge(1e-3)),
                  make_pipeline(SplineTransformer(n_knots=6), Ridge(1e-3)), cv="split", random_state=0)
        pehe = np.sqrt(np.mean((est.fit(ds.Y, ds.T, X=ds.X).effect(q.X) - q.tau) ** 2))
        assert pehe < 0.5 * q.tau.std()


def test_clipping_is_silent_and_messages_quote_no_data():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # default: no data-dependent warning, however much is clipped
        nu = clip_nuisances(np.array([0.001, 0.002, 0.999]), mu0=np.array([-50.0, 3.0, 0.0]), outcome_bounds=(0, 1),
                            propensity_clip=0.05)
    np.testing.assert_array_equal(nu.pi, [0.05, 0.05, 0.95]); np.testing.assert_array_equal(nu.mu0, [0, 1, 0])
    with pytest.warns(UserWarning, match="curator-side") as rec:   # opt-in diagnostic: no count, no share, no value
        clip_nuisances(np.array([0.001, 0.002, 0.5]), propensity_clip=0.05, warn_fraction=0.2)
    assert "67" not in str(rec[0].message)
    for f in (lambda: clip_nuisances(np.array([-0.1234, 0.5]), propensity_clip=0.05),
              lambda: orthogonal_targets(np.zeros(3), [0, 1, 1], pi=[0.5, 0.75, 1.0], m=np.zeros(3)),
              lambda: orthogonal_weights([0, 1, 1], [0.0, 0.5, 0.0], "dr")):
        with pytest.raises(ValueError) as ei: f()
        assert not any(t in str(ei.value) for t in ("-0.1234", "0.75", "2 value", "1 value", "range ["))
