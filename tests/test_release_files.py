"""Release files cannot carry a privacy label that their own public inputs contradict. What must hold:

* a genuine `dp-causal cate --save` file loads (library and `cate-eval`) with the label `cate` printed;
* on load, every derived privacy number of the file (the privacy label, σ, the per-point noise SD, the sensitivity and
  the solver inflation) is recomputed from the stored public inputs (ε, δ, n, λ, bandwidth, M, τ): editing any one
  of them, or ε or δ alone, is refused with `ReleaseFormatError` naming the field, and `cate-eval` exits 2 with it;
* metadata holding JSON `NaN`/`Infinity` tokens, nested deeper than the limit, or larger than the size limit is
  refused with `ReleaseFormatError` (never a `RecursionError`, nor an "internal error" on the command line);
* `dp-causal cate --save` prints the SHA-256 of the file it wrote, and `cate-eval --expect-sha256` accepts exactly
  that hash and refuses any other (exit 2, nothing evaluated).
"""
import hashlib, json, re
import numpy as np
import pytest

from dp_causal_nb import release_format as rf
from dp_causal_nb.functional import SharedCATEFunction
from dp_causal_nb.release_format import ReleaseFormatError
from cli_runner import run

EPSILON, DELTA = 50.0, 1e-6


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    "A `dp-causal cate --save` file at ε = 50 (Dataset 1, n = 800), the query CSV, and what the command printed."
    from dp_causal_nb.datasets import dataset1
    ds = dataset1(800, random_state=1)
    d = tmp_path_factory.mktemp("release")
    data, grid, path = d / "train.csv", d / "grid.csv", d / "g.npz"
    data.write_text("y,t,x1,x2\n" + "".join(f"{float(y)!r},{int(a)},{float(u)!r},{float(v)!r}\n"
                                            for y, a, (u, v) in zip(ds.Y, ds.T, ds.X)))
    grid.write_text("x1,x2\n0.5,0.5\n0.2,0.9\n")
    yb = f"{float(ds.outcome_bounds[0])!r},{float(ds.outcome_bounds[1])!r}"
    code, out, err = run(["cate", data, "--outcome", "y", "--treatment", "t", "--covariates", "x1,x2",
                          "--outcome-bounds", yb, "--x-bounds", "0,1", "--epsilon", EPSILON, "--delta", DELTA,
                          "--save", path, "--seed", 0])
    assert code == 0 and err == "", err
    return path, grid, out


def read_doc(path):
    "The arrays and the metadata document of a release file, read directly (no validation)."
    with np.load(path) as z: arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(arrays.pop("__meta__").tobytes().decode())


def write_doc(path, arrays, text):
    "Write `arrays` and the metadata text `text` verbatim, as an editor of the file would."
    np.savez(path, **arrays, __meta__=np.frombuffer(text.encode(), np.uint8))
    return path


def edited(genuine, tmp_path, **changes):
    "The genuine file with some metadata fields rewritten (the JSON stays well formed)."
    arrays, doc = read_doc(genuine[0])
    doc["meta"].update(changes)
    return write_doc(tmp_path / "edited.npz", arrays, json.dumps(doc))


def test_genuine_file_round_trips(genuine):
    path, grid, out = genuine
    g = SharedCATEFunction.load(path)
    assert g.info["epsilon"] == EPSILON and g.info["delta"] == DELTA and g.info["privacy"] in out
    code, out_eval, err = run(["cate-eval", path, "--points", grid, "--json"])
    r = json.loads(out_eval)
    assert code == 0 and err == "" and r["privacy"] == g.info["privacy"]
    assert r["noise_sd_point"] == g.info["noise_sd_point"] > 0


FORGED_LABEL = "(epsilon=0.01, delta=1e-09)-DP"


@pytest.mark.parametrize("changes, field", [
    (dict(privacy=FORGED_LABEL), "privacy"),
    (dict(epsilon=0.01), "sigma"),
    (dict(delta=1e-9), "sigma"),
    (dict(epsilon=0.01, delta=1e-9, privacy=FORGED_LABEL, noise_sd_point=1e-9), "sigma"),
    (dict(noise_sd_point=1e-9), "noise_sd_point"),
    (dict(sigma=1e-9), "sigma"),
    (dict(sensitivity=1e-9), "sensitivity"),
    (dict(solver_inflation=1e-9), "solver_inflation"),
], ids=["label", "epsilon", "delta", "label-epsilon-delta-sd", "noise_sd_point", "sigma", "sensitivity",
        "solver_inflation"])
def test_edited_privacy_numbers_are_refused(genuine, tmp_path, changes, field):
    path = edited(genuine, tmp_path, **changes)
    with pytest.raises(ReleaseFormatError, match=f"'{field}'") as e: SharedCATEFunction.load(path)
    assert "stored" in str(e.value) and "recomputed" in str(e.value)
    code, out, err = run(["cate-eval", path, "--points", genuine[1]])
    assert code == 2 and out == "" and f"'{field}'" in err and "internal error" not in err, err


def test_published_grid_labels_are_recomputed(tmp_path):
    "A grid of values (`publish_grid`) round-trips; an edited noise scale or ε is refused, naming the scale."
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.functional import PublishedCATEValues, private_kernel_function
    from dp_causal_nb.rkhs import HuberLoss
    X = np.random.default_rng(0).uniform(0, 1, (60, 2))
    f = private_kernel_function(X, np.sin(3 * X[:, 0]), bandwidth=0.3, lam=0.05, loss=HuberLoss(1.0),
                                x_bounds=([0, 0], [1, 1]), epsilon=1.0, delta=1e-5, accountant=PrivacyAccountant(),
                                random_state=0)
    path = f.publish_grid(np.array([[0.2, 0.2], [0.8, 0.5]])).save(tmp_path / "grid")
    assert PublishedCATEValues.load(path).info == f.info
    arrays, doc = read_doc(path)
    for changes in (dict(scales=doc["meta"]["scales"] | dict(analytic=1e-9)), dict(epsilon=50.0)):
        forged = write_doc(tmp_path / "forged.npz", arrays, json.dumps(doc | dict(meta=doc["meta"] | changes)))
        with pytest.raises(ReleaseFormatError, match="'scales[.]"): PublishedCATEValues.load(forged)


def test_previous_format_version_is_refused(genuine, tmp_path):
    "Version 1 files did not store n and M, so their labels cannot be recomputed: refused with a message saying so."
    arrays, doc = read_doc(genuine[0])
    path = write_doc(tmp_path / "v1.npz", arrays, json.dumps(doc | dict(version=1)))
    with pytest.raises(ReleaseFormatError, match="version 1 stores privacy labels that cannot be recomputed"):
        SharedCATEFunction.load(path)


def test_missing_public_input_is_refused(genuine, tmp_path):
    "A file that states a label but drops an input it is computed from cannot be checked, so it is refused."
    arrays, doc = read_doc(genuine[0])
    del doc["meta"]["n"]
    path = write_doc(tmp_path / "no_n.npz", arrays, json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="'n'"): SharedCATEFunction.load(path)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_tokens_are_refused(genuine, tmp_path, token):
    arrays, doc = read_doc(genuine[0])
    text = json.dumps(doc)
    forged = re.sub(r'"noise_sd_point": [^,}]+', f'"noise_sd_point": {token}', text)
    assert forged != text
    path = write_doc(tmp_path / "token.npz", arrays, forged)
    with pytest.raises(ReleaseFormatError, match=token): SharedCATEFunction.load(path)


def test_deep_nesting_is_refused(genuine, tmp_path):
    arrays, doc = read_doc(genuine[0])
    depth = 100_000
    text = json.dumps(doc)[:-2] + ', "extra": ' + "[" * depth + "]" * depth + "}}"
    path = write_doc(tmp_path / "deep.npz", arrays, text)
    with pytest.raises(ReleaseFormatError, match="nested"): SharedCATEFunction.load(path)
    code, out, err = run(["cate-eval", path, "--points", genuine[1]])
    assert code == 2 and "nested" in err and "internal error" not in err, err


def test_oversize_metadata_is_refused(genuine, tmp_path):
    path = edited(genuine, tmp_path, extra="x" * (rf.MAX_META_BYTES + 1))
    with pytest.raises(ReleaseFormatError, match="metadata is larger"): SharedCATEFunction.load(path)


def test_oversize_file_is_refused(genuine):
    size = genuine[0].stat().st_size
    with pytest.raises(ReleaseFormatError, match="larger than"):
        rf.load_release(genuine[0], "SharedCATEFunction", {}, max_bytes=size - 1)


def test_save_prints_the_hash_and_eval_checks_it(genuine, tmp_path):
    path, grid, out = genuine
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert rf.release_sha256(path) == digest and digest in out
    code, out_eval, err = run(["cate-eval", path, "--points", grid, "--expect-sha256", digest.upper()])
    assert code == 0 and err == "" and digest in out_eval
    wrong = hashlib.sha256(b"another file").hexdigest()
    code, out_eval, err = run(["cate-eval", path, "--points", grid, "--expect-sha256", wrong])
    assert code == 2 and out_eval == "" and "SHA-256" in err and digest in err and wrong in err, err
    code, out_eval, err = run(["cate-eval", path, "--points", grid, "--expect-sha256", "abc"])
    assert code == 2 and "--expect-sha256" in err, err

def test_a_paper_mode_grid_must_state_the_epsilon_it_was_charged(tmp_path):
    "noise='paper' is noisier-than-claimed: a grid file's label must carry the ε that was charged, not the requested one."
    import warnings
    from dp_causal_nb.accounting import PrivacyAccountant
    from dp_causal_nb.functional import private_kernel_function, _privacy_label
    from dp_causal_nb.rkhs import SquaredLoss
    X = np.random.default_rng(0).uniform(0, 1, (50, 8))
    acc = PrivacyAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = private_kernel_function(X, np.sin(X[:, 0]), bandwidth=1.0, lam=0.1, loss=SquaredLoss(1.0), x_bounds=(0, 1),
                                    epsilon=1.0, delta=1e-5, noise="paper", accountant=acc)
    charged = acc.ledger[-1].cost[0]
    assert charged > 1.0
    grid = f.publish_grid(np.random.default_rng(1).uniform(0, 1, (5, 8)))
    grid.info["privacy"] = "(epsilon=1, delta=1e-05)-DP"
    with pytest.raises(ReleaseFormatError, match="privacy"):
        grid.save(tmp_path / "forged.npz")
    grid.info["privacy"] = _privacy_label(charged, 1e-5)
    grid.save(tmp_path / "honest.npz")
