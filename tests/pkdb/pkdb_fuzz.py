"""A seeded command fuzzer for pkdb: random command lines typed into real pkdb sessions.

Each session runs a real program (``examples/yax.py``: an OpenMP range reduction;
``examples/teams.py``: TeamPolicy kernels with nested reductions, scratch memory and a
barrier) under ``python -m pkdb`` on a pseudo-terminal. The fuzzer types random lines --
pdb and pkdb commands with valid and malformed arguments, Python over the program's and
the kernel's names, raw gdb commands, garbage, bytes that are not UTF-8, 5,000-digit
numbers -- at the host prompt and at kernel stops, and after each line checks that

* the prompt comes back (no hang; :data:`LINE_TIMEOUT` seconds at most),
* no traceback of pkdb's own code, no "pkdb failed on" (an internal error) and no gdb
  internal error appears, and the session did not end;

and at the end of a session clears the breakpoints, runs the program out and checks it
printed its right result. The lines change nothing in the program (no assignment, no
``jump``, no ``restart``...), so that result is the program's own.

``python scripts/fuzz_pkdb.py --lines 5000 --seed 1`` runs a campaign;
``tests/pkdb/test_fuzz.py`` runs a short one in the test suite.
"""

from __future__ import annotations

import os
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pexpect

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
EXAMPLES = REPO / "examples"

LINE_TIMEOUT = 60.0  # a first kernel stop compiles a debug build: a few seconds
HOST = "(pkdb) "
# A prompt starts a line (the text "(pkdb) prompt" may appear inside a message).
_PROMPT = re.compile(r"\n\((pkdb(?:-openmp)?)\) ")
# pdb's confirmation of `clear` with no argument: the fuzzer answers it.
_CONFIRM = re.compile(r"Clear all breaks\? ")
_CONTROL = {chr(c) for c in range(32)} - {"\t"} | {"\x7f"}


@dataclass(frozen=True)
class Program:
    """A program the fuzzer debugs: where its kernels are, what it must print."""

    name: str
    path: Path
    args: tuple[str, ...]
    kernel_lines: tuple[int, ...]  # lines inside kernels (breakpoints stop there)
    host_lines: tuple[int, ...]  # host lines with code
    host_names: tuple[str, ...]  # names in host frames
    kernel_names: tuple[str, ...]  # kernel variables and views
    conditions: tuple[str, ...]  # kernel breakpoint conditions
    check: Callable[[str], str | None]  # None when the output holds the right result


def _yax_result(output: str) -> str | None:
    found = re.findall(r"yAx = (-?[\d.]+) \(NumPy: (-?[\d.]+)\)", output)
    if not found:
        return "the program's result line is missing"
    if any(a != b for a, b in found):
        return f"wrong result: {found}"
    return None


def _teams_result(output: str) -> str | None:
    problem = _yax_result(output)
    if problem is not None:
        return problem
    if "rows reversed: True" not in output:
        return "'rows reversed: True' is missing"
    return None


YAX = Program(
    name="yax",
    path=EXAMPLES / "yax.py",
    args=("48", "24"),
    kernel_lines=(15, 16, 17, 18, 20),
    host_lines=(24, 25, 26, 27, 29, 30, 31, 32, 33, 37),
    host_names=("N", "M", "y", "x", "A", "space", "rng", "result", "expected", "sys", "np"),
    kernel_names=(
        "j", "i", "temp2", "cols", "acc", "y_view", "x_view", "A_view", "y_view[j]",
        "x_view[0:3]", "A_view[j][i]", "A_view[j][0:4]", "len(x_view)", "y_view[j:j+2]",
        "A_view[:, 1][j:j+2]", "temp2 * 2", "j % 2", "x_view.shape", "A_view.extent(1)",
    ),
    conditions=("j == 3", "j % 7 == 1", "j > 40", "i == 2", "temp2 > 1.5", "j == 99999"),
    check=_yax_result,
)  # fmt: skip
TEAMS = Program(
    name="teams",
    path=EXAMPLES / "teams.py",
    args=(),
    kernel_lines=(18, 21, 23, 24, 25, 30, 31, 34, 36, 37, 40, 42),
    host_lines=(46, 47, 48, 49, 50, 51, 53, 54, 55, 56, 57),
    host_names=("rows", "cols", "A", "x", "y", "policy", "result", "out", "space", "team_size"),
    kernel_names=(
        "j", "i", "temp2", "row", "m", "s", "s[0]", "s[1:3]", "team_member",
        "team_member.league_rank()", "team_member.team_rank()", "team_member.team_size()",
        "team_member.league_size()", "A[j][i]", "x[i]", "inp[row, i]", "out[row]", "acc",
        "inner_acc", "len(x)", "cols",
    ),
    conditions=(
        "team_member.league_rank() == 2", "j == 1", "i == 3", "row == 4",
        "team_member.team_rank() == 1", "i > 100",
    ),
    check=_teams_result,
)  # fmt: skip
PROGRAMS = (YAX, TEAMS)

_SETTINGS = ("debug_all_kernels", "fast_debug_builds", "parallel_launch_checks", "nosuch")
_SEND_BENIGN = (
    "info threads", "bt 1", "p $pc", "info frame", "x/2xg $sp", "thread", "info registers rip",
    "p 1+1", "info breakpoints", "frame 0", "show version", "thread apply all bt 1", "stepi",
    "nosuchcommand", "p nosuchvariable", "info sharedlibrary", "-thread-info", "-stack-list-frames",
    "-data-evaluate-expression 2*3", "-nosuch-mi-command", "", "list", "info line",
)  # fmt: skip
_SEND_REFUSED = (
    "continue", "c", "thread apply all continue", "t a a c", "-exec-continue", "next", "step",
    "finish", "detach", "-gdb-exit", "kill", "quit", "run", "attach 1", "-exec-next --thread 1",
    "until", "interrupt -a", "-interpreter-exec console \"continue\"", "stepi 1000000",
)  # fmt: skip
_WORDS = (
    "break", "b", "tbreak", "clear", "cl", "delete", "disable", "enable", "condition",
    "ignore", "p", "pp", "print", "whatis", "where", "bt", "w", "up", "u", "down", "d",
    "list", "l", "ll", "longlist", "locals", "args", "a", "threads", "thread", "info",
    "display", "undisplay", "eval", "help", "h", "set", "show", "send", "hotswap",
    "parallel_launch", "parallel_print", "next", "n", "step", "s", "continue", "c", "cont",
    "until", "unt", "return", "r", "finish", "retval", "rv", "source", "nosuch", "breakk",
)  # fmt: skip


def _number(rng: random.Random) -> str:
    return rng.choice(
        ["0", "1", "2", "3", "4", "7", "-1", "-5", "99", "100000", "9" * 5000, "0x10", "1.5",
         "2e3", "08", "+3", "1_0", str(rng.randint(0, 60))]
    )  # fmt: skip


def _garbage(rng: random.Random) -> str:
    """Printable junk that cannot assign or call anything (no '=', '(' or ':')."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 _-+*/%<>[]{}'\"\\.,;!?@#$^&|~`\t"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    return rng.choice([text, text + " é中文", "§" + text, "  " + text])


def _quits(line: str | bytes) -> bool:
    """Whether pdb reads ``line`` as a quit: its command word, as ``cmd.Cmd.parseline``
    takes it (the leading identifier characters: ``q`x`` is ``q``), in any of its
    ``;;``-separated commands, is ``q``, ``quit`` or ``exit``."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    for command in text.split(";;"):
        word = re.match(r"\s*([A-Za-z0-9_]*)", command)
        if word and word.group(1) in ("q", "quit", "exit"):
            return True
    return False


class Generator:
    """Random command lines for one program, from one seed."""

    def __init__(self, program: Program, rng: random.Random) -> None:
        self.program = program
        self.rng = rng

    def line(self, mode: str) -> str | bytes:
        """One command line for a stop in ``mode`` (``host`` or ``kernel``); never one
        that quits (pdb would rightly end the session)."""
        while True:
            line = self._any_line(mode)
            if not _quits(line):
                return line

    def _any_line(self, mode: str) -> str | bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.04:
            return self._bytes()
        if roll < 0.14:
            return self._malformed()
        if mode == "kernel":
            return self._kernel()
        return self._host()

    # -- host ------------------------------------------------------------------------

    def _host(self) -> str:
        rng, p = self.rng, self.program
        names = p.host_names
        choices: list[tuple[float, Callable[[], str]]] = [
            (6, lambda: f"{rng.choice(['p', 'pp', 'print'])} {self._host_expr()}"),
            (2, lambda: rng.choice(["where", "bt", "w", "args", "a", "ll", "longlist", "l ."])),
            (
                2,
                lambda: (
                    f"{rng.choice(['up', 'down', 'u', 'd'])} {rng.choice(['', '1', '3', '-1'])}"
                ),
            ),
            (
                2,
                lambda: (
                    f"list {rng.choice(['', '1', '20, 30', '.', str(rng.choice(p.host_lines))])}"
                ),
            ),
            (3, lambda: self._break(rng.choice(p.kernel_lines + p.host_lines), mode="host")),
            (
                2,
                lambda: (
                    f"{rng.choice(['clear', 'cl', 'disable', 'enable', 'delete'])} {self._bp()}"
                ),
            ),
            (1, lambda: f"condition {self._bp()} {rng.choice(p.conditions + ('', 'x.y'))}"),
            (1, lambda: f"ignore {self._bp()} {rng.choice(['0', '1', '3', 'x', ''])}"),
            (2, lambda: f"whatis {rng.choice(names)}"),
            (2, lambda: f"display {rng.choice(names)}"),
            (1, lambda: f"undisplay {rng.choice(['', '1', '2', 'nosuch'])}"),
            (
                2,
                lambda: (
                    f"help {rng.choice(['', 'break', 'p', 'send', 'hotswap', 'nosuch', 'eval'])}"
                ),
            ),
            (2, lambda: f"show {rng.choice(('',) + _SETTINGS)}"),
            (1, lambda: f"set {rng.choice(_SETTINGS)} {rng.choice(['on', 'off', 'maybe', ''])}"),
            (2, lambda: f"eval {self._host_expr()}"),
            (1, lambda: rng.choice(["retval", "rv", "info breakpoints", "info", "info nosuch"])),
            (1, lambda: f"source {rng.choice(names + ('nosuch',))}"),
            (1, lambda: self._hotswap()),
            (1, lambda: self._parallel_launch()),
            (2, lambda: rng.choice(["next", "n", "step", "s", "return", "r", "until", "unt"])),
            (3, lambda: rng.choice(["continue", "c", "cont", "run"])),
        ]
        return self._pick(choices)

    def _host_expr(self) -> str:
        rng, names = self.rng, self.program.host_names
        return rng.choice(
            [rng.choice(names), f"{rng.choice(names)}.shape", f"len({rng.choice(names)})",
             f"{rng.choice(names)} + 1", "nosuch", "1 +", "[1, 2", "'text'", "None", _garbage(rng),
             f"{rng.choice(names)}[0]", "__name__", "dir()"]
        )  # fmt: skip

    # -- kernel ----------------------------------------------------------------------

    def _kernel(self) -> str:
        rng, p = self.rng, self.program
        choices: list[tuple[float, Callable[[], str]]] = [
            (7, lambda: f"{rng.choice(['p', 'pp', 'print'])} {self._kernel_expr()}"),
            (2, lambda: f"{rng.choice(['!', ''])}{rng.choice(p.kernel_names)}"),
            (2, lambda: f"eval {self._kernel_expr()}"),
            (2, lambda: f"whatis {rng.choice(p.kernel_names)}"),
            (3, lambda: rng.choice(["locals", "args", "where", "bt", "w", "threads", "info threads",
                                    "info locals", "info args", "ll", "longlist", "list", "l ."])),
            (2, lambda: f"{rng.choice(['up', 'down'])} {rng.choice(['', '1', '2', '5', '-1', 'x'])}"),
            (2, lambda: f"list {rng.choice(['', '1', '10, 20', '.', str(rng.choice(p.kernel_lines))])}"),
            (2, lambda: f"thread {rng.choice(['1', '2', '3', '4', '0', '-1', 'x', ''])}"),
            (2, lambda: f"parallel_print {self._kernel_expr()}"),
            (1, lambda: f"display {rng.choice(p.kernel_names)}"),
            (1, lambda: f"undisplay {rng.choice(['', rng.choice(p.kernel_names), 'nosuch'])}"),
            (3, lambda: self._break(rng.choice(p.kernel_lines + p.host_lines), mode="kernel")),
            (2, lambda: f"{rng.choice(['clear', 'delete', 'disable', 'enable'])} {self._bp()}"),
            (1, lambda: f"condition {self._bp()} {rng.choice(p.conditions + ('', 'x.y', 'j ==', '1 if'))}"),
            (1, lambda: f"ignore {self._bp()} {rng.choice(['0', '1', '2', 'x', ''])}"),
            (1, lambda: rng.choice(["info breakpoints", "break", "b", "info", "info nosuch"])),
            (2, lambda: f"send {rng.choice(_SEND_BENIGN)}"),
            (1, lambda: f"send {rng.choice(_SEND_REFUSED)}"),
            (2, lambda: f"help {rng.choice(['', 'continue', 'send', 'parallel_print', 'nosuch'])}"),
            (1, lambda: f"show {rng.choice(('',) + _SETTINGS)}"),
            (1, lambda: f"set {rng.choice(_SETTINGS)} {rng.choice(['on', 'off', 'sure', ''])}"),
            (1, lambda: self._hotswap()),
            (1, lambda: self._parallel_launch()),
            (5, lambda: rng.choice(["next", "n", "step", "s"])),
            (1, lambda: f"until {rng.choice(['', str(rng.choice(p.kernel_lines)), '9999', 'x'])}"),
            (1, lambda: rng.choice(["return", "r"])),
            (1.5, lambda: rng.choice(["continue", "c", "cont"])),
            (1, lambda: f"continue threads {self._thread_range()}"),
            (0.3, lambda: "finish"),
        ]  # fmt: skip
        return self._pick(choices)

    def _kernel_expr(self) -> str:
        rng, names = self.rng, self.program.kernel_names
        return rng.choice(
            [rng.choice(names), rng.choice(names), f"{rng.choice(names)} + 1",
             f"{rng.choice(names)}[0]", f"{rng.choice(names)}[99999]", "nosuch", "1 +", "[1, 2",
             "'text'", _garbage(rng), f"{rng.choice(names)}, {rng.choice(names)}",
             f"{rng.choice(names)}[-1:]", "1 / 0", "__name__"]
        )  # fmt: skip

    def _thread_range(self) -> str:
        rng = self.rng
        return rng.choice(["1:1", "1:2", "2:2", "1:4", "3:1", "0:0", "x", "", "1:", ":2", "1-2",
                           f"1:{'9' * 5000}", "2:3"])  # fmt: skip

    # -- shared ----------------------------------------------------------------------

    def _break(self, line: int, mode: str) -> str:
        rng, p = self.rng, self.program
        word = rng.choice(["break", "b", "tbreak"])
        where = rng.choice([str(line), f"{p.path.name}:{line}", str(line), _number(rng)])
        condition = rng.choice(
            [
                "",
                "",
                f" if {rng.choice(p.conditions)}",
                f", {rng.choice(p.conditions)}",
                " if",
                " if x.y.z",
                " if (",
            ]
        )
        return f"{word} {where}{condition}"

    def _bp(self) -> str:
        return self.rng.choice(["1", "2", "3", "4", "1 2", "0", "-1", "x", "", "99", "9" * 5000,
                                f"{self.program.path.name}:{self.rng.choice(self.program.kernel_lines)}"])  # fmt: skip

    def _hotswap(self) -> str:
        rng = self.rng
        return "hotswap " + rng.choice(
            ["", "nosuch other", "yAx", "yAx nosuch", "clear", "clear 9", "12 a b", "x y z w",
             "list"]
        )  # fmt: skip

    def _parallel_launch(self) -> str:
        rng = self.rng
        return "parallel_launch " + rng.choice(
            ["", "nosuch", "reduce", ";", "reduce nosuch pk.OpenMP 4", "for yAx pk.Nothing 3",
             "reduce yAx pk.Serial -1", "scan ; for", "reduce yAx pk.Serial 4 cols=nosuch"]
        )  # fmt: skip

    def _malformed(self) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.35:
            return f"{rng.choice(_WORDS)} {_garbage(rng)}"
        if kind < 0.55:
            return f"{rng.choice(_WORDS)} {_number(rng)}"
        if kind < 0.7:
            return (
                rng.choice(_WORDS) + " " + " ".join(_number(rng) for _ in range(rng.randint(2, 4)))
            )
        if kind < 0.85:
            return _garbage(rng)
        return rng.choice(["", ";;", "p 1 ;; p 2", "?", "? p", "help help", "#", "!", "!!", "\\",
                           "'", '"', "((((", "]]]", "p " + "[" * 300, "p " + "1+" * 2000 + "1"])  # fmt: skip

    def _bytes(self) -> bytes:
        rng = self.rng
        bad = rng.choice([b"\xff", b"\xfe\xff", b"\xc3", b"\xe9t\xe9", b"\x80abc", b"\xed\xa0\x80"])
        word = rng.choice(["p ", "break ", "", "send ", "eval "]).encode()
        return word + b"'" + bad + b"'"

    def _pick(self, choices: list[tuple[float, Callable[[], str]]]) -> str:
        weights = [w for w, _ in choices]
        _, make = self.rng.choices(choices, weights)[0]
        line = make()
        assert not _CONTROL & set(line), repr(line)  # the terminal would act on those
        assert "(pkdb" not in line
        return line


# ------------------------------------------------------------------------ the driver


@dataclass
class Failure:
    kind: str  # hang, internal error, session ended, wrong result
    detail: str
    program: str
    seed: int
    line: str
    transcript: str


@dataclass
class Figures:
    """What a campaign did."""

    lines: int = 0
    host_lines: int = 0
    kernel_lines: int = 0
    sessions: int = 0
    kernel_stops: int = 0  # lines answered at a kernel prompt after a host one
    runs_checked: int = 0  # program runs whose result was checked
    seconds: float = 0.0
    slowest_line: float = 0.0
    slowest: str = ""
    failures: list[Failure] = field(default_factory=list)
    by_program: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        hangs = sum(f.kind == "hang" for f in self.failures)
        internal = sum(f.kind == "internal error" for f in self.failures)
        wrong = sum(f.kind == "wrong result" for f in self.failures)
        ended = sum(f.kind == "session ended" for f in self.failures)
        per_program = ", ".join(f"{k} {v}" for k, v in sorted(self.by_program.items()))
        return (
            f"{self.lines} lines ({self.host_lines} at host prompts, {self.kernel_lines} at "
            f"kernel prompts; {per_program}) in {self.sessions} sessions, "
            f"{self.kernel_stops} entries into kernel mode, {self.runs_checked} program runs "
            f"checked, {self.seconds:.0f} s (slowest line {self.slowest_line:.1f} s: "
            f"{self.slowest[:60]!r}); {hangs} hangs, {internal} internal errors, "
            f"{ended} sessions ended early, {wrong} wrong results"
        )


_INTERNAL = (
    re.compile(r"pkdb failed on"),
    re.compile(r"Traceback \(most recent call last\):(?:(?!\n\S).)*?/pkdb/", re.S),
    re.compile(r"internal-error"),
    re.compile(r"Exception in thread"),
    re.compile(r"internal error", re.I),
)


def _internal_error(text: str) -> str | None:
    for pattern in _INTERNAL:
        match = pattern.search(text)
        if match:
            start = max(0, match.start() - 200)
            return text[start : match.end() + 800]
    return None


class Session:
    """One pkdb session on a PTY, driven line by line."""

    def __init__(self, program: Program, env: dict[str, str], cwd: Path) -> None:
        self.program = program
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "pkdb", str(program.path), *program.args],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            codec_errors="replace",
            timeout=LINE_TIMEOUT,
            dimensions=(24, 200),
        )
        self.child.delaybeforesend = None
        self.transcript: list[str] = []
        self.output = ""  # everything since the program's last start
        self.mode = "host"
        self.ended = False  # the program ended (exited, died)
        first = self._wait()
        if first is None:
            raise RuntimeError(f"pkdb did not start: {self.child.before!r}")

    def send(self, line: str | bytes) -> tuple[str | None, str]:
        """Type ``line``; (the prompt's mode or None on a hang/EOF, the output)."""
        shown = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        self.transcript.append(f"{self.mode}> {shown[:300]}")
        data = line if isinstance(line, bytes) else line.encode()
        os.write(self.child.child_fd, data + b"\n")
        return self._wait(), self.last

    def _wait(self) -> str | None:
        answers = iter(["n", "y", "n"])
        text = ""
        while True:
            try:
                index = self.child.expect([_PROMPT, pexpect.EOF, pexpect.TIMEOUT, _CONFIRM])
            except pexpect.ExceptionPexpect as exc:  # pragma: no cover - pexpect failed
                self.last = str(exc)
                return None
            text += (self.child.before or "").replace("\r\n", "\n")
            if index != 3:
                break
            answer = next(answers, "y")
            text += f"Clear all breaks? {answer}\n"
            self.child.sendline(answer)
        self.last = text
        self.output += self.last
        self.transcript.append(self.last[-2000:])
        if index != 0:
            return None
        if re.search(r"The program (exited|was killed|died)|Uncaught exception", self.last):
            self.ended = True  # (an uncaught exception: the program's result is wrong)
        self.mode = "kernel" if self.child.match.group(1) == "pkdb-openmp" else "host"
        return self.mode

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONSTARTUP", "PYTHONINSPECT"}}
    env["TERM"] = "dumb"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env["PKERNELS_CACHE_DIR"] = str(cache)
    env["OMP_NUM_THREADS"] = env.get("PKDB_FUZZ_THREADS", "2")
    return env


def run_session(
    program: Program, seed: int, budget: int, figures: Figures, work: Path,
    log: Callable[[str], None] = lambda text: None,
    transcript: Callable[[str], None] | None = None,
) -> None:  # fmt: skip
    """One session of ``budget`` fuzzed lines on ``program``; adds to ``figures``.
    ``transcript`` gets the session's whole transcript at its end."""
    rng = random.Random(seed)
    generator = Generator(program, rng)
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = _env(work / "cache") | {"HOME": str(home)}
    start = time.monotonic()
    session = Session(program, env, EXAMPLES)
    figures.sessions += 1

    def fail(kind: str, detail: str, line: str) -> None:
        transcript = "\n".join(session.transcript[-40:])
        figures.failures.append(Failure(kind, detail, program.name, seed, line, transcript))
        log(f"FAIL {kind} ({program.name}, seed {seed}) at {line[:200]!r}:\n{detail[:3000]}")

    try:
        # A kernel breakpoint first, so that a `continue` at the host prompt stops in a
        # kernel rather than ending the program; another now and then, as a user would.
        done = 0
        while done < budget and not session.ended:
            if session.mode == "host" and (done == 0 or rng.random() < 0.08):
                line: str | bytes = f"break {rng.choice(program.kernel_lines)}" + rng.choice(
                    ["", f" if {rng.choice(program.conditions)}"]
                )
            else:
                line = generator.line(session.mode)
            before = session.mode
            t0 = time.monotonic()
            mode, out = session.send(line)
            elapsed = time.monotonic() - t0
            done += 1
            figures.lines += 1
            figures.by_program[program.name] = figures.by_program.get(program.name, 0) + 1
            if before == "host":
                figures.host_lines += 1
            else:
                figures.kernel_lines += 1
            shown = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            if elapsed > figures.slowest_line:
                figures.slowest_line, figures.slowest = elapsed, shown
            if mode is None:
                kind = "hang" if session.child.isalive() else "session ended"
                fail(kind, out[-3000:], shown)
                return
            problem = _internal_error(out)
            if problem is not None:
                fail("internal error", problem, shown)
            if mode == "kernel" and before == "host":
                figures.kernel_stops += 1
        _finish(session, program, figures, fail)
    finally:
        figures.seconds += time.monotonic() - start
        session.close()
        if transcript is not None:
            transcript("\n".join(session.transcript))


def _finish(session: Session, program: Program, figures: Figures, fail) -> None:
    """Delete every breakpoint and display, run the program out, check its result."""
    for _ in range(30):
        if session.ended:
            break
        mode, listing = session.send("info breakpoints")
        if mode is None:
            fail("hang", listing, "info breakpoints")
            return
        numbers = re.findall(r"^(\d+)\s+breakpoint", listing, re.M)
        if numbers:
            mode, out = session.send(f"clear {' '.join(numbers)}")
            if mode is None:
                fail("hang", out, "clear")
                return
        mode, out = session.send("continue")
        if mode is None:
            fail("hang", out, "continue")
            return
        problem = _internal_error(out)
        if problem is not None:
            fail("internal error", problem, "continue")
    if not session.ended:
        fail("hang", session.output[-3000:], "(the program never ended)")
        return
    figures.runs_checked += 1
    problem = program.check(session.output)
    if problem is not None:
        fail("wrong result", problem + "\n" + session.output[-2000:], "(end)")
    session.send("quit")


def campaign(
    lines: int, seed: int, work: Path, session_lines: int = 120,
    log: Callable[[str], None] = lambda text: None,
) -> Figures:  # fmt: skip
    """Sessions alternating between the programs until ``lines`` lines were typed."""
    figures = Figures()
    index = 0
    while figures.lines < lines:
        program = PROGRAMS[index % len(PROGRAMS)]
        budget = min(session_lines, lines - figures.lines)
        run_session(program, seed * 100_003 + index, budget, figures, work, log)
        index += 1
        log(f"after session {index}: {figures.summary()}")
    return figures
