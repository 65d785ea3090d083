"""Command line of ``pkdb`` / ``python -m pkdb``."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from .session import Debuggee


class _SessionKilled(BaseException):
    """SIGTERM or SIGHUP reached the front end."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_killed(signum: int, frame: object) -> None:
    raise _SessionKilled(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a pkdb session; the exit status of pkdb itself."""
    from .mpi.options import wants_mpi

    if wants_mpi(sys.argv[1:] if argv is None else argv):  # --np, --launcher, --rank
        from .mpi.main import main as mpi_main

        return mpi_main(sys.argv[1:] if argv is None else argv)
    # Start the program's process first, as a fork of this one (before anything is
    # loaded or any thread runs): it loads the agent while the front end loads. Whatever
    # ends this function before the session takes it over ends the process too.
    debuggee = Debuggee.fork()
    try:
        return _main(argv, debuggee)
    finally:
        if debuggee.poll() is None and not debuggee.adopted:
            debuggee.terminate()


def _main(argv: Sequence[str] | None, debuggee: Debuggee) -> int:
    from .command_line import build_parser, read_commands, split_argv

    parser = build_parser()
    own, program_args = split_argv(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(own)
    if options.module is not None:
        options.program = options.module  # (split_argv left nothing after it to pkdb)
    elif options.program is None:
        parser.error("the program to debug is required: pkdb PROGRAM [ARGS...] or -m MODULE")
    options.args = program_args
    if options.module is None:  # (a module is found by the agent, as `python -m` does)
        if not os.path.exists(options.program):
            parser.exit(1, f"pkdb: error: {options.program} does not exist\n")
        if os.path.isdir(options.program):
            parser.exit(1, f"pkdb: error: {options.program} is a directory\n")
    try:
        script = read_commands(options.commands or [])
    except OSError as exc:
        parser.exit(1, f"pkdb: error: cannot read commands: {exc}\n")

    from .protocol import ENTRY_STOP, Start
    from .settings import Settings

    settings = Settings()
    if options.debug_all_kernels:
        settings.set_value("debug_all_kernels", True)
    # The program may load and stop at its first line while the front end loads.
    module = options.module is not None
    start = Start(
        argv=[options.program, *options.args], entry=ENTRY_STOP, state={},
        settings=settings.as_dict(), module=module,
    )  # fmt: skip
    debuggee.send(start)
    debuggee.sent_start = start

    from .frontend import Frontend
    from .input_text import tolerate_undecodable_bytes

    tolerate_undecodable_bytes(sys.stdin, sys.stdout)
    frontend = Frontend(
        [options.program, *options.args],
        settings=settings,
        module=module,
        script=script,
        debuggee=debuggee,
    )
    debuggee.adopted = True  # the front end ends it from now on
    # Being killed must still end the debuggee: unwind through the `finally` below.
    previous = {
        signum: signal.signal(signum, _raise_killed) for signum in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        frontend.cmdloop()
    except _SessionKilled as killed:
        return 128 + killed.signum
    finally:
        frontend.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return frontend.exit_status


def run() -> NoReturn:
    """The ``pkdb`` command: :func:`main`, then exit at once with its status.

    The session is over by then (the debuggee reaped, gdb gone), so the interpreter's
    clean-up of the front end's modules would only delay the shell's prompt by ~10 ms:
    flush what is buffered and leave.
    """
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more to say
            pass
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
