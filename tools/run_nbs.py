#!/usr/bin/env python
"""Re-execute notebooks and store their outputs in them (tables, figures, audit numbers), as nbdev/fastcore do.

    python tools/run_nbs.py nbs/00_core.ipynb nbs/tutorials/*.ipynb   # quick mode (IN_TEST=1, what nbdev_test runs)
    python tools/run_nbs.py --all                                      # every notebook under nbs/
    python tools/run_nbs.py --full nbs/12_dp_ate_experiments.ipynb     # full mode: long experiments, `#| slow` cells
    python tools/run_nbs.py --check                                    # CI: fail if any stored output is stale

Each notebook runs in a fresh Python process with nbdev's own engine (execnb's CaptureShell, as `nbdev_test`), in
its folder, cells skipped exactly as `nbdev_test` skips them (`#| eval: false`, and in quick mode the `tst_flags` of
settings.ini); matplotlib figures are stored as small PNGs (72 dpi). A notebook that raises is not written.
The notebook is then cleaned as `nbdev_clean` does, so `nbdev_clean` leaves no diff.

Hand-typed result tables (also part of `--check`): a markdown cell holding a pipe table whose cells are mostly
numbers, under a heading or paragraph that says the numbers were measured ("Measured ...", "... by hand", "Output",
"Results", ...), is reported: results are cell outputs, not markdown that can drift from the code.

Staleness (cheap, no execution): `nbs/_outputs.json` records, per notebook, a hash of its code cells' sources at
execution time and a hash of the outputs stored. `--check` recomputes both: a notebook whose code changed since its
outputs were stored (or whose outputs were edited or dropped) fails, with the command that refreshes it. Markdown edits
do not make outputs stale. Not detected: a change in the library that changes a notebook's outputs without changing
its code; re-run the notebooks of a module you change (or `--all`).
"""
import argparse, hashlib, json, os, re, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / "nbs"
MANIFEST = NBS / "_outputs.json"
DPI = 72

def rel(p): return Path(p).resolve().relative_to(ROOT).as_posix()

def code_hash(nb:dict) -> str:
    "Hash of the code cells' sources, in order (what the stored outputs were computed from)."
    h = hashlib.sha256()
    for c in nb["cells"]:
        if c["cell_type"] == "code": h.update(("".join(c["source"]) + "\0").encode())
    return h.hexdigest()[:16]

def outputs_hash(nb:dict) -> str:
    "Hash of the stored outputs, in order (detects outputs dropped or edited by hand)."
    outs = [c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"]
    return hashlib.sha256(json.dumps(outs, sort_keys=True).encode()).hexdigest()[:16]

def all_notebooks():
    from nbdev.doclinks import nbglob
    return sorted(rel(p) for p in nbglob(NBS, func=Path))

def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}

def write_json_nb(path, nb:dict):
    "Clean as nbdev_clean does and write in its format (so `nbdev_clean` leaves no diff)."
    from nbdev.clean import clean_nb
    from nbdev.config import get_config
    cfg = get_config()
    clean_nb(nb, clear_all=False, allowed_metadata_keys=cfg.get("allowed_metadata_keys", "").split(),
             allowed_cell_metadata_keys=cfg.get("allowed_cell_metadata_keys", "").split(), clean_ids=True)
    Path(path).write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

# ------------------------------------------------------------------ one notebook (in its own process)
def run_one(path, full=False):
    "Execute one notebook in this process and store its outputs; return the seconds it took."
    from execnb.nbio import read_nb
    from execnb.shell import CaptureShell
    from nbdev.process import extract_directives
    from nbdev.config import get_config
    path = Path(path).resolve()
    if full: os.environ.pop("IN_TEST", None)
    else: os.environ["IN_TEST"] = "1"
    flags = set() if full else set(get_config().get("tst_flags", "").split())
    nb = read_nb(path)
    def skip(cell):
        if cell.cell_type != "code": return True
        if "nbdev_export" + "(" in cell.source: return True
        d = extract_directives(cell, remove=False)
        if d.get("eval:", [""])[0].lower() == "false": return True
        return bool(flags & d.keys())
    t = time.time()
    os.chdir(path.parent)
    k = CaptureShell(path, mpl_format="png")
    k._run(f"import matplotlib as _mpl; _mpl.rcParams['figure.dpi'] = {DPI}; del _mpl")
    ran = []
    for i, cell in enumerate(nb.cells):
        if skip(cell): continue
        k.cell(cell)
        if k.exc: sys.exit(f"{rel(path)}: cell {i} raised; "
                           f"outputs not stored\n{k.prettytb(fname=path)}")
        ran.append(i)
    secs = time.time() - t
    raw = json.loads(path.read_text(encoding="utf-8"))
    for i, c in enumerate(raw["cells"]):
        if c["cell_type"] != "code": continue
        c["outputs"] = [dict(o) for o in nb.cells[i].outputs] if i in ran else []
        for o in c["outputs"]:
            if "execution_count" in o: o["execution_count"] = None
        c["execution_count"] = None
    write_json_nb(path, raw)
    return secs

def record(path, mode, secs):
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    m = load_manifest()
    m[rel(path)] = {"code": code_hash(nb), "outputs": outputs_hash(nb), "mode": mode, "seconds": round(secs)}
    MANIFEST.write_text(json.dumps(dict(sorted(m.items())), indent=1) + "\n")

# ------------------------------------------------------------------ hand-typed result tables
# Notebooks whose hand-typed tables still have to be turned into cell outputs, with how many such tables each may
# still hold (a NEW table in these notebooks is still reported). Empty since issue 13 was closed; keep the mechanism
# for a conversion in progress (add an entry, shrink it as the tables are fixed).
HAND_TABLES_ALLOWED = {}
_N = r"[~≈<>≤≥±+−-]?\s*\d[\d ,.]*(?:[eE][+−-]?\d+)?(?:\s*[·x×]\s*10\^?[⁰¹²³⁴⁵⁶⁷⁸⁹⁻\d-]*)?\s*(?:%|×|x|s|ms|MB|MiB)?"
_NUMBER = re.compile(rf"^{_N}(?:\s*±\s*{_N})?(?:\s*\([^)]*\))?$")       # 0.93, 2.3e-05, **14.2**, 1.5 ± 0.04, 90.9%
_MEASURED = re.compile(r"^\W*(?:output|results?|observed|timings?)\b|measured|by hand", re.I)

def _plain(s): return re.sub(r"[*_`$\\{}]", "", s).strip()

def _pipe_tables(lines):
    "[(index of the header line, body rows as lists of cells)] of the pipe tables in a markdown cell."
    i, out = 0, []
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and re.match(r"^\s*\|?\s*:?-{3,}", lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"): j += 1
            out.append((i, [re.split(r"(?<!\\)\|", l.strip().strip("|")) for l in lines[i + 2:j]])); i = j
        else: i += 1
    return out

def hand_typed_tables(nb:dict, min_numeric=0.5) -> list:
    """[(cell id, header line)] of markdown tables that look like measured results typed by hand: at least
    `min_numeric` of the non-empty body cells (first column excluded) are numbers, and a paragraph before the table in
    its cell, or the last heading above it, says the numbers were measured."""
    found, heading = [], ""
    for c in nb["cells"]:
        if c["cell_type"] != "markdown": continue
        src = "".join(c["source"]); lines = src.splitlines()
        for start, rows in _pipe_tables(lines):
            cells = [x for r in rows for x in (r[1:] if len(r) > 1 else r) if _plain(x)]
            if not cells or sum(bool(_NUMBER.match(_plain(x))) for x in cells) < min_numeric * len(cells): continue
            before = "\n".join(lines[:start])
            cues = [_plain(p.lstrip("#> ")) for p in re.split(r"\n\s*\n", before) if p.strip()] + [heading]
            if any(_MEASURED.search(x) for x in cues): found.append((c.get("id"), lines[start].strip()[:70]))
        for h in re.findall(r"^#+\s*(.*)$", src, re.M): heading = _plain(h)
    return found

def hand_typed(notebooks=None, allowed=None):
    "[(notebook, message)] for notebooks with more hand-typed result tables than `allowed` (HAND_TABLES_ALLOWED) grants."
    allowed = HAND_TABLES_ALLOWED if allowed is None else allowed
    out = []
    for p in (all_notebooks() if notebooks is None else notebooks):
        found = hand_typed_tables(json.loads((ROOT / p).read_text(encoding="utf-8")))
        if len(found) > allowed.get(p, 0):
            out.append((p, "; ".join(f"cell {i}: {h}" for i, h in found)))
    return out

# ------------------------------------------------------------------ the check
def stale(manifest=None, notebooks=None):
    "[(notebook, reason)] for every notebook whose stored outputs do not match its code."
    manifest = load_manifest() if manifest is None else manifest
    out = []
    for p in (all_notebooks() if notebooks is None else notebooks):
        nb = json.loads((ROOT / p).read_text(encoding="utf-8"))
        m = manifest.get(p)
        if m is None: out.append((p, "no stored outputs recorded"))
        elif m["code"] != code_hash(nb): out.append((p, "its code changed since its outputs were stored"))
        elif m["outputs"] != outputs_hash(nb): out.append((p, "its stored outputs were edited or dropped"))
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--all", action="store_true", help="every notebook under nbs/")
    ap.add_argument("--full", action="store_true", help="full mode: no IN_TEST, run `#| slow` cells too")
    ap.add_argument("--check", action="store_true", help="only check that stored outputs are current")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        secs = run_one(a.one, a.full); print(json.dumps({"seconds": secs})); return
    if a.check:
        bad, typed = stale(), hand_typed()
        for p, why in bad: print(f"STALE {p}: {why}: run `python tools/run_nbs.py {p}`")
        for p, what in typed: print(f"HAND-TYPED RESULTS {p}: {what}: make a cell compute and print the table "
                                    "(CONTRIBUTING.md, 'Results on the page')")
        if bad: sys.exit(f"{len(bad)} notebook(s) with stale stored outputs; refresh them all with "
                         "`python tools/run_nbs.py --all` and commit the notebooks and nbs/_outputs.json")
        if typed: sys.exit(f"{len(typed)} notebook(s) with hand-typed result tables in markdown")
        print(f"stored outputs are current for all {len(all_notebooks())} notebooks; no hand-typed result tables "
              f"(allowed for now: {', '.join(HAND_TABLES_ALLOWED) or 'none'})"); return
    nbs = all_notebooks() if a.all else [rel(p) for p in a.notebooks]
    if not nbs: ap.error("name notebooks or pass --all")
    total, failed = time.time(), []
    for p in nbs:
        cmd = [sys.executable, __file__, "--one", p] + (["--full"] if a.full else [])
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            failed.append(p); print(f"FAILED {p}\n{r.stderr[-3000:]}", flush=True); continue
        secs = json.loads(r.stdout.strip().splitlines()[-1])["seconds"]
        record(ROOT / p, "full" if a.full else "quick", secs)
        print(f"stored outputs of {p} ({'full' if a.full else 'quick'} mode, {secs:.0f} s)", flush=True)
    print(f"{len(nbs) - len(failed)}/{len(nbs)} notebooks in {time.time() - total:.0f} s")
    if failed: sys.exit(f"failed: {' '.join(failed)}")

if __name__ == "__main__":
    main()
