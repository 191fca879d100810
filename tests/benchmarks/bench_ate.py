"""Benchmark of DPATE (Lebeda et al. fold ensemble) at the paper's tree-setting size: n = 250 000, K = 500.

Not collected by pytest. Run: python tests/benchmarks/bench_ate.py [--quick] [--hgb-n N] [--hgb-k K]
Each configuration runs in a fresh subprocess so that its peak resident memory is clean. The memory column is the
parent process (which holds the data and the running sums); each joblib worker additionally holds the memory-mapped
data, its fold models and four length-n prediction vectors. HistGradientBoosting uses OpenMP: with n_jobs=1 set
OMP_NUM_THREADS=1, otherwise its thread start-up dominates on folds of a few hundred records (joblib's loky workers
already limit their inner threads).
Goal: linear nuisances, n = 250 000, K = 500, AIPW, under 60 s on 2 cores.
"""
import argparse, json, os, resource, subprocess, sys, time


def run_one(cfg):
    import numpy as np, warnings
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.datasets import ate_trees
    ds = ate_trees(cfg["n"], random_state=0)
    if cfg["models"] == "linear":
        pm, om = LogisticRegression(solver="newton-cholesky"), LinearRegression()
    else:
        pm = HistGradientBoostingClassifier(max_iter=cfg["hgb_iter"], random_state=0)
        om = HistGradientBoostingRegressor(max_iter=cfg["hgb_iter"], random_state=0)
    t = time.perf_counter(); c = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPATE("aipw", n_folds=cfg["K"], mu=1.5, outcome_bounds=ds.outcome_bounds, propensity_clip=0.2,
                  propensity_model=pm, outcome_model=om, n_jobs=cfg["n_jobs"], random_state=0).fit(ds.Y, ds.T, X=ds.X)
    wall = time.perf_counter() - t
    ru_self = resource.getrusage(resource.RUSAGE_SELF)
    return dict(wall=wall, cpu_parent=time.process_time() - c, peak_rss_mb=ru_self.ru_maxrss / 1024,
                ate=m.ate_, truth=ds.ate)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--hgb-n", type=int, default=250_000)
    ap.add_argument("--hgb-k", type=int, default=500)
    ap.add_argument("--hgb-iter", type=int, default=100)
    ap.add_argument("--skip-hgb", action="store_true")
    ap.add_argument("--skip-linear", action="store_true")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(run_one(json.loads(a.one)))); return
    n, K = (20_000, 100) if a.quick else (250_000, 500)
    cfgs = [] if a.skip_linear else [dict(models="linear", n=n, K=K, n_jobs=1, hgb_iter=0),
                                     dict(models="linear", n=n, K=K, n_jobs=2, hgb_iter=0)]
    if not a.skip_hgb:
        hn, hk = (20_000, 100) if a.quick else (a.hgb_n, a.hgb_k)
        cfgs.append(dict(models="hist-gradient-boosting", n=hn, K=hk, n_jobs=2, hgb_iter=a.hgb_iter))
    print(f"| nuisance models | n | K | n_jobs | wall (s) | parent CPU (s) | peak RSS parent (MB) | private ATE (truth) |")
    print("|---|---|---|---|---|---|---|---|")
    for cfg in cfgs:
        out = subprocess.run([sys.executable, __file__, "--one", json.dumps(cfg)], capture_output=True, text=True)
        if out.returncode: print(out.stderr); continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        name = cfg["models"] + (f" (max_iter={cfg['hgb_iter']})" if cfg["hgb_iter"] else " (logistic/linear)")
        print(f"| {name} | {cfg['n']} | {cfg['K']} | {cfg['n_jobs']} | {r['wall']:.1f} | {r['cpu_parent']:.1f} | "
              f"{r['peak_rss_mb']:.0f} | {r['ate']:.4f} ({r['truth']:.4f}) |", flush=True)


if __name__ == "__main__":
    main()
