#!/usr/bin/env python
"""Build the documentation website into `_docs/` without Quarto.

    python tools/build_docs.py            # nbdev processing into _proc/, then render every page into _docs/
    python tools/build_docs.py --serve    # ... and serve _docs/ on http://127.0.0.1:8000 (Ctrl-C to stop)

Where Quarto is installed, `nbdev_docs` / `nbdev_preview` build the same site from the same files (`_quarto.yml`).

Two stages:

1. **nbdev's own processing.** Each notebook (and every other file under nbs/) goes through exactly what
   `nbdev_proc_nbs` runs: `nbdev.serve._proc_file` + `nbdev.serve_drv.main` with nbdev's `FilterDefaults` processors
   (front matter, `#| hide`/`#| export` handling, `show_doc` execution, doc links...), written to `_proc/`.
   (`nbdev_proc_nbs` itself cannot be called here: it first tries to download and install Quarto.)
2. **Rendering with nbconvert** (Jupyter's own, maintained converter; already a dev dependency): its HTML exporter with
   the `lab` template, extended by `tools/docs_template/dpdocs` with a navbar and the sidebar of `_quarto.yml`.
   Markdown is converted by nbconvert (mistune); math is typeset in the browser by MathJax 3, copied into the site
   from its npm package (pinned in tools/docs_template/package.json, installed on first use): no CDN. The only
   adaptations of nbdev's Quarto-flavoured output are small and listed in `adapt_for_nbconvert`: Quarto cell options
   (`#| echo/output/include`), pandoc link attributes `{target=...}`, absolute links to the published site, which
   become relative links, and links to another notebook (`02_private_ate.ipynb`), which go to its page as in Quarto.
3. **Search index.** Pagefind (npm package, pinned in the same package.json) reads the built pages (`<main
   data-pagefind-body>`: title, description, text, code and outputs; headings become sub-results) and writes a
   chunked index with its search UI into `_docs/pagefind/`; the search box on every page queries it in the browser.
   Formulas are indexed as a plain-text reading (`index_math_text`): a result snippet shows "(ε,δ)-DP", not the TeX
   source "$(\\varepsilon,\\delta)$-DP" that MathJax typesets on the page.

Page titles (sidebar and heading) are the notebooks' `# Title` lines; a notebook that exports a module also names it
under the title. Checks: a markdown table the converter could not read (shown as raw `| a | b |` text, e.g. a `|`
inside `$...$`: write `\\lvert`/`\\rvert`) is reported by `raw_markdown_tables`.

Every notebook under nbs/ must be listed in exactly one sidebar section of `_quarto.yml` (the build stops otherwise).
"""
import argparse, concurrent.futures as cf, functools, html, http.server, json, os, re, shutil
import sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBS, PROC, DOCS = ROOT / "nbs", ROOT / "_proc", ROOT / "_docs"
TEMPLATES = ROOT / "tools" / "docs_template"


# ---------------------------------------------------------------- site configuration (the root _quarto.yml)
def load_quarto(path=ROOT / "_quarto.yml"):
    "The site configuration, with its `metadata-files` (nbs/nbdev.yml: title, description, repo) merged as Quarto does."
    import yaml
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    for f in cfg.get("metadata-files", []):
        extra = yaml.safe_load((NBS / f).read_text(encoding="utf-8")) or {}
        for k, v in extra.items():
            cfg[k] = {**v, **cfg.get(k, {})} if isinstance(v, dict) else cfg.get(k, v)
    return cfg

def sidebar_sections(cfg=None):
    "[(section title, [notebook path relative to nbs/, ...]), ...] from `website.sidebar.contents`."
    cfg = cfg or load_quarto()
    out = []
    for sec in cfg["website"]["sidebar"]["contents"]:
        out.append((sec["section"], [c if isinstance(c, str) else c["href"] for c in sec["contents"]]))
    return out

def all_notebooks():
    "Every notebook nbdev would render (same folder/file skipping rules as nbdev's nbglob), relative to nbs/."
    from nbdev.doclinks import nbglob
    return sorted(str(Path(p).relative_to(NBS)) for p in nbglob(NBS, func=Path))

def check_sidebar(cfg=None):
    "Problems with the sidebar: notebooks listed in no section or twice, listed files that do not exist."
    listed = [p for _, ps in sidebar_sections(cfg) for p in ps]
    nbs = set(all_notebooks())
    probs = [f"nbs/{p} is not in the sidebar: add it to a section of _quarto.yml" for p in sorted(nbs - set(listed))]
    probs += [f"_quarto.yml lists {p}, which does not exist under nbs/" for p in listed if p not in nbs]
    probs += [f"_quarto.yml lists {p} more than once" for p in sorted({p for p in listed if listed.count(p) > 1})]
    return probs

_DELIM_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", re.M)

def raw_tables(page_html):
    "First lines of the paragraphs of `page_html` that hold a markdown table left as text (a `|---|---|` row in a <p>)."
    paras = re.findall(r"<p>(.*?)</p>", page_html, flags=re.S)
    return [p.strip().splitlines()[0][:80] for p in paras if _DELIM_ROW.search(p)]

def raw_markdown_tables(notebooks=None):
    """[(notebook, first line)] of markdown tables that nbconvert's markdown converter (mistune) leaves as text.
    The usual cause: a `|` inside `$...$` in a table row splits the cell (pandoc does the same): use
    `\\lvert`/`\\rvert`."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    out = []
    for rel in (all_notebooks() if notebooks is None else notebooks):
        for c in json.loads((NBS / rel).read_text(encoding="utf-8"))["cells"]:
            if c["cell_type"] == "markdown":
                out += [(rel, line) for line in raw_tables(markdown2html_mistune("".join(c["source"])))]
    return out

def module_of(rel):
    "The module a notebook exports (`#| default_exp x` -> 'dp_causal_nb.x'), or None."
    from nbdev.config import get_config
    for c in json.loads((NBS / rel).read_text(encoding="utf-8"))["cells"]:
        if c["cell_type"] != "code": continue
        m = re.search(r"^#\|\s*default_exp\s+(\S+)", "".join(c["source"]), flags=re.M)
        if m: return f"{get_config().lib_name}.{m.group(1)}"
    return None

def cut_descriptions(notebooks=None):
    """Notebooks (relative to nbs/) whose `> description` under the title spans several lines: nbdev (and so Quarto's
    `nbdev_docs` too) keeps only the first line as the page subtitle and the module docstring. Write it on one line."""
    out = []
    for rel in (all_notebooks() if notebooks is None else notebooks):
        cells = json.loads((NBS / rel).read_text(encoding="utf-8"))["cells"]
        md = next((c for c in cells if c["cell_type"] == "markdown"), None)
        lines = "".join(md["source"]).splitlines() if md else []
        quote = [i for i, l in enumerate(lines) if l.startswith(">")]
        if len(quote) > 1 and quote[1] == quote[0] + 1: out.append(rel)
    return out


# ---------------------------------------------------------------- stage 1: nbdev processing
PROC_TIMEOUT = 600   # seconds per notebook

def _proc_one(src):
    "Run nbdev's docs processing on one file, in this process (what nbdev_proc_nbs runs per file)."
    import nbdev.serve, nbdev.serve_drv
    job = nbdev.serve._proc_file(Path(src), cache=PROC, path=NBS)
    if job: nbdev.serve_drv.main(job)

def _proc_in_subprocess(src):
    "One fresh process per file (nbdev's processing runs notebook cells in IPython); return (src, error or None)."
    import subprocess
    t = time.time()
    try:
        r = subprocess.run([sys.executable, __file__, "--proc-one", src], cwd=ROOT, capture_output=True, text=True,
                           timeout=PROC_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return src, f"nbdev processing did not finish in {PROC_TIMEOUT} s"
    print(f"  processed {Path(src).relative_to(ROOT)} in {time.time() - t:.1f} s", flush=True)
    if r.returncode: return src, "\n".join(l for l in r.stderr.splitlines() if not l.startswith("  "))[-3000:]
    return src, None

def nbdev_process(n_workers=2):
    if PROC.exists(): shutil.rmtree(PROC)
    PROC.mkdir()
    from nbdev.doclinks import nbglob
    files = [str(p) for p in nbglob(NBS, func=Path, file_glob="", file_re="")] + [str(NBS / "_quarto.yml")]
    nbs = [f for f in files if f.endswith(".ipynb")]
    for f in files:          # other files are only copied: do it here
        if f not in nbs: _proc_one(f)
    with cf.ThreadPoolExecutor(n_workers) as ex:
        return [(s, e) for s, e in ex.map(_proc_in_subprocess, sorted(nbs, key=lambda f: -Path(f).stat().st_size)) if e]


# ---------------------------------------------------------------- stage 2: render with nbconvert
_ATTRS = re.compile(r'(\]\([^)\s]*\))\{[^}\n]*\}')           # pandoc link attributes: [x](url){target="_blank" ...}
_OPT = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")

def _frontmatter(nb):
    import yaml
    for c in nb.cells:
        if c.cell_type == "raw" and c.source.startswith("---"):
            return yaml.safe_load(c.source.strip().strip("-")) or {}, c
    return {}, None

def _site_prefix():
    from nbdev.config import get_config
    cfg = get_config()
    return (cfg.doc_host.rstrip("/") + "/" + cfg.doc_baseurl.strip("/") + "/").replace("//", "/").replace(":/", "://")

_NB_LINK = re.compile(r"\]\(([^)\s:#]+\.ipynb)(#[^)\s]*)?\)")

def adapt_for_nbconvert(nb, root, here="", pages=None):
    """Apply the Quarto semantics nbconvert does not know to a processed notebook (in place).

    - cell options: `#| include: false` drops the cell, `#| echo: false` hides the code, `#| output: false` the
      outputs; `#|` lines are not shown.  - `{target=...}` after a link is dropped (pandoc attribute syntax).
    - links to the published site (doc_host + doc_baseurl, written by nbdev's `add_links`) become relative.
    - a markdown link to a notebook (relative to this one, `here` = its folder under nbs/) goes to that notebook's
      page, `pages` mapping nbs-relative notebook paths to output paths (as Quarto resolves links to sources)."""
    prefix = _site_prefix()
    def page_link(m):
        target = os.path.normpath(os.path.join(here, m.group(1)))
        if not pages or target not in pages: return m.group(0)
        return f"]({root}{pages[target]}{m.group(2) or ''})"
    def fix(text): return _NB_LINK.sub(page_link, _ATTRS.sub(r"\1", text).replace(prefix, root))
    keep = []
    for c in nb.cells:
        if c.cell_type == "raw": continue
        if c.cell_type == "markdown":
            c.source = fix(c.source); keep.append(c); continue
        lines, opts = c.source.splitlines(), {}
        while lines and _OPT.match(lines[0]):
            k, v = _OPT.match(lines[0]).groups(); opts[k] = v.lower(); lines.pop(0)
        if opts.get("include") == "false": continue
        c.source = "\n".join(lines)
        c.metadata["dp_hide_input"] = opts.get("echo") == "false"
        if opts.get("output") == "false": c.outputs = []
        for o in c.get("outputs", []):
            for mime in ("text/markdown", "text/html"):
                if mime in o.get("data", {}):
                    d = o["data"][mime]; o["data"][mime] = fix("".join(d) if isinstance(d, list) else d)
        if c.metadata["dp_hide_input"] and not c.get("outputs"): continue
        keep.append(c)
    nb.cells = keep

def _add_lower_ids(page):
    "nbdev's doc links use lowercase anchors (Quarto's ids); nbconvert keeps the heading's case: add both."
    def rep(m):
        i = m.group(2)
        return m.group(0) if i == i.lower() else f'{m.group(0)}<span id="{html.escape(i.lower(), quote=True)}"></span>'
    return re.sub(r'<h([1-6]) id="([^"]+)"[^>]*>', rep, page)

def out_name(rel, fm):
    "Output page for nbs/<rel>: the `output-file` nbdev puts in the front matter (numeric prefix stripped)."
    return str(Path(rel).parent / fm.get("output-file", Path(rel).with_suffix(".html").name))

def _exporter():
    from nbconvert import HTMLExporter
    return HTMLExporter(template_name="dpdocs", extra_template_basedirs=[str(TEMPLATES)], exclude_input_prompt=True,
                        exclude_output_prompt=True, anchor_link_text="#")


# ---------------------------------------------------------------- search text for math (Pagefind)
# Math stays TeX in the page (MathJax typesets it in the browser), so Pagefind would index, and show in its result
# snippets, TeX source such as `$(\varepsilon,\delta)$`. `index_math_text` wraps each formula MathJax typesets in a
# `data-pagefind-ignore` span and follows it with a `hidden` span holding a plain-text reading of it ("(ε,δ)"),
# which the index holds instead: hidden, so neither shown on the page nor read by screen readers (MathJax gives
# those its own rendering); free of `$` and backslashes, so MathJax finds no math in it.
_TEX_SYMBOLS = {
    **dict(zip("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
               "upsilon phi chi psi omega".split(), "αβγδεζηθικλμνξοπρστυφχψω")),
    **dict(zip("Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split(), "ΓΔΘΛΞΠΣΥΦΨΩ")),
    "varepsilon": "ε", "vartheta": "ϑ", "varphi": "φ", "varrho": "ϱ", "varsigma": "ς", "varpi": "ϖ", "ell": "ℓ",
    "le": "≤", "leq": "≤", "leqslant": "≤", "ge": "≥", "geq": "≥", "geqslant": "≥", "ne": "≠", "neq": "≠",
    "approx": "≈", "sim": "∼", "simeq": "≃", "equiv": "≡", "propto": "∝", "ll": "≪", "gg": "≫", "in": "∈",
    "notin": "∉", "ni": "∋", "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "cup": "∪", "cap": "∩", "setminus": "∖",
    "emptyset": "∅", "varnothing": "∅", "forall": "∀", "exists": "∃", "neg": "¬", "lnot": "¬", "land": "∧",
    "wedge": "∧", "lor": "∨", "vee": "∨", "to": "→", "rightarrow": "→", "longrightarrow": "⟶", "leftarrow": "←",
    "gets": "←", "Rightarrow": "⇒", "implies": "⇒", "Leftarrow": "⇐", "Leftrightarrow": "⇔", "iff": "⇔",
    "mapsto": "↦", "uparrow": "↑", "downarrow": "↓", "times": "×", "cdot": "·", "circ": "∘", "pm": "±", "mp": "∓",
    "div": "÷", "ast": "∗", "star": "⋆", "otimes": "⊗", "oplus": "⊕", "odot": "⊙", "top": "ᵀ", "intercal": "ᵀ",
    "perp": "⊥", "bot": "⊥", "mid": "|", "vert": "|", "lvert": "|", "rvert": "|", "Vert": "‖", "lVert": "‖",
    "rVert": "‖", "|": "‖", "langle": "⟨", "rangle": "⟩", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋",
    "{": "{", "}": "}", "lbrace": "{", "rbrace": "}", "ldots": "…", "dots": "…", "cdots": "⋯", "dotsc": "…",
    "dotsb": "⋯", "vdots": "⋮", "ddots": "⋱", "sum": "Σ", "prod": "∏", "int": "∫", "partial": "∂", "nabla": "∇",
    "infty": "∞", "prime": "′", "triangleq": "≜", "coloneqq": "≔", "hbar": "ℏ", "dagger": "†", "square": "□",
    "%": "%", "_": "_", "&": "&", "#": "#", "$": "", ",": " ", ";": " ", ":": " ", ">": " ", " ": " ", "quad": " ",
    "qquad": " ", "!": "", "\\": "; ", "cr": "; "}
_TEX_DROP = set("left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr middle displaystyle "
                "textstyle scriptstyle limits nolimits nonumber notag".split())
_TEX_KEEP = set("text textrm textit textbf texttt textsf mathrm mathit mathbf mathsf mathtt mathcal mathscr mathfrak "
                "boldsymbol bm operatorname emph mbox hbox underline overline underbrace overbrace substack".split())
_TEX_NAMED = set("log ln exp max min sup inf lim det arg sin cos tan tanh sinh cosh Pr sgn deg dim ker gcd liminf "
                 "limsup".split())
_TEX_ACCENT = {"hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303", "bar": "\u0304",
               "dot": "\u0307", "ddot": "\u0308", "vec": "\u20d7", "check": "\u030c", "breve": "\u0306"}
_TEX_FRAC = {"frac", "tfrac", "dfrac", "cfrac"}
_BLACKBOARD = dict(zip("RNZQCEPV1", "ℝℕℤℚℂ𝔼ℙ𝕍𝟙"))
_SUP = dict(zip("0123456789+-=()nijkT*′ᵀ", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱʲᵏᵀ*′ᵀ"))
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))

def _tex_arg(tex, i):
    "(argument, index after it) of the TeX argument at tex[i]: a {...} group, a control word, or one character."
    while i < len(tex) and tex[i].isspace(): i += 1
    if i >= len(tex): return "", i
    if tex[i] != "{":
        m = re.match(r"\\(?:[A-Za-z]+|.)", tex[i:], re.S)
        return (m.group(0), i + m.end()) if m else (tex[i], i + 1)
    depth, j = 0, i
    while j < len(tex):
        if tex[j] == "\\":                # an escaped brace (or any control sequence) does not open or close
            j += 2
            continue
        depth += {"{": 1, "}": -1}.get(tex[j], 0)
        if depth == 0: return tex[i + 1:j], j + 1
        j += 1
    return tex[i + 1:], len(tex)

def _grouped(text):
    "A sub-formula as one unit: as it is when a single symbol, word or parenthesised, else in parentheses."
    return text if len(text) <= 1 or re.fullmatch(r"\w+|\(.*\)", text) else f"({text})"

def _script(text, table, mark):
    "A sub- or superscript: Unicode sub/superscript characters for a short one that has them all, else mark + text."
    if 0 < len(text) <= 2 and all(c in table for c in text): return "".join(table[c] for c in text)
    return mark + _grouped(text)

def _tex_command(name, tex, i):
    "(plain text, index after its arguments) of the control sequence `\\name` whose arguments start at tex[i]."
    if name in _TEX_FRAC:
        num, i = _tex_arg(tex, i)
        den, i = _tex_arg(tex, i)
        return f"{_grouped(tex_to_text(num))}/{_grouped(tex_to_text(den))}", i
    if name in _TEX_ACCENT or name in _TEX_KEEP or name in ("sqrt", "mathbb", "begin", "end", "label", "tag"):
        if tex[i:i + 1] == "*": i += 1                                     # \operatorname*{argmin}
        if name == "sqrt" and tex[i:i + 1] == "[": i = (tex.find("]", i) + 1) or len(tex)   # skip a root's index
        arg, i = _tex_arg(tex, i)
        text = tex_to_text(arg)
        if name in _TEX_ACCENT: return text + _TEX_ACCENT[name] if text else "", i
        if name == "sqrt": return "√" + _grouped(text), i
        if name == "mathbb": return "".join(_BLACKBOARD.get(c, c) for c in text), i
        if name == "tag": return f" ({text})", i
        return (text if name in _TEX_KEEP else " "), i                   # \begin, \end, \label: no text of theirs
    if name in _TEX_DROP: return "", i + (tex[i:i + 1] == "." and name in ("left", "right", "middle"))
    if name in _TEX_NAMED: return f" {name}" + (" " if re.match(r"\s*[A-Za-z0-9\\]", tex[i:]) else ""), i
    return _TEX_SYMBOLS.get(name, name), i                                # an unknown command reads as its name

def tex_to_text(tex:str) -> str:
    """A plain-text reading of a TeX formula, for the search index: `\\frac{\\varepsilon}{2}` -> 'ε/2',
    `\\hat\\theta_i^\\top` -> 'θ̂ᵢᵀ'. Readable, not exact; never a `$` or a backslash."""
    out, i = [], 0
    while i < len(tex):
        c = tex[i]
        if c in "^_":
            arg, i = _tex_arg(tex, i + 1)
            out.append(_script(tex_to_text(arg), _SUP if c == "^" else _SUB, c))
            continue
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.?)", tex[i:], re.S)
            text, i = _tex_command(m.group(1), tex, i + m.end())
            out.append(text)
            continue
        out.append({"{": "", "}": "", "$": "", "&": " ", "~": " "}.get(c, c))
        i += 1
    return re.sub(r"([(\[{⟨]) ", r"\1", re.sub(r"\s+", " ", "".join(out))).strip()

# what MathJax typesets (the page's configuration: $...$, \(...\), $$...$$, \[...\], environments), after escapes
_MATH = re.compile(r"(?P<esc>\\[\\$])|(?P<math>\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)"
                   r"|\\begin\{(?P<env>[A-Za-z*]+)\}.+?\\end\{(?P=env)\}|\$(?:\\.|[^$\\])+?\$)", re.S)
# what MathJax leaves alone (comments, scripts, code) or is markup (tags, their attributes)
_NOT_TEXT = re.compile(r"<!--.*?-->|<(script|style|pre|code|textarea)\b.*?</\1\s*>"
                       r"|<(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.S | re.I)

def _math_for_index(m):
    if m.group("esc"): return m.group(0)
    tex = html.unescape(m.group("math"))
    body = tex[2:-2] if tex[:2] in ("$$", "\\[", "\\(") else tex.strip("$")
    text = html.escape(tex_to_text(body), quote=False)
    return f'<span data-pagefind-ignore>{m.group("math")}</span><span class="dp-math-text" hidden>{text}</span>'

def index_math_text(page:str) -> str:
    "The page with each formula of its <main> hidden from the search index and followed by a hidden plain-text reading."
    a, b = page.find("<main"), page.rfind("</main>")
    if a < 0 or b < a: return page
    parts, pos = [page[:a]], a
    for m in _NOT_TEXT.finditer(page, a, b):
        parts += [_MATH.sub(_math_for_index, page[pos:m.start()]), m.group(0)]
        pos = m.end()
    return "".join(parts + [_MATH.sub(_math_for_index, page[pos:b]), page[b:]])


def render(pages, sidebar, cfg):
    "Render each processed notebook; `pages`: nbs-relative notebook path -> (output path, title, description, module)."
    import nbformat
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    ex = _exporter()
    site = cfg["website"]
    outputs = {p: v[0] for p, v in pages.items()}
    for rel, (out, title, desc, module) in pages.items():
        nb = nbformat.read(PROC / rel, as_version=4)
        depth = len(Path(out).parts) - 1
        root = "../" * depth
        adapt_for_nbconvert(nb, root, str(Path(rel).parent), outputs)
        side = [{"title": s, "pages": [{"href": pages[p][0], "title": pages[p][1], "current": p == rel}
                                       for p in ps if p in pages]} for s, ps in sidebar]
        d = markdown2html_mistune(desc or "").strip()
        d = re.sub(r"^<p>(.*)</p>$", r"\1", d, flags=re.S)
        resources = {"metadata": {"name": title}, "site": {
            "root": root, "title": title, "description": desc or "", "description_html": d, "sidebar": side,
            "site_title": site.get("title", ""), "site_description": site.get("description", ""),
            "repo_url": site.get("repo-url", "#"), "source": f"nbs/{rel}", "module": module}}
        nb.metadata["title"] = f"{title} – {site.get('title', '')}" if rel != "index.ipynb" else site.get("title", title)
        body, _ = ex.from_notebook_node(nb, resources=resources)
        dst = DOCS / out
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(index_math_text(_add_lower_ids(body)), encoding="utf-8")

MATHJAX = TEMPLATES / "node_modules" / "mathjax" / "es5"
PAGEFIND = TEMPLATES / "node_modules" / ".bin" / "pagefind"

def ensure_npm_packages():
    """MathJax 3 and Pagefind from npm (versions pinned in tools/docs_template/package.json), installed with npm into
    tools/docs_template/node_modules (git-ignored) when missing: a fresh clone installs them on its first build."""
    if (MATHJAX / "tex-chtml-full.js").exists() and PAGEFIND.exists(): return
    import subprocess
    npm = shutil.which("npm")
    if not npm: sys.exit("build_docs: npm is needed once to install MathJax and Pagefind (apt-get install npm)")
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(TEMPLATES)], check=True)

def build_search_index():
    "Index every built page with Pagefind into _docs/pagefind/ (searched in the browser); return (pages, bytes)."
    import subprocess
    ensure_npm_packages()
    r = subprocess.run([str(PAGEFIND), "--site", str(DOCS), "--output-subdir", "pagefind", "--force-language", "en",
                        "--exclude-selectors", ".anchor-link"], capture_output=True, text=True)   # the '#' after headings
    if r.returncode: sys.exit(f"build_docs: Pagefind failed:\n{r.stdout}\n{r.stderr}")
    m = re.search(r"Indexed (\d+) pages?", r.stdout)
    size = sum(f.stat().st_size for f in (DOCS / "pagefind").rglob("*") if f.is_file())
    return (int(m.group(1)) if m else 0), size

def copy_assets():
    ensure_npm_packages()
    # MathJax: the combined TeX/CHTML build and the files it loads (fonts, extensions); not the speech engine
    shutil.copytree(MATHJAX, DOCS / "mathjax", ignore=lambda d, fs: [f for f in fs if f == "sre" or (
        Path(d) == MATHJAX and f.endswith(".js") and f != "tex-chtml-full.js")])
    shutil.copy2(TEMPLATES / "dpdocs" / "site.css", DOCS / "site.css")
    for p in PROC.rglob("*"):   # non-notebook files nbdev copied (styles.css, images): keep them beside the pages
        if p.is_file() and p.suffix not in (".ipynb", ".yml") and not p.name.startswith("."):
            (DOCS / p.relative_to(PROC)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, DOCS / p.relative_to(PROC))
    (DOCS / ".nojekyll").touch()

def build(n_workers=2, keep_going=False):
    t0 = time.time()
    cfg = load_quarto(NBS / "_quarto.yml")
    probs = check_sidebar(cfg)
    if probs: sys.exit("build_docs: the sidebar does not match the notebooks:\n  " + "\n  ".join(probs))
    errors = nbdev_process(n_workers)
    failed = "build_docs: nbdev processing failed (nbdev_docs would fail the same way):\n" + "\n".join(
        f"--- {Path(s).relative_to(ROOT)}\n{e}" for s, e in errors) + "\n(a cell with imports is run by nbdev's show_doc " \
        "processing: keep imports in cells of their own, see nbdev's FAQ)"
    if errors and not keep_going: sys.exit(failed)
    for rel in cut_descriptions():
        print(f"build_docs: WARNING nbs/{rel}: its '> description' spans several lines; nbdev keeps only the first "
              "as the page subtitle (write it on one line)")
    for rel, line in raw_markdown_tables():
        print(f"build_docs: WARNING nbs/{rel}: a markdown table is shown as raw text ({line!r}); a '|' inside $...$ "
              "splits a table cell: write \\lvert/\\rvert")
    t1 = time.time()
    import nbformat
    if DOCS.exists(): shutil.rmtree(DOCS)
    DOCS.mkdir()
    sidebar, pages = sidebar_sections(cfg), {}
    for _, ps in sidebar:
        for rel in ps:
            if not (PROC / rel).exists(): continue   # --keep-going: a notebook nbdev could not process
            fm, _ = _frontmatter(nbformat.read(PROC / rel, as_version=4))
            pages[rel] = (out_name(rel, fm), str(fm.get("title", Path(rel).stem)), fm.get("description", ""),
                          module_of(rel))
    render(pages, sidebar, cfg)
    copy_assets()
    n_indexed, index_bytes = build_search_index()
    (DOCS / "pages.json").write_text(json.dumps({v[0]: f"nbs/{k}" for k, v in pages.items()}, indent=1))
    print(f"build_docs: {len(pages)} pages in {DOCS.relative_to(ROOT)}/ (nbdev processing {t1 - t0:.0f} s, rendering "
          f"{time.time() - t1:.0f} s); search index: {n_indexed} pages, {index_bytes / 1e6:.1f} MB in pagefind/")
    if n_indexed != len(pages): sys.exit(f"build_docs: Pagefind indexed {n_indexed} of {len(pages)} pages")
    if errors: sys.exit(failed)
    return pages

def serve(port=8000):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(DOCS))
    print(f"serving {DOCS} on http://127.0.0.1:{port}/")
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", action="store_true", help="serve _docs/ on 127.0.0.1 after building")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--n_workers", type=int, default=2)
    ap.add_argument("--keep-going", action="store_true", help="render the pages nbdev could process, then fail")
    ap.add_argument("--proc-one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.chdir(ROOT)
    if a.proc_one: _proc_one(a.proc_one); sys.exit(0)
    build(a.n_workers, a.keep_going)
    if a.serve: serve(a.port)
