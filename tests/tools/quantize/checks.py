"""What the quantize tests share: a check that records its failure, refeval run from the command
line, and the exit status at the end."""
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(refeval, *args):
    return subprocess.run([refeval, *map(str, args)], capture_output=True, text=True)


def finish():
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)
