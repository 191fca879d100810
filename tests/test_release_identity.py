"""Released values stay the same across a change that must not alter behaviour (a refactoring).

Every entry of the registry (tests/_registry.py) except the CLI jobs is fitted on fixed records under
``reproducible_noise()``; every number it publishes — its numeric public attributes and, where it has them, its
answers at the public query points — is compared with `tests/data/release_identity.json`. On one machine the values are
bit-identical; across machines BLAS paths may move the un-noised value in its last bits (and, rarely, a snapped value
by one grid step), so the comparison allows a relative 1e-9 and reports every entry that differs.

A change that is *meant* to alter releases regenerates the file, and says so in its commit message:

    python tests/test_release_identity.py --write
"""
import json, sys, warnings
from pathlib import Path
import numpy as np
import pandas as pd
import pytest

from dp_causal_nb.accounting import PrivacyAccountant
from dp_causal_nb.core import reproducible_noise
from _registry import OUTCOME_BOUNDS, Q, REGISTRY, _records

STORE = Path(__file__).parent / "data" / "release_identity.json"
CASES = [c for c in REGISTRY if not c.name.startswith("cli ")]

def _numbers(value):
    "A flat list of floats (None for NaN) if `value` is a number or a numeric array, else None."
    if isinstance(value, (bool, np.bool_)): return None
    if isinstance(value, (int, float, np.integer, np.floating)): value = [value]
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iuf": value = value.ravel().tolist()
    else: return None
    return [None if np.isnan(v) else float(v) for v in value]

def _attributes(obj, prefix="", depth=1) -> dict:
    "Numeric public fitted attributes (names ending in '_'), and those of fitted objects held in them (one level)."
    got = {}
    for k, v in sorted(vars(obj).items()):
        if not k.endswith("_") or k.startswith("_"): continue
        if (nums := _numbers(v)) is not None: got[prefix + k] = nums
        elif depth and hasattr(v, "__dict__") and not isinstance(v, type): got |= _attributes(v, f"{prefix}{k}.", depth - 1)
    return got

def released(case) -> dict:
    "Every number the entry publishes, by name (attributes ending in '_', answers at Q)."
    Y, T, X = _records()
    if case.frame:
        X = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1]})
    with reproducible_noise(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = case.fit(case.make(PrivacyAccountant(), OUTCOME_BOUNDS[0]), Y, T, X)
        got = _attributes(out)
        Qx = Q
        if case.frame:
            Qx = pd.DataFrame({"x0": Q[:, 0], "x1": Q[:, 1]})
        if hasattr(out, "effect"): got["effect(Q)"] = _numbers(np.asarray(out.effect(Qx), float))
        elif callable(out) and not isinstance(out, type): got["call(Q)"] = _numbers(np.asarray(out(Qx), float))
    return got

def _differs(a, b) -> bool:
    if len(a) != len(b): return True
    for x, y in zip(a, b):
        if (x is None) != (y is None): return True
        if x is not None and not np.isclose(x, y, rtol=1e-9, atol=1e-300): return True
    return False

@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_released_values_are_unchanged(case):
    stored = json.loads(STORE.read_text())
    assert case.name in stored, f"{case.name} has no stored values: regenerate {STORE.name} (module docstring)"
    got, want = released(case), stored[case.name]
    assert set(got) == set(want), f"published numbers changed: {sorted(set(got) ^ set(want))}"
    bad = [k for k in want if _differs(got[k], want[k])]
    assert not bad, {k: (got[k][:4], want[k][:4]) for k in bad}

def test_the_check_sees_a_change():
    "Negative control: a value moved in its 8th digit is reported."
    a = [1.0, 2.0, None]
    assert not _differs(a, [1.0, 2.0, None]) and _differs(a, [1.0, 2.0 * (1 + 1e-8), None]) and _differs(a, [1.0, 2.0])

if __name__ == "__main__" and "--write" in sys.argv:
    STORE.write_text(json.dumps({c.name: released(c) for c in CASES}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {STORE} ({len(CASES)} entries)")
