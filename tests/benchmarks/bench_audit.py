#!/usr/bin/env python
"""Benchmark: wall time of `audit_mechanism` (dp_causal_nb.audit). Not a test; prints a markdown table.

Usage: python tests/benchmarks/bench_audit.py
Each row: median over 3 seeds of AuditResult.seconds (mechanism calls + threshold search + evaluation), audit at
delta = 1e-5. nbs/03_audit.ipynb (Runtime) runs these cases and stores the output."""
import numpy as np
from dp_causal_nb.audit import audit_mechanism
from dp_causal_nb.mechanisms import gaussian_mechanism

ZERO, ONE = np.zeros(1), np.ones(1)                 # the neighbouring scalar answers
hand = lambda d, size, rng: d[0] + rng.standard_normal(size)
lib = lambda d, size, rng: gaussian_mechanism(np.full(size, d[0]), 1.0, 1.0, 1e-5, random_state=rng)
vec = lambda d, size, rng: d + rng.standard_normal((size, len(d)))
one = lambda d, rng: d + rng.standard_normal()
one_lib = lambda d, rng: gaussian_mechanism(d, 1.0, 1.0, 1e-5, random_state=rng)

CASES = [
    ("scalar Gaussian (hand-written noise), 10^5 runs", dict(mechanism=hand, D0=ZERO, D1=ONE, n_runs=100_000)),
    ("scalar `gaussian_mechanism` (library), 10^5 runs", dict(mechanism=lib, D0=ZERO, D1=ONE, n_runs=100_000)),
    ("scalar Gaussian, 10^6 runs", dict(mechanism=hand, D0=ZERO, D1=ONE, n_runs=1_000_000)),
    ("vector Gaussian d = 20, 10^5 runs",
     dict(mechanism=vec, D0=np.zeros(20), D1=np.full(20, 1 / np.sqrt(20)), n_runs=100_000)),
    ("non-batch scalar Gaussian (Python loop), 10^4 runs",
     dict(mechanism=one, D0=0.0, D1=1.0, n_runs=10_000, batch=False, progress=False)),
    ("non-batch `gaussian_mechanism` (loop), 10^4 runs",
     dict(mechanism=one_lib, D0=0.0, D1=1.0, n_runs=10_000, batch=False, progress=False)),
]

if __name__ == "__main__":
    print("| audit | seconds (median of 3) | epsilon_lower (seed 0) |\n|---|---:|---:|")
    for label, kw in CASES:
        rs = [audit_mechanism(delta=1e-5, random_state=s, **kw) for s in range(3)]
        print(f"| {label} | {np.median([r.seconds for r in rs]):.3f} | {rs[0].epsilon_lower:.3f} |")
