"""The private regression adjustment (DPLinAdjustment, notebook 10c) against the private difference in means on the
two randomised-trial beds of bench_ate_beds.py.

Not collected by pytest. Run: python tests/benchmarks/bench_lin.py [--reps R] [--eps 1,4] [--out FILE]
(about ten seconds at 40 repetitions on one core; notebook 10c shows tests/benchmarks/lin_rct.md).

Per (bed, ε): RMSE against the true ATE, its ratio to the private difference in means' RMSE on the same draws,
coverage and mean width of the 95 % interval (the width's ratio to the difference in means' follows the row's
name); the non-private regression adjustment (ε = ∞: the least-squares coefficient of T) for reference. The acceptance the estimator was built for: on rct_strong,
RMSE strictly below the private difference in means', width at most 1.5 times its width, coverage at least 0.90; on
rct_weak, RMSE at most 1.25 times its RMSE.
"""
import argparse, os, sys, time
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ate_beds import bed, markdown   # noqa: E402  (the beds and the table format are defined once, there)

ESTIMATORS = ("private difference in means", "private regression adjustment", "regression adjustment, eps=inf")


def fits(X, T, Y, ob, xb, eps, delta, seed):
    "Released (ate, lo, hi) of each estimator on one draw."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.dim import DPDifferenceInMeans
    from dp_causal_nb.lin import DPLinAdjustment
    d = DPDifferenceInMeans(epsilon=eps, delta=delta, outcome_bounds=ob, accountant=PrivacyAccountant(),
                            random_state=seed).fit(Y, T)
    lin = DPLinAdjustment(epsilon=eps, delta=delta, outcome_bounds=ob, x_bounds=xb, accountant=PrivacyAccountant(),
                          random_state=seed).fit(Y, T, X=X)
    ref = DPLinAdjustment(epsilon=np.inf, delta=delta, outcome_bounds=ob, x_bounds=xb,
                          accountant=PrivacyAccountant()).fit(Y, T, X=X)
    return {k: (m.ate_, *m.conf_int_) for k, m in zip(ESTIMATORS, (d, lin, ref))}


def run(beds=("rct_strong", "rct_weak"), epsilons=(1.0, 4.0), reps=40, delta=1e-6):
    "One row per (bed, ε, estimator): RMSE, ratio to the private DIM, coverage, width (its ratio in the row name)."
    from dp_causal_nb.core import reproducible_noise
    table = []
    for b in beds:
        for eps in epsilons:
            acc = {}
            for s in range(reps):
                X, T, Y, ob, xb, ate, _, _ = bed(b, s)
                with reproducible_noise():
                    for k, (a, lo, hi) in fits(X, T, Y, ob, xb, eps, delta, 1000 + s).items():
                        acc.setdefault(k, []).append((a - ate, lo <= ate <= hi, hi - lo))
            base = np.array(acc[ESTIMATORS[0]], float)
            base_rmse, base_width = np.sqrt(np.mean(base[:, 0] ** 2)), base[:, 2].mean()
            for k in ESTIMATORS:
                v = np.array(acc[k], float)
                rmse = float(np.sqrt(np.mean(v[:, 0] ** 2)))
                table.append(dict(bed=b, epsilon=eps, row=f"{k} (width × DIM {v[:, 2].mean() / base_width:.2f})",
                                  rmse=rmse, ratio=rmse / base_rmse, coverage=float(v[:, 1].mean()),
                                  width=float(v[:, 2].mean())))
    return table


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--eps", default="1,4")
    ap.add_argument("--out", default=None, help="also write the table (with how it was made) to this markdown file")
    a = ap.parse_args()
    t0 = time.time()
    md = markdown(run(epsilons=tuple(float(e) for e in a.eps.split(",")), reps=a.reps))
    print(md)
    if a.out:
        import datetime, platform
        head = (f"Made by `python tests/benchmarks/bench_lin.py --reps {a.reps} --eps {a.eps}` on "
                f"{datetime.date.today()} ({platform.machine()}, {time.time() - t0:.0f} s), δ = 1e-6, the same draws "
                "(seeds 0 to reps − 1) for every estimator.\n\n")
        with open(a.out, "w") as f: f.write(head + md + "\n")
