"""Privacy audit of DPATE's split design (Theorems 2 and 2b of nbs/11_dp_ate.ipynb) with the library's auditor.

The proof conditions on the nuisance models (fitted, privately, on other parts of the public split) and treats the
final part's release as a Gaussian mechanism with sensitivity √C/m. The audit does the same: it fixes the split and
the nuisance noise (int seed), builds neighbours that differ in ONE record of the final part, chosen so that its IPW
score jumps between the two ends of its range (+B/c and −B/c: the propensity model, fitted on a perfectly separated
part, is clipped at c and 1−c at the two corners), which reaches ~99 % of the bound √C/m; then it runs the final
noise addition (σ₁, σ₂ read from a fitted DPATE whose output is checked to be τ̄ + σ₁z₁) over 100 000 runs per
dataset. A broken-on-purpose control — σ₁ from the sensitivity of a mean of bounded OUTCOMES, 2B/m, which forgets the
inverse-propensity weights — must be caught by the same audit."""
import numpy as np
import pytest

from dp_causal_nb.core import spawn_generators
from dp_causal_nb.secure_noise import plan_gaussian, grid_release, noise_rng
from dp_causal_nb.ate import (DPATE, _split_release, _split_scores, split_sizes, make_split, default_split,
                              split_sensitivity, sensitivity_constant, clip_levels, score_histogram, choose_clip_level,
                              SCORE_CLIP_SHARE, SCORE_CLIP_TAIL, TREATED_COUNT_SHARE, budget_share)
from dp_causal_nb.mechanisms import gdp_mu, gdp_sigma
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.mechanisms import gdp_epsilon

N, CLIP, EPS, DELTA, SEED, RUNS = 4000, 0.1, 1.0, 1e-5, 11, 100_000
EPS_R, DELTA_R = budget_share(EPS, DELTA, TREATED_COUNT_SHARE)[2:]   # the design's budget after the treated count


def _data():
    x = np.linspace(-1, 1, N); T = (x > 0).astype(int); Y = np.zeros(N)   # propensity part: perfectly separated
    return x[:, None], T, Y


def _final_record():
    "Index of a record in the final part for DPATE(random_state=SEED): the same streams as DPATE._fit."
    part_rng = spawn_generators(SEED, 4)[0]
    part = make_split(N, split_sizes(N, default_split("ipw")), part_rng)
    return int(np.flatnonzero(part == 3)[0])


def _stats(X, T, Y):
    "(τ̄, s_F) of the split release with DPATE's streams for SEED (nuisance noise fixed by the int seed)."
    _, *nuis = spawn_generators(SEED, 4)
    part_rng = spawn_generators(SEED, 4)[0]
    tau, se, m, _ = _split_release(Y, T, X, estimator="ipw", split=default_split("ipw"), x_bounds=(-1.0, 1.0), lam=None,
                                   B=1.0, c=CLIP, eps=EPS_R, dlt=DELTA_R, acc=PrivacyAccountant(), label="audit",
                                   rngs=[part_rng] + nuis)
    return (tau, se), m


@pytest.fixture(scope="module")
def pair():
    X, T, Y = _data(); j = _final_record()
    D0 = (X.copy(), T.copy(), Y.copy()); D1 = (X.copy(), T.copy(), Y.copy())
    D0[0][j], D0[1][j], D0[2][j] = -1.0, 1, 1.0     # treated where π̂ = c:      score +B/c
    D1[0][j], D1[1][j], D1[2][j] = 1.0, 0, 1.0      # control where π̂ = 1 − c:  score −B/c
    f0, m = _stats(*D0); f1, _ = _stats(*D1)
    est = DPATE("ipw", design="split", epsilon=EPS, delta=DELTA, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                propensity_clip=CLIP, random_state=SEED, score_clip="none").fit(D0[2], D0[1], X=D0[0])
    bound = split_sensitivity("ipw", m, 1.0, CLIP)
    noisy = grid_release(f0[0], plan_gaussian(est.sigma1_, bound), noise_rng(SEED, "DPATE"))
    assert est.ate_raw_ == noisy                                       # the audited release is DPATE's own
    gap = abs(f1[0] - f0[0])
    assert 0.95 * bound <= gap <= bound * (1 + 1e-12), (gap, bound)   # near-attained (the DP propensity fit is not exactly at the clip), never exceeded
    return f0, f1, gap, bound, est


def _grid(sigma, sensitivity):
    "The grid release (notebook 01a) of a scalar with noise sd σ: the mechanism DPATE runs, batched for the auditor."
    plan = plan_gaussian(sigma, sensitivity)
    return lambda value, size, rng: grid_release(value, plan, rng, size=size)


def test_audit_point_estimate(pair):
    f0, f1, gap, bound, m = pair
    res = audit_mechanism(_grid(m.sigma1_, bound), f0[0], f1[0],
                          n_runs=RUNS, delta=DELTA, random_state=1)
    claimed = gdp_epsilon(m.mu1_, DELTA)
    print(f"split IPW: |Δτ̄| = {gap:.5f} ({gap / bound:.0%} of √C/m); empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower <= claimed
    assert res.epsilon_lower > 0.4 * claimed       # near-tight: the audit sees a good part of the claimed loss


def test_audit_full_release(pair):
    f0, f1, gap, bound, m = pair
    s2 = m.sigma2_ * m.mu2_                        # the standard error's sensitivity (σ₂ = Δ₂/μ₂)
    g1, g2 = _grid(m.sigma1_, bound), _grid(m.sigma2_, s2)
    mech = lambda f, size, rng: np.column_stack([g1(f[0], size, rng), g2(f[1], size, rng)])
    res = audit_mechanism(mech, f0, f1, n_runs=RUNS, delta=DELTA, random_state=2)
    claimed = m.epsilon_spent_                     # the split design's claim is (ε, δ) (its nuisances are (ε, δ)-DP)
    print(f"split IPW (τ̄, s_F): empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower <= claimed


def test_negative_control_forgets_weights(pair):
    "Bug: σ₁ from the range of the OUTCOME (2B/m) instead of the score (2B/c / m): the audit must catch it."
    f0, f1, gap, bound, m = pair
    broken = (2.0 / m.split_sizes_[3]) / m.mu1_
    res = audit_mechanism(_grid(broken, bound), f0[0], f1[0], n_runs=RUNS, delta=DELTA, random_state=3)
    claimed = gdp_epsilon(m.mu1_, DELTA)
    print(f"split IPW broken: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower > claimed


def test_split_design_is_labelled_epsilon_delta_only():
    """The DP-ERM nuisance models are proven (ε, δ)-DP, not μ-GDP: the split design reports (ε, δ) only — no μ and
    no GDP label, also when the budget is given as μ — while the fold design (Gaussian noise only) keeps its label."""
    X, T, Y = _data()
    kw = dict(outcome_bounds=(-1, 1), propensity_clip=CLIP, random_state=SEED, accountant=PrivacyAccountant())
    for budget in (dict(epsilon=EPS, delta=DELTA), dict(mu=0.5)):
        m = DPATE("ipw", design="split", x_bounds=(-1, 1), **kw, **budget).fit(Y, T, X=X)
        eps = budget.get("epsilon", gdp_epsilon(0.5, DELTA))
        assert m.mu_spent_ is None and m.epsilon_spent_ == pytest.approx(eps, rel=1e-12) and m.delta_spent_ == DELTA
        assert "GDP" not in m.summary() and f"privacy: ({eps:.4g}, {DELTA:.3g})-DP;" in m.summary()
    fold = DPATE("ipw", design="fold", mu=0.5, **kw).fit(Y, T, X=X)
    assert fold.mu_spent_ == 0.5 and f"privacy: 0.5-GDP = ({gdp_epsilon(0.5, DELTA):.4g}, 1e-05)-DP" in fold.summary()


# --- Theorem 2b: the final part's scores clipped at a level read from a noisy histogram -------------------------------
def _scores(X, T, Y):
    "The final part's scores Γ for DPATE(random_state=SEED) (nuisance noise fixed by the int seed)."
    _, *nuis = spawn_generators(SEED, 4)
    part_rng = spawn_generators(SEED, 4)[0]
    G, m, _ = _split_scores(Y, T, X, estimator="ipw", split=default_split("ipw"), x_bounds=(-1.0, 1.0), lam=None,
                            B=1.0, c=CLIP, eps=EPS_R, dlt=DELTA_R, acc=PrivacyAccountant(), label="audit",
                            rngs=[part_rng] + nuis)
    return G, m


AUDIT_DELTA = 1e-2     # the δ at which 10⁵ runs give the auditor power against a factor-2 error


def _chosen_levels(H, levels, m):
    """`choose_clip_level` on every row of H at once (the same running sums, row by row); the library's function is
    checked against it on the first rows."""
    t = np.cumsum(H, axis=1)[:, :-1]
    over = t > SCORE_CLIP_TAIL * m
    js = np.where(over.any(axis=1), over.argmax(axis=1), t.shape[1])
    assert all(choose_clip_level(h, levels, m) == j for h, j in zip(H[:200], js[:200]))
    return js


def _clipped(mu_q, mu1, R, m, factor=2.0):
    """Theorem 2b's final release on a score vector, batched: (noisy histogram, level index, noisy clipped mean).
    `factor` = 2 is the derived sensitivity 2r/m; the broken control uses 1 (it forgets that a score may move from
    −r to +r)."""
    levels = clip_levels(R)
    plan_q = plan_gaussian(gdp_sigma(mu_q, np.sqrt(2)), np.sqrt(2), len(levels))
    def mech(G, size, rng):
        H = grid_release(score_histogram(G, levels), plan_q, rng, size=size).reshape(size, -1)
        js = _chosen_levels(H, levels, m)
        out = np.empty(size)
        for j in np.unique(js):
            r, rows = levels[j], js == j
            s = factor * r / m
            out[rows] = grid_release(np.clip(G, -r, r).mean(), plan_gaussian(gdp_sigma(mu1, s), 2 * r / m), rng,
                                     size=int(rows.sum()))
        return np.column_stack([H, js, out])
    return mech


@pytest.fixture(scope="module")
def clipped_pair():
    X, T, Y = _data(); j = _final_record()
    D0 = (X.copy(), T.copy(), Y.copy()); D1 = (X.copy(), T.copy(), Y.copy())
    D0[0][j], D0[1][j], D0[2][j] = -1.0, 1, 1.0
    D1[0][j], D1[1][j], D1[2][j] = 1.0, 0, 1.0
    (G0, m), (G1, _) = _scores(*D0), _scores(*D1)
    est = DPATE("ipw", design="split", epsilon=EPS, delta=DELTA, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                propensity_clip=CLIP, random_state=SEED, stderr_share=0.0).fit(D0[2], D0[1], X=D0[0])
    R = np.sqrt(sensitivity_constant("ipw", 1.0, CLIP)) / 2
    mu_q = gdp_mu(EPS_R, DELTA_R) * np.sqrt(SCORE_CLIP_SHARE)
    one = _clipped(mu_q, est.mu1_, R, m)(G0, 1, noise_rng(SEED, "DPATE"))
    assert est.ate_raw_ == one[0, -1] and est.score_clip_level_ == clip_levels(R)[int(one[0, -2])]   # DPATE's own
    assert np.abs(G0[j_ := np.flatnonzero(G0 != G1)[0]]) >= 0.95 * R and G0[j_] * G1[j_] < 0      # ±R, near-tight
    return G0, G1, est, mu_q, R, m


def test_audit_clipped_release(clipped_pair):
    G0, G1, est, mu_q, R, m = clipped_pair
    res = audit_mechanism(_clipped(mu_q, est.mu1_, R, m), G0, G1, n_runs=RUNS, delta=AUDIT_DELTA, random_state=4,
                          statistic=lambda o: o[:, -1])
    claimed = gdp_epsilon(np.hypot(mu_q, est.mu1_), AUDIT_DELTA)
    print(f"split IPW, clipped scores: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower <= claimed
    assert res.epsilon_lower > 0.4 * gdp_epsilon(est.mu1_, AUDIT_DELTA)    # near-tight: the mean moves by 2r/m


def test_negative_control_clipped_half_sensitivity(clipped_pair):
    "Bug: sensitivity r/m for scores clipped to [−r, r] (the range is 2r): the audit must catch it."
    G0, G1, est, mu_q, R, m = clipped_pair
    res = audit_mechanism(_clipped(mu_q, est.mu1_, R, m, factor=1.0), G0, G1, n_runs=RUNS, delta=AUDIT_DELTA,
                          random_state=5, statistic=lambda o: o[:, -1])
    claimed = gdp_epsilon(np.hypot(mu_q, est.mu1_), AUDIT_DELTA)
    print(f"split IPW clipped, broken: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert res.epsilon_lower > claimed


def test_audit_clipped_release_histogram_moves():
    """The whole Theorem 2b output (noisy histogram, level, noisy clipped mean) on a pair whose changed score moves
    from −R (bin 0) to r₁ = R/√2 (bin 1): the histogram moves by √2 and the mean by up to 2r/m. Statistic: the exact
    log-likelihood ratio of the output; the claim is √(μ_Q² + μ₁²)-GDP."""
    X, T, Y = _data(); i = _final_record()
    D0 = (X.copy(), T.copy(), Y.copy()); D1 = (X.copy(), T.copy(), Y.copy())
    D0[0][i], D0[1][i], D0[2][i] = 1.0, 0, 1.0                # control where π̂ = 1 − c: Γ = −R
    D1[0][i], D1[1][i], D1[2][i] = -1.0, 1, 1 / np.sqrt(2)    # treated where π̂ = c:     Γ = R/√2
    (G0, m), (G1, _) = _scores(*D0), _scores(*D1)
    R = np.sqrt(sensitivity_constant("ipw", 1.0, CLIP)) / 2
    levels = clip_levels(R)
    h0, h1 = score_histogram(G0, levels), score_histogram(G1, levels)
    assert np.linalg.norm(h1 - h0) == pytest.approx(np.sqrt(2))
    est = DPATE("ipw", design="split", epsilon=EPS, delta=DELTA, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                propensity_clip=CLIP, random_state=SEED).fit(D0[2], D0[1], X=D0[0])
    mu_q = gdp_mu(EPS_R, DELTA_R) * np.sqrt(SCORE_CLIP_SHARE)
    plan_q = plan_gaussian(gdp_sigma(mu_q, np.sqrt(2)), np.sqrt(2), len(levels))
    mech = _clipped(mu_q, est.mu1_, R, m)
    one = mech(G0, 1, noise_rng(SEED, "DPATE"))[0]
    assert np.array_equal(one[:len(levels)], est.clip_histogram_) and one[-1] == est.ate_raw_   # DPATE's own release
    means = {j: (np.clip(G0, -r, r).mean(), np.clip(G1, -r, r).mean()) for j, r in enumerate(levels)}

    def llr(o):
        H, js, a = o[:, :len(levels)], o[:, len(levels)].astype(int), o[:, -1]
        out = (H - h0) @ (h1 - h0) / plan_q.sd ** 2
        for j in np.unique(js):
            rows, s = js == j, 2 * levels[j] / m
            a0, a1 = means[j]
            out[rows] += (a[rows] - a0) * (a1 - a0) / plan_gaussian(gdp_sigma(est.mu1_, s), s).sd ** 2
        return out

    res = audit_mechanism(mech, G0, G1, n_runs=RUNS, delta=AUDIT_DELTA, random_state=7, statistic=llr)
    claimed = gdp_epsilon(np.hypot(mu_q, est.mu1_), AUDIT_DELTA)
    print(f"split IPW, clipped, histogram moving: empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}")
    assert 0.4 * claimed < res.epsilon_lower <= claimed


def test_small_budget_refused_before_any_charge():
    "A μ too small for one of the final release's grid plans fails before the accountant is charged or a model is fitted."
    X, T, Y = _data()
    for eps in (1e-4, 1e-5):
        acc = PrivacyAccountant()
        with pytest.raises(ValueError, match="grid"):
            DPATE("ipw", design="split", epsilon=eps, delta=DELTA, outcome_bounds=(-1, 1), x_bounds=(-1, 1),
                  propensity_clip=CLIP, accountant=acc).fit(Y, T, X=X)
        assert acc.ledger == [] and acc.spent == (0.0, 0.0)


def test_level_out_of_range_refused_before_any_charge():
    "A level the histogram interval cannot give (≥ 1 − SCORE_CLIP_TAIL) is refused before anything is charged."
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.uniform(-1, 1, (n, 1))
    T = rng.binomial(1, 0.5, n)
    Y = np.clip(0.5 * T + X[:, 0] + rng.normal(0, 0.3, n), -3, 3)
    for design in ("split", "crossfit"):
        acc = PrivacyAccountant(10.0, 1e-4)
        kw = dict(design=design, epsilon=4.0, delta=1e-5, outcome_bounds=(-3, 3), x_bounds=(-1, 1), accountant=acc)
        with pytest.raises(ValueError, match="level must be below"):
            DPATE(level=0.999, **kw).fit(Y, T, X=X)
        assert acc.ledger == []
        m = DPATE(level=0.99, **kw).fit(Y, T, X=X)               # a level it can give: released, clipped
        assert m.score_clip_level_ is not None and len(acc.ledger) >= 1


def test_audit_att_residual_release():
    """DPATE(estimand='att') releases the five sums of notebook 10b over the residuals r = Y − μ̂₀(X) in [−2B, 2B]
    with σ = 4B/μ (Theorem 2d). Given the released control model (the proof conditions on it), the pair that attains
    the sensitivity is a treated record at r = +2B that becomes a control at r = −2B. The audited mechanism is checked
    to be DPATE's own release; a control calibrated to the outcome range 2B (forgetting that residuals span 4B) must be
    caught."""
    from dp_causal_nb.core import reproducible_noise
    from dp_causal_nb.dim import dim_statistics, dim_release, dim_sensitivity
    from dp_causal_nb.ate import _att_residuals
    B, mu, dlt, n = 1.0, 1.0, 1e-2, 400
    rng = np.random.default_rng(0)
    X, T = rng.uniform(-1, 1, (n, 2)), rng.integers(0, 2, n)
    Y = np.clip(0.3 * T + 0.5 * X[:, 0] + rng.normal(0, 0.3, n), -B, B)
    with reproducible_noise():
        d = DPATE(estimand="att", design="split", mu=mu, delta=dlt, outcome_bounds=(-B, B), x_bounds=(-1, 1),
                  random_state=3, accountant=PrivacyAccountant()).fit(Y, T, X=X)
        part_rng, _, ridge_rng, _ = spawn_generators(3, 4)
        noise = noise_rng(3, "DPATE att")
        eps = gdp_epsilon(mu, dlt)
        r, tF, m, _ = _att_residuals(Y, T, X, design="split", x_bounds=np.array([[-1.0, -1.0], [1.0, 1.0]]), lam=None,
                                     B=B, eps=eps, dlt=dlt, acc=PrivacyAccountant(), label="audit",
                                     rngs=(part_rng, ridge_rng))
        v, plan = dim_release(r, tF, (-2 * B, 2 * B), gdp_sigma(mu, 4 * B), noise)
    assert np.array_equal(v, d.released_sums_)                       # the audited release is DPATE's own
    r0, r1, t0, t1 = r.copy(), r.copy(), tF.copy(), tF.copy()
    r0[0], t0[0], r1[0], t1[0] = 2 * B, 1, -2 * B, 0
    v0, v1 = dim_statistics(r0, t0, (-2 * B, 2 * B)), dim_statistics(r1, t1, (-2 * B, 2 * B))
    assert np.linalg.norm(v0 - v1) == pytest.approx(dim_sensitivity((-2 * B, 2 * B)))   # attains 4B
    res = audit_mechanism(lambda val, size, g: grid_release(val, plan, g, size=size), v0, v1, n_runs=RUNS,
                          delta=dlt, random_state=9)
    bad = plan_gaussian(gdp_sigma(mu, 2 * B), 2 * B, 5)
    res_bad = audit_mechanism(lambda val, size, g: grid_release(val, bad, g, size=size), v0, v1, n_runs=RUNS,
                              delta=dlt, random_state=10)
    claimed = gdp_epsilon(mu, dlt)
    print(f"DPATE(att): empirical ε ≥ {res.epsilon_lower:.3f} vs claimed {claimed:.3f}; control {res_bad.epsilon_lower:.3f}")
    assert 0.4 * claimed < res.epsilon_lower <= claimed < res_bad.epsilon_lower
