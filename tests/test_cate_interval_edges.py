"""Edges of the CATE intervals and of the shareable function's intervals.

What must hold: every grid plan a fit or a release needs is checked on public inputs before any charge, draw or
claim: the variance statistics' plan for the number of statistics the fit will release (two in the rule's mode
'function'), the nuisance models' plans (final 'ridge'/'kernel' have no statistics to fail first), and the global
query release's plan before the single release is claimed; `DPCATE.summary()` (and `dp-causal cate --query`, which
calls it) does not fail after the release on a public condition of the robustness value (few second-stage records
for the number of covariates) or on a degenerate interval; no released interval reads as certainty (zero width) where
nothing was derived for it: at ε = ∞ the shareable function, its file (`cate --save`, `cate-eval`) and the GP path's
uniform band have no privacy noise and no sampling part, as DPCATE's kernel stage at ε = ∞, which has no interval.
"""
import json, warnings
import numpy as np
import pytest
import dp_causal_nb.cate as cm
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.datasets import dataset1
from dp_causal_nb.functional import release_cate_function, release_shareable_cate_function
from cli_runner import run

DS = dataset1(400, random_state=0)
KW = dict(x_bounds=DS.x_bounds, outcome_bounds=DS.outcome_bounds, random_state=0)
Q = DS.dgp.sample(4, random_state=1).X


def _fit(Y=DS.Y, T=DS.T, X=DS.X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPCATE(accountant=PrivacyAccountant(), **(KW | kw)).fit(Y, T, X=X)


def _small(n=24, q=10, seed=0):
    "n records of q covariates in [-1, 1]: n // 2 second-stage records, fewer than q + 4."
    r = np.random.default_rng(seed)
    X, T = r.uniform(-1, 1, (n, q)), np.arange(n) % 2
    return np.clip(1 + T + 0.3 * r.normal(size=n), 0, 4), T, X


def _write(folder, Y, T, X, Xq) -> list:
    "The records and the public query points as CSV files in `folder`; returns the covariate names."
    names = [f"x{j}" for j in range(X.shape[1])]
    line = lambda cells: ",".join(map(repr, cells)) + "\n"
    body = "".join(line([y, t, *x]) for y, t, x in zip(Y.tolist(), T.tolist(), X.tolist()))
    (folder / "d.csv").write_text("y,t," + ",".join(names) + "\n" + body)
    (folder / "q.csv").write_text(",".join(names) + "\n" + "".join(line(x) for x in Xq.tolist()))
    return names


# --- the statistics' plan: checked for one statistic (final='auto') where mode 'function' releases two ----------------
def test_statistics_plan_counts_the_shape_statistic(monkeypatch):
    """At ε = 0.007 the rule for n = 10⁶ records picks mode 'function' (two statistics: ĉ's and the shape's); their
    grid plan exists for one coordinate (ε ≥ 0.0055) but not for two (ε ≥ 0.0082). The rule's n is substituted (public
    input) so that the reproducer fits 400 records."""
    rule = cm.default_cate_params
    monkeypatch.setattr(cm, "default_cate_params", lambda n, *a, **k: rule(10 ** 6, *a, **k))
    draws, grid = [], cm.grid_release
    monkeypatch.setattr(cm, "grid_release", lambda *a, **k: (draws.append(a[1].dim), grid(*a, **k))[1])
    acc = PrivacyAccountant()
    with pytest.raises(ValueError):
        DPCATE(final="auto", epsilon=0.007, accountant=acc, **KW).fit(DS.Y, DS.T, X=DS.X)
    # now: the ledger holds ('DPCATE', (0.007, 1e-05)) and ĉ and θ̃ were drawn, then release_statistics' plan raises
    # "a gaussian release of 2 coordinates ... needs more than 12288 grid steps"
    assert len(acc.ledger) == 0 and not draws


# --- summary(): the robustness value's public condition, after the release ------------------------------------------
def test_summary_with_few_second_stage_records_per_covariate():
    "n₂ = 12 records, q = 10 covariates: dof = n₂ − q − 2 < 2. The release is made; summary() must still report it."
    Y, T, X = _small()
    with reproducible_noise():
        est = _fit(Y, T, X, final="auto", epsilon=1e3, x_bounds=(-1, 1), outcome_bounds=(0, 4))
        est.effect(X[:3])
        s = est.summary(X[:3])        # now: ValueError "n must exceed n_covariates + 3, got n=12, n_covariates=10"
    assert s.ate == est.ate(X[:3])


def test_cli_query_with_few_second_stage_records_per_covariate(tmp_path):
    "The same through `dp-causal cate --query`: the budget is charged and the release made, then the job exits 2."
    Y, T, X = _small()
    names = _write(tmp_path, Y, T, X, X[:3])
    with reproducible_noise():
        code, out, err = run(["cate", tmp_path / "d.csv", "--outcome", "y", "--treatment", "t", "--outcome-bounds",
                              "0,4", "--covariates", ",".join(names), "--x-bounds", "-1,1", "--epsilon", "1000",
                              "--delta", "1e-5", "--seed", "0", "--query", tmp_path / "q.csv", "--json"])
    assert code == 0, err             # now: 2, "dp-causal: error: n must exceed n_covariates + 3, got n=12, ..."


def test_summary_and_interval_of_a_constant_outcome_at_infinity():
    """ε = ∞, every outcome equal: the exact sandwich is 0, so `ate_interval` is (0, 0) — a zero-width interval read
    as certainty — and summary() raises in the robustness value ("the interval needs lo < hi")."""
    Y = np.full(len(DS.Y), DS.outcome_bounds[0])
    est = _fit(Y, final="auto", epsilon=np.inf)
    try: lo, hi = est.ate_interval(Q)
    except ValueError: lo, hi = None, None                  # refusing, as the kernel stage at ε = ∞ does, is fine
    assert lo is None or hi > lo
    est.summary(Q)                                         # now: ValueError from sensitivity.stderr_from_interval


# --- ε = ∞: the shareable function and the GP path's band ------------------------------------------------------------
def test_cli_save_at_infinity_prints_no_zero_width_interval(tmp_path):
    """`cate --save --query` at ε = ∞: the text says "an interval ... never a zero-width certainty" and prints
    lower = upper = CATE at every point (cate-eval the same), where `cate --query --final kernel` prints no interval."""
    Y, T, X = DS.Y[:200], DS.T[:200], DS.X[:200]
    names = _write(tmp_path, Y, T, X, Q)
    box = f"{float(np.min(DS.x_bounds[0]))!r},{float(np.max(DS.x_bounds[1]))!r}"      # one public box for all columns
    code, out, err = run(["cate", tmp_path / "d.csv", "--outcome", "y", "--treatment", "t", "--outcome-bounds",
                          ",".join(map(str, DS.outcome_bounds)), "--covariates", ",".join(names), "--x-bounds", box,
                          "--epsilon", "inf", "--delta", "1e-5", "--seed", "0", "--save", tmp_path / "f.npz",
                          "--query", tmp_path / "q.csv", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["lower"] is None or not np.allclose(r["lower"], r["upper"])


@pytest.mark.parametrize("release", ["shareable", "path"])
def test_function_intervals_at_infinity_are_not_zero_width(release):
    """`SharedCATEFunction.evaluate` and `PrivateCATEFunction.uniform_band` at ε = ∞ (no noise, no sampling part
    derived) must not give lower = upper = value; refusing with a clear error, as DPCATE's kernel stage at ε = ∞
    does, is fine (the values stay available by calling the function)."""
    est = _fit(final="kernel", epsilon=np.inf, bandwidth=0.5, lam=0.1)
    f = release_shareable_cate_function(est, n_components=20) if release == "shareable" else release_cate_function(est)
    try: c = f.evaluate(Q) if release == "shareable" else f.uniform_band(Q)
    except ValueError as e:
        assert "zero-width one would read as certainty" in str(e)
        assert np.all(np.isfinite(f(Q)))
        return
    assert not np.allclose(c.lower, c.upper), "a zero-width interval at every point, read as certainty"


# --- refusals on public inputs that come after the charge (or after the claim of the single release) ----------------
@pytest.mark.parametrize("final,kw", [("ridge", dict(calibration="global")), ("kernel", dict(bandwidth=0.5, lam=0.1))])
def test_small_epsilon_nuisance_plan_refused_before_charge_and_noise(final, kw, monkeypatch):
    """ε = 0.003 with final 'ridge' (global) or 'kernel' (no variance statistics, so no early check): the propensity
    model is charged and drawn, then the outcome model's grid plan (42 coordinates) raises."""
    import dp_causal_nb.secure_noise as sn
    draws, grid = [], sn.grid_release
    monkeypatch.setattr(sn, "grid_release", lambda *a, **k: (draws.append(a[1].dim), grid(*a, **k))[1])
    acc = PrivacyAccountant()
    with pytest.raises(ValueError):
        DPCATE(final=final, epsilon=0.003, accountant=acc, **(KW | kw)).fit(DS.Y, DS.T, X=DS.X)
    # now: acc.spent == (0.0015, 5e-06) and one draw of 3 coordinates before the refusal
    assert len(acc.ledger) == 0 and not draws


def test_global_query_plan_refused_before_the_release_is_claimed():
    """calibration='global' at ε = 0.004 and 3000 public query points: the grid plan raises "release fewer
    coordinates at once" after `_claim_release`, so the advice cannot be followed (the next call: BudgetError)."""
    est = _fit(final="ridge", calibration="global", epsilon=0.004)
    lo, hi = (np.asarray(b, float) for b in DS.x_bounds)
    Xq = np.random.default_rng(0).uniform(lo, hi, (3000, len(lo)))
    with pytest.raises(ValueError, match="fewer coordinates"):
        est.effect(Xq)
    est.effect(Xq[:3])                # now: BudgetError "the second-stage release ... was already made ('effect')"
