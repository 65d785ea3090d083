"""Small things the audit of issue 24 found: a 5,000-digit line number, input that is not
UTF-8, `condition` on a missing breakpoint, and post-mortems showing pkernels' frames."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from pkdb_harness import PROMPT, pkdb_env, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "
HUGE = "9" * 5000

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(i, x):
    x[i] = 2.0 * x[i]


x = np.ones(8)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 8), scale, x=x)
print("sum", x.sum())
"""
LINE_BODY = 7

FAULTY = """
import numpy as np
import pkernels as pk


@pk.workunit
def shift(i, x):
    x[i + 1] = 1.0


def main():
    x = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), shift, x=x)


main()
"""


@pytest.fixture
def at_kernel_stop(tmp_path, kernel_pty):
    s = kernel_pty(write(tmp_path, "prog.py", PROGRAM))
    s.cmd(f"break {LINE_BODY} if i == 3")
    assert "i=3)" in s.cmd("continue", KERNEL_PROMPT)
    return s


def _type_bytes(session, data: bytes, prompt: str) -> str:
    """Type raw bytes and a newline; the output up to the next prompt."""
    os.write(session.child.child_fd, data + b"\n")
    return session.wait_prompt(prompt)


def test_a_5000_digit_line_number_is_a_clear_error(at_kernel_stop):
    s = at_kernel_stop
    head = f"{'9' * 40}... (5000 characters)"
    for command in (f"break {HUGE}", f"tbreak {HUGE}", f"break prog.py:{HUGE}"):
        out = s.cmd(command, KERNEL_PROMPT)
        assert f"*** End of file: {s.program} has no line {head}" in out, out
        assert "pkdb failed" not in out and "ValueError" not in out
    out = s.cmd(f"clear prog.py:{HUGE}", KERNEL_PROMPT)
    assert f"*** no breakpoint at prog.py:{head}" in out
    out = s.cmd(f"condition {HUGE} i == 1", KERNEL_PROMPT)
    assert f"breakpoint numbers expected, or FILE:LINE, got '{head}'" in out
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "3"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "sum 16.0" in s.cmd("continue")
    s.quit()


def test_condition_on_a_missing_breakpoint_says_there_is_none(at_kernel_stop):
    s = at_kernel_stop
    # A condition pkdb cannot translate was refused as "breakpoint 40 is unchanged".
    assert "*** Breakpoint number 40 out of range" in s.cmd("condition 40 x.y", KERNEL_PROMPT)
    assert "*** Breakpoint number 40 out of range" in s.cmd("condition 40 i", KERNEL_PROMPT)
    assert "Breakpoint 2 at" in s.cmd(f"break {LINE_BODY}", KERNEL_PROMPT)
    s.cmd("clear 2", KERNEL_PROMPT)
    assert "*** Breakpoint 2 already deleted" in s.cmd("condition 2 x.y", KERNEL_PROMPT)
    # An existing one still gets the translation's verdict.
    assert "breakpoint 1 is unchanged" in s.cmd("condition 1 x.y", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "sum 16.0" in s.cmd("continue")
    s.quit()


def test_input_that_is_not_utf8_is_refused_and_the_session_goes_on(tmp_path, kernel_pty):
    s = kernel_pty(write(tmp_path, "prog.py", PROGRAM))
    out = _type_bytes(s, b"p '\xff\xfe'", PROMPT)
    assert "*** the line is not valid UTF-8 text (byte 0xff at column 4); it was not run" in out
    assert "UnicodeEncodeError" not in out
    assert s.cmd("p 6 * 7").strip() == "42"
    s.cmd(f"break {LINE_BODY} if i == 3")
    s.cmd("continue", KERNEL_PROMPT)
    out = _type_bytes(s, b"p i, '\xff'", KERNEL_PROMPT)
    assert "(byte 0xff at column 7)" in out and "UnicodeEncodeError" not in out
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "3"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "sum 16.0" in s.cmd("continue")
    s.quit()


def test_input_that_is_not_utf8_on_a_strict_stdin(tmp_path):
    # Without a terminal, under a locale whose stdin decoding is strict, the bytes
    # ended the session with a UnicodeDecodeError.
    program = write(tmp_path, "plain.py", "value = 6\nprint('value', value * 7)\n")
    script = tmp_path / "cmds.pkdb"
    script.write_bytes(b"p '\xff'\np value\n")
    env = pkdb_env(tmp_path) | {"PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run(
        [sys.executable, "-m", "pkdb", "-x", str(script), str(program)],
        input=b"p '\xfe'\nnext\np value\ncontinue\n",
        env=env, cwd=tmp_path, capture_output=True, timeout=60,
    )  # fmt: skip
    out = done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, out
    assert "Traceback" not in out
    assert out.count("the line is not valid UTF-8 text") == 2, out
    assert "value 42" in out


def _post_mortem(tmp_path, **env: str) -> str:
    program = write(tmp_path, "faulty.py", FAULTY)
    done = subprocess.run(
        # Under pkdb the failed check first stops the kernel at its line; the second
        # continue lets the launch raise it.
        [sys.executable, "-m", "pkdb", "-c", "continue", "-c", "continue", "-c", "where",
         "-c", "quit", str(program)],
        env=pkdb_env(tmp_path) | {"PKERNELS_CACHE_DIR": str(tmp_path / "cache"),
                                  "PKERNELS_CHECKS": "1", **env},
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
    )  # fmt: skip
    return done.stdout


def test_post_mortem_leaves_out_pkernels_frames(tmp_path):
    out = _post_mortem(tmp_path)
    traceback = out[out.index("Traceback") : out.index("Uncaught exception")]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', traceback)
    program = str(tmp_path / "faulty.py")
    assert frames == [(program, "15", "<module>"), (program, "12", "main")], traceback
    assert "KernelIndexError" in traceback and "faulty.py:7: index 4 is out of range" in traceback
    assert "pkernels/runtime" not in traceback, traceback
    where = out[out.index("(pkdb) where") : out.index("(pkdb) quit")]
    assert "pkernels" not in where and "faulty.py(12)main()" in where, where


def test_post_mortem_shows_every_frame_with_pkernels_traceback_full(tmp_path):
    out = _post_mortem(tmp_path, PKERNELS_TRACEBACK="full")
    traceback = out[out.index("Traceback") : out.index("Uncaught exception")]
    assert "pkernels/runtime/dispatch.py" in traceback
    assert "not shown" not in out
    where = out[out.index("(pkdb) where") : out.index("(pkdb) quit")]
    assert "pkernels/runtime/dispatch.py" in where


def test_display_of_an_array_that_changes(tmp_path, pkdb_pty):
    # pdb compares a display's new value with the old one with !=: an array answered
    # element by element, and the ValueError ended the program (found by the fuzzer).
    program = write(
        tmp_path,
        "arrays.py",
        """
        import numpy as np

        a = np.zeros(3)
        a = np.ones(3)
        a = np.ones(3)
        print("total", a.sum())
        """,
    )
    s = pkdb_pty(program)
    s.cmd("next")
    s.cmd("next")
    assert s.cmd("display a").strip() == "display a: array([0., 0., 0.])"
    out = s.cmd("next")
    assert "display a: array([1., 1., 1.])  [old: array([0., 0., 0.])]" in out, out
    out = s.cmd("next")  # a new array, equal: not shown again
    assert "display a" not in out and "Error" not in out, out
    assert "total 3.0" in s.cmd("continue")
    s.quit()


def test_negative_breakpoint_numbers_leave_no_copy_in_gdb(at_kernel_stop):
    # pdb reads `enable -1` as its last breakpoint (Python's negative index): pkdb set it
    # in gdb a second time, and the copy outlived `clear` (found by the fuzzer: every
    # `continue` then stopped at that line again).
    s = at_kernel_stop

    def gdb_breakpoints() -> int:
        return len(
            re.findall(r"^\d+\s+breakpoint", s.cmd("send info breakpoints", KERNEL_PROMPT), re.M)
        )

    assert "Breakpoint 2 at" in s.cmd(f"break {LINE_BODY}, x[i] > 100", KERNEL_PROMPT)
    before = gdb_breakpoints()  # pkdb's own (on failed checks), 1 and 2
    for command in ("enable -1", "disable 0", "condition -1 i == 2", "ignore -2 1"):
        out = s.cmd(command, KERNEL_PROMPT)
        assert "out of range" in out, (command, out)
    assert "Enabled breakpoint 2" in s.cmd("enable 2", KERNEL_PROMPT)
    assert "Enabled breakpoint 2" in s.cmd("enable 2", KERNEL_PROMPT)
    assert gdb_breakpoints() == before
    s.cmd("clear 1 2", KERNEL_PROMPT)
    assert gdb_breakpoints() == before - 2
    out = s.cmd("continue")
    assert "sum 16.0" in out and "exited with code 0" in out, out
    s.quit()
