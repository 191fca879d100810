"""Benchmark of DPCATE (dp_causal_nb.cate): fit + release time and peak memory (not collected by pytest).

Each configuration runs in a fresh subprocess so that peak RSS (ru_maxrss) is per configuration.
Usage: python tests/benchmarks/bench_cate.py            # the full table
       python tests/benchmarks/bench_cate.py --quick    # n <= 1e5 only
       python tests/benchmarks/bench_cate.py --smoke    # two small DP configurations (nbs/08_dp_cate.ipynb under test)
Goal: n = 1e5, ridge second stage, 300 queries, end to end in < 10 s on 2 cores.
"""
import json, subprocess, sys, time

CONFIGS = [("ridge", "parameter", 10_000), ("ridge", "parameter", 100_000), ("ridge", "parameter", 1_000_000),
           ("ridge", "global", 100_000), ("ridge", "ges", 10_000), ("ridge", "ges", 100_000),
           ("kernel", "global", 2_000), ("kernel", "global", 6_000), ("kernel", "global", 12_000)]
SMOKE = [("ridge", "parameter", 10_000), ("kernel", "global", 2_000)]


def one(final, calibration, n):
    import resource, warnings
    import numpy as np
    from dp_causal_nb.datasets import dataset1
    from dp_causal_nb.cate import DPCATE
    ds = dataset1(n, random_state=0); q = ds.dgp.sample(300, np.random.default_rng(1))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPCATE(final=final, calibration=calibration, epsilon=1.0, x_bounds=ds.x_bounds, outcome_bounds=ds.outcome_bounds,
                     random_state=0, allow_data_dependent_scale=(calibration == "ges"))   # ges: NOT DP, timed only
        t1 = time.perf_counter(); est.fit(ds.Y, ds.T, X=ds.X); t2 = time.perf_counter()
        est.effect(q.X); t3 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return dict(final=final, calibration=calibration, n=n, fit_s=t2 - t1, release_s=t3 - t2, total_s=t3 - t0,
                peak_mb=peak / 1024, data_mb=base / 1024)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], sys.argv[3], int(sys.argv[4])))); sys.exit()
    quick, smoke = "--quick" in sys.argv, "--smoke" in sys.argv
    print("| final | calibration | n | fit (s) | release (s) | total (s) | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|")
    for final, cal, n in (SMOKE if smoke else CONFIGS):
        if quick and n > 100_000: continue
        r = subprocess.run([sys.executable, __file__, "--one", final, cal, str(n)], capture_output=True, text=True)
        if r.returncode: print(f"| {final} | {cal} | {n} | failed: {r.stderr.strip().splitlines()[-1]} |||"); continue
        d = json.loads(r.stdout.strip().splitlines()[-1])
        cal = "ges (NOT DP)" if cal == "ges" else cal
        print(f"| {final} | {cal} | {n:,} | {d['fit_s']:.2f} | {d['release_s']:.2f} | {d['total_s']:.2f} | {d['peak_mb']:.0f} |",
              flush=True)
