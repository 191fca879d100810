"Cross-cutting checks of dp_causal_nb.accounting: the contract estimators rely on (spend before noise, part views)."
import numpy as np, pytest
from dp_causal_nb.core import BudgetError
from dp_causal_nb.accounting import (PrivacyAccountant, GDPAccountant, compose_sequential, compose_parallel,
                                     compose_gdp)

def _noisy_release(value, accountant, eps, rng, *, label):
    "The pattern every estimator follows: charge first, then draw noise."
    accountant.spend(eps, label=label)
    return value + rng.laplace(0, 1 / eps)

def test_overspend_draws_no_noise_and_records_nothing():
    acc, rng = PrivacyAccountant(1.0), np.random.default_rng(0)
    _noisy_release(0.0, acc, 0.7, rng, label="first")
    state = rng.bit_generator.state
    with pytest.raises(BudgetError, match="over the budget"):
        _noisy_release(0.0, acc, 0.4, rng, label="second")
    assert rng.bit_generator.state == state                 # no noise was drawn
    assert [r.label for r in acc.ledger] == ["first"] and acc.spent == (0.7, 0.0)

def test_part_view_as_accountant_for_fold_estimators():
    acc, rng = PrivacyAccountant(1.0, 1e-6), np.random.default_rng(1)
    with acc.parallel("folds") as blk:
        outs = [_noisy_release(float(k), blk.part(k), 1.0, rng, label=f"fold {k}") for k in range(4)]
        with pytest.raises(BudgetError):
            _noisy_release(0.0, blk.part(0), 0.1, rng, label="fold 0 again")
    assert len(outs) == 4 and acc.spent == (1.0, 0.0) and len(acc.ledger) == 1
    assert list(acc.ledger[0].parts) == [0, 1, 2, 3]

def test_exactly_remaining_and_compose_functions():
    acc = PrivacyAccountant(0.3, 3e-6)
    for i in range(3): acc.spend(0.1, 1e-6, label=f"third {i}")
    with pytest.raises(BudgetError): acc.check(1e-9)
    assert compose_sequential(acc.ledger) == pytest.approx((0.3, 3e-6))
    assert compose_parallel([(1, 1e-6), (2, 0)]) == (2.0, 1e-6)
    assert compose_gdp(3, 4) == pytest.approx(5.0)

@pytest.mark.parametrize("call, msg", [
    (lambda a: a.spend(0, label="x"), "epsilon"), (lambda a: a.spend(np.nan, label="x"), "epsilon"),
    (lambda a: a.spend(0.1, 1.0, label="x"), "delta"), (lambda a: a.spend(0.1, label=""), "label"),
    (lambda a: a.parallel("p").__enter__().spend(0.1, part=None), "part"),
])
def test_bad_inputs_name_the_parameter(call, msg):
    with pytest.raises((ValueError, TypeError), match=msg): call(PrivacyAccountant(1.0))

def test_gdp_accountant_refuses_epsilon_spends():
    g = GDPAccountant(1.0)
    with pytest.raises(TypeError, match="spend_gdp"): g.spend(0.5, label="eps")
    g.spend_gdp(0.6, label="a"); g.spend_gdp(0.8, label="b")
    assert g.spent == pytest.approx(1.0) and g.remaining == pytest.approx(0.0)

@pytest.mark.parametrize("budget, shown", [((np.inf, 0.0), ("inf", "inf")), ((np.inf, 1e-5), ("inf", "inf")),
                                           ((10.0, 1e-5), ("10", "1e-05"))])
def test_repr_summary_and_ledger_state_one_budget(budget, shown):
    """After a non-private spend (inf, 0) (where the budget allows it) and a private one (1, 1e-6), the repr, str,
    summary() and `budget` state the same budget, the one enforced ((inf, inf) for any accountant with epsilon = inf),
    and the same totals, those of the ledger."""
    acc = PrivacyAccountant(*budget)
    if np.isinf(budget[0]): acc.spend(np.inf, 0.0, label="non-private")
    acc.spend(1.0, 1e-6, label="private")
    spent = compose_sequential(acc.ledger)
    assert acc.spent == spent and acc.budget == tuple(float(x) for x in shown)
    e, d = (f"{x:.6g}" for x in spent)
    assert repr(acc).startswith(f"PrivacyAccountant(epsilon={shown[0]}, delta={shown[1]}): spent (ε={e}, δ={d})")
    lines = {ln[:20].strip(): tuple(ln.split()[-2:]) for ln in acc.summary().splitlines()}
    assert str(acc) == acc.summary() and lines["budget"] == shown and lines["total spent"] == (e, d)
    assert [(r["label"], r["epsilon"], r["delta"], r["private"]) for r in acc.summary().rows] == \
        [(r.label, r.epsilon, r.delta, r.private) for r in acc.ledger]
