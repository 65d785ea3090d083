"""End-to-end host-mode sessions: ``python -m pkdb`` driven through a real PTY."""

from __future__ import annotations

import re
import time

import pexpect
from pkdb_harness import process_gone, wait_until, write

# CPython's readline loop only notices SIGINT once it is blocked waiting for input; a
# Ctrl-C that lands while it is still handling typed characters waits for the next key.
READLINE_SETTLE = 0.2


def test_stops_before_the_first_line_like_pdb(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    assert f"> {main_program}(1)<module>()\n-> import helper\n" in session.banner
    assert session.quit() == 0


def test_break_continue_and_inspect_frames(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    assert session.cmd("break 5") == f"Breakpoint 1 at {main_program}:5\n"
    assert f"> {main_program}(5)square()\n-> result = n * n" in session.cmd("continue")

    where = session.cmd("where")
    assert f"  {main_program}(16)<module>()\n-> value = total(4)\n" in where
    assert f"  {main_program}(12)total()\n" in where
    assert where.rstrip().endswith(f"> {main_program}(5)square()\n-> result = n * n")
    assert "bdb.py" not in where  # the debugger's own frames are hidden

    assert session.cmd("args") == "n = 0\n"
    assert f"> {main_program}(12)total()" in session.cmd("up")
    assert session.cmd("p acc, limit") == "(0, 4)\n"
    assert session.cmd("pp {'k': list(range(3))}") == "{'k': [0, 1, 2]}\n"
    assert f"> {main_program}(5)square()" in session.cmd("down")
    assert "  5 B->\t    result = n * n" in session.cmd("list")
    longlist = session.cmd("ll")
    assert "  4  \tdef square(n):" in longlist and "  6  \t    return result" in longlist
    assert session.cmd("display n * 10") == "display n * 10: 0\n"
    assert session.cmd("display result").startswith("display result: ** raised NameError")
    out = session.cmd("n")
    assert "display result: 0  [old: ** raised NameError" in out
    assert "display n * 10" not in out  # unchanged values are not shown again
    assert session.cmd("info display").startswith("Currently displaying:\n")
    assert session.cmd("bt").count("\n-> ") == 3
    assert session.quit() == 0


def test_breakpoint_management(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    assert session.cmd("tbreak 12") == f"Breakpoint 1 at {main_program}:12\n"
    out = session.cmd("c")
    assert f"Deleted breakpoint 1 at {main_program}:12" in out
    assert f"> {main_program}(12)total()" in out

    assert session.cmd("b square, n == 2") == f"Breakpoint 2 at {main_program}:4\n"
    session.cmd("c")
    assert session.cmd("p n") == "2\n"
    assert session.cmd("condition 2") == "Breakpoint 2 is now unconditional.\n"

    assert session.cmd("break 6") == f"Breakpoint 3 at {main_program}:6\n"
    assert session.cmd("disable 2") == f"Disabled breakpoint 2 at {main_program}:4\n"
    session.cmd("c")
    assert session.cmd("p n") == "2\n"  # stopped at 6 in the same call
    assert session.cmd("ignore 3 1") == "Will ignore next 1 crossing of breakpoint 3.\n"
    assert session.cmd("enable 2") == f"Enabled breakpoint 2 at {main_program}:4\n"
    session.cmd("c")  # breakpoint 2 (square(3)); breakpoint 3 would be ignored next
    assert session.cmd("p n") == "3\n"
    assert session.cmd("clear 2") == f"Deleted breakpoint 2 at {main_program}:4\n"

    listing = session.cmd("info breakpoints")
    assert listing.startswith("Num Type         Disp Enb   Where\n")
    assert f"3   breakpoint   keep yes   at {main_program}:6\n" in listing
    assert "ignore next 1 hits" in listing
    assert session.cmd("break") == listing

    out = session.cmd("c")  # the ignored crossing, then the program ends
    assert "value is 14\nextra is 42\nThe program exited with code 0\n" in out
    assert session.quit() == 0


def test_step_next_until_return_jump(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    assert f"> {main_program}(16)<module>()" in session.cmd("until 16")
    assert f"--Call--\n> {main_program}(9)total()" in session.cmd("s")
    assert f"> {main_program}(10)total()" in session.cmd("s")
    assert f"> {main_program}(11)total()" in session.cmd("n")
    assert f"> {main_program}(13)total()" in session.cmd("until 13")
    assert session.cmd("p acc") == "14\n"
    assert f"--Return--\n> {main_program}(13)total()->14" in session.cmd("r")
    assert f"> {main_program}(17)<module>()" in session.cmd("n")
    assert f"> {main_program}(18)<module>()" in session.cmd("jump 18")  # skip the print
    assert session.cmd("n").startswith(f"> {main_program}(19)<module>()")
    assert session.cmd("p extra") == "42\n"
    out = session.cmd("c")
    assert "value is" not in out and "extra is 42" in out
    assert session.quit() == 0


def test_alias_and_repeat_last_command(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    assert session.cmd("alias times p 6 * %1") == ""
    assert session.cmd("times 7") == "42\n"
    assert session.cmd("alias") == "times = p 6 * %1\n"
    assert f"> {main_program}(4)<module>()" in session.cmd("n")
    assert f"> {main_program}(9)<module>()" in session.cmd("")  # empty line: `n` again
    assert session.cmd("p 1 ;; p 2") == "1\n2\n"  # pdb's ;; separator
    session.cmd("restart")
    assert session.cmd("times 7") == "42\n"  # aliases survive a restart
    assert session.quit() == 0


def test_break_in_another_module(main_program, pkdb_pty):
    helper = main_program.parent / "helper.py"
    session = pkdb_pty(main_program)
    assert session.cmd("break helper.py:2") == f"Breakpoint 1 at {helper}:2\n"
    out = session.cmd("c")
    assert "value is 14" in out
    assert f"> {helper}(2)triple()\n-> y = x * 3" in out
    assert session.cmd("p x") == "14\n"
    assert f"  {main_program}(18)<module>()" in session.cmd("w")
    assert session.quit() == 0


def test_breakpoints_set_and_cleared_while_running_on(tmp_path, pkdb_pty):
    # After `continue` the agent remembers which files have no breakpoint (to skip
    # tracing their calls); a breakpoint set later in such a file must still stop, and
    # one cleared must stop no more.
    work = write(tmp_path, "work.py", "def double(i):\n    return i * 2\n")
    program = write(
        tmp_path,
        "loop.py",
        """
        import work
        for i in range(4):
            work.double(i)
            print("tick", i)
        """,
    )
    session = pkdb_pty(program)
    session.cmd("break 4")
    assert f"> {program}(4)<module>()" in session.cmd("c")  # work.double(0) ran, untraced
    assert session.cmd("p i") == "0\n"
    assert session.cmd("break work.py:2") == f"Breakpoint 2 at {work}:2\n"
    out = session.cmd("c")
    assert "tick 0" in out and f"> {work}(2)double()" in out
    assert session.cmd("p i") == "1\n"
    assert session.cmd("clear 2") == f"Deleted breakpoint 2 at {work}:2\n"
    out = session.cmd("c")
    assert f"> {program}(4)<module>()" in out and "double()" not in out
    assert session.cmd("p i") == "1\n"
    out = session.cmd("c")
    assert "double()" not in out and session.cmd("p i") == "2\n"
    assert session.quit() == 0


def test_run_and_restart_keep_breakpoints(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    session.cmd("break 6")
    session.cmd("condition 1 n > 1")
    assert f"> {main_program}(6)square()" in session.cmd("run")  # run = continue here
    assert session.cmd("p n") == "2\n"

    out = session.cmd("restart")
    assert out.startswith(f"Restarting {main_program}\n")
    assert f"> {main_program}(1)<module>()" in out
    listing = session.cmd("info b")
    assert f"1   breakpoint   keep yes   at {main_program}:6" in listing
    assert "stop only if n > 1" in listing and "already hit 3 times" in listing
    session.cmd("run")
    assert session.cmd("p n") == "2\n"

    session.cmd("disable 1")
    assert "The program exited with code 0" in session.cmd("c")
    # After the end: breakpoint commands still work, and `run` starts again.
    assert session.cmd("enable 1") == (
        "(The program is loaded again, stopped before its first line, to take this command; "
        "'continue' runs it from the start.)\n"
        f"Enabled breakpoint 1 at {main_program}:6\n"
    )
    assert session.cmd("break 13") == f"Breakpoint 2 at {main_program}:13\n"
    out = session.cmd("run")
    assert "(1)<module>()" not in out and f"> {main_program}(6)square()" in out
    assert session.cmd("p n") == "2\n"
    assert session.quit() == 0


def test_program_output_exit_and_restart(tmp_path, pkdb_pty):
    program = write(
        tmp_path,
        "exits.py",
        """
        import sys
        print("hello from the program")
        sys.stdout.write("no newline yet")
        sys.exit(3)
        """,
    )
    session = pkdb_pty(program)
    out = session.cmd("c")
    assert "hello from the program\nno newline yet" in out
    assert "The program exited with code 3\n" in out  # (on the program's last line)
    assert "not being run" in session.cmd("p 1")
    assert "not being run" in session.cmd("n")
    assert f"> {program}(1)<module>()" in session.cmd("restart")
    assert "The program exited with code 3" in session.cmd("run")
    assert session.quit() == 3  # pkdb's status is the program's


def test_program_arguments(tmp_path, pkdb_pty):
    program = write(tmp_path, "args.py", "import sys\nprint('argv', sys.argv[1:])\n")
    session = pkdb_pty(program, "-c", "two words")
    assert "argv ['-c', 'two words']" in session.cmd("c")
    assert "argv ['x', 'y z']" in session.cmd("run x 'y z'")
    assert "argv ['x', 'y z']" in session.cmd("run")  # new arguments are kept
    assert session.quit() == 0


def test_segfault_is_reported_and_the_session_goes_on(tmp_path, pkdb_pty):
    program = write(
        tmp_path,
        "crash.py",
        """
        import os
        import resource
        import signal
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        print("about to crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
        print("never printed")
        """,
    )
    session = pkdb_pty(program)
    session.cmd("break 6")
    out = session.cmd("c")
    assert f"> {program}(6)<module>()" in out
    out = session.cmd("c")
    assert "The program was killed by signal SIGSEGV" in out
    assert "'set debug_all_kernels on' then 'run'" in out  # how to catch it in a kernel
    assert "never printed" not in out
    out = session.cmd("restart")
    assert f"> {program}(1)<module>()" in out
    assert f"> {program}(6)<module>()" in session.cmd("c")  # the breakpoint survived
    assert "killed by signal SIGSEGV" in session.cmd("c")
    assert session.quit() == 128 + 11  # as a shell gives a program killed by SIGSEGV


def test_uncaught_exception_enters_post_mortem(tmp_path, pkdb_pty):
    program = write(
        tmp_path,
        "fails.py",
        """
        def divide(x):
            return 1 / x

        print("start")
        divide(0)
        """,
    )
    session = pkdb_pty(program)
    out = session.cmd("c")
    assert "ZeroDivisionError: division by zero" in out
    assert "Uncaught exception. Entering post mortem debugging" in out
    assert f"> {program}(2)divide()\n-> return 1 / x" in out
    assert session.cmd("p x") == "0\n"
    assert f"> {program}(5)<module>()" in session.cmd("up")
    out = session.cmd("c")
    assert "Post mortem debugger finished. The program will be restarted" in out
    assert f"> {program}(1)<module>()" in out
    assert session.quit() == 0


def test_ctrl_c_interrupts_the_program_not_the_session(tmp_path, pkdb_pty):
    program = write(
        tmp_path,
        "spin.py",
        """
        n = 0
        print("spinning", flush=True)
        while True:
            n += 1
        """,
    )
    session = pkdb_pty(program)
    session.child.sendline("c")
    session.child.expect("spinning")
    session.child.sendintr()
    out = session.wait_prompt()
    assert "Program interrupted. (Use 'cont' to resume)." in out
    assert re.search(rf"> {re.escape(str(program))}\([34]\)<module>\(\)", out)
    assert session.cmd("p n > 0") == "True\n"

    time.sleep(READLINE_SETTLE)
    session.child.sendintr()  # at the prompt: nothing dies
    assert "--KeyboardInterrupt--" in session.wait_prompt()
    assert session.cmd("p 6 * 7") == "42\n"
    assert session.quit() == 0


def test_program_reads_the_terminal(tmp_path, pkdb_pty):
    program = write(tmp_path, "ask.py", "name = input('name? ')\nprint('hi', name)\n")
    session = pkdb_pty(program)
    session.child.sendline("c")
    session.child.expect_exact("name? ")
    session.child.sendline("Ada")
    out = session.wait_prompt()
    assert "hi Ada" in out and "The program exited with code 0" in out
    assert session.quit() == 0


def test_interact_and_breakpoint_commands(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    session.cmd("break 6")
    assert session.cmd("commands 1", prompt=r"\(com\) ") == ""
    session.cmd("p 'in square', n", prompt=r"\(com\) ")
    session.cmd("end")
    assert "('in square', 0)\n" in session.cmd("c")

    assert session.cmd("interact", prompt=">>> ") == "*interactive*\n"
    assert session.cmd("result + 100", prompt=">>> ") == "100\n"
    session.cmd("for k in range(2):", prompt=r"\.\.\. ")
    session.cmd("    print('k', k)", prompt=r"\.\.\. ")
    assert session.cmd("", prompt=">>> ") == "k 0\nk 1\n"
    session.child.send("unfinished(")
    time.sleep(READLINE_SETTLE)
    session.child.sendintr()  # Ctrl-C drops the line, as in the Python REPL
    assert "KeyboardInterrupt" in session.wait_prompt(">>> ")
    session.child.sendeof()
    assert "now exiting InteractiveConsole..." in session.wait_prompt()
    assert session.cmd("p n") == "0\n"
    # Commands survive a restart too.
    session.cmd("restart")
    assert "('in square', 0)\n" in session.cmd("c")
    assert session.quit() == 0


def test_help_settings_and_bad_commands(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    # pdb's own help text (Python 3.12 indents it under "Usage: ")
    assert (
        session.cmd("help break")
        .lstrip()
        .removeprefix("Usage: ")
        .startswith("b(reak) [ ([filename:]lineno | function)")
    )
    listing = session.cmd("help")
    assert "Documented commands" in listing and "pkdb commands" in listing
    for name in ("run", "restart", "info", "set", "show"):
        assert name in listing
    assert "debug_all_kernels" in session.cmd("help set")
    assert session.cmd("help run").startswith("run [args...]")

    assert session.cmd("show debug_all_kernels") == "debug_all_kernels = off\n"
    assert session.cmd("set debug_all_kernels on") == "debug_all_kernels = on\n"
    assert session.cmd("show debug_all_kernels") == "debug_all_kernels = on\n"
    assert session.cmd("set debug_all_kernels maybe").startswith("*** expected on or off")
    assert session.cmd("set colour red").startswith("*** no setting 'colour'")
    assert session.cmd("set").startswith("*** Usage: set NAME VALUE")

    assert session.cmd("frobnicate") == "*** NameError: name 'frobnicate' is not defined\n"
    assert session.cmd("info frobs").startswith("*** Undefined info command: 'frobs'.")
    assert session.cmd("break 999") == "End of file\n"  # pdb's words
    assert session.cmd("p 6 * 7") == "42\n"  # still alive
    assert session.quit() == 0


def test_settings_reach_the_debuggee(main_program, pkdb_pty):
    session = pkdb_pty(main_program, options=("--debug-all-kernels",))
    assert session.cmd("show debug_all_kernels") == "debug_all_kernels = on\n"
    # The agent's copy of the settings, read from inside the debuggee.
    probe = (
        "p [o.settings for o in __import__('gc').get_objects()"
        " if type(o).__name__ == 'HostDebugger']"
    )
    assert session.cmd(probe) == (
        "[{'debug_all_kernels': True, 'fast_debug_builds': True, 'parallel_launch_checks': True, "
        "'checks': True}]\n"
    )
    session.cmd("set debug_all_kernels off")
    session.cmd("set fast_debug_builds off")
    session.cmd("set parallel_launch_checks off")
    changed = (
        "[{'debug_all_kernels': False, 'fast_debug_builds': False, "
        "'parallel_launch_checks': False, 'checks': True}]\n"
    )
    assert session.cmd(probe) == changed
    session.cmd("restart")
    assert session.cmd(probe) == changed
    assert session.quit() == 0


def test_quit_leaves_no_process_behind(tmp_path, pkdb_pty):
    program = write(
        tmp_path,
        "spawns.py",
        """
        import os
        import subprocess
        import sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("pids", os.getpid(), child.pid, flush=True)
        x = 1
        """,
    )
    session = pkdb_pty(program)
    session.cmd("break 6")
    out = session.cmd("c")
    debuggee, grandchild = (int(pid) for pid in re.search(r"pids (\d+) (\d+)", out).groups())
    assert session.quit() == 0
    assert wait_until(lambda: process_gone(debuggee))
    assert wait_until(lambda: process_gone(grandchild))


def test_end_of_input_quits(main_program, pkdb_pty):
    session = pkdb_pty(main_program)
    pid = int(session.cmd("p __import__('os').getpid()"))
    session.child.sendeof()
    session.child.expect(pexpect.EOF)
    session.child.close()
    assert session.child.exitstatus == 0
    assert wait_until(lambda: process_gone(pid))
