#!/usr/bin/env python
"""Measure the shape of the notebooks' code: cell sizes, checks under exported cells, statements per line, line widths.

    python tools/code_metrics.py                                    # print the figures and their limits
    python tools/code_metrics.py --json                             # the same as JSON
    python tools/code_metrics.py --check                            # exit 1 if any figure exceeds its limit
    python tools/code_metrics.py --check semicolons,long_lines,history   # only these figures (CI)

What is measured (all notebooks under nbs/, as nbdev finds them; sources only, never stored outputs):

* exported cells (first line `#| export` or `#| exports`): how many, and the median / 90th percentile / largest
  number of lines, counting non-blank lines other than `#|` directives;
* `checked`: the share of exported cells followed, within the next two cells, by a non-exported code cell that is more
  than a `show_doc` call (a check or an example);
* `tails`: the share of test cells (non-exported code cells with an `assert` statement or a call of a `test_*`
  function) that sit after the last exported cell of their notebook, i.e. in a tail section instead of next to the
  code they check (notebooks without exported cells are not counted);
* `semicolons`: statements joined by `;` (Python tokens, so `;` in strings and comments does not count; a `;` ending
  a cell's last statement, which hides its output, does not count either, as in ruff's E703 for notebooks), also
  given per 1000 code lines (non-blank lines of code cells);
* `long_lines`: code lines over 120 characters, and the shares of code lines over 100 and over 120 characters;
* `history`: words that speak of the project's history instead of its code ("session", "finding", "issue N",
  "review round", `adversary_sN`, and pitfall codes such as `P6` that point to a paper digest kept outside the repo)
  in nbs/ (cell sources), dp_causal_nb/ and tests/. Pitfall codes are looked for in prose only (markdown cells,
  comments, strings), since `P0`, `P1` are also ordinary variable names.
"""
import argparse, ast, io, json, math, re, statistics, sys, tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# figure: (limit, what it is). `--check` fails when a figure is above its limit.
LIMITS = {
    "cell_lines_median": (10, "median lines of an exported cell"),
    "cell_lines_p90":    (25, "90th percentile of the lines of an exported cell"),
    "cell_lines_max":    (60, "lines of the largest exported cell"),
    "semicolons":        (0,  "statements joined by ';' in notebook code"),
    "long_lines":        (0,  "notebook code lines over 120 characters"),
    "history":           (0,  "history words in nbs/, dp_causal_nb/, tests/"),
}
# Files being edited elsewhere, with how many of each counted figure they may still hold (one more still fails).
# Shrink an entry as its file is mended, remove it when the file is clean (`--check` says when an entry is too big);
# the notebooks' entries match the per-file-ignores of [tool.ruff.lint] in pyproject.toml.
PENDING = {}

LONG, WIDE = 120, 100
_EXPORT = re.compile(r"^\s*#\|\s*exports?\s*$")
_DIRECTIVE = re.compile(r"^\s*#\|")
_MAGIC = re.compile(r"^\s*[%!?]")
_HISTORY = re.compile(r"session|finding|issue[ -]?[0-9]|review round|adversary_s[0-9]", re.I)
_PITFALL = re.compile(r"\bP[0-9]{1,2}(?:\.[0-9]+)?\b")

def rel(p): return Path(p).resolve().relative_to(ROOT).as_posix()

def notebooks():
    "The notebooks under nbs/, as nbdev finds them (no `_` or `.` files or folders)."
    return sorted(p for p in (ROOT / "nbs").rglob("*.ipynb")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(ROOT / "nbs").parts))

def cells(path):
    "[(cell_type, source)] of a notebook."
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]

def is_exported(src): return bool(src.strip()) and bool(_EXPORT.match(src.lstrip().splitlines()[0]))

def n_lines(src): return sum(1 for l in src.splitlines() if l.strip() and not _DIRECTIVE.match(l))

def _python(src):
    "The source with IPython magics and shell lines blanked (line numbers kept), for tokenize and ast."
    return "\n".join("" if _MAGIC.match(l) else l for l in src.splitlines()) + "\n"

def _tree(src):
    try: return ast.parse(_python(src))
    except SyntaxError: return None

def is_example(src):
    "A non-exported code cell that shows or checks something (not empty, not only `show_doc` calls)."
    tree = _tree(src)
    if tree is None: return bool(src.strip())
    def show_doc(n):
        return (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                and getattr(n.value.func, "id", getattr(n.value.func, "attr", "")) == "show_doc")
    return any(not show_doc(n) for n in tree.body)

def is_test(src):
    "A code cell with an `assert` statement or a call of a `test_*` function (fastcore.test)."
    tree = _tree(src)
    if tree is None: return bool(re.search(r"^\s*assert\b|\btest_\w*\(", src, re.M))
    for n in ast.walk(tree):
        if isinstance(n, ast.Assert): return True
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")).startswith("test_"):
            return True
    return False

def _tokens(src):
    try: return list(tokenize.generate_tokens(io.StringIO(_python(src)).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError): return None

_SKIP = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}

def semicolons(src):
    "[line numbers (1-based)] of the `;` that join statements (not a last `;` that hides the cell's output)."
    toks = _tokens(src)
    if toks is None: return []
    out = []
    for i, t in enumerate(toks):
        if t.type == tokenize.OP and t.string == ";":
            if all(u.type in _SKIP for u in toks[i + 1:]): continue       # `plt.plot(x);` at the end of the cell
            out.append(t.start[0])
    return out

def prose(src, cell_type):
    "The parts of a source that are prose: all of a markdown cell; the comments and strings of code."
    if cell_type != "code": return src
    toks = _tokens(src)
    if toks is None: return src
    return "\n".join(t.string for t in toks if t.type in (tokenize.COMMENT, tokenize.STRING))

def history_hits(text, prose_text):
    "[(word)] of the history words in a text (pitfall codes looked for in its prose only)."
    return [m.group(0) for m in _HISTORY.finditer(text)] + [m.group(0) for m in _PITFALL.finditer(prose_text)]

def history(files=None):
    "{file: [words]} over the notebooks' cell sources and the .py files of dp_causal_nb/ and tests/."
    out = {}
    for p in notebooks():
        hits = [h for t, s in cells(p) for h in history_hits(s, prose(s, t))]
        if hits: out[rel(p)] = hits
    for folder in ("dp_causal_nb", "tests"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            if p.name == "_modidx.py": continue
            s = p.read_text(encoding="utf-8")
            hits = history_hits(s, prose(s, "code"))
            if hits: out[rel(p)] = hits
    return out

def pct(xs, q):
    "The q-quantile of xs (nearest rank)."
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)] if xs else 0

def measure():
    "(figures, per-file detail) for the notebooks and folders."
    sizes, checked, tests, tails, code_lines, wide, long_, semis = [], 0, 0, 0, 0, 0, {}, {}
    for p in notebooks():
        cs, r = cells(p), rel(p)
        exported = [i for i, (t, s) in enumerate(cs) if t == "code" and is_exported(s)]
        for i in exported:
            sizes.append(n_lines(cs[i][1]))
            nxt = cs[i + 1:i + 3]
            checked += any(t == "code" and not is_exported(s) and is_example(s) for t, s in nxt)
        for i, (t, s) in enumerate(cs):
            if t != "code": continue
            lines = [l for l in s.splitlines() if l.strip()]
            code_lines += len(lines)
            wide += sum(len(l) > WIDE for l in lines)
            n_long = sum(len(l) > LONG for l in lines)
            if n_long: long_[r] = long_.get(r, 0) + n_long
            n_semi = len(semicolons(s))
            if n_semi: semis[r] = semis.get(r, 0) + n_semi
            if exported and not is_exported(s) and is_test(s):
                tests += 1
                tails += i > exported[-1]
    hist = history()
    n_semi, n_long, n_hist = sum(semis.values()), sum(long_.values()), sum(len(v) for v in hist.values())
    figures = {
        "exported_cells": len(sizes),
        "cell_lines_median": statistics.median(sizes) if sizes else 0,
        "cell_lines_p90": pct(sizes, 0.9),
        "cell_lines_max": max(sizes, default=0),
        "checked_share": round(checked / len(sizes), 3) if sizes else 0,
        "test_cells": tests,
        "tails_share": round(tails / tests, 3) if tests else 0,
        "code_lines": code_lines,
        "semicolons": n_semi,
        "semicolons_per_1000_lines": round(1000 * n_semi / code_lines, 2) if code_lines else 0,
        "long_lines": n_long,
        "share_over_100": round(wide / code_lines, 4) if code_lines else 0,
        "share_over_120": round(n_long / code_lines, 4) if code_lines else 0,
        "history": n_hist,
    }
    detail = {"semicolons": semis, "long_lines": long_, "history": {k: len(v) for k, v in hist.items()},
              "history_words": {k: sorted(set(v)) for k, v in hist.items()}}
    return figures, detail

def over_limits(figures, detail, names):
    "[messages] for the figures in names that exceed their limits, after the PENDING allowances."
    out = []
    for name in names:
        limit, what = LIMITS[name]
        value = figures[name]
        per_file = detail.get(name)
        if per_file is not None:   # counted figures: what PENDING grants a file is not counted against the limit
            value = sum(max(0, n - PENDING.get(f, {}).get(name, 0)) for f, n in per_file.items())
        if value > limit:
            where = ""
            if per_file:
                worst = [f"{f} {n - PENDING.get(f, {}).get(name, 0)}" for f, n in sorted(per_file.items())
                         if n > PENDING.get(f, {}).get(name, 0)]
                where = ": " + ", ".join(worst)
            out.append(f"{name} = {value} > {limit} ({what}){where}")
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the figures and per-file counts as JSON")
    ap.add_argument("--check", nargs="?", const="all", metavar="FIGURES",
                    help=f"exit 1 if a figure exceeds its limit; FIGURES: comma-separated, of {', '.join(LIMITS)}")
    a = ap.parse_args()
    figures, detail = measure()
    if a.json: print(json.dumps({"figures": figures, "limits": {k: v[0] for k, v in LIMITS.items()},
                                 "per_file": detail}, indent=1, ensure_ascii=False))
    else:
        for k, v in figures.items():
            lim = f"   (limit {LIMITS[k][0]})" if k in LIMITS else ""
            print(f"{k:>26}: {v}{lim}")
        for name in ("semicolons", "long_lines", "history"):
            if detail[name]: print(f"{name}: " + ", ".join(f"{f} {n}" for f, n in sorted(detail[name].items())))
    if a.check is None: return
    names = list(LIMITS) if a.check == "all" else [x.strip() for x in a.check.split(",") if x.strip()]
    unknown = [x for x in names if x not in LIMITS]
    if unknown: ap.error(f"unknown figures {unknown}; choose from {', '.join(LIMITS)}")
    bad = over_limits(figures, detail, names)
    for f, allowed in PENDING.items():
        slack = {k: (n, detail[k].get(f, 0)) for k, n in allowed.items() if k in names and detail[k].get(f, 0) < n}
        if slack: print(f"PENDING allows more than {f} holds, shrink it: "
                        + ", ".join(f"{k} {n} -> {m}" for k, (n, m) in slack.items()))
    for m in bad: print(f"OVER LIMIT {m}", file=sys.stderr)
    if bad: sys.exit(f"{len(bad)} figure(s) over their limits (tools/code_metrics.py, LIMITS)")
    print(f"within limits: {', '.join(names)}")

if __name__ == "__main__":
    main()
