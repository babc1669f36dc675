"""tests/import/checks.py: what the import tests' scripts share: the check
line printer (`ck`, failures collected in `FAIL`) and a runner of gridtrain
subcommands (`runner(GRIDTRAIN)(*args)`: output captured, 600 s limit)."""
import subprocess

FAIL = []


def ck(name, cond, extra=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else "  " + str(extra)))
    if not cond:
        FAIL.append(name)


def runner(exe):
    def gt(*args):
        return subprocess.run([exe, *args], capture_output=True, text=True, errors="replace", timeout=600)
    return gt
