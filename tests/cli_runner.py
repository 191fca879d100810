"""The CLI run in-process for the tests: the same argument handling, exit status and one-line error contract as the
`dp-causal` command."""
import contextlib, io
from dp_causal_nb.cli import main


def run(args):
    "Exit status, stdout and stderr of `dp-causal ARGS`, run in this process."
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main([str(a) for a in args])
    return code, o.getvalue(), e.getvalue()
