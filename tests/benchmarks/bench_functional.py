"""Benchmark: sequential single-point queries of the functional DP-CATE release (dp_causal_nb.functional).

Each new distinct point is drawn from the GP conditional on all earlier noise values (one sample path), which costs
one blocked triangular solve with the current m×m Cholesky factor: O(m²) time per query, O(m²) memory.
Run: python tests/benchmarks/bench_functional.py [n_queries]   (prints a markdown table)."""
import sys, time, warnings
import numpy as np
from dp_causal_nb.functional import private_kernel_function
from dp_causal_nb.rkhs import HuberLoss

def main(n_queries=10_000, q=2):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, q)); y = np.sin(3 * X[:, 0]) + 0.2 * rng.standard_normal(200)
    f = private_kernel_function(X, y, bandwidth=0.4, lam=0.05, loss=HuberLoss(1.0), x_bounds=(np.zeros(q), np.ones(q)),
                                epsilon=1.0, delta=1e-5, random_state=0, max_points=max(16_384, n_queries))
    Q = rng.uniform(0, 1, (n_queries, q))
    times = np.empty(n_queries)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i in range(n_queries):
            t0 = time.perf_counter(); f(Q[i:i + 1]); times[i] = time.perf_counter() - t0
    t0 = time.perf_counter(); f(Q); t_rep = time.perf_counter() - t0
    step = max(1, n_queries // 10)
    print(f"| queries | mean ms/query |\n|---|---|")
    for lo in range(0, n_queries, step):
        print(f"| {lo + 1}–{min(lo + step, n_queries)} | {1e3 * times[lo:lo + step].mean():.2f} |")
    print(f"\ntotal {times.sum():.1f} s for {n_queries} sequential new points (q={q}); "
          f"re-asking all {n_queries} cached points in one batch: {1e3 * t_rep:.1f} ms; "
          f"path state {8 * f._cap ** 2 / 1e9:.2f} GB")

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
