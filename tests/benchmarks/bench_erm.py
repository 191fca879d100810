#!/usr/bin/env python
"""Benchmark: fit time and peak memory of the DP ERM estimators vs scikit-learn's non-private fit on the same
features (20 random Fourier features + bias of 5 covariates) and the same penalty. Not a test; prints a markdown table.

Usage: python tests/benchmarks/bench_erm.py [n ...]     (default n = 1e4 1e5 1e6); nbs/04_dp_erm.ipynb imports
`table` (n = 1e4 under test, the default sizes in full mode).
Time: best of `reps` runs without tracing; memory: peak traced by tracemalloc (numpy reports its buffers) in a
separate run. Both sides start from the raw covariates X, so both include the feature map."""
import sys, time, tracemalloc, warnings
import numpy as np
from scipy import special
from sklearn.linear_model import LogisticRegression, Ridge
from dp_causal_nb.erm import DPLogisticRegression, DPRidgeRegression
from dp_causal_nb.features import RandomFourierFeatures

LAM, Q, D = 1e-4, 5, 20

def data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, Q)); s = X @ np.array([1.0, -1.0, 0.5, 0.0, 2.0])
    return X, (rng.uniform(size=n) < special.expit(0.5 + s)).astype(int), np.clip(s / 4.5, -1, 1)

def fm(): return RandomFourierFeatures(D, bandwidth=1.0, x_bounds=(-1, 1), random_state=0)

def runners(n):
    X, y, yr = data(n)
    return {
        "sklearn LogisticRegression (lbfgs)": lambda: LogisticRegression(C=1 / (n * LAM), fit_intercept=False).fit(fm().transform(X), y),
        "sklearn LogisticRegression (newton-cholesky)": lambda: LogisticRegression(C=1 / (n * LAM), fit_intercept=False, solver="newton-cholesky").fit(fm().transform(X), y),
        "DPLogisticRegression objective, ε=1": lambda: DPLogisticRegression(1.0, lam=LAM, feature_map=fm(), random_state=0).fit(X, y),
        "DPLogisticRegression objective, ε=1, δ=1e-6": lambda: DPLogisticRegression(1.0, 1e-6, lam=LAM, feature_map=fm(), random_state=0).fit(X, y),
        "DPLogisticRegression output, ε=1, δ=1e-6": lambda: DPLogisticRegression(1.0, 1e-6, lam=LAM, method="output", feature_map=fm(), random_state=0).fit(X, y),
        "sklearn Ridge": lambda: Ridge(alpha=n * LAM, fit_intercept=False).fit(fm().transform(X), yr),
        "DPRidgeRegression output, ε=1, δ=1e-6": lambda: DPRidgeRegression(1.0, 1e-6, lam=LAM, outcome_bounds=(-1, 1), feature_map=fm(), random_state=0).fit(X, yr),
    }

def measure(f, reps):
    t = min((lambda t0: (f(), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(reps))
    tracemalloc.start(); f(); peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
    return t, peak / 2**20

def table(ns=(10**4, 10**5, 10**6), reps=None) -> str:
    "The markdown table for sample sizes `ns` (best of `reps` runs; default 3 for n <= 1e5, else 1)."
    lines = ["| n | model | fit time (s) | peak memory (MiB) | time / sklearn |", "|---|---|---|---|---|"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in ns:
            res = {k: measure(f, reps or (3 if n <= 10**5 else 1)) for k, f in runners(n).items()}
            for k, (t, m) in res.items():
                base = res["sklearn Ridge" if "Ridge" in k else "sklearn LogisticRegression (lbfgs)"][0]
                lines.append(f"| {n:.0e} | {k} | {t:.3f} | {m:.1f} | {t / base:.2f} |")
    return "\n".join(lines)

if __name__ == "__main__":
    print(table([int(float(a)) for a in sys.argv[1:]] or (10**4, 10**5, 10**6)))
