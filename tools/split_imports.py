#!/usr/bin/env python
"""Move top-level import statements of non-exported code cells into a cell of their own (nbdev's FAQ rule).

nbdev's docs processing executes every cell that contains an import; a cell that also holds test code then runs out
of context (slow, and it fails when it uses names from cells that are not executed). Usage:
    python tools/split_imports.py nbs/11_dp_ate.ipynb [...]      (rewrites in place; prints cells it could not split)
"""
import ast, hashlib, json, sys

_SKIP = ("#| export", "#|export", "#| exports", "#| exporti", "#| hide", "#|hide")

def split_cell(src: str):
    "(imports, rest) for a cell whose top level mixes imports and other statements, else None."
    try: tree = ast.parse(src)
    except SyntaxError: return None
    imps = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not imps or len(imps) == len(tree.body): return None
    # a statement that changes where imports come from (sys.path.insert/append) travels with the imports, before them
    imps += [n for n in tree.body if isinstance(n, ast.Expr) and "sys.path" in ast.unparse(n)]
    lines = src.splitlines(keepends=True); take = set()
    for n in imps: take.update(range(n.lineno - 1, n.end_lineno))
    imp = "".join(l for i, l in enumerate(lines) if i in take).rstrip("\n")
    rest = "".join(l for i, l in enumerate(lines) if i not in take).strip("\n")
    return imp, rest

def process(path: str) -> int:
    nb = json.load(open(path)); out, n = [], 0
    taken = {c["id"] for c in nb["cells"]}
    for c in nb["cells"]:
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        first = src.lstrip().splitlines()[:3]
        if c["cell_type"] == "code" and not any(l.strip().startswith(_SKIP) for l in first):
            r = split_cell(src)
            if r is not None:
                imp, rest = r
                cid, k = hashlib.sha1(("code" + imp).encode()).hexdigest()[:8], 0
                while cid in taken: k += 1; cid = hashlib.sha1(("code" + imp + str(k)).encode()).hexdigest()[:8]
                taken.add(cid)
                out.append({"cell_type": "code", "execution_count": None, "id": cid, "metadata": {}, "outputs": [],
                            "source": imp.splitlines(keepends=True)})
                c["source"] = rest.splitlines(keepends=True); n += 1
        out.append(c)
    nb["cells"] = out
    ids = [c["id"] for c in out]
    assert len(ids) == len(set(ids)), f"{path}: duplicate cell ids after the split"
    with open(path, "w") as f: f.write(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    return n

if __name__ == "__main__":
    for p in sys.argv[1:]: print(f"{p}: {process(p)} cells split")
