#!/usr/bin/env python3
"""Drives `refeval debug` as a user would: typing at a terminal (a pseudo-terminal, so libedit is
in charge of the line), from a --commands file, and from a pipe; checks what it prints and its
exit codes (README, "Debugging a model").

Usage: debug_repl_test.py REFEVAL SHARED_DIR
"""
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto as T, helper

REFEVAL, SHARED = sys.argv[1], sys.argv[2]
LINREG = os.path.join(SHARED, "docs", "verbose-golden", "linreg.onnx")  # Add -> Sqrt -> MatMul -> Add
LOOP = os.path.join(SHARED, "onnx-backend-tests", "node", "test_loop11", "model.onnx")
PROMPT = b"(refeval) "
failures = []


def check(what, condition, output):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}\n--- output ---\n{output}\n---")


def write_npy(path, shape, values):
    """A float32 .npy file (format 1.0), written by hand."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


class Terminal:
    """refeval debug on a pseudo-terminal: type a line, read until the next prompt."""

    def __init__(self, args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(REFEVAL, [REFEVAL] + args, dict(os.environ, TERM="xterm"))
        self.seen = b""

    def read_until(self, marker, timeout=20.0, since=None):
        """What arrives until `marker` (searched from `since`, default: from now)."""
        start = len(self.seen) if since is None else since
        deadline = time.monotonic() + timeout
        while marker not in self.seen[start:]:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError(f"no {marker!r} after: {self.seen[start:]!r}")
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise EOFError(f"the session ended before {marker!r}: {self.seen[start:]!r}")
            self.seen += chunk
        return self.seen[start:].decode(errors="replace")

    def type(self, keys):
        """Sends keys (a line ends with \\r, as Enter does) and returns what came back until the prompt."""
        os.write(self.fd, keys.encode())
        return self.read_until(PROMPT)

    def exit_code(self):
        while True:  # drain, or the child may block writing its last lines
            try:
                if not os.read(self.fd, 4096):
                    break
            except OSError:
                break
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def run(args, stdin=""):
    p = subprocess.run([REFEVAL] + args, input=stdin, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_terminal():
    t = Terminal(["debug", LINREG])
    banner = t.read_until(PROMPT)
    check("terminal: banner", "4 nodes, inputs X" in banner, banner)
    out = t.type("break op:MatMul\r")
    check("terminal: break", "Breakpoint 1 at" in out, out)
    out = t.type("run\r")
    check("terminal: stops at the breakpoint", "Breakpoint 1, before #2" in out and "(MatMul)" in out, out)
    out = t.type("print /Sqrt_output_0\r")
    check("terminal: prints a value", "/Sqrt_output_0: float32:(1, 10) in [" in out, out)
    # Up-arrow recalls the last line (libedit's history), so the value is printed again.
    out = t.type("\x1b[A\r")
    check("terminal: history", "/Sqrt_output_0: float32:(1, 10) in [" in out, out)
    out = t.type("next\r")
    check("terminal: next", "Before #3" in out, out)
    out = t.type("continue\r")
    check("terminal: the run ends", "The run finished." in out and "variable: float32:(1, 1)" in out, out)
    os.write(t.fd, b"quit\r")
    code = t.exit_code()
    check(f"terminal: quit exits 0 (got {code})", code == 0, "")


def test_ctrl_c_interrupts_a_long_run():
    t = Terminal(["--max-loop-iterations", "0", "debug", LOOP, "--fill", "trip_count=1000000000", "--fill", "cond=1"])  # 10^9 iterations, beyond the default limit
    t.read_until(PROMPT)
    os.write(t.fd, b"run\r")
    t.read_until(b"run")
    since = len(t.seen)
    for _ in range(40):  # Ctrl-C until it lands in the run (a loaded machine may start it late)
        time.sleep(0.5)
        os.write(t.fd, b"\x03")
        try:
            t.read_until(b"Interrupted, before", timeout=1.0, since=since)
            break
        except TimeoutError:
            continue
    out = t.read_until(PROMPT, since=since)
    check("Ctrl-C: the run stops at the next node", "Interrupted, before" in out and "body iteration" in out, out)
    # At the prompt, Ctrl-C only drops the line. (Typed a moment after the prompt, as a person
    # would: before libedit sets up the terminal, the line discipline would flush the keys.)
    time.sleep(0.3)
    out = t.type("half-typed\x03")
    check("Ctrl-C: drops a half-typed line", "unknown command" not in out, out)
    out = t.type("print trip_count\r")
    check("Ctrl-C: the session goes on", "trip_count: int64:() in [1000000000, 1000000000]" in out, out)
    os.write(t.fd, b"quit\r")
    code = t.exit_code()
    check(f"Ctrl-C: quit exits 0 (got {code})", code == 0, "")


def test_commands_file(work):
    commands = os.path.join(work, "session.txt")
    fix = os.path.join(work, "ones.npy")
    write_npy(fix, (1, 10), [1.0] * 10)
    with open(commands, "w") as f:
        f.write("# a --commands file: one command per line\n"
                "break /Sqrt\n"
                "run\n"
                "info inputs\n"
                "print /Add_output_0 stats\n"
                "step\n"
                f"set /Sqrt_output_0 {fix}\n"
                "print /Sqrt_output_0 full\n"
                "list\n"
                "info breaks\n"
                "continue\n"
                "quit\n")
    code, out, err = run(["debug", LINREG, "--fill", "X=2", "--commands", commands])
    check(f"--commands: exit 0 (got {code}, stderr {err!r})", code == 0 and err == "", out)
    check("--commands: echoes commands", "(refeval) break /Sqrt\n" in out, out)
    check("--commands: stops", "Breakpoint 1, before #1 /Sqrt (Sqrt)  inputs: /Add_output_0  outputs: /Sqrt_output_0" in out, out)
    check("--commands: input values", "  /Add_output_0: float32:(1, 10) in [4.0, 4.0]" in out, out)
    check("--commands: stats", "count 10  min 4.0  max 4.0  mean 4.0  nan 0  inf 0" in out, out)
    check("--commands: full", "  [0, :] 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0\n" in out, out)
    # sqrt(2 + 2) = 2 replaced by 1: the result is that of X = -1 (-3.32... without the set).
    check("--commands: set changes the result", "variable: float32:(1, 1) in [-1.9602036476135254, " in out, out)
    check("--commands: list marks the current node and the breakpoint",
          "=>   #2 /MatMul (MatMul)" in out and "   * #1 /Sqrt (Sqrt)" in out, out)
    check("--commands: info breaks", "  1  /Sqrt  hits 1  at /Sqrt" in out, out)


def test_stdin_pipe_and_mistakes():
    code, out, err = run(["debug", LINREG], "brake /Sqrt\nbreak nowhere\nbreak /Sqrt\nrun\nprint /Add_output_0\n")
    check(f"pipe: a refused command makes a script exit 2 (got {code})", code == 2, out)
    check("pipe: unknown command", "refeval: error: unknown command 'brake' (help lists the commands)" in err, err)
    check("pipe: bad address", "refeval: error: no node matches 'nowhere'" in err, err)
    check("pipe: goes on after mistakes", "Breakpoint 1, before #1 /Sqrt" in out and "/Add_output_0: float32:(1, 10)" in out, out)
    check("pipe: two error lines", len(err.splitlines()) == 2, err)

    code, out, err = run(["debug", LINREG], "run\n")
    check(f"pipe: end of input after a normal run exits 0 (got {code})", code == 0 and "The run finished." in out, out + err)


def test_command_refusals():
    """Each command used wrongly is one error line naming what is wrong; the session goes on and a
    script with a refused command exits 2. Used rightly in between, they print what they should."""
    script = ("continue\nprint /Add_output_0\ninfo what\ninfo node\nwatch sometimes\nbreak\nhelp break\nhelp nothing\ndelete\n"
              "break /Sqrt\nrun\nrun\nprint /Add_output_0 sideways\ninfo values\nquit\n")
    code, out, err = run(["debug", LINREG, "--fill", "X=2"], script)
    check(f"refusals: a script with refused commands exits 2 (got {code})", code == 2, out + err)
    want = ["the model is not running: continue needs a stop (run or step first)",
            "no value '/Add_output_0' has been computed (run first)",
            "info: 'what' is not node, inputs, outputs, breaks or values",
            "info node: the run is not stopped at a node",
            "watch: 'sometimes' is not nan or off",
            "usage: break ADDR",
            "unknown command 'nothing' (help lists the commands)",
            "the model is already running: continue, step, next, finish or quit",
            "print: 'sideways' is neither full nor stats"]
    check("refusals: one line each, in order", err.splitlines() == ["refeval: error: " + w for w in want], err)
    check("refusals: help COMMAND shows its usage", "(refeval) help break\nbreak ADDR  (or b)\n  stop before the node(s) ADDR names" in out, out)
    check("refusals: delete with no number deletes every breakpoint", "(refeval) delete\nDeleted every breakpoint.\n" in out, out)
    check("refusals: the session went on to the breakpoint", "Breakpoint 1, before #1 /Sqrt (Sqrt)" in out, out)
    check("refusals: info values lists what is computed", "  X: float32:(1, 10) in [2.0, 2.0]\n  /Add_output_0: float32:(1, 10) in [4.0, 4.0]" in out, out)


def test_value_kinds(work):
    """print and info values on every kind of value: an empty tensor (no elements to list, stats of
    none), a sequence (each element), strings (no statistics), an optional (its element)."""
    nodes = [helper.make_node("Slice", ["x", "zero", "zero"], ["empty"], name="cut"),
             helper.make_node("SequenceConstruct", ["x", "x"], ["seq"], name="pair"),
             helper.make_node("Constant", [], ["names"], name="names", value=helper.make_tensor("v", T.STRING, [2], [b"a", b"bc"])),
             helper.make_node("Optional", ["x"], ["opt"], name="wrap"),
             helper.make_node("Optional", [], ["nothing"], name="none", type=helper.make_tensor_type_proto(T.FLOAT, [3])),
             helper.make_node("OptionalHasElement", ["opt"], ["has"], name="has"),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], name="cat", axis=0)]
    g = helper.make_graph(nodes, "kinds", [helper.make_tensor_value_info("x", T.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [6]), helper.make_tensor_value_info("empty", T.FLOAT, [0]),
                           helper.make_tensor_value_info("names", T.STRING, [2]), helper.make_tensor_value_info("has", T.BOOL, [])],
                          [helper.make_tensor("zero", T.INT64, [1], [0])])
    model = os.path.join(work, "kinds.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), model)
    code, out, err = run(["debug", model, "--fill", "x=1"],
                         "run\nprint empty\nprint empty full\nprint empty stats\nprint seq full\nprint names stats\nprint opt\nprint nothing\n"
                         "info values\nquit\n")
    check(f"kinds: exit 0 (got {code}, {err!r})", code == 0 and err == "", out)
    check("kinds: an empty tensor's summary lists nothing", "(refeval) print empty\nempty: float32:(0,) (empty)\n(refeval)" in out, out)
    check("kinds: an empty optional says so", "print nothing\nnothing: None (an empty optional)\n" in out, out)
    check("kinds: an empty tensor has no elements to list", "(refeval) print empty full\nempty: float32:(0,) (empty)\n(refeval)" in out, out)
    check("kinds: an empty tensor's statistics count none",
          "print empty stats\nempty: float32:(0,) (empty)\n  count 0  min 0.0  max 0.0  mean 0.0  nan 0  inf 0\n" in out, out)
    check("kinds: a sequence prints each element",
          "print seq full\nseq: a sequence of 2\nseq[0]: float32:(3,) in [1.0, 1.0]\n  [1.0, 1.0, 1.0]\nseq[1]: float32:(3,) in [1.0, 1.0]\n" in out, out)
    check("kinds: strings have no statistics", "print names stats\nnames: object:(2,) in [a, bc]\n  count 2 (no statistics for object)\n" in out, out)
    check("kinds: an optional prints its element", "print opt\nopt: float32:(3,) in [1.0, 1.0]\n  [1.0, 1.0, 1.0]\n" in out, out)
    check("kinds: info values summarizes a sequence in one line",
          "  seq: a sequence: float32:(3,) in [1.0, 1.0], float32:(3,) in [1.0, 1.0]\n" in out, out)


def test_watch_nan_and_runtime_error(work):
    code, out, err = run(["debug", LINREG, "--fill", "X=-5"], "watch nan\nrun\ninfo outputs\nquit\n")
    check(f"watch: exit 0 (got {code})", code == 0, out + err)
    check("watch: stops after Sqrt", "NaN/Inf appeared: output '/Sqrt_output_0' holds 10 NaN and 0 Inf, the first at [0, 0]" in out
          and "after #1 /Sqrt (Sqrt)" in out, out)

    bad = os.path.join(work, "bad.npy")
    write_npy(bad, (1, 3), [1.0, 2.0, 3.0])
    code, out, err = run(["debug", LINREG], f"break /MatMul\nrun\nset /Sqrt_output_0 {bad}\ncontinue\nprint /Add_output_0\n")
    check(f"runtime error: exit 1 (got {code})", code == 1, out + err)
    check("runtime error: one line naming the node", err.count("\n") == 1 and "/MatMul" in err, err)
    check("runtime error: values stay printable", "The run failed" in out and "/Add_output_0: float32:(1, 10)" in out, out)


def test_loop_body():
    code, out, err = run(["debug", LOOP], "step\nstep\ninfo node\nprint y_in\nfinish\nquit\n")
    check(f"loop: exit 0 (got {code})", code == 0, out + err)
    check("loop: step enters the body", "  in #0: body iteration 0" in out, out)
    check("loop: finish stops after the Loop", "Finished #0 (Loop)" in out, out)


def test_usage_errors(work):
    code, _, err = run(["debug", os.path.join(work, "missing.onnx")])
    check(f"missing model exits 2 (got {code})", code == 2 and err.startswith("refeval: error:"), err)
    code, _, err = run(["debug", LINREG, "--commands", os.path.join(work, "missing.txt")])
    check(f"missing --commands file exits 2 (got {code})", code == 2 and "--commands" in err, err)


with tempfile.TemporaryDirectory() as work:
    test_terminal()
    test_ctrl_c_interrupts_a_long_run()
    test_commands_file(work)
    test_stdin_pipe_and_mistakes()
    test_command_refusals()
    test_value_kinds(work)
    test_watch_nan_and_runtime_error(work)
    test_loop_body()
    test_usage_errors(work)

print(f"debug_repl_test: {len(failures)} failed")
sys.exit(1 if failures else 0)
