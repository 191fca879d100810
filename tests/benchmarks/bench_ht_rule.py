"""When should a declared randomised trial with a declared assignment probability p use the Horvitz–Thompson estimate
(`estimator="ht"`, notebook 10d) instead of the difference in means? Tuning trials only (never the evaluation beds of
bench_ate_beds.py): n, ε, p and the offset of the outcome's mean from the midpoint of the declared range (a share of
the half-range; the public rule cannot see it) vary; the table gives the RMSE ratio ht / private difference in means,
ht's coverage, and the public tolerance t*(n, μ, p) of `ht_tolerance` that `prefers_ht` compares with
HT_MIN_TOLERANCE. With --covariates, a second table on the trials of bench_lin_rule.py (p = 1/2 declared): the RMSE
ratios of lin, ht and ht adjusted by the covariate slope to the difference in means, and whether the ht rule holds.
Not collected by pytest. Run: python tests/benchmarks/bench_ht_rule.py [--covariates] [--reps R] [--out FILE]
"""
import itertools, time, warnings
import numpy as np


def trial(n, p, offset, seed):
    "A Bernoulli(p) trial: outcome N(offset·4 + 0.2·T, 1) clipped to the declared range [−4, 4], effect 0.2."
    r = np.random.default_rng(seed)
    T = (r.uniform(size=n) < p).astype(int)
    return T, np.clip(4 * offset + 0.2 * T + r.normal(0, 1, n), -4, 4), (-4.0, 4.0)


def cell(n, p, offset, eps, reps):
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    out = {"dim": [], "ht": []}
    for s in range(reps):
        T, Y, ob = trial(n, p, offset, 5000 + s)
        for est in out:
            with warnings.catch_warnings(), reproducible_noise():
                warnings.simplefilter("ignore")
                m = DPATE(est, epsilon=eps, delta=1e-6, outcome_bounds=ob, randomized=True, assignment_probability=p,
                          accountant=PrivacyAccountant(), random_state=s).fit(Y, T)
            out[est].append((m.ate_ - 0.2, m.conf_int_[0] <= 0.2 <= m.conf_int_[1]))
    rm = {k: float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))) for k, v in out.items()}
    return rm["ht"] / rm["dim"], float(np.mean(np.array(out["ht"])[:, 1]))


def run(reps=100, progress=True):
    from dp_causal_nb.ht import ht_tolerance
    from dp_causal_nb.mechanisms import gdp_mu
    rows = []
    for n, eps, p, offset in itertools.product((300, 1000, 3000, 10000), (0.5, 1.0, 4.0), (0.5, 0.3), (0.0, 0.1, 0.25)):
        t0 = time.time()
        ratio, cov = cell(n, p, offset, eps, reps)
        rows.append(dict(n=n, eps=eps, p=p, offset=offset, ratio=ratio, coverage=cov,
                         tolerance=ht_tolerance(n, gdp_mu(eps, 1e-6), p)))
        if progress: print(f"  n={n} eps={eps} p={p} offset={offset}: {ratio:.2f} ({time.time() - t0:.0f} s)",
                           flush=True)
    return rows


def covariate_cell(n, d, r2, eps, reps):
    "RMSE of dim, lin, ht and ht with the covariate slope on bench_lin_rule's trials (p = 1/2 declared)."
    from bench_lin_rule import trial as lin_trial
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    kinds = {"dim": ("dim", None), "lin": ("lin", (-1, 1)), "ht": ("ht", None), "ht+slope": ("ht", (-1, 1))}
    out = {k: [] for k in kinds}
    for s in range(reps):
        X, T, Y, ob = lin_trial(n, d, r2, 3000 + s)
        for k, (est, xb) in kinds.items():
            with warnings.catch_warnings(), reproducible_noise():
                warnings.simplefilter("ignore")
                m = DPATE(est, epsilon=eps, delta=1e-6, outcome_bounds=ob, x_bounds=xb, randomized=True,
                          assignment_probability=0.5, accountant=PrivacyAccountant(), random_state=s).fit(Y, T, X=X)
            out[k].append(m.ate_ - 0.2)
    return {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in out.items()}


def run_covariates(reps=100, progress=True):
    "Where the ht rule holds, does the covariate slope pay? (n, d, R², ε) of bench_lin_rule's grid, p = 1/2."
    rows = []
    for n, d, r2, eps in itertools.product((300, 1000, 3000), (2, 5), (0.05, 0.3, 0.6), (0.5, 1.0, 4.0)):
        t0 = time.time()
        rm = covariate_cell(n, d, r2, eps, reps)
        rows.append(dict(n=n, d=d, r2=r2, eps=eps, **{k: v / rm["dim"] for k, v in rm.items() if k != "dim"}))
        if progress: print(f"  n={n} d={d} R2={r2} eps={eps}: {rows[-1]} ({time.time() - t0:.0f} s)", flush=True)
    return rows


def markdown_covariates(rows) -> str:
    from dp_causal_nb.ate import prefers_lin
    from dp_causal_nb.ht import prefers_ht
    lines = ["| n | d | R² | ε | lin / DIM | ht / DIM | ht + slope / DIM | prefers_ht | n·ε/(d+1)² |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n']} | {r['d']} | {r['r2']:g} | {r['eps']:g} | {r['lin']:.2f} | {r['ht']:.2f} | "
              f"{r['ht+slope']:.2f} | {prefers_ht(r['n'], r['eps'], 1e-6, 0.5)} | "
              f"{r['n'] * r['eps'] / (r['d'] + 1) ** 2:.0f} |" for r in rows]
    return "\n".join(lines)


def markdown(rows) -> str:
    lines = ["| n | ε | p | offset | ht / DIM RMSE | ht coverage | t* |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n']} | {r['eps']:g} | {r['p']:g} | {r['offset']:g} | {r['ratio']:.2f} | {r['coverage']:.2f} | "
              f"{r['tolerance']:.3f} |" for r in sorted(rows, key=lambda r: -r["tolerance"])]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    from _out import run_and_write
    if "--covariates" in sys.argv:       # the second table: the covariate slope, where the ht rule holds
        sys.argv.remove("--covariates")
        run_and_write(__file__, run_covariates, markdown_covariates, ', δ = 1e-6, --covariates', default_reps=100)
    else: run_and_write(__file__, run, markdown, ', δ = 1e-6', default_reps=100)
