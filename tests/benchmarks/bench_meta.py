#!/usr/bin/env python
"""Benchmark for the DP meta-learners. Not a test; prints plain-text tables.

Usage: python tests/benchmarks/bench_meta.py grid [--full] [--rule-lam]   MSE / Bias² / Var tables on Setups A–E
       python tests/benchmarks/bench_meta.py dpcate           meta-learners vs DPCATE on Dataset 1
       python tests/benchmarks/bench_meta.py scale [n ...]    fit time and memory of the DP DR-learner (ridge bases), default n = 1e6 (JSON)
       python tests/benchmarks/bench_meta.py audit            audits with 2 000 runs per dataset (vs 100 in CI)
--full is the full grid: n ∈ {500, 2000, 8000, 32000}, ε ∈ {1, 2, 4, 8, 16}, 10 replicates (long); without it,
3 replicates. N_JOBS=2 in the environment runs cells with joblib; every cell has its own public seed, so results do not depend on n_jobs."""
import os, sys, time
import numpy as np

def grid(full, lam):
    from dp_causal_nb.meta_experiments import run_grid, table
    print(f"lam={lam}")
    rows = run_grid(setups=tuple("ABCDE"), ns=(500, 2000, 8000, 32000), epsilons=(1.0, 2.0, 4.0, 8.0, 16.0),
                    reps=10 if full else 3, n_test=2000, random_state=0, n_jobs=int(os.environ.get("N_JOBS", 1)), lam=lam)
    for m in ("mse", "bias2", "var"): print(table(rows, m), "\n", flush=True)

def dpcate():
    from dp_causal_nb.meta_experiments import compare_dpcate, table
    for n in (2000, 8000): print(table(compare_dpcate(n=n, epsilons=(1.0, 4.0, 16.0), reps=3, n_test=2000), "mse"), flush=True)

def scale(ns):
    """Wall time and peak memory of the DP DR-learner (ridge/logistic bases, p = 5) at each n, n_jobs = 1 and 2; the rows
    are written to tests/benchmarks/bench_meta_scale.json (read by nbs/18_meta_experiments.ipynb)."""
    import json, platform, resource, tracemalloc, datetime, pathlib
    from dp_causal_nb.meta import DPDRLearner
    from dp_causal_nb.accounting import PrivacyAccountant
    rows = []
    for n in ns:
        r = np.random.default_rng(0); X = r.uniform(-1, 1, (n, 5)); T = (r.uniform(size=n) < 0.5).astype(int)
        Y = np.clip(X[:, 0] + T * (1 + X[:, 1]) + r.standard_normal(n), -5, 5)
        for n_jobs in (1, 2):
            tracemalloc.start(); t = time.perf_counter()
            DPDRLearner(outcome_bounds=(-5, 5), x_bounds=(-1, 1), epsilon=1.0, delta=min(1e-5, 0.01 / n),
                        accountant=PrivacyAccountant(), random_state=0, n_jobs=n_jobs).fit(Y, T, X=X)   # δ ≪ 1/n
            sec = time.perf_counter() - t; peak = tracemalloc.get_traced_memory()[1] / 2**20; tracemalloc.stop()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append(dict(learner="DPDRLearner", n=n, n_jobs=n_jobs, seconds=sec, peak_mb=peak, max_rss_mb=rss))
            print(f"DPDRLearner (DP ridge/logistic bases) n={n:.0e} n_jobs={n_jobs}: {sec:.2f} s, peak {peak:.0f} MB "
                  f"(tracemalloc, this process), max RSS {rss:.0f} MB", flush=True)
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               machine=f"{platform.machine()}, {os.cpu_count()} CPUs (shared), numpy {np.__version__}", rows=rows)
    pathlib.Path(__file__).with_name("bench_meta_scale.json").write_text(json.dumps(out, indent=1))

def audit():
    from dp_causal_nb.audit import audit_mechanism
    from dp_causal_nb.meta import DPSLearner, DPTLearner, DPXLearner, DPRLearner, DPDRLearner
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/: the test designs
    from _fixtures import neighbours, mechanism, EPS, DELTA
    for L in (DPSLearner, DPTLearner, DPXLearner, DPRLearner, DPDRLearner):
        res = audit_mechanism(mechanism(L), *neighbours(), n_runs=2000, batch=False, delta=DELTA, random_state=0, progress=False)
        print(f"{L.__name__}: claim ε={EPS}, {res}", flush=True)

if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "grid"
    if cmd == "grid": grid("--full" in sys.argv, "rule" if "--rule-lam" in sys.argv else "fixed")
    elif cmd == "dpcate": dpcate()
    elif cmd == "scale": scale([int(float(a)) for a in sys.argv[2:]] or [10**6])
    elif cmd == "audit": audit()
    else: raise SystemExit(__doc__)
