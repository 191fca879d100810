"""The n from which DPATE's default can adjust for the covariates (`adjusting_n`, notebook 11; the CLI demo's closing
line, notebook 13): a function of public inputs only (d, ε, δ). Protected here: with design='auto' it is the n from
which the default's design rule (`_score_design`: the cross-fitted design, or the split design where only its models
adjust) runs a design whose outcome models adjust — the smaller of the two designs' n; the demo's line states that n
and, for the data set's n, at which ε it is reached (NHEFS: 14 covariates, n = 1 566, reached at every ε of the demo)."""
import numpy as np
import pytest

from dp_causal_nb.ate import DPATE, NUISANCE_SHRINKAGE_LIMIT, adjusting_n, default_split, score_budget
from dp_causal_nb.cli import what_n_buys
from dp_causal_nb.mechanisms import gdp_mu


@pytest.mark.parametrize("eps", [16.0, 4.0, 1.0])
def test_auto_is_the_default_rules_n(eps):
    n_auto = adjusting_n(14, eps, design="auto")
    per_design = {dz: adjusting_n(14, eps, design=dz) for dz in ("crossfit", "split")}
    assert n_auto == min(per_design.values())
    budget = (gdp_mu(eps, 1e-6), eps, 1e-6)
    for n in (n_auto, int(n_auto * 1.5), per_design["crossfit"]):      # from n_auto on, the default's design adjusts
        design = DPATE(x_bounds=(0, 1))._score_design("aipw", "crossfit", n, 14, budget)
        split = default_split("aipw") if design == "split" else None
        assert score_budget("aipw", design, n, 14, budget, split=split).shrink < NUISANCE_SHRINKAGE_LIMIT
    below = int(n_auto * 0.97)                                      # just below: neither design's models adjust
    design = DPATE(x_bounds=(0, 1))._score_design("aipw", "crossfit", below, 14, budget)
    assert design == "crossfit"
    assert score_budget("aipw", "crossfit", below, 14, budget).shrink >= NUISANCE_SHRINKAGE_LIMIT


def test_non_private_and_planning_values():
    assert adjusting_n(14, np.inf, design="auto") == 3
    assert adjusting_n(14, 4.0, design="auto") == 371 < adjusting_n(14, 4.0) == 862


def test_demo_line_states_the_defaults_n():
    line = what_n_buys(14, 1566)
    assert "from n >= 114 at epsilon=16, 371 at epsilon=4, 1,325 at epsilon=1" in line
    assert "cross-fitted design from 253, 862, 3,150" in line
    assert "it adjusts at epsilon=16, 4, 1." in line
    assert "it adjusts at epsilon=16; not at epsilon=4, 1." in what_n_buys(14, 300)
