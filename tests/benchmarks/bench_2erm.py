#!/usr/bin/env python
"""Benchmark: fit time and peak memory of DP-2ERM (dp_causal_nb.two_stage.DP2ERMClassifier, ε = 1) with each weighting
method, next to scikit-learn's non-private weighted LogisticRegression on the same features and the same weights
(StandardizeToBounds of 5 covariates + bias, λ = 1e-3). Not a test; prints markdown tables.

Usage: python tests/benchmarks/bench_2erm.py [n ...]        (default n = 1e4 1e5)
       python tests/benchmarks/bench_2erm.py --mmd-scaling   (MMD weights alone: time vs n, to find the largest n in 60 s)
       python tests/benchmarks/bench_2erm.py --itr [reps]    (full-mode ITR experiment of nbs/16_itr, default 100 reps)
Time: best of 2 runs without tracing; memory: peak traced by tracemalloc in a separate run. The sklearn side gets the
weights precomputed (it has no balancing stage), so the ratio shows the full cost of the two-stage private fit."""
import sys, time, tracemalloc
import numpy as np
from scipy import special
from sklearn.linear_model import LogisticRegression
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.features import StandardizeToBounds
from dp_causal_nb.weights import BalancingWeights
from dp_causal_nb.two_stage import DP2ERMClassifier

LAM, Q = 1e-3, 5
KW = dict(x_bounds=(-1, 1), weight_cap=10.0, ridge=1.0, propensity_clip=0.1, propensity_lam=1.0, n_components=50)

def data(n, seed=0):
    r = np.random.default_rng(seed); X = r.uniform(-1, 1, (n, Q))
    T = (r.uniform(size=n) < special.expit(X[:, 0] - X[:, 1])).astype(int)
    y = (r.uniform(size=n) < special.expit(X[:, 2] + 0.5 * T)).astype(int); return X, T, y

def measure(f, reps=2):
    best = min(_timed(f) for _ in range(reps))
    tracemalloc.start(); f(); peak = tracemalloc.get_traced_memory()[1] / 2**20; tracemalloc.stop()
    return best, peak

def _timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def main(ns):
    print("| n | weights | DP-2ERM fit (s) | peak MiB | sklearn weighted LR (s) | peak MiB | time ratio |")
    print("|---|---|---|---|---|---|---|")
    for n in ns:
        X, T, y = data(n); P = StandardizeToBounds((-1, 1)).transform(X)
        for m in ("ipw_estimated", "entropy", "mmd"):
            w, _ = BalancingWeights(m, **KW).compute(T, X)
            dp = lambda: DP2ERMClassifier(m, epsilon=1.0, lam=LAM, random_state=0, accountant=PrivacyAccountant(), **KW).fit(X, y, T=T)
            sk = lambda: LogisticRegression(C=1 / (n * LAM), fit_intercept=False).fit(P, y, sample_weight=w)
            (td, md), (ts, ms) = measure(dp), measure(sk)
            print(f"| {n:.0e} | {m} | {td:.3f} | {md:.1f} | {ts:.3f} | {ms:.1f} | {td / ts:.2f} |", flush=True)

def mmd_scaling(budget=60.0):
    print("| n | MMD weights (s) | peak MiB |"); print("|---|---|---|")
    n = 10_000
    while True:
        X, T, _ = data(n); f = lambda: BalancingWeights("mmd", **KW).compute(T, X)
        t = _timed(f); tracemalloc.start(); f(); peak = tracemalloc.get_traced_memory()[1] / 2**20; tracemalloc.stop()
        print(f"| {n:.0e} | {t:.2f} | {peak:.0f} |", flush=True)
        if t > budget / 3 or n >= 3_000_000: break
        n *= 3

def itr(reps):
    from dp_causal_nb.itr import run_itr_experiment
    rows = run_itr_experiment([1000, 5000, 20000], [0.5, 1.0, 2.0, 4.0, 8.0], reps, n_test=10_000, random_state=0)
    print(rows)

if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "--mmd-scaling": mmd_scaling()
    elif a and a[0] == "--itr": itr(int(a[1]) if len(a) > 1 else 100)
    else: main([int(float(x)) for x in a] or [10_000, 100_000])
