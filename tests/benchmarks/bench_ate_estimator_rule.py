"""Which score should the split design use when the nuisances are private? (a default argued from a table)

RMSE of the released ATE (and coverage of its interval) for AIPW and IPW in DPATE's split design, against the naive
difference in means, on the mixed-covariate test bed (80 columns, confounded; `datasets.mixed_covariates`) and two
DP-ATE simulation settings, for several epsilon. Covariate bounds are the public ones of each generator ((-5, 5) for
the Gaussian settings, clipped). Usage:  python tests/benchmarks/bench_ate_estimator_rule.py [REPS] [--big]
"""
import json, sys, warnings
import numpy as np
from dp_causal_nb.datasets import mixed_covariates, ate_k_study, ate_binary
from dp_causal_nb.ate import DPATE
from dp_causal_nb.accounting import PrivacyAccountant

XB = {"k_study": (-5.0, 5.0), "binary": (-5.0, 5.0)}

def sample(name, n, seed):
    if name == "mixed":
        ds = mixed_covariates(n, random_state=seed)
        return ds.X, ds.T, ds.Y, float(ds.tau.mean()), ds.outcome_bounds, ds.x_bounds, 0.1
    ds = dict(k_study=ate_k_study, binary=ate_binary)[name](n, random_state=seed)
    return ds.X, ds.T, ds.Y, ds.ate, ds.outcome_bounds, XB[name], ds.propensity_clip

def row(name, n, eps, reps):
    acc = {}
    for rep in range(reps):
        X, T, Y, truth, yb, xb, c = sample(name, n, 1000 + rep)
        acc.setdefault("dim", []).append(Y[T == 1].mean() - Y[T == 0].mean() - truth)
        for est in ("aipw", "ipw"):
            m = DPATE(est, design="split", epsilon=eps, delta=1e-6, outcome_bounds=yb, x_bounds=xb, propensity_clip=c,
                      out_of_bounds="clip", accountant=PrivacyAccountant(), random_state=rep).fit(Y, T, X=X)
            lo, hi = m.conf_int_
            acc.setdefault(est, []).append(m.ate_ - truth); acc.setdefault(est + " cover", []).append(lo <= truth <= hi)
    return {k: round(float(np.mean(v)) if k.endswith("cover") else float(np.sqrt(np.mean(np.square(v)))), 3)
            for k, v in acc.items()}

def main(reps=12, big=False):
    warnings.simplefilter("ignore")
    grid = ((("mixed", 40_000), ("k_study", 40_000)) if big else (("mixed", 4800), ("k_study", 5000), ("binary", 5000)))
    for name, n in grid:
        for eps in (np.inf, 16.0, 4.0, 1.0):
            print(json.dumps({"setting": name, "n": n, "epsilon": "inf" if np.isinf(eps) else eps, "reps": reps}
                             | row(name, n, eps, reps)), flush=True)

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 12, big="--big" in sys.argv)
