"""The DP-ATE paper's binary-outcome benchmark (datasets.ate_binary: n = 50 000, d = 10) at 0.5-GDP, with the
private difference in means as a row.

Not collected by pytest. Run: python tests/benchmarks/bench_ate_paper_binary.py [--reps R] [--out FILE]
The covariates are standard normal; the public covariate bounds declared for the DP designs are (−4, 4) (about one
value in 16 000 lies outside and is clipped). RMSE is against the exact ATE of the setting.
"""
import argparse, time, warnings
import numpy as np


def run(reps=20, mu=0.5, n=50_000):
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    from dp_causal_nb.datasets import ate_binary
    rows = {}
    for s in range(reps):
        ds = ate_binary(n, random_state=s)
        kw = dict(mu=mu, delta=1e-5, outcome_bounds=(0, 1), accountant=PrivacyAccountant(), random_state=100 + s)
        fits = {"private difference in means": DPATE("dim", **kw),
                "AIPW split design": DPATE("aipw", design="split", x_bounds=(-4, 4), **kw),
                "AIPW split design, worst-case score range": DPATE("aipw", design="split", x_bounds=(-4, 4),
                                                                   score_clip="none", **kw),
                "AIPW cross-fitted design (the default)": DPATE(x_bounds=(-4, 4), **kw)}
        with warnings.catch_warnings(), reproducible_noise():
            warnings.simplefilter("ignore")
            for k, m in fits.items():
                m.fit(ds.Y, ds.T, X=ds.X)
                rows.setdefault(k, []).append((m.ate_ - ds.ate, m.conf_int_[0] <= ds.ate <= m.conf_int_[1],
                                               m.conf_int_[1] - m.conf_int_[0]))
    out = []
    for k, v in rows.items():
        v = np.array(v, float)
        out.append(dict(row=k, rmse=float(np.sqrt(np.mean(v[:, 0] ** 2))), coverage=float(v[:, 1].mean()),
                        width=float(v[:, 2].mean())))
    return out


def markdown(table, mu=0.5) -> str:
    lines = [f"| estimator ({mu}-GDP) | RMSE | coverage | width |", "|---|---|---|---|"]
    lines += [f"| {r['row']} | {r['rmse']:.4f} | {r['coverage']:.2f} | {r['width']:.4f} |" for r in table]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    t0 = time.time()
    md = markdown(run(a.reps))
    print(md)
    if a.out:
        import datetime, platform
        with open(a.out, "w") as f:
            f.write(f"Made by `python tests/benchmarks/bench_ate_paper_binary.py --reps {a.reps}` on "
                    f"{datetime.date.today()} ({platform.machine()}, {time.time() - t0:.0f} s).\n\n{md}\n")
