#!/usr/bin/env python
"""Convert a jupytext percent-format script into a clean notebook under nbs/ (developer convenience).

Usage: python tools/py2nb.py SRC.py nbs/NN_name.ipynb      (script -> notebook)
       python tools/py2nb.py --back nbs/NN_name.ipynb SRC.py (notebook -> script, to edit as text)
The notebook is the source of truth; the script is only an editing format and is not committed.
Stored outputs survive the round trip: a code cell whose source is unchanged keeps the outputs the notebook had
(matched by source, in order); changed or new cells have none until `python tools/run_nbs.py NB` re-executes the
notebook (the CI staleness check, `tools/run_nbs.py --check`, says when that is needed).
"""
import sys, json, hashlib, os
import jupytext
from nbdev.clean import clean_nb

def _old_outputs(dst):
    "{code source: [outputs of each cell with that source, in order]} from the notebook being replaced."
    if not os.path.exists(dst): return {}
    res = {}
    for c in json.load(open(dst, encoding="utf-8"))["cells"]:
        if c["cell_type"] == "code": res.setdefault("".join(c["source"]), []).append(c.get("outputs", []))
    return res

def to_nb(src, dst):
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}
    seen = {}
    for c in nb.cells:  # deterministic cell ids (hash of the source) keep diffs and exported `# %%` markers stable
        c.metadata = {}
        h = hashlib.sha1((c.cell_type + c.source).encode()).hexdigest()[:8]
        seen[h] = seen.get(h, -1) + 1
        c.id = h if not seen[h] else f"{h}-{seen[h]}"
    old = _old_outputs(dst)
    jupytext.write(nb, dst, fmt="ipynb")
    d = json.load(open(dst))
    for c in d["cells"]:
        code = "".join(c["source"])
        if c["cell_type"] == "code" and old.get(code): c["outputs"] = old[code].pop(0)
    clean_nb(d)
    with open(dst, "w") as f: f.write(json.dumps(d, sort_keys=True, indent=1, ensure_ascii=False) + "\n")

def to_py(src, dst):
    nb = jupytext.read(src); jupytext.write(nb, dst, fmt="py:percent")

if __name__ == "__main__":
    if sys.argv[1] == "--back": to_py(sys.argv[2], sys.argv[3])
    else: to_nb(sys.argv[1], sys.argv[2])
