"""DPCATE's intervals, the one clamp helper, and the function release planned at construction.

What must hold: `effect_interval` (sampling + privacy noise) contains `noise_interval` and has positive width;
every released function (DPCATE.effect, the shareable function in Python and from its file, the curator's GP path)
clamps to the feasible range through `second_stage.clamp_to_feasible`, and a clamped interval is flagged and never
zero-width; `share=True` refuses a final that cannot be shared before any charge; there is no default budget; a
non-private fit charges no δ. What the intervals cover is said and measured: `effect_interval` covers the population
fit of the declared shape (its own target, computed as in tests/benchmarks/bench_cate_intervals.py), not τ(x) where
the shape's shrinkage is large, and `summary()` names that target.
"""
import importlib.util, warnings
from pathlib import Path
import numpy as np
import pytest
from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.cate import DPCATE
from dp_causal_nb.datasets import dataset1
from dp_causal_nb.functional import release_shareable_cate_function, SharedCATEFunction
from dp_causal_nb.second_stage import clamp_to_feasible

DS = dataset1(800, random_state=0)
Q = DS.dgp.sample(15, random_state=1).X
KW = dict(x_bounds=DS.x_bounds, outcome_bounds=DS.outcome_bounds, random_state=0)


def fit(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPCATE(accountant=PrivacyAccountant(), **(KW | kw)).fit(DS.Y, DS.T, X=DS.X)


@pytest.mark.parametrize("final", ["auto", "ridge"])
@pytest.mark.parametrize("epsilon", [1.0, 8.0, np.inf])
def test_effect_interval_contains_noise_interval(final, epsilon):
    est = fit(final=final, epsilon=epsilon)
    lo, hi = est.effect_interval(Q)
    nlo, nhi = est.noise_interval(Q)
    assert np.all(lo <= nlo + 1e-12) and np.all(nhi <= hi + 1e-12) and np.all(hi > lo)
    alo, ahi = est.ate_interval(Q)
    blo, bhi = est.ate_noise_interval(Q)
    assert alo <= blo + 1e-12 and bhi <= ahi + 1e-12 and ahi > alo


def test_every_released_function_clamps_the_same_way(tmp_path):
    wide = (0.0, 1e5)
    Y = np.clip(DS.Y, *wide)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPCATE(share=True, epsilon=0.01, lam=0.01, accountant=PrivacyAccountant(), x_bounds=DS.x_bounds,
                     outcome_bounds=wide, random_state=0).fit(Y, DS.T, X=DS.X)
    g = release_shareable_cate_function(est, n_components=50)
    raw = g.raw(Q)
    assert np.any(np.abs(raw) > 1e5)
    want = clamp_to_feasible(raw, wide)
    np.testing.assert_array_equal(g(Q), want.value)
    np.testing.assert_array_equal(SharedCATEFunction.load(g.save(tmp_path / "f.npz"))(Q), want.value)
    r = g.evaluate(Q)
    assert r.clamped.any() and np.all(r.upper > r.lower)          # flagged, never a zero-width certainty


def test_share_is_planned_before_any_charge():
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="share=True"):
        DPCATE(share=True, final="ridge", epsilon=1.0, accountant=acc, **KW).fit(DS.Y, DS.T, X=DS.X)
    assert len(acc.ledger) == 0
    with pytest.raises(ValueError, match=r"refit with DPCATE\(\.\.\., share=True\)"):
        release_shareable_cate_function(fit(epsilon=1.0))


def test_budget_is_required_and_infinity_charges_no_delta():
    with pytest.raises(ValueError, match="give a privacy budget"):
        DPCATE(**KW).fit(DS.Y, DS.T, X=DS.X)
    assert fit(epsilon=np.inf).spent_by_stage_["total"] == (np.inf, 0.0)


def _coverage_bench():
    "The coverage benchmark's population fits (tests/benchmarks/bench_cate_intervals.py)."
    path = Path(__file__).parent / "benchmarks" / "bench_cate_intervals.py"
    spec = importlib.util.spec_from_file_location("bench_cate_intervals", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_effect_interval_covers_its_own_target_not_a_shrunk_tau():
    """The plain ridge at ε = ∞ (λ = 0.01 on 20 random features) shrinks τ by many of its sandwich sds: the interval
    covers the ridge's population fit (same map, λ, radius; true nuisances), as its docstring says, and not τ(x)."""
    bench = _coverage_bench()
    big, oracle = DS.dgp.sample(40_000, random_state=30_000), bench.OracleNuisances(DS.dgp)
    tau = DS.dgp.cate(Q)
    own_covered, tau_covered = [], []
    for r in range(12):
        ds = DS.dgp.sample(2000, random_state=100 + r)
        est = DPCATE(final="ridge", epsilon=np.inf, accountant=PrivacyAccountant(), x_bounds=ds.x_bounds,
                     outcome_bounds=ds.outcome_bounds, random_state=r).fit(ds.Y, ds.T, X=ds.X)
        lo, hi = est.effect_interval(Q)
        own = bench.own_targets(est, big, Q, oracle)[0]
        own_covered.append(np.mean((lo <= own) & (own <= hi)))
        tau_covered.append(np.mean((lo <= tau) & (tau <= hi)))
    assert np.mean(own_covered) >= 0.85 and np.mean(tau_covered) <= 0.3, (own_covered, tau_covered)


@pytest.mark.parametrize("final,covers", [("auto", "population fit of the released shape"),
                                          ("kernel", "non-private second-stage fit")])
def test_summary_names_the_interval_target(final, covers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(fit(final=final, epsilon=1.0).summary(Q))
    assert f"the interval covers the {covers}" in text
