"""Limits of the capped private regression adjustment (notebook 10c) and of DPATE's routes to it (notebook 11), each
shown on a small reproducible case.

Expected to fail until the library changes (each docstring says what the test expects and what happens instead):
- `test_lin_is_unbiased_over_the_assignments_of_a_trial` and `test_lin_small_trial_interval_covers`: the slope is
  released from a Gram matrix that holds T and Y, so it is not independent of the assignment, and the adjusted
  difference in means has the finite-sample bias of the regression estimator (Freedman 2008), which `prefers_lin`
  lets through at small n (ε = ∞, or a large ε); notebook 10c states the estimate is unbiased in a trial.
- `test_lin_interval_covers_with_few_residual_degrees_of_freedom`: at ε = ∞ `prefers_lin` picks 'lin' from n > d + 2;
  with n − p residual degrees of freedom of 1 to 3 the normal quantile under-covers, whatever the variance correction.
- `test_whole_release_audit_pair_moves_the_second_stage_by_its_sensitivity`: the whole-release audit's pair (every
  covariate at the box centre) moves the second stage by about 0.85 of the b − a + 2w it is calibrated to, so the
  statistical audit could not refute a second stage calibrated to b − a (the widening forgotten).

Expected to pass (what was checked and found to hold): the capped slope's widened range holds every adjusted outcome
of records at the corners of the declared box (per-column bounds, cap binding or not), without the guard clip."""
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


def _fit(Y, T, x, eps, s=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPATE(randomized=True, epsilon=eps, delta=1e-6, outcome_bounds=(0, 1), x_bounds=(-1, 1),
                     accountant=PrivacyAccountant(), random_state=s).fit(Y, T, X=x[:, None])


def test_lin_is_unbiased_over_the_assignments_of_a_trial():
    """Over all 70 assignments of 4 of 8 units (complete randomisation), the mean estimate is the ATE 0.125, as for the
    difference in means. Observed: DPATE(randomized=True) picks 'lin' (n > d + 2 at ε = ∞) and its estimate is 0 for
    every assignment: the pooled slope absorbs the one unit the treatment moves (the interval, of width 0, never
    covers)."""
    x, y0, y1 = _leverage_population(8, 1)
    est = []
    for tr in itertools.combinations(range(8), 4):
        T = np.zeros(8, int)
        T[list(tr)] = 1
        m = _fit(np.where(T == 1, y1, y0), T, x, np.inf)
        est.append(m.ate_)
    assert m.estimator_ == "lin"
    assert np.mean(est) == pytest.approx(0.125, abs=0.01), f"mean over the assignments {np.mean(est):.4f}"


def test_lin_small_trial_interval_covers():
    """A private release (ε = 1000, n = 20, d = 1: `prefers_lin` picks 'lin') of the same kind of trial: the 95 %
    interval covers the ATE 0.05 in at least 90 % of 400 assignments and the mean estimate is within 0.005 of it.
    Observed: mean about 0.033 (bias −0.017, a third of the effect) and coverage about 0.82; the difference in means
    on the same assignments is unbiased (mean about 0.049)."""
    x, y0, y1 = _leverage_population(20, 1)
    r = np.random.default_rng(1)
    est, hits = [], []
    assert prefers_lin(20, 1, 1000.0)
    with reproducible_noise():
        for s in range(400):
            T = np.zeros(20, int)
            T[r.permutation(20)[:10]] = 1
            m = _fit(np.where(T == 1, y1, y0), T, x, 1000.0, s)
            est.append(m.ate_)
            hits.append(m.conf_int_[0] <= 0.05 <= m.conf_int_[1])
    assert m.estimator_ == "lin"
    assert np.mean(hits) >= 0.9 and abs(np.mean(est) - 0.05) < 0.005, \
        f"coverage {np.mean(hits):.3f}, mean {np.mean(est):.4f}"


def test_lin_interval_covers_with_few_residual_degrees_of_freedom():
    """ε = ∞, n = 13, d = 10 (n − p = 1): DPATE(randomized=True) picks 'lin'; its 95 % interval should cover the effect
    0.1 in at least 85 % of 300 trials. Observed: about 62 % (the normal quantile 1.96 where a t quantile with one
    degree of freedom is 12.7)."""
    r = np.random.default_rng(2)
    hits = []
    for s in range(300):
        X = r.uniform(-1, 1, (13, 10))
        T = np.zeros(13, int)
        T[r.permutation(13)[:6]] = 1
        Y = np.clip(0.8 * X[:, 0] + 0.1 * T + 0.1 * r.normal(size=13), -1, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPATE(randomized=True, epsilon=np.inf, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                      accountant=PrivacyAccountant()).fit(Y, T, X=X)
        hits.append(m.conf_int_[0] <= 0.1 <= m.conf_int_[1])
    assert m.estimator_ == "lin"
    assert np.mean(hits) >= 0.85, f"coverage {np.mean(hits):.3f}"


def test_whole_release_audit_pair_moves_the_second_stage_by_its_sensitivity():
    """The pair of tests/test_audit_lin.py::whole_pair (N = 20, ε = 1, δ = 1e-2; covariates at the box centre, record 0
    at y = 1 switching arms): over 2000 first-stage draws, the second stage's sums should move by at least 0.95 of the
    b − a + 2w they are calibrated to (a near-tight pair). Observed: about 0.85 on average (0.77 where the cap binds):
    the adjusted outcome of a centred record is its outcome, never at b + w. The pair's privacy loss is then about
    0.83 of the claimed μ, and a second stage calibrated to b − a would lose only about 1 % more than the claim, which
    the audit (empirical ε ≈ 0.53 of the claim) cannot refute."""
    from test_audit_lin import SIGMAS, K, OB, _base
    Y, T, X = _base()
    X[:], Y[0] = 0.0, 1.0
    T1 = T.copy()
    T[0], T1[0] = 1, 0
    g0 = gram_statistics(lin_features(X, T, (-1, 1)), Y)
    p1 = plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY, K)
    with reproducible_noise():
        draws = grid_release(g0, p1, noise_rng(0, "audit pair"), size=2000)
    ratio = []
    for g in draws:
        rb = adjusted_range(OB, capped_coefficients(gram_coefficients(g, 4, p1.sd), LIN_CAP))
        s0, s1 = (dim_statistics(Y, t, rb) for t in (T, T1))
        ratio.append(np.linalg.norm(s0 - s1) / (rb[1] - rb[0]))
    assert np.mean(ratio) >= 0.95, f"mean share of the second stage's sensitivity {np.mean(ratio):.3f}"


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
