"""On real randomised trials, the default DPATE at epsilon=inf agrees with the trial's difference in means within
one standard error of that difference: defaults that hold from a few hundred records up.

Trials shipped by `causaldata` (the optional `data` extra; skipped without it), with the randomised treatment:
NSW job training (Lalonde; n = 445, continuous earnings, 8 covariates), Thornton's HIV-results incentive
(binary outcome, n ≈ 2 800), Broockman's out-of-district e-mail experiment (binary, n ≈ 5 600) and the
intensive-information arm (column `intensive`) of the Chinese weather-insurance experiment (binary, n ≈ 1 400).
Outcome bounds are public: earnings in [0, 100 000] USD, binary outcomes in [0, 1]. Three fold/noise seeds per trial, fixed."""
import warnings
import numpy as np
import pytest

causaldata = pytest.importorskip("causaldata", reason="the real trials need the optional extra: pip install '.[data]'")
from dp_causal_nb import DPATE


def _trials():
    from causaldata import nsw_mixtape, thornton_hiv, black_politicians, social_insure
    out = {}
    d = nsw_mixtape.load_pandas().data
    out["nsw"] = (d[["age", "educ", "black", "hisp", "marr", "nodegree", "re74", "re75"]], d["treat"], d["re78"], (0, 100_000))
    d = thornton_hiv.load_pandas().data.dropna(subset=["got", "any", "age", "distvct", "hiv2004"])
    out["hiv"] = (d[["age", "distvct", "hiv2004"]], d["any"], d["got"], (0, 1))
    d = black_politicians.load_pandas().data
    out["email"] = (d[["leg_black", "totalpop", "medianhhincom", "blackpercent", "statessquireindex", "urbanpercent",
                       "leg_senator", "leg_democrat", "south"]], d["treat_out"], d["responded"], (0, 1))
    cols = ["age", "agpop", "ricearea_2010", "disaster_prob", "male", "risk_averse", "literacy"]
    d = social_insure.load_pandas().data.dropna(subset=cols + ["takeup_survey", "intensive"])
    out["insurance"] = (d[cols], d["intensive"], d["takeup_survey"], (0, 1))
    return {k: (X.to_numpy(float), T.to_numpy(int), Y.to_numpy(float), b) for k, (X, T, Y, b) in out.items()}


TRIALS = _trials()


@pytest.mark.parametrize("name", list(TRIALS))
def test_default_agrees_with_difference_in_means(name):
    X, T, Y, bounds = TRIALS[name]
    a, b = Y[T == 1], Y[T == 0]
    dim, se = a.mean() - b.mean(), np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(3):
            m = DPATE(epsilon=np.inf, outcome_bounds=bounds, random_state=seed).fit(Y, T, X=X)
            print(f"{name}: n={len(Y)}, K={m.n_folds_}: DPATE {m.ate_:.4g} vs difference in means {dim:.4g} ± {se:.2g}")
            assert abs(m.ate_ - dim) <= se
