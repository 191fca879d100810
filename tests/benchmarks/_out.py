"Shared by the benchmark scripts: write a measured table with how and when it was made."
import argparse, datetime, pathlib, platform, time


def write_table(path, command:str, seconds:float, table:str, conditions:str=""):
    "Write `table` to `path` under a line naming the command, the date, the machine, the run time and `conditions`."
    head = f"Made by `{command}` on {datetime.date.today()} ({platform.machine()}, {seconds:.0f} s){conditions}.\n\n"
    with open(path, "w") as f: f.write(head + table + "\n")


def run_and_write(script:str, run, markdown, conditions:str="", default_reps:int=30):
    """The command line of a benchmark with `--reps` and `--out`: `markdown(run(reps))` printed, and written with
    `write_table` (naming `script`, this folder's file) when `--out` is given."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=default_reps)
    ap.add_argument("--out", default=None)
    args, t0 = ap.parse_args(), time.time()
    md = markdown(run(args.reps))
    print(md)
    if args.out:
        name = pathlib.Path(script).name
        write_table(args.out, f"python tests/benchmarks/{name} --reps {args.reps}", time.time() - t0, md, conditions)
