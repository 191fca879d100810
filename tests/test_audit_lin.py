"""Privacy audit of the regression-adjustment release (Theorems 1 and 2 of nbs/10c_dp_lin.ipynb) with the library's
auditor, on neighbours at the bounds.

Gram release (Theorem 1): the pair that attains ‖Δg‖ = 3/√2 (q = 2: record 0 at the corner u = (1, 1) moves from the
treated arm with y = 1 to the control arm with y = −1), released with the σ₁ that DPLinAdjustment uses; the claim for
this release alone, μ₁ = μ·√GRAM_SHARE, must not be refuted and must be approached.

Whole release (both stages, the second one adapted to the first's output): every record at the centre of the covariate
box, so that each adjusted outcome is the outcome whatever the released slopes (and the second stage's sums do not
move with the first stage's noise); record 0 at the upper outcome bound, treated in D₀ and control in D₁, moves the
second stage's sums (on the range widened by the capped adjustment, σ₂ for its width b − a + 2w) and, by its arm
coordinate, the Gram vector. The audited mechanism is checked to be DPLinAdjustment's own release, and the test
statistic is the exact log-likelihood ratio of an output (the second stage's range and σ₂ read from the first's).

The whole release's pair leaves every adjusted outcome inside [a, b], so its second stage moves by less than the
b − a + 2w it is calibrated to. Second stage alone (Theorem 2, given the first release): the slope fixed where the cap
binds (w = κ(b − a)), and the pair of records that moves the five sums by exactly b − a + 2w, found by brute force over
corner records; the sums released as DPLinAdjustment releases them (`dim_release` with σ₂ scaled to the widened range);
the claim for this release alone, μ₂ = μ·√(1 − GRAM_SHARE), must not be refuted and must be approached.

Broken-on-purpose controls the same audits must catch: features without the standardisation (z = (u, s, 1), ‖z‖ up to 2,
with the same σ₁), the second stage calibrated to half the outcome range (forgetting that a record may switch arms at a
bound), and the second stage calibrated to b − a instead of b − a + 2w (the widening forgotten)."""
import itertools
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.dim import dim_release, dim_sensitivity, dim_statistics
from dp_causal_nb.lin import (GRAM_SENSITIVITY, GRAM_SHARE, LIN_CAP, DPLinAdjustment, adjusted_outcomes,
                              adjusted_range, capped_coefficients, gram_coefficients, gram_statistics, lin_features)
from dp_causal_nb.mechanisms import gdp_epsilon, gdp_mu, gdp_sigma
from dp_causal_nb.secure_noise import grid_release, noise_rng, plan_gaussian

N, EPS, DELTA, SEED, RUNS = 20, 1.0, 1e-2, 5, 100_000   # δ = 1e-2: where 10⁵ runs give the auditor power
OB = (-1.0, 1.0)
MU = gdp_mu(EPS, DELTA)
SIGMAS = (gdp_sigma(MU * np.sqrt(GRAM_SHARE), GRAM_SENSITIVITY), gdp_sigma(MU * np.sqrt(1 - GRAM_SHARE), 2.0))
K = 14                          # the Gram vector's length: p(p + 3)/2 with p = q + 2 = 4 features


def _base():
    X = np.linspace(-1, 1, 2 * N).reshape(N, 2)
    return np.linspace(-0.9, 0.9, N), np.arange(N) % 2, X


def _gram_pair(scaled=True):
    Y, T, X = _base()
    X[0] = 1.0
    out = []
    for t, y in ((1, 1.0), (0, -1.0)):
        T[0], Y[0] = t, y
        Z = lin_features(X, T, (-1, 1))
        out.append(gram_statistics(Z if scaled else 2.0 * Z, Y))     # unscaled: z = (u, s, 1), ‖z‖ = 2
    return out


def test_audit_gram_release():
    G0, G1 = _gram_pair()
    assert np.linalg.norm(G0 - G1) == pytest.approx(GRAM_SENSITIVITY, rel=1e-12)      # the pair attains the bound
    plan = plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY, len(G0))
    mech = lambda g, size, rng: grid_release(g, plan, rng, size=size)
    res = audit_mechanism(mech, G0, G1, n_runs=RUNS, delta=DELTA, random_state=1)
    bad = audit_mechanism(mech, *_gram_pair(scaled=False), n_runs=RUNS, delta=DELTA, random_state=2)
    claimed = gdp_epsilon(MU * np.sqrt(GRAM_SHARE), DELTA)
    print(f"Gram release: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}; "
          f"unstandardised control {bad.epsilon_lower:.3f}")
    assert 0.5 * claimed < res.epsilon_lower <= claimed < bad.epsilon_lower


def _whole(scale2=1.0):
    "Both stages, batched: the Gram vector, the slopes of each run, the adjusted outcomes' sums with their noise."
    p1 = plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY, K)
    def mech(data, size, rng):
        Y, T, Z = data
        out = np.empty((size, K + 5))
        out[:, :K] = grid_release(gram_statistics(Z, Y), p1, rng, size=size)    # every run's first stage at once
        for k in range(size):                    # then each run's second stage, calibrated to its own range
            g = out[k, :K]
            rb = _range(g)
            p2 = _plan2(rb, scale2)
            beta = capped_coefficients(gram_coefficients(g, 4, p1.sd), LIN_CAP)
            out[k, K:] = grid_release(dim_statistics(adjusted_outcomes(Y, Z, beta, OB, rb), T, rb), p2, rng)
        return out
    return mech


def _range(g):
    "The widened range [a − w, b + w] of the capped slope, post-processing of the released Gram vector."
    return adjusted_range(OB, capped_coefficients(gram_coefficients(g, 4, plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY,
                                                                                        K).sd), LIN_CAP))


def _plan2(rb, scale2=1.0):
    "The second release's plan: σ₂ for sensitivity b' − a' (scale2 < 1: a broken-on-purpose calibration)."
    w = rb[1] - rb[0]
    return plan_gaussian(SIGMAS[1] * scale2 * w / (OB[1] - OB[0]), w, 5)


@pytest.fixture(scope="module")
def whole_pair():
    Y, T, X = _base()
    X[:], Y[0] = 0.0, 1.0               # the box centre: every adjusted outcome is the outcome, whatever the slopes
    T1 = T.copy()
    T[0], T1[0] = 1, 0
    D0, D1 = (Y, T, lin_features(X, T, (-1, 1))), (Y, T1, lin_features(X, T1, (-1, 1)))
    with reproducible_noise():
        m = DPLinAdjustment(epsilon=EPS, delta=DELTA, outcome_bounds=OB, x_bounds=(-1, 1), random_state=SEED,
                            accountant=PrivacyAccountant()).fit(Y, T, X=X)
        one = _whole()(D0, 1, noise_rng(SEED, "regression adjustment"))[0]
    assert np.array_equal(one, np.r_[m._released.gram, m._released.sums])            # DPLinAdjustment's own release
    rb = m._released.adjusted_bounds
    s0, s1 = (dim_statistics(adjusted_outcomes(D[0], D[2], m._released.coefficients, OB, rb), D[1], rb)
              for D in (D0, D1))
    assert np.linalg.norm(s0 - s1) >= 0.5 * dim_sensitivity(OB)          # stage 2 moves by a share of b − a
    return D0, D1


def _llr(D0, D1, scale2=1.0):
    """The log-likelihood ratio of an output (both stages independent here: every adjusted outcome is its outcome),
    the most powerful statistic for the auditor's test."""
    p1 = plan_gaussian(SIGMAS[0], GRAM_SENSITIVITY, K)
    g0, g1 = (gram_statistics(D[2], D[0]) for D in (D0, D1))
    def llr(o):
        out = (o[:, :K] - g0) @ (g1 - g0) / p1.sd ** 2
        for k, row in enumerate(o):              # the second stage given the first's output (its range and σ₂)
            rb = _range(row[:K])
            s0, s1 = (dim_statistics(D[0], D[1], rb) for D in (D0, D1))
            out[k] += (row[K:] - s0) @ (s1 - s0) / _plan2(rb, scale2).sd ** 2
        return out
    return llr


@pytest.mark.slow
def test_audit_whole_release(whole_pair):
    D0, D1 = whole_pair
    runs = 20_000                       # each run draws its own second-stage plan: the sampler's per-call cost rules
    res = audit_mechanism(_whole(), D0, D1, n_runs=runs, delta=DELTA, random_state=3, statistic=_llr(D0, D1))
    bad = audit_mechanism(_whole(0.5), D0, D1, n_runs=runs // 2, delta=DELTA, random_state=4,
                          statistic=_llr(D0, D1, 0.5))
    claimed = gdp_epsilon(MU, DELTA)
    print(f"whole release: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f} "
          f"(second stage alone {gdp_epsilon(MU * np.sqrt(1 - GRAM_SHARE), DELTA):.3f}); "
          f"half-range control {bad.epsilon_lower:.3f}")
    assert 0.4 * claimed < res.epsilon_lower <= claimed < bad.epsilon_lower


BETA = capped_coefficients(np.array([3.0, -2.0, 0.4, 0.1]), LIN_CAP)   # a slope where the cap binds


def _corner_records(beta):
    "Records at the corners or centre of the box, outcomes at the bounds or the middle, either arm; their five sums."
    rb = adjusted_range(OB, beta)
    cells = [(u, y, t) for u in itertools.product((-1.0, 0.0, 1.0), repeat=2) for y in (-1.0, 0.0, 1.0) for t in (0, 1)]
    Z = lin_features(np.array([c[0] for c in cells]), np.array([c[2] for c in cells]), (-1, 1))
    r = adjusted_outcomes(np.array([c[1] for c in cells]), Z, beta, OB, rb)
    return cells, np.array([dim_statistics(r[i:i + 1], np.array([c[2]]), rb) for i, c in enumerate(cells)]), rb


def test_undercounted_second_stage_is_caught():
    """Brute force over records at the corners or centre of the box, outcomes at the bounds or the middle, either arm:
    for a capped slope the sums move by exactly b − a + 2w, so a calibration to b − a would under-count them."""
    _, one, rb = _corner_records(BETA)
    worst = max(float(np.linalg.norm(a - b)) for a in one for b in one)
    assert rb[1] - rb[0] == pytest.approx((1 + 2 * LIN_CAP) * (OB[1] - OB[0]), rel=1e-12)   # the cap binds here
    assert worst == pytest.approx(rb[1] - rb[0], rel=1e-9)
    assert worst > dim_sensitivity(OB) * 1.1


def second_stage_pair():
    """Two datasets of N records differing in record 0, the brute force's worst corner pair, and the adjusted outcomes
    of each under the fixed slope BETA: (adjusted outcomes, arms) twice, and the widened range."""
    cells, one, rb = _corner_records(BETA)
    i, j = np.unravel_index(np.argmax(np.linalg.norm(one[:, None] - one[None], axis=2)), (len(one), len(one)))
    out = []
    for u, y, t in (cells[i], cells[j]):
        Y, T, X = _base()
        X[0], Y[0], T[0] = u, y, t
        out.append((adjusted_outcomes(Y, lin_features(X, T, (-1, 1)), BETA, OB, rb), T))
    return out[0], out[1], rb


def _second_stage(rb, widened=True):
    "The sums released as `lin_draw` releases them (σ₂ per b − a, scaled to the widened range unless told not to)."
    sigma2 = SIGMAS[1] * ((rb[1] - rb[0]) / (OB[1] - OB[0]) if widened else 1.0)
    def mech(data, size, rng):
        plan = dim_release(*data, rb, sigma2, rng)[1]                          # the library's plan for these sums
        return grid_release(dim_statistics(*data, rb), plan, rng, size=size)
    return mech


def test_audit_second_stage():
    D0, D1, rb = second_stage_pair()
    s0, s1 = (dim_statistics(*D, rb) for D in (D0, D1))
    assert np.linalg.norm(s0 - s1) == pytest.approx(rb[1] - rb[0], rel=1e-9)     # the pair attains b − a + 2w
    res = audit_mechanism(_second_stage(rb), D0, D1, n_runs=RUNS, delta=DELTA, random_state=5)
    bad = audit_mechanism(_second_stage(rb, widened=False), D0, D1, n_runs=RUNS, delta=DELTA, random_state=6)
    claimed = gdp_epsilon(MU * np.sqrt(1 - GRAM_SHARE), DELTA)
    print(f"second stage: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}; "
          f"widening-forgotten control {bad.epsilon_lower:.3f}")
    assert 0.5 * claimed < res.epsilon_lower <= claimed < bad.epsilon_lower
