"""When should a declared randomised trial with declared covariate bounds use the regression-adjusted difference in
means (`estimator="lin"`) instead of the difference in means? Tuning trials only (never the evaluation beds of
bench_ate_beds.py): n, the number of covariates d, the share R² of the outcome variance the covariates explain, and ε
vary; the table gives the RMSE ratio lin / private difference in means, and lin's coverage. Not collected by pytest.
Run: python tests/benchmarks/bench_lin_rule.py [--reps R] [--out FILE]
"""
import itertools, time, warnings
import numpy as np


def trial(n, d, r2, seed):
    "A trial: X uniform on [−1, 1]^d, outcome linear in X with share r2 of its variance, bounds ±(4 sd), effect 0.2."
    r = np.random.default_rng(seed)
    X, T = r.uniform(-1, 1, (n, d)), r.integers(0, 2, n)
    w = r.normal(size=d)
    w *= np.sqrt(r2 / (1 - r2) * 3 / (w @ w)) if r2 > 0 else 0.0   # Var(Xw) = |w|²/3 = r2/(1 − r2) (noise sd 1)
    sd = np.sqrt(1 / (1 - r2))
    b = 4 * sd
    return X, T, np.clip(0.2 * T + X @ w + r.normal(0, 1, n), -b, b), (-b, b)


def cell(n, d, r2, eps, reps):
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    out = {"dim": [], "lin": []}
    for s in range(reps):
        X, T, Y, ob = trial(n, d, r2, 3000 + s)
        for est in out:
            with warnings.catch_warnings(), reproducible_noise():
                warnings.simplefilter("ignore")
                m = DPATE(est, epsilon=eps, delta=1e-6, outcome_bounds=ob, x_bounds=(-1, 1), randomized=True,
                          accountant=PrivacyAccountant(), random_state=s).fit(Y, T, X=X)
            out[est].append((m.ate_ - 0.2, m.conf_int_[0] <= 0.2 <= m.conf_int_[1]))
    rm = {k: float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))) for k, v in out.items()}
    return rm["lin"] / rm["dim"], float(np.mean(np.array(out["lin"])[:, 1]))


def run(reps=30, progress=True):
    rows = []
    for n, d, r2, eps in itertools.product((300, 1000, 3000, 10000), (2, 5, 10), (0.05, 0.3, 0.6), (1.0, 4.0)):
        t0 = time.time()
        ratio, cov = cell(n, d, r2, eps, reps)
        rows.append(dict(n=n, d=d, r2=r2, eps=eps, ratio=ratio, coverage=cov))
        if progress: print(f"  n={n} d={d} R2={r2} eps={eps}: {ratio:.2f} ({time.time() - t0:.0f} s)", flush=True)
    return rows


def markdown(rows) -> str:
    lines = ["| n | d | R² | ε | lin / DIM RMSE | lin coverage | n·ε/(d+1)² |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n']} | {r['d']} | {r['r2']:g} | {r['eps']:g} | {r['ratio']:.2f} | {r['coverage']:.2f} | "
              f"{r['n'] * r['eps'] / (r['d'] + 1) ** 2:.0f} |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    from _out import run_and_write
    run_and_write(__file__, run, markdown, ', δ = 1e-6', default_reps=30)
