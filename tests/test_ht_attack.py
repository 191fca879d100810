"""Replace-one and interval checks of the Horvitz–Thompson release (notebook 10d, DPATE's 'ht' route).

Each test states the property the release should have; the noise is held with ``reproducible_noise()``."""
import numpy as np
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.ate import DPATE
from dp_causal_nb.core import reproducible_noise
from dp_causal_nb.ht import DPHorvitzThompson, ht_release

T20 = np.r_[np.ones(10), np.zeros(10)]
Y20 = np.full(20, 0.5)


def _ht_fits(seeds=range(200)):
    "DPHorvitzThompson at a small budget on 20 records: the noise dominates, the raw interval often leaves the range."
    with reproducible_noise():
        for s in seeds:
            yield DPHorvitzThompson(epsilon=0.05, delta=1e-6, outcome_bounds=(0, 1), assignment_probability=0.5,
                                    accountant=PrivacyAccountant(), random_state=s).fit(Y20, T20)


def test_conf_int_is_ordered():
    "conf_int_ is an interval: lower <= upper (ht_estimate clamps each end to one side only)."
    bad = [(m.random_state, m.conf_int_) for m in _ht_fits() if m.conf_int_[0] > m.conf_int_[1]]
    assert not bad, f"{len(bad)} of 200 releases publish lower > upper, e.g. {bad[0]}"


def test_conf_int_matches_effect_interval():
    "conf_int_ equals effect_interval(alpha=1 - level): both are post-processing of the same release."
    bad = []
    for m in _ht_fits():
        lo, hi = m.effect_interval(alpha=0.05)
        if not np.allclose((lo[0], hi[0]), m.conf_int_): bad.append((m.random_state, m.conf_int_, (lo[0], hi[0])))
    assert not bad, f"{len(bad)} of 200 differ, e.g. {bad[0]}"


def test_dpate_ht_conf_int_matches_effect_interval():
    "DPATE's 'ht' route: conf_int_ equals effect_interval(alpha=1 - level), and is ordered."
    bad = []
    with reproducible_noise():
        for s in range(200):
            m = DPATE("ht", randomized=True, assignment_probability=0.5, outcome_bounds=(0, 1), epsilon=0.05,
                      delta=1e-6, accountant=PrivacyAccountant(), random_state=s).fit(Y20, T20)
            lo, hi = m.effect_interval(alpha=0.05)
            ci = tuple(m.conf_int_)
            if ci[0] > ci[1] or not np.allclose((np.ravel(lo)[0], np.ravel(hi)[0]), ci): bad.append((s, ci, lo, hi))
    assert not bad, f"{len(bad)} of 200 differ or are inverted, e.g. {bad[0]}"


def test_tiny_probability_refused_before_the_charge():
    "A declared p whose noise variance overflows is a public input: refused (ValueError) before anything is charged."
    acc = PrivacyAccountant()
    with pytest.raises(ValueError):
        ht_release(Y20, T20, outcome_bounds=(0, 1), assignment_probability=1e-160, epsilon=1.0, delta=1e-6,
                   accountant=acc)
    assert not acc.ledger, f"charged before the refusal: {acc.ledger}"


@pytest.mark.xfail(strict=True, reason="a known limit of the normal interval: at eps = inf with n*min(p, 1-p) = 5 the "
                   "scores are too skewed (coverage 0.88 here; 0.93-0.97 at n = 30 and 100, >= 0.94 at eps <= 8); "
                   "the public rule prefers_ht never picks ht at eps = inf")
def test_coverage_hard_bernoulli_trial():
    "95% interval, Bernoulli(0.1) trial of 50 records, every outcome at the top of [0, 1] (ATE 0): coverage >= 90%."
    rng, reps, hits = np.random.default_rng(1), 2000, 0
    for _ in range(reps):
        T = rng.binomial(1, 0.1, 50)
        lo, hi = ht_release(np.ones(50), T, outcome_bounds=(0, 1), assignment_probability=0.1, epsilon=np.inf,
                            delta=1e-6, accountant=PrivacyAccountant())["interval"]
        hits += lo <= 0 <= hi
    assert hits / reps >= 0.90, f"coverage {hits / reps:.3f}"


# --- replace-one neighbours away from p = 1/2 and at the ends of the accepted range -----------------------------------
import json
from unittest import mock

import dp_causal_nb.ht as ht_module
from dp_causal_nb.accounting import default_accountant
from dp_causal_nb.ht import HT_MIN_PROBABILITY, ht_sensitivity, ht_statistics
from dp_causal_nb.secure_noise import FP_MARGIN
from cli_runner import run

PS = [HT_MIN_PROBABILITY, 0.1, 0.3, 0.9, 1 - HT_MIN_PROBABILITY]
_grid_release = ht_module.grid_release


def _held_release(value, plan, rng, size=None):
    "The release with its value replaced by 0 + 1: what a fit shows must then not depend on the data at all."
    return _grid_release(np.zeros(np.shape(value)), plan, rng, size) + 1.0


def _ht_cases(p):
    kw = dict(epsilon=1.0, delta=1e-5, outcome_bounds=(0.0, 1.0), assignment_probability=p, random_state=0)
    return {"DPHorvitzThompson": (lambda acc: DPHorvitzThompson(accountant=acc, **kw), False),
            "DPHorvitzThompson, slope": (lambda acc: DPHorvitzThompson(accountant=acc, x_bounds=(-1, 1), **kw), True),
            "DPATE ht": (lambda acc: DPATE("ht", randomized=True, out_of_bounds="clip", accountant=acc, **kw), False),
            "DPATE ht, slope": (lambda acc: DPATE("ht", randomized=True, out_of_bounds="clip", x_bounds=(-1, 1),
                                                  accountant=acc, **kw), True)}


def _seen(make, Y, T, X, publish=lambda m, Y, T: None):
    "Everything a fit shows with the released values held: exception, warnings, attributes, summary, ledger."
    import warnings
    acc = PrivacyAccountant()
    with warnings.catch_warnings(record=True) as rec, reproducible_noise(), \
            mock.patch.object(ht_module, "grid_release", _held_release):
        warnings.simplefilter("always")
        try:
            m = make(acc).fit(Y, T, X=X)
            publish(m, Y, T)
            seen = ({k: repr(v) for k, v in vars(m).items() if k not in ("accountant", "charged_to_")},
                    str(m.summary()), repr(m.effect_interval(alpha=0.1)))
        except Exception as e: seen = (type(e).__name__, str(e))
    return seen, [(w.category.__name__, str(w.message)) for w in rec], [(s.label, s.cost) for s in acc.ledger]


def _records(n=40):
    r = np.random.default_rng(0)
    return np.clip(r.normal(0.5, 0.5, n), 0, 1), (r.uniform(size=n) < 0.4).astype(int), r.uniform(-1, 1, (n, 2))


NEIGHBOURS = [dict(Y=0.0), dict(Y=1.0), dict(T="other"), dict(T="other", Y=1.0), dict(X=(1.0, -1.0)),
              dict(T="other", Y=0.0, X=(-1, 1)), dict(Y=1e300), dict(Y=-np.inf), dict(X=(np.inf, -1e300))]


def _neighbour(Y, T, X, change):
    Y1, T1, X1 = Y.copy(), T.copy(), X.copy()
    if "Y" in change: Y1[0] = change["Y"]
    if "T" in change: T1[0] = 1 - T[0]                                    # the other arm
    if "X" in change: X1[0] = change["X"]
    return Y1, T1, X1


@pytest.mark.parametrize("p", PS)
def test_neighbours_alike_off_half(p):
    "Record 0's arm, outcome or covariates replaced: with the released values held, every observable is the same."
    Y, T, X = _records()
    bad = []
    for name, (make, uses_x) in _ht_cases(p).items():
        ref = _seen(make, Y, T, X if uses_x else None)
        assert isinstance(ref[0][0], dict), f"{name} at p={p} failed: {ref[0]}"
        for change in NEIGHBOURS:
            Y1, T1, X1 = _neighbour(Y, T, X, change)
            if _seen(make, Y1, T1, X1 if uses_x else None) != ref: bad.append((name, change))
    assert not bad, f"p={p}: observables differ for {bad}"


def test_the_held_replay_sees_a_difference():
    "Control: a fit that also publishes the treated count differs between arm-neighbours (the replay can fail)."
    Y, T, X = _records()
    make = _ht_cases(0.3)["DPHorvitzThompson"][0]
    leak = lambda m, Y, T: setattr(m, "n_treated_", int(np.sum(T)))
    Y1, T1, X1 = _neighbour(Y, T, X, dict(T="other"))
    assert _seen(make, Y, T, None, leak) != _seen(make, Y1, T1, None, leak)


@pytest.mark.parametrize("p", [HT_MIN_PROBABILITY, 0.9, 1 - HT_MIN_PROBABILITY])
@pytest.mark.parametrize("ob", [(0.0, 1.0), (-1e6, 1e6 + 0.3)])
def test_sensitivity_attained_never_exceeded_at_the_ends(p, ob):
    """Brute force over record 0 (outcome on a grid and just past each bound, both arms): the computed statistic moves
    by 2R, never by more than 2R(1 + FP_MARGIN), the grid plan's allowance for rounding."""
    r = np.random.default_rng(1)
    Y, T = r.uniform(*ob, 301), r.integers(0, 2, 301)
    grid = np.r_[np.linspace(*ob, 21), np.nextafter(ob[0], -np.inf), np.nextafter(ob[1], np.inf)]
    cells = [(y, t) for y in grid for t in (0, 1)]
    V = []
    for y, t in cells:
        Y[0], T[0] = y, t
        V.append(ht_statistics(Y, T, ob, p))
    V = np.array(V)
    worst, sens = np.linalg.norm(V[:, None] - V[None], axis=2).max(), ht_sensitivity(ob, p)
    assert sens * (1 - 1e-9) <= worst <= sens * (1 + FP_MARGIN)


def test_adjusted_sensitivity_at_the_ends():
    "The second stage's statistic (a slope fixed by the first) moves by at most 2R' = (b − a + 2w)/min(p, 1 − p)."
    from itertools import product
    from dp_causal_nb.lin import adjusted_outcomes, adjusted_range, capped_coefficients, lin_features
    g = np.linspace(-1, 1, 5)
    for raw in ([3.0, -2.0, 0.4, 0.1], [100.0, 100.0, 0.0, 0.0]):
        beta = capped_coefficients(np.array(raw), 0.25)
        for ob in [(-3.0, 3.0), (2.0, 7.5)]:
            rb = adjusted_range(ob, beta)
            cells = [(u, y, t) for u in product(g, repeat=2) for y in np.linspace(*ob, 5) for t in (0, 1)]
            X, Y, T = (np.array([c[k] for c in cells]) for k in range(3))
            r = adjusted_outcomes(Y, lin_features(X, T, (-1, 1)), beta, ob, rb)
            for p in PS:
                one = np.array([ht_statistics(r[i:i + 1], T[i:i + 1], rb, p) for i in range(len(r))])
                worst = np.linalg.norm(one[:, None] - one[None], axis=2).max()
                assert worst <= ht_sensitivity(rb, p) * (1 + FP_MARGIN), (raw, ob, p)


# --- a declared probability outside the accepted range: refused before any charge, whichever estimator runs ---------
@pytest.mark.parametrize("p", [HT_MIN_PROBABILITY / 10, 1 - HT_MIN_PROBABILITY / 10])
@pytest.mark.parametrize("kw", [dict(), dict(estimator="dim"), dict(estimator="lin", x_bounds=(-1, 1)),
                                dict(estimator="aipw"), dict(estimand="att"), dict(epsilon=1e-5)],
                         ids=["auto", "dim", "lin", "aipw", "att", "auto, small eps"])
def test_dpate_refuses_a_probability_past_the_ends_on_every_route(p, kw):
    "Refused or not may not depend on which estimator the public rule picks (prefers_ht at eps=1e-5, dim at eps=1)."
    Y, T, X = _records(400)
    acc = PrivacyAccountant()
    args = dict(dict(epsilon=1.0, delta=1e-6, outcome_bounds=(0, 1), randomized=True, assignment_probability=p), **kw)
    with pytest.raises(ValueError, match="assignment_probability must lie in"):
        DPATE(accountant=acc, **args).fit(Y, T, X=X)
    assert len(acc.ledger) == 0


# --- the command line ---------------------------------------------------------------------------------------------
def _csv(path, lines):
    path.write_text("y,t,age\n" + "\n".join(lines) + "\n")
    return path


def _cli_lines(n=300, seed=0):
    r = np.random.default_rng(seed)
    return [f"{np.clip(0.5 * r.normal(), -1, 1):.4f},{int(r.uniform() < 0.3)},{r.uniform(20, 80):.2f}" for _ in range(n)]


def _cli(path, *extra):
    "Exit status, stdout, stderr and how many ledger entries `dp-causal ate` added."
    n0 = len(default_accountant().ledger)
    code, out, err = run(["ate", path, "--outcome", "y", "--treatment", "t", "--outcome-bounds", "-1,1",
                          "--seed", "0", *extra])
    return code, out, err, len(default_accountant().ledger) - n0


COV = ("--covariates", "age", "--x-bounds", "20,80")
NOISED_CLI = {"ate", "conf_int_95", "stderr", "clamped", "notes", "sigma1", "covariate_slope"}   # sigma1: of the slope


@pytest.mark.parametrize("p", ["0.3", "0.9"])
@pytest.mark.parametrize("extra", [(), ("--estimator", "ht"), ("--estimator", "ht", *COV)], ids=["auto", "ht", "ht+x"])
def test_cli_neighbouring_files_alike(tmp_path, p, extra):
    "Line 1 replaced (arm, outcome at a bound, covariate at a bound): status, stderr and the public fields agree."
    lines = _cli_lines()
    args = ("--epsilon", "0.5", "--delta", "1e-6", "--randomized", "--assignment-probability", p, "--json", *extra)
    ref = _cli(_csv(tmp_path / "a.csv", lines), *args)
    assert ref[0] == 0 and ref[2] == "" and ref[3] == 1, ref
    pub = lambda out: {k: v for k, v in json.loads(out).items() if k not in NOISED_CLI}
    for alt in ("1,1,80", "-1,0,20", "-1,1,20", "1,0,80"):
        got = _cli(_csv(tmp_path / "b.csv", [alt] + lines[1:]), *args)
        assert (got[0], got[2], got[3]) == (ref[0], ref[2], ref[3]) and pub(got[1]) == pub(ref[1]), alt


def test_cli_json_echoes_the_declared_probability_and_slope(tmp_path):
    "The JSON names the declared P(T = 1) and the slope an adjusted ht release used; the text names both too."
    f = _csv(tmp_path / "a.csv", _cli_lines())
    args = ("--epsilon", "0.5", "--delta", "1e-6", "--randomized", "--assignment-probability", "0.3", "--estimator", "ht")
    plain, adjusted = (json.loads(_cli(f, *args, *x, "--json")[1]) for x in ((), COV))
    assert plain["estimator"] == adjusted["estimator"] == "ht"
    assert plain["assignment_probability"] == adjusted["assignment_probability"] == 0.3
    assert plain["covariate_slope"] is None
    assert len(adjusted["covariate_slope"]) == 3 and all(isinstance(b, float) for b in adjusted["covariate_slope"])
    head = [_cli(f, *args, *x)[1].splitlines()[0] for x in ((), COV)]
    assert head[0].endswith("no nuisance models, declared P(T = 1) = 0.3"), head[0]
    assert head[1].endswith("one pooled slope, declared P(T = 1) = 0.3"), head[1]
    dim = json.loads(_cli(f, "--epsilon", "0.5", "--delta", "1e-6", "--randomized", "--json")[1])
    assert dim["assignment_probability"] is None and dim["covariate_slope"] is None


@pytest.mark.parametrize("extra, message", [
    (("--randomized", "--assignment-probability", "0"), "assignment_probability must lie in"),
    (("--randomized", "--assignment-probability", "1.5"), "assignment_probability must lie in"),
    (("--randomized", "--assignment-probability", "nan"), "assignment_probability"),
    (("--randomized", "--assignment-probability", "1e-7"), "assignment_probability must lie in"),
    (("--randomized", "--assignment-probability", "0.9999999"), "assignment_probability must lie in"),
    (("--assignment-probability", "0.3"), "requires randomized=True"),
    (("--randomized", "--estimator", "ht"), "assignment_probability"),
    (("--randomized", "--assignment-probability", "0.3", "--estimator", "ht", "--estimand", "att"), "estimand='ate'"),
])
def test_cli_refusals_before_any_charge(tmp_path, extra, message):
    code, out, err, charged = _cli(_csv(tmp_path / "a.csv", _cli_lines()), "--epsilon", "1", "--delta", "1e-6", *extra)
    assert (code, out, charged) == (2, "", 0) and err.startswith("dp-causal: error: ") and message in err, err
    assert err.count("\n") == 1
