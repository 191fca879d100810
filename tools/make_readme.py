#!/usr/bin/env python
"""Generate README.md from nbs/index.ipynb without Quarto (nbdev_readme needs Quarto, which cannot be installed here).

    python tools/make_readme.py          # write README.md
    python tools/make_readme.py --check  # exit 1 if README.md is stale (used by .ci/run)

Markdown cells are copied verbatim; code cells become ```python blocks, except cells whose first line is an nbdev
directive `#| hide` (dropped); other `#|` directive lines are removed. The stored text outputs of a code cell (stdout and
plain-text results; outputs are stored by tools/run_nbs.py with fixed seeds on synthetic data) follow it as a
```text block, so every example in the README shows what it prints.
"""
import json, sys, pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = "<!-- Generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file. -->\n\n"

def _text(o) -> str:
    "The plain text of one stored output (stdout stream or text/plain result); images and stderr are left out."
    if o.get("output_type") == "stream" and o.get("name") == "stdout": t = o.get("text", "")
    elif o.get("output_type") in ("execute_result", "display_data"): t = o.get("data", {}).get("text/plain", "")
    else: return ""
    t = "".join(t) if isinstance(t, list) else t
    return t if t.endswith("\n") else t + "\n"

def render(nb_path=ROOT / "nbs" / "index.ipynb") -> str:
    nb = json.loads(pathlib.Path(nb_path).read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        src = "".join(cell["source"]).strip("\n")
        if not src: continue
        if cell["cell_type"] == "markdown": parts.append(src)
        elif cell["cell_type"] == "code":
            lines = src.splitlines()
            if any(l.strip().replace(" ", "") in ("#|hide", "#|exporti", "#|export") for l in lines if l.startswith("#|")): continue
            code = "\n".join(l for l in lines if not l.startswith("#|")).strip("\n")
            if code: parts.append(f"```python\n{code}\n```")
            out = "".join(_text(o) for o in cell.get("outputs", [])).strip("\n")
            if code and out: parts.append(f"```text\n{out}\n```")
    return HEADER + "\n\n".join(parts) + "\n"

if __name__ == "__main__":
    text, readme = render(), ROOT / "README.md"
    if "--check" in sys.argv:
        if not readme.exists() or readme.read_text(encoding="utf-8") != text:
            sys.exit("README.md is stale: run `python tools/make_readme.py` and commit the result")
        print("README.md is current")
    else:
        readme.write_text(text, encoding="utf-8"); print("wrote README.md")
