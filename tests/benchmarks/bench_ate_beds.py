"""Private ATE on four data shapes, with the private difference in means as a row of every table.

Not collected by pytest. Run: python tests/benchmarks/bench_ate_beds.py [--reps R] [--beds a,b] [--eps 1,4]
(about 15 minutes at the default 20 repetitions on one core; notebook 12 stores its table).

Beds (synthetic, so the truth is known; the shapes of the real samples an analyst met):
  rct_weak    randomised trial, n = 2 800, binary outcome, three weak covariates (R² ≈ 0.01)
  rct_strong  randomised trial, n = 2 800, outcome in [−3, 3], covariates explain ≈ 55 % of its variance
  rare        observational, n = 16 000, 1.1 % treated (confounded), earnings in [0, 61 000]
  cols80      observational, n = 4 800, 80 mixed columns (datasets.mixed_covariates)
Rows: the private difference in means (DPDifferenceInMeans, same budget), DPATE's default as an analyst calls it
(x_bounds declared; randomized=True on the trials, where the default is the difference in means or lin; elsewhere the
cross-fitted design; where the rare-arm check refuses, the analyst's refit with a propensity clip below the released
share, on the budget the refusal left), on the trials the regression-adjusted difference in means (lin), the
Horvitz-Thompson estimate with the trials' p = 1/2 declared (ht, without and with the covariate slope of lin) and
DPATE's default with that declaration (the row names the estimator its public rule ran), the AIPW designs (the split design with its adaptive score clipping and with the worst-case score range; the cross-fitted
design; the fold ensemble), and the non-private difference in means and AIPW split design (ε = ∞) for reference; on
the observational beds, the effect on the treated (rows "ATT: ...", scored against the true ATT of the draw). RMSE is
against the true ATE (ATT); "x DIM" is the ratio to the private difference in means; coverage and width are of the
95 % interval.
"""
import argparse, time, warnings
import numpy as np


def bed(name, seed):
    "(X, T, Y, outcome_bounds, x_bounds, true ATE, randomised?, true ATT) of one draw of a bed."
    r = np.random.default_rng(seed)
    if name in ("rct_weak", "rct_strong"):
        n = 2800
        X, T = r.uniform(-1, 1, (n, 3)), r.integers(0, 2, n)
        if name == "rct_weak":
            Y = r.binomial(1, 0.45 + 0.05 * T + 0.03 * X[:, 0]).astype(float)
            return X, T, Y, (0.0, 1.0), (-1.0, 1.0), 0.05, True, 0.05
        Y = np.clip(0.3 * T + X @ np.array([1.0, 0.6, 0.0]) + r.normal(0, 0.6, n), -3, 3)
        return X, T, Y, (-3.0, 3.0), (-1.0, 1.0), 0.3, True, 0.3
    if name == "rare":
        n = 16_000
        X = np.c_[r.uniform(0, 1, (n, 3)), r.integers(0, 2, (n, 2))]
        pi = 1 / (1 + np.exp(-(-5.2 + 1.5 * X[:, 0] - 1.0 * X[:, 1] + 0.8 * X[:, 3])))
        T = (r.uniform(size=n) < pi).astype(int)
        tau = 1500 + 2000 * X[:, 1]
        y0 = 8000 + 20_000 * X[:, 0] + 6000 * X[:, 2] + 4000 * X[:, 4] + r.normal(0, 6000, n)
        Y = np.clip(y0 + T * tau, 0, 61_000)
        return X, T, Y, (0.0, 61_000.0), (0.0, 1.0), float(1500 + 2000 * 0.5), False, float(tau[T == 1].mean())
    if name == "cols80":
        from dp_causal_nb.datasets import mixed_covariates
        ds = mixed_covariates(4800, random_state=seed)
        return (ds.X, ds.T, ds.Y, tuple(ds.outcome_bounds), ds.x_bounds, float(ds.tau.mean()), False,
                float(ds.tau[ds.T == 1].mean()))
    raise ValueError(name)


def rows(X, T, Y, ob, xb, randomized, eps, delta, seed):
    "Released (ate, lo, hi) of each row on one draw."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.ate import DPATE
    from dp_causal_nb.dim import DPDifferenceInMeans
    out = {}
    d = DPDifferenceInMeans(epsilon=eps, delta=delta, outcome_bounds=ob, accountant=PrivacyAccountant(),
                            random_state=seed).fit(Y, T)
    out["private difference in means"] = (d.ate_, *d.conf_int_)
    kw = dict(epsilon=eps, delta=delta, outcome_bounds=ob, accountant=PrivacyAccountant(), random_state=seed)
    fits = {"DPATE default": DPATE(x_bounds=xb, randomized=randomized, **kw),
            "AIPW split design": DPATE("aipw", design="split", x_bounds=xb, **kw),
            "AIPW split design, worst-case score range": DPATE("aipw", design="split", x_bounds=xb, score_clip="none",
                                                               **kw),
            "AIPW cross-fitted design": DPATE("aipw", design="crossfit", x_bounds=xb, **kw),
            "AIPW fold design": DPATE("aipw", design="fold", **kw)}
    from dp_causal_nb.ate import RareArmError, TREATED_COUNT_SHARE
    share = None
    if randomized:                     # a trial's regression-adjusted difference in means (notebook 10c)
        fits["regression adjustment (lin)"] = DPATE("lin", x_bounds=xb, randomized=True, **kw)
        # the trials draw T ~ Bernoulli(1/2): declared, the Horvitz-Thompson estimate (notebook 10d) can run
        fits["Horvitz-Thompson (ht), p = 1/2 declared"] = DPATE("ht", randomized=True, assignment_probability=0.5,
                                                                **kw)
        fits["Horvitz-Thompson with the lin slope (ht, x_bounds declared), p = 1/2 declared"] = DPATE(
            "ht", x_bounds=xb, randomized=True, assignment_probability=0.5, **kw)
        fits["DPATE default, p = 1/2 declared"] = DPATE(x_bounds=xb, randomized=True, assignment_probability=0.5,
                                                        **kw)
    for k, m in fits.items():
        try: m.fit(Y, T, X=X)
        except RareArmError as e:      # Theorem 2e: refused after the treated count (its share of the budget spent)
            share = e.minority_share
            out[k] = (np.nan, np.nan, np.nan)
            continue
        if k == "DPATE default, p = 1/2 declared": k = f"{k} (ran {m.estimator_})"   # the public rule's pick
        out[k] = (m.ate_, *m.conf_int_)
    if share is not None:              # the refusal's advice: a clip below the released share, on the budget left
        m = DPATE("aipw", design="split", x_bounds=xb, propensity_clip=max(share / 2, 1 / len(Y)),
                  **{**kw, "epsilon": eps * (1 - TREATED_COUNT_SHARE)}).fit(Y, T, X=X)
        out["AIPW split design, refit at propensity_clip = released share / 2"] = (m.ate_, *m.conf_int_)
    if not randomized:       # the effect on the treated (rows scored against the true ATT)
        for k, design in (("ATT: DPATE split design", "split"), ("ATT: DPATE cross-fitted design", "crossfit")):
            try: m = DPATE(estimand="att", design=design, x_bounds=xb, **kw).fit(Y, T, X=X)
            except ValueError as e:       # refused before any charge (public proxy: the model cannot adjust)
                if "toward a constant" not in str(e): raise
                out[k] = (np.nan, np.nan, np.nan)
                continue
            out[k] = (m.ate_, *m.conf_int_)
        m = DPATE(estimand="att", design="crossfit", x_bounds=xb, epsilon=np.inf, outcome_bounds=ob,
                  accountant=PrivacyAccountant(), random_state=seed).fit(Y, T, X=X)
        out["ATT: cross-fitted design, eps=inf"] = (m.ate_, *m.conf_int_)
    d = DPDifferenceInMeans(epsilon=np.inf, delta=delta, outcome_bounds=ob, accountant=PrivacyAccountant()).fit(Y, T)
    out["difference in means, eps=inf"] = (d.ate_, *d.conf_int_)
    m = DPATE("aipw", design="split", x_bounds=xb, epsilon=np.inf, outcome_bounds=ob,
              accountant=PrivacyAccountant(), random_state=seed)
    try: out["AIPW split design, eps=inf"] = (m.fit(Y, T, X=X).ate_, *m.conf_int_)
    except RareArmError: out["AIPW split design, eps=inf"] = (np.nan, np.nan, np.nan)
    return out


def run(beds=("rct_weak", "rct_strong", "rare", "cols80"), epsilons=(1.0, 4.0), reps=20, delta=1e-6, progress=True):
    "One table row per (bed, ε, estimator): RMSE vs the true ATE, ratio to the private DIM, coverage, width."
    from dp_causal_nb.core import reproducible_noise
    table = []
    for b in beds:
        for eps in epsilons:
            t0, acc = time.time(), {}
            for s in range(reps):
                X, T, Y, ob, xb, ate, rnd, att = bed(b, s)
                with warnings.catch_warnings(), reproducible_noise():
                    warnings.simplefilter("ignore")
                    for k, (a, lo, hi) in rows(X, T, Y, ob, xb, rnd, eps, delta, 1000 + s).items():
                        truth = att if k.startswith("ATT") else ate
                        acc.setdefault(k, []).append((a - truth, lo <= truth <= hi, hi - lo))
            base = np.sqrt(np.mean(np.array(acc["private difference in means"])[:, 0] ** 2))
            for k, v in acc.items():
                v = np.array(v, float)
                if np.isnan(v[:, 0]).all():
                    why = "the control model cannot adjust" if k.startswith("ATT") else "rare arm, Theorem 2e"
                    table.append(dict(bed=b, epsilon=eps, row=f"{k} (refused: {why})",
                                      rmse=np.nan, ratio=np.nan, coverage=np.nan, width=np.nan))
                    continue
                refused = np.isnan(v[:, 0])
                if refused.any():                # scored on the draws that ran; the row says how many were refused
                    k, v = f"{k} (refused on {int(refused.sum())} of {len(v)} draws)", v[~refused]
                rmse = float(np.sqrt(np.mean(v[:, 0] ** 2)))
                table.append(dict(bed=b, epsilon=eps, row=k, rmse=rmse, ratio=rmse / base,
                                  coverage=float(v[:, 1].mean()), width=float(v[:, 2].mean())))
            if progress: print(f"  {b} eps={eps}: {time.time() - t0:.0f} s", flush=True)
    return table


def markdown(table) -> str:
    lines = ["| bed | ε | estimator | RMSE | × private DIM | coverage | width |", "|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['bed']} | {r['epsilon']:g} | {r['row']} | {r['rmse']:.4g} | {r['ratio']:.2f} | "
                     f"{r['coverage']:.2f} | {r['width']:.4g} |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--beds", default="rct_weak,rct_strong,rare,cols80")
    ap.add_argument("--eps", default="1,4")
    ap.add_argument("--out", default=None, help="also write the table (with how it was made) to this markdown file")
    a = ap.parse_args()
    t0 = time.time()
    md = markdown(run(a.beds.split(","), tuple(float(e) for e in a.eps.split(",")), a.reps))
    print(md)
    if a.out:
        import datetime, platform
        head = (f"Made by `python tests/benchmarks/bench_ate_beds.py --reps {a.reps} --beds {a.beds} --eps {a.eps}` "
                f"on {datetime.date.today()} ({platform.machine()}, {time.time() - t0:.0f} s), δ = 1e-6.\n\n")
        with open(a.out, "w") as f: f.write(head + md + "\n")
