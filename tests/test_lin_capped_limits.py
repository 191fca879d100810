"""Limits of the capped private regression adjustment (notebook 10c) and of DPATE's routes to it (notebook 11), each
shown on a small reproducible case, and what the library does about them.

- Small trials: the slope is released from a Gram matrix that holds T and Y, so it depends on the assignment, and
  the adjusted difference in means has the O(1/n) bias of the regression estimator (Freedman 2008). On a trial whose
  effect sits on one high-leverage record the adjustment stays biased (its estimate is 0 at ε = ∞ for every
  assignment, notebook 10c); `prefers_lin` asks for n − d − 2 ≥ 30 at every ε, so DPATE's default release of such
  a small trial is the difference in means, unbiased (`test_lin_is_unbiased_over_the_assignments_of_a_trial`,
  `test_small_trial_default_release_is_unbiased`; with one record carrying the whole effect no interval covers well).
- Few residual degrees of freedom: 'lin' (asked for by name: the rule no longer picks it there) uses a t quantile on
  Satterthwaite's degrees of freedom, which covers where the normal quantile did not
  (`test_lin_interval_covers_with_few_residual_degrees_of_freedom`).
- The whole-release audit's pair (every covariate at the box centre) moves the second stage by about 0.85 of the
  b − a + 2w it is calibrated to; the audit of the second stage alone (tests/test_audit_lin.py) uses a pair that
  attains b − a + 2w, and catches a second stage calibrated to b − a
  (`test_second_stage_audit_pair_moves_the_sums_by_their_sensitivity`).
- The capped slope's widened range holds every adjusted outcome of records at the corners of the declared box
  (per-column bounds, cap binding or not), without the guard clip; replace-one neighbours on the capped release's
  edges look alike."""
import itertools, warnings
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE, prefers_lin
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.dim import dim_statistics
from dp_causal_nb.lin import (GRAM_SENSITIVITY, LIN_CAP, adjusted_range, capped_coefficients, gram_coefficients,
                              gram_statistics, lin_features)
from dp_causal_nb.secure_noise import grid_release, noise_rng, plan_gaussian


def _leverage_population(n, k):
    "k units at x = 1 (the only ones the treatment moves, by 1), n − k at x = −1: a legal trial with [0, 1] outcomes."
    x = -np.ones(n)
    x[:k] = 1.0
    y0, y1 = np.zeros(n), np.zeros(n)
    y1[:k] = 1.0
    return x, y0, y1


def _fit(Y, T, x, eps, s=0, estimator="auto"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPATE(estimator, randomized=True, epsilon=eps, delta=1e-6, outcome_bounds=(0, 1), x_bounds=(-1, 1),
                     accountant=PrivacyAccountant(), random_state=s).fit(Y, T, X=x[:, None])


def test_lin_is_unbiased_over_the_assignments_of_a_trial():
    """Over all 70 assignments of 4 of 8 units (complete randomisation), DPATE(randomized=True)'s mean estimate is the
    ATE 0.125. The regression adjustment asked for by name returns 0 for every assignment (the pooled slope absorbs
    the one unit the treatment moves: the bias notebook 10c states), so the default is the difference in means here
    (`prefers_lin`: 5 residual degrees of freedom, fewer than 30)."""
    x, y0, y1 = _leverage_population(8, 1)
    est, lin = [], []
    for tr in itertools.combinations(range(8), 4):
        T = np.zeros(8, int)
        T[list(tr)] = 1
        m = _fit(np.where(T == 1, y1, y0), T, x, np.inf)
        est.append(m.ate_)
        lin.append(_fit(np.where(T == 1, y1, y0), T, x, np.inf, estimator="lin").ate_)
    assert m.estimator_ == "dim" and not prefers_lin(8, 1, np.inf)
    assert np.mean(est) == pytest.approx(0.125, abs=0.01), f"mean over the assignments {np.mean(est):.4f}"
    assert np.allclose(lin, 0.0, atol=1e-12)


def test_small_trial_default_release_is_unbiased():
    """A private release (ε = 1000, n = 20, d = 1) of the same kind of trial: over 400 assignments the mean estimate is
    within 0.005 of the ATE 0.05. The regression adjustment has a mean of about 0.033 there (bias −0.017, a third of
    the effect): `prefers_lin` needs 30 residual degrees of freedom at every ε (n·ε/(d + 1)² = 5000 alone would pick
    it), so the release is the difference in means (mean 0.049). Coverage is not asserted: with one record carrying
    the whole effect no normal-approximation interval holds at n = 20. The difference in means covers about 54 %
    (when that record lands in the control arm every outcome is 0, and so is the variance estimate), the adjustment
    about 85 %."""
    x, y0, y1 = _leverage_population(20, 1)
    r = np.random.default_rng(1)
    est = []
    assert not prefers_lin(20, 1, 1000.0) and 20 * 1000.0 / 4 >= 500
    with reproducible_noise():
        for s in range(400):
            T = np.zeros(20, int)
            T[r.permutation(20)[:10]] = 1
            m = _fit(np.where(T == 1, y1, y0), T, x, 1000.0, s)
            est.append(m.ate_)
    assert m.estimator_ == "dim"
    assert abs(np.mean(est) - 0.05) < 0.005, f"mean {np.mean(est):.4f}"


def test_lin_interval_covers_with_few_residual_degrees_of_freedom():
    """ε = ∞, n = 13, d = 10 (n − p = 1): DPATE's 'lin' (asked for by name; 'auto' picks 'dim' below 30 residual
    degrees of freedom) covers the effect 0.1 in at least 85 % of 300 trials: about 92 % with the t quantile (12.7 for
    one degree of freedom), 62 % with the normal quantile 1.96."""
    r = np.random.default_rng(2)
    hits = []
    for s in range(300):
        X = r.uniform(-1, 1, (13, 10))
        T = np.zeros(13, int)
        T[r.permutation(13)[:6]] = 1
        Y = np.clip(0.8 * X[:, 0] + 0.1 * T + 0.1 * r.normal(size=13), -1, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPATE("lin", randomized=True, epsilon=np.inf, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                      accountant=PrivacyAccountant()).fit(Y, T, X=X)
        hits.append(m.conf_int_[0] <= 0.1 <= m.conf_int_[1])
    assert m.estimator_ == "lin" and not prefers_lin(13, 10, np.inf)
    assert np.mean(hits) >= 0.85, f"coverage {np.mean(hits):.3f}"


def _whole_pair_share(draws=2000):
    "Mean share of b − a + 2w by which the whole-release audit's pair moves the second stage, over first-stage draws."
    from test_audit_lin import SIGMAS, K, OB, _base
    Y, T, X = _base()
    X[:], Y[0] = 0.0, 1.0
    T1 = T.copy()
    T[0], T1[0] = 1, 0
    g0 = gram_statistics(lin_features(X, T, (-1, 1)), Y)
    p1 = plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY, K)
    with reproducible_noise():
        gs = grid_release(g0, p1, noise_rng(0, "audit pair"), size=draws)
    ratio = []
    for g in gs:
        rb = adjusted_range(OB, capped_coefficients(gram_coefficients(g, 4, p1.sd), LIN_CAP))
        s0, s1 = (dim_statistics(Y, t, rb) for t in (T, T1))
        ratio.append(np.linalg.norm(s0 - s1) / (rb[1] - rb[0]))
    return float(np.mean(ratio))


def test_second_stage_audit_pair_moves_the_sums_by_their_sensitivity():
    """The whole-release audit's pair (tests/test_audit_lin.py::whole_pair: covariates at the box centre, record 0 at
    y = 1 switching arms) moves the second stage's sums by only about 0.85 of the b − a + 2w they are calibrated to
    (a centred record's adjusted outcome is its outcome, never b + w), so a second stage calibrated to b − a would
    lose little more than the claim there. The pair of the second stage's own audit (test_audit_lin.py::
    second_stage_pair: the slope fixed where the cap binds, record 0 at the brute force's worst corners) moves them by
    exactly b − a + 2w, which is wider than b − a by 1 + 2κ."""
    from test_audit_lin import OB, second_stage_pair
    assert 0.8 < _whole_pair_share() < 0.9
    D0, D1, rb = second_stage_pair()
    s0, s1 = (dim_statistics(*D, rb) for D in (D0, D1))
    assert np.linalg.norm(s0 - s1) == pytest.approx(rb[1] - rb[0], rel=1e-9)
    assert rb[1] - rb[0] == pytest.approx((1 + 2 * LIN_CAP) * (OB[1] - OB[0]), rel=1e-12)


@pytest.mark.parametrize("cap", [LIN_CAP, np.inf])
def test_widened_range_holds_every_corner_record(cap):
    "Records at every corner of a per-column box, outcomes at the bounds: raw adjusted outcomes stay in [a − w, b + w]."
    r = np.random.default_rng(3)
    lo, hi = np.array([-1.0, 0.0, 3.0]), np.array([2.0, 1e-3, 1e6])
    corners = np.array(list(itertools.product(*zip(lo, hi))))
    for _ in range(200):
        beta = capped_coefficients(r.standard_cauchy(5) * 10 ** r.uniform(-3, 3), cap)
        ob = (-7.3, 11.9)
        rb = adjusted_range(ob, beta)
        for t, y in itertools.product((0, 1), ob):
            Z = lin_features(corners, np.full(len(corners), t), (lo, hi))
            raw = y - (ob[1] - ob[0]) / 2 * (Z[:, :3] @ beta[:3])
            assert np.all(raw >= rb[0] - 1e-9 * (rb[1] - rb[0])) and np.all(raw <= rb[1] + 1e-9 * (rb[1] - rb[0]))
        if np.isfinite(cap):
            assert rb[1] - rb[0] <= (1 + 2 * cap) * (ob[1] - ob[0]) * (1 + 1e-12)


# --- invariant 4 on the capped release's edge cases (expected to pass) ------------------------------------------------
def _shape(o, depth=0):
    "Names, types, shapes and finiteness of a published object, recursively (values dropped)."
    if isinstance(o, dict): return {k: _shape(v, depth + 1) for k, v in o.items() if not k.startswith("_lock")}
    if isinstance(o, (list, tuple)): return (type(o).__name__, len(o), tuple(_shape(v, depth + 1) for v in o))
    if isinstance(o, np.ndarray):
        return ("ndarray", o.shape, str(o.dtype), bool(np.isfinite(o).all()) if o.dtype.kind == "f" else None)
    if isinstance(o, float): return (type(o).__name__, bool(np.isfinite(o)))
    if hasattr(o, "__dataclass_fields__"):
        return (type(o).__name__, {k: _shape(getattr(o, k), depth + 1) for k in o.__dataclass_fields__})
    if depth < 4 and type(o).__module__.startswith("dp_causal_nb") and hasattr(o, "__dict__"):
        return (type(o).__name__, _shape(vars(o), depth + 1))
    return type(o).__name__


def _observe(kind, Y, T, X, eps):
    "Exception, warnings, the recursive shape of vars(), the summary table's shape and the ledger, noise held fixed."
    acc = PrivacyAccountant()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            with reproducible_noise():
                if kind == "lin":
                    from dp_causal_nb.lin import DPLinAdjustment
                    m = DPLinAdjustment(epsilon=eps, delta=1e-6, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                                        accountant=acc, random_state=3).fit(Y, T, X=X)
                else:
                    m = DPATE(randomized=True, epsilon=eps, delta=1e-6, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                              accountant=acc, random_state=3, out_of_bounds="clip").fit(Y, T, X=X)
                fr = m.summary().to_frame()
            out, err = (_shape(vars(m)), tuple(fr.columns), fr.shape), None
        except Exception as e: out, err = None, (type(e).__name__, str(e))
    return err, [(w.category.__name__, str(w.message)) for w in rec], out, [(s.label, s.cost) for s in acc.ledger]


@pytest.mark.parametrize("kind", ["lin", "auto"])
@pytest.mark.parametrize("n,d,eps,slope", [(4, 1, 1e4, 0), (53, 50, 1e6, 0), (400, 2, 1.0, 0), (400, 2, 1e4, 0),
                                           (40, 1, 1e4, 0.5)])
def test_capped_release_neighbours_alike(kind, n, d, eps, slope):
    """Replace-one neighbours on the capped release's edges (covariates constant, so the noisy solve is near-singular;
    d = 50: the cap binds; slope 0.5: w = 0.239(b − a) on the reference, the cap binding on the neighbour with
    Y₀ = −1; record 0 at a corner, at ±inf, out of the box, its outcome at a bound, its arm switched): same exception,
    warnings, attribute structure (recursive), summary table shape and ledger."""
    X, T = np.zeros((n, d)), np.arange(n) % 2
    X[:, 0] = np.linspace(-1, 1, n) if slope else 0.0
    Y = slope * X[:, 0] if slope else np.where(T == 1, 0.5, -0.5)
    ref = _observe(kind, Y, T, X, eps)
    assert ref[0] is None
    for cell, v in [("X", 1.0), ("X", -np.inf), ("X", 5.0), ("Y", 1.0), ("Y", -1.0), ("Y", -1e300), ("T", None)]:
        Y1, T1, X1 = Y.copy(), T.copy(), X.copy()
        if cell == "X": X1[0] = v
        elif cell == "Y": Y1[0] = v
        else: T1[0] = 1 - T1[0]
        assert _observe(kind, Y1, T1, X1, eps) == ref, (cell, v)
