"""Tuning run behind `dp_causal_nb.ate.split_nuisance_lam` (the split design's default ridge penalty of its DP nuisances).

A tuning generator that is none of the evaluation settings of notebook 12: uniform covariates on [-1, 1]^d, logistic
propensity, linear outcome with an interaction, outcome bounds (-2, 2), ATE 0.3. For each (n, d, ε) it prints the
RMSE of the split-design AIPW estimate (no interval: stderr_share=0) for several penalties Λ given to BOTH nuisance
kinds (nuisance_lam) and for the default (a separate rule per kind: `split_nuisance_lam`).
Usage: python tests/benchmarks/bench_ate_split_lam.py [--quick]     (full: 20 repetitions, about 3 CPU-minutes)"""
import itertools, sys, warnings
import numpy as np
from dp_causal_nb.ate import DPATE

def gen(n, d, rng):
    X = rng.uniform(-1, 1, (n, d)); b = np.linspace(1, -1, d) / np.sqrt(d)
    T = rng.binomial(1, 1 / (1 + np.exp(-(1.5 * X @ b))))
    Y = np.clip(0.3 * T + X @ b + 0.3 * X[:, 0] * T + rng.normal(0, 0.3, n), -2, 2)
    return X, T, Y, 0.3

def rmse(n, d, eps, lam, reps):
    err = []
    for r in range(reps):
        X, T, Y, tau = gen(n, d, np.random.default_rng(100 + r))
        m = DPATE(epsilon=eps, delta=1e-6, outcome_bounds=(-2, 2), x_bounds=(-1, 1), nuisance_lam=lam, stderr_share=0.0,
                  random_state=r).fit(Y, T, X=X)
        err.append(m.ate_raw_ - tau)
    return float(np.sqrt(np.mean(np.square(err))))

if __name__ == "__main__":
    quick = "--quick" in sys.argv
    reps, grid = (3, [(1000, 3, 4.0)]) if quick else (20, list(itertools.product((1000, 10000), (3, 20), (1.0, 4.0))))
    lams = (1e-3, 1e-2, 3e-2, 0.1, 0.3, None)
    print("| n | d | ε | " + " | ".join("default" if l is None else f"Λ={l:g}" for l in lams) + " |")
    print("|---|---|---|" + "---|" * len(lams))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, d, eps in grid:
            print(f"| {n} | {d} | {eps:g} | " + " | ".join(f"{rmse(n, d, eps, l, reps):.3f}" for l in lams) + " |", flush=True)
