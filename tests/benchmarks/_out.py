"Shared by the benchmark scripts: write a measured table with how and when it was made."
import datetime, platform


def write_table(path, command:str, seconds:float, table:str, conditions:str=""):
    "Write `table` to `path` under a line naming the command, the date, the machine, the run time and `conditions`."
    head = f"Made by `{command}` on {datetime.date.today()} ({platform.machine()}, {seconds:.0f} s){conditions}.\n\n"
    with open(path, "w") as f: f.write(head + table + "\n")
