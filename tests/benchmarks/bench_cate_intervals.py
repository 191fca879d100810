#!/usr/bin/env python
"""Benchmark: coverage of DPCATE's intervals for the TRUE CATE and for their own target (not a test; writes a table).

`effect_interval` (sampling + privacy noise) and `noise_interval` (privacy noise only) at a fixed public query set of
50 points drawn from the design, `ate_interval` / `ate_noise_interval` for the average CATE over those points, and
`ate_interval` over a public sample of 2000 points (its average is close to the ATE), at ε ∈ {1, 4, 16, ∞}, for
final="auto" (the rule) and final="ridge" (calibration "parameter"). Each repetition draws a fresh data set and
fresh noise. Coverage at points = the share of (repetition, point) pairs covered; the width is the median over them.

The interval's own target is the release's population fit: its final stage fitted without noise, with the same public
feature map, λ, radius and target clipping as the release at that n and ε, to a large public sample of the design
(`N_POPULATION` records) with the true nuisances π(x), μ(x, a) (`OracleNuisances`), clipped as the release clips them.
Three differences split a shortfall of coverage of τ into its sources, each as the root mean square over (repetition,
point) of the difference divided by the interval's sd (half-width / z):
(a) shape: τ − the best fit in the same feature class (λ → 0, no radius, no target clipping, true nuisances);
(b) shrinkage: that best fit − the own target (the public λ, the radius and the target clipping);
(c) nuisances: the own target − the same population fit with the release's fitted nuisances (first-stage error,
    which the interval conditions on), both on the first `N_FITTED` records of the population sample (predicting
    the fitted boosting nuisances at ε = ∞ on all of it would dominate the run time).
A ratio well below 1 costs little coverage; a ratio of 2 or more leaves the point uncovered.

Usage: python tests/benchmarks/bench_cate_intervals.py [reps]   (default 50; writes tests/benchmarks/cate_intervals.md)
"""
import copy, os, sys, time, warnings
os.environ.setdefault("OMP_NUM_THREADS", "1")   # before sklearn loads OpenMP: the boosting nuisances (ε = ∞) would spin
from pathlib import Path                         # their threads on a busy CPU (threadpool_limits misses a late load)
import numpy as np
from threadpoolctl import threadpool_limits
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.core import reproducible_noise, is_private
from dp_causal_nb.datasets import make_oprescu_dgp
from dp_causal_nb.second_stage import WeightedRidge
from dp_causal_nb.targets import orthogonal_targets

EPS = (1.0, 4.0, 16.0, np.inf)
DESIGNS = (("d = 2 (random features)", 2, 4000), ("d = 2 (random features)", 2, 16000),
           ("d = 10 (affine shape)", 10, 16000))
N_POPULATION = 100_000
N_FITTED = 25_000        # the (c) comparison: its first records, with the true and with the fitted nuisances
Z95 = 1.959963984540054
OUT = Path(__file__).with_name("cate_intervals.md")


class _Sample:
    "A sub-sample of the population sample (X, T, Y)."
    def __init__(self, X, T, Y): self.X, self.T, self.Y = X, T, Y


class OracleNuisances:
    "The design's true π(x) and μ(x, a) with the interface of the fitted nuisance models (predict_proba, predict)."
    classes_ = np.array([0, 1])
    def __init__(self, dgp): self.dgp = dgp
    def predict_proba(self, X):
        p = self.dgp.propensity(X)
        return np.c_[1 - p, p]
    def predict(self, Z): return self.dgp.mu(Z[:, :-1], Z[:, -1])


def _solve(G, b, lam, radius):
    "The weighted ridge's minimiser from its moments G = FᵀWF/N, b = FᵀWy/N (the library's ball projection)."
    if lam <= 0: return np.linalg.lstsq(G, b, rcond=1e-12)[0]
    wr = WeightedRidge(lam, None, radius=radius)
    wr.A_ = G + lam * np.eye(len(G))
    wr.theta_ = np.linalg.solve(wr.A_, b)
    if radius is not None and np.linalg.norm(wr.theta_) > radius: wr._onto_ball(b)
    return wr.theta_


def _nuisance_targets(est, big, nuisances):
    "(φ, ρ) of the release's learner and φ_DR on the population sample, with the given nuisances (None: fitted)."
    e = copy.copy(est)
    if nuisances is not None: e.propensity_model_ = e.outcome_model_ = nuisances
    A = big.T.astype(float)
    pi, (m0, m1) = e.propensity(big.X), e.outcome(big.X)
    phi, rho = orthogonal_targets(big.Y, A, pi=pi, mu0=m0, mu1=m1, learner=e.learner)
    phi_dr, _ = orthogonal_targets(big.Y, A, pi=pi, mu0=m0, mu1=m1, learner="dr")
    return phi, rho, phi_dr


def _fits(est, F, Fq, t):
    "(own target, best fit in the class) at the queries from the population features F and targets t = (φ, ρ, φ_DR)."
    phi, rho, phi_dr = t
    mom = lambda w, y: ((F.T * w) @ F / len(F), F.T @ (w * y) / len(F))
    if est.final_ == "ridge":
        G, b = mom(rho, phi)
        return Fq @ _solve(G, b, est.lam_, est.theta_radius_), Fq @ _solve(G, b, 0.0, None)
    M = est.constant_bound_
    c = float(np.mean(np.clip(phi_dr, -M, M)))
    if est.rule_["mode"] == "constant": return np.full(len(Fq), c), np.full(len(Fq), float(np.mean(phi_dr)))
    if not is_private(est.epsilon_):                      # the learner's shape around ĉ: no clipping, no radius
        G, b = mom(rho, phi - c)
        best = Fq @ _solve(G, F.T @ (rho * phi) / len(F), 0.0, None)
        return c + Fq[:, 1:] @ _solve(G[1:, 1:], b[1:], est.lam_, None), best
    centre = c if est.rule_.get("center_targets") else 0.0
    one = np.ones(len(F))
    G, b = mom(one, np.clip(phi_dr - centre, -est.target_clip_, est.target_clip_))
    th = _solve(G[1:, 1:], b[1:], est.lam_, est.theta_radius_)
    return c + (Fq[:, 1:] - est.stage_.f_ref) @ th, Fq @ _solve(G, F.T @ phi_dr / len(F), 0.0, None)


def own_targets(est, big, Xq, oracle):
    """The release's own target at Xq with the true nuisances, the best fit of its class, and its own target with the
    release's fitted nuisances (population fits on `big`; see the module docstring)."""
    shape = est.final_ == "ridge" or est.rule_["mode"] == "function"
    fm = est.feature_map_ if shape else (lambda Z: np.zeros((len(Z), 0)))
    aug = fm if est.final_ == "ridge" else (lambda Z: np.c_[np.ones(len(Z)), fm(Z)])
    F, Fq = aug(big.X), aug(Xq)
    own, best = _fits(est, F, Fq, _nuisance_targets(est, big, oracle))
    sub = _Sample(big.X[:N_FITTED], big.T[:N_FITTED], big.Y[:N_FITTED])    # the same records for both nuisance sets
    own_sub, _ = _fits(est, F[:N_FITTED], Fq, _nuisance_targets(est, sub, oracle))
    own_fitted, _ = _fits(est, F[:N_FITTED], Fq, _nuisance_targets(est, sub, None))
    return own, best, own_fitted, own_sub


def run(p, n, eps, final, reps, seed0=0):
    dgp = make_oprescu_dgp(p, 1, support_size=2, random_state=0)
    Xq = dgp.sample(50, random_state=10_000).X
    tau_q = dgp.cate(Xq)
    Xw = dgp.sample(2000, random_state=20_000).X           # a large public sample: its average is close to the ATE
    tau_w = dgp.cate(Xw).mean()
    big, oracle = dgp.sample(N_POPULATION, random_state=30_000), OracleNuisances(dgp)
    keys = ("pt", "pt_noise", "avg", "avg_noise", "w_pt", "w_avg", "wide", "own", "own_avg", "own_fitted",
            "shape", "shrink", "nuis")
    rows = {k: [] for k in keys}
    for r in range(reps):
        ds = dgp.sample(n, random_state=seed0 + r)
        est = DPCATE(final=final, epsilon=eps, delta=1e-5, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
                     accountant=PrivacyAccountant(), random_state=seed0 + r).fit(ds.Y, ds.T, X=ds.X)
        lo, hi = est.effect_interval(Xq)
        nlo, nhi = est.noise_interval(Xq)
        alo, ahi = est.ate_interval(Xq)
        blo, bhi = est.ate_noise_interval(Xq)
        t = tau_q.mean()
        covered = lambda target: np.mean((lo <= target) & (target <= hi))
        rows["pt"].append(covered(tau_q))
        rows["pt_noise"].append(np.mean((nlo <= tau_q) & (tau_q <= nhi)))
        rows["avg"].append(alo <= t <= ahi)
        rows["avg_noise"].append(blo <= t <= bhi)
        rows["w_pt"].append(np.median(hi - lo))
        rows["w_avg"].append(ahi - alo)
        wlo, whi = est.ate_interval(Xw)
        rows["wide"].append(wlo <= tau_w <= whi)
        own, best, own_fitted, own_sub = own_targets(est, big, Xq, oracle)
        rows["own"].append(covered(own))
        rows["own_avg"].append(alo <= own.mean() <= ahi)
        rows["own_fitted"].append(covered(own_fitted))
        sd = np.maximum((hi - lo) / (2 * Z95), 1e-12)
        for k, d in (("shape", tau_q - best), ("shrink", best - own), ("nuis", own_sub - own_fitted)):
            rows[k].append(np.mean((d / sd) ** 2))
    out = {k: float(np.mean(v)) if not k.startswith("w") else float(np.median(v)) for k, v in rows.items()}
    return out | {k: float(np.sqrt(out[k])) for k in ("shape", "shrink", "nuis")}


def main(reps=50):
    t0 = time.time()
    lines = [f"Coverage of the true CATE and of the interval's own target by DPCATE's 95 % intervals ({reps} "
             "repetitions per row; δ = 1e-5; 50 public query points; `effect_interval`/`ate_interval` = sampling + "
             "privacy noise, `noise_interval` = privacy noise only). Own target = the release's population fit (same "
             f"public map, λ, radius and target clipping; true nuisances; {N_POPULATION} public records), or the "
             "same fit with the release's fitted nuisances. Bias columns: root mean square over (repetition, point) "
             "of the difference divided by the interval's sd — (a) τ − best fit of the shape class, (b) best fit − own "
             "target (λ, radius, clipping), (c) own target − the same with the fitted nuisances. Written by "
             "tests/benchmarks/bench_cate_intervals.py.", "",
             "| design | n | final | ε | points: effect_interval | points: noise_interval | median width | "
             "average: ate_interval | average: ate_noise_interval | width | average over 2000 points: ate_interval | "
             f"points: own target | points: own target, fitted nuisances ({N_FITTED} records) | average: own target | "
             "(a) shape / sd | (b) shrinkage / sd | (c) nuisances / sd |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, p, n in DESIGNS:
        for final in ("auto", "ridge"):
            for eps in EPS:
                # one thread: no oversubscription; the noise seeded from each repetition's random_state (repeatable)
                with warnings.catch_warnings(), threadpool_limits(1), reproducible_noise():
                    warnings.simplefilter("ignore")
                    m = run(p, n, eps, final, reps)
                lines.append(f"| {name} | {n} | {final} | {eps:g} | {m['pt']:.1%} | {m['pt_noise']:.1%} | "
                             f"{m['w_pt']:.3g} | {m['avg']:.1%} | {m['avg_noise']:.1%} | {m['w_avg']:.3g} | "
                             f"{m['wide']:.1%} | {m['own']:.1%} | {m['own_fitted']:.1%} | {m['own_avg']:.1%} | "
                             f"{m['shape']:.2f} | {m['shrink']:.2f} | {m['nuis']:.2f} |")
                print(lines[-1], flush=True)
    lines += ["", f"(run time {time.time() - t0:.0f} s)"]
    OUT.write_text("\n".join(lines) + "\n")

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
