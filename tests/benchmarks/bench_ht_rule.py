"""When should a declared randomised trial with a declared assignment probability p use the Horvitz–Thompson estimate
(`estimator="ht"`, notebook 10d) instead of the difference in means? Tuning trials only (never the evaluation beds of
bench_ate_beds.py): n, ε, p and the offset of the outcome's mean from the midpoint of the declared range (a share of
the half-range; the public rule cannot see it) vary; the table gives the RMSE ratio ht / private difference in means,
ht's coverage, and the public tolerance t*(n, μ, p) of `ht_tolerance` that `prefers_ht` compares with
HT_MIN_TOLERANCE. Not collected by pytest. Run: python tests/benchmarks/bench_ht_rule.py [--reps R] [--out FILE]
"""
import itertools, time, warnings
import numpy as np


def trial(n, p, offset, seed):
    "A Bernoulli(p) trial: outcome N(offset·4 + 0.2·T, 1) clipped to the declared range [−4, 4], effect 0.2."
    r = np.random.default_rng(seed)
    T = (r.uniform(size=n) < p).astype(int)
    return T, np.clip(4 * offset + 0.2 * T + r.normal(0, 1, n), -4, 4), (-4.0, 4.0)


def cell(n, p, offset, eps, reps):
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.core import reproducible_noise
    out = {"dim": [], "ht": []}
    for s in range(reps):
        T, Y, ob = trial(n, p, offset, 5000 + s)
        for est in out:
            with warnings.catch_warnings(), reproducible_noise():
                warnings.simplefilter("ignore")
                m = DPATE(est, epsilon=eps, delta=1e-6, outcome_bounds=ob, randomized=True, assignment_probability=p,
                          accountant=PrivacyAccountant(), random_state=s).fit(Y, T)
            out[est].append((m.ate_ - 0.2, m.conf_int_[0] <= 0.2 <= m.conf_int_[1]))
    rm = {k: float(np.sqrt(np.mean(np.array(v)[:, 0] ** 2))) for k, v in out.items()}
    return rm["ht"] / rm["dim"], float(np.mean(np.array(out["ht"])[:, 1]))


def run(reps=100, progress=True):
    from dp_causal_nb.ht import ht_tolerance
    from dp_causal_nb.mechanisms import gdp_mu
    rows = []
    for n, eps, p, offset in itertools.product((300, 1000, 3000, 10000), (0.5, 1.0, 4.0), (0.5, 0.3), (0.0, 0.1, 0.25)):
        t0 = time.time()
        ratio, cov = cell(n, p, offset, eps, reps)
        rows.append(dict(n=n, eps=eps, p=p, offset=offset, ratio=ratio, coverage=cov,
                         tolerance=ht_tolerance(n, gdp_mu(eps, 1e-6), p)))
        if progress: print(f"  n={n} eps={eps} p={p} offset={offset}: {ratio:.2f} ({time.time() - t0:.0f} s)", flush=True)
    return rows


def markdown(rows) -> str:
    lines = ["| n | ε | p | offset | ht / DIM RMSE | ht coverage | t* |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n']} | {r['eps']:g} | {r['p']:g} | {r['offset']:g} | {r['ratio']:.2f} | {r['coverage']:.2f} | "
              f"{r['tolerance']:.3f} |" for r in sorted(rows, key=lambda r: -r["tolerance"])]
    return "\n".join(lines)


if __name__ == "__main__":
    from _out import run_and_write
    run_and_write(__file__, run, markdown, ', δ = 1e-6', default_reps=100)
