"""Which raw gdb commands ``send`` refuses: those that run, stop or end the program.

pkdb drives gdb's run control itself (non-stop mode: which threads are held, which run,
what a stop means). A ``continue``, ``detach`` or ``-gdb-exit`` typed through ``send``
takes the kernel's threads (or gdb) away from it, and the session hangs or goes on with
a wrong idea of the program. :func:`refusal` says why such a command is refused and which
pkdb command does what the user meant; every other command goes to gdb as typed.

gdb's CLI takes any unambiguous prefix of a command name (``cont``, ``det``) and has
aliases (``c``, ``fg``, ``k``, ``exit``); commands run through ``thread apply``,
``frame apply``, ``taas``/``faas``/``tfaas``, ``with ... --``, ``pipe``/``|``, ``alias``,
``eval``, ``python gdb.execute(...)`` and MI's ``-interpreter-exec`` are checked too.
"""

from __future__ import annotations

import re
import shlex

_RESTART = "'finish' (the kernel runs to its end), then 'restart' at the (pkdb) prompt"

#: CLI run-control commands: (full name, shortest prefix gdb 13 takes for it, aliases)
#: -> what to use instead. The prefixes were measured with ``gdb -batch -ex 'help P'``
#: (``co`` is ambiguous, gdb refuses it: only ``cont``... and ``c`` are continue).
_CLI: dict[tuple[str, str, tuple[str, ...]], str] = {
    ("continue", "cont", ("c", "fg")): "pkdb's 'continue' (or 'continue threads A:B')",
    ("next", "next", ("n",)): "pkdb's 'next'",
    ("step", "step", ("s",)): "pkdb's 'step'",
    ("finish", "fin", ()): (
        "pkdb's 'return' (out of a @pk.function helper) or 'finish' (to the kernel's end)"
    ),
    ("until", "unt", ("u",)): "pkdb's 'until [LINE]'",
    ("advance", "adv", ()): "pkdb's 'until LINE' (or 'tbreak LINE' and 'continue')",
    ("jump", "j", ()): "'tbreak LINE' and 'continue' (pkdb does not jump in kernels)",
    ("signal", "sig", ()): "pkdb's 'continue' (pkdb does not deliver signals to a held kernel)",
    ("queue-signal", "que", ()): (
        "pkdb's 'continue' (pkdb does not deliver signals to a held kernel)"
    ),
    ("run", "run", ("r",)): _RESTART,
    ("start", "start", ()): _RESTART,
    ("starti", "starti", ()): _RESTART,
    ("checkpoint", "ch", ()): _RESTART,
    ("restart", "resta", ()): _RESTART,
    ("kill", "k", ()): f"pkdb's 'quit' (ends the program and the session), or {_RESTART}",
    ("detach", "det", ()): (
        "pkdb's 'finish' (gdb stays attached for the session; the kernel runs to its end)"
    ),
    ("disconnect", "disc", ()): "pkdb's 'finish' (gdb stays attached for the session)",
    ("attach", "at", ()): "nothing: pkdb attached gdb to the program itself",
    ("target", "tar", ()): "nothing: pkdb attached gdb to the program itself",
    ("quit", "qui", ("q", "exit")): "pkdb's 'quit'",
    ("interrupt", "interr", ()): (
        "nothing: the kernel's threads are held already (Ctrl-C interrupts a running kernel)"
    ),
    ("record", "rec", ()): "pkdb's 'next' and 'step' (pkdb does not record execution)",
    ("reverse-continue", "reverse-c", ("rc",)): "pkdb's 'continue'",
    ("reverse-finish", "reverse-f", ()): "pkdb's 'return'",
    ("reverse-next", "reverse-next", ("rn",)): "pkdb's 'next'",
    ("reverse-step", "reverse-step", ("rs",)): "pkdb's 'step'",
    ("reverse-stepi", "reverse-stepi", ("rsi",)): "pkdb's 'step'",
    ("reverse-nexti", "reverse-nexti", ("rni",)): "pkdb's 'next'",
}
#: Instruction steps of the current thread are let through (pkdb waits for their stop),
#: a few at a time: a long one would outlast the wait.
_INSTRUCTION_STEPS = {"stepi", "si", "nexti", "ni"}
_MAX_INSTRUCTION_STEPS = 100

#: MI run control -> the CLI command it is (for the advice).
_MI = {
    "-exec-continue": "continue",
    "-exec-next": "next",
    "-exec-step": "step",
    "-exec-finish": "finish",
    "-exec-until": "until",
    "-exec-jump": "jump",
    "-exec-return": "finish",
    "-exec-run": "run",
    "-exec-abort": "kill",
    "-exec-interrupt": "interrupt",
    "-exec-next-instruction": "nexti",
    "-exec-step-instruction": "stepi",
    "-target-attach": "attach",
    "-target-detach": "detach",
    "-target-disconnect": "disconnect",
    "-target-select": "target",
    "-gdb-exit": "quit",
}
_WORD = re.compile(r"[A-Za-z][\w-]*|\|")


def refusal(command: str) -> str | None:
    """Why ``send COMMAND`` must not reach gdb (and what to use instead), or None."""
    reason = _check(command.strip(), depth=0)
    if reason is None:
        return None
    return (
        f"'send {command.strip()}' is refused: gdb's run control would take the program "
        f"from pkdb (the session could hang). {reason}"
    )


def _check(text: str, depth: int) -> str | None:
    text = text.strip()
    if not text or depth > 8:
        return None
    if text.lstrip("0123456789").startswith("-"):  # MI, with or without a token
        return _check_mi(text.lstrip("0123456789"), depth)
    match = _WORD.match(text)
    if match is None:
        return None
    word, rest = match.group(), text[match.end() :].strip()
    if word in ("pipe", "pip", "|"):
        return _check(_piped(rest), depth + 1)
    if _is(word, "with", "wit") or word == "w":
        _, dash, inner = rest.partition("--")
        return _check(inner, depth + 1) if dash else None
    sub, _, applied = rest.partition(" ")
    if (_is(word, "thread", "thr") or word == "t") and _is(sub, "apply", "a"):
        return _check(_applied(applied), depth + 1)  # `t a a c` is thread apply all continue
    if _is(word, "frame", "f") and _is(sub, "apply", "ap"):
        return _check(_applied(applied), depth + 1)
    if _is(word, "taas", "taa") or _is(word, "faas", "fa") or _is(word, "tfaas", "tfa"):
        return _check(_without_options(rest), depth + 1)
    if word == "alias":
        _, equals, target = rest.partition("=")
        return _check(target, depth + 1) if equals else None
    if _is(word, "eval", "ev"):
        return _check(_first_string(rest), depth + 1)
    if word in ("python", "py", "pi", "python-interactive"):
        for inner in re.findall(r"execute\(\s*(['\"])(.*?)\1", rest):
            reason = _check(inner[1], depth + 1)
            if reason is not None:
                return reason
        return None
    if word in _INSTRUCTION_STEPS:
        count = rest.split()[0] if rest.split() else "1"
        if count.isdigit() and len(count) < 6 and int(count) <= _MAX_INSTRUCTION_STEPS:
            return None
        return (
            f"Step at most {_MAX_INSTRUCTION_STEPS} instructions at a time (a longer step "
            "would outlast pkdb's wait for it); pkdb's 'next' and 'until' step by lines."
        )
    for (name, shortest, aliases), advice in _CLI.items():
        if word in aliases or (name.startswith(word) and len(word) >= len(shortest)):
            return f"Use {advice}."
    return None


def _check_mi(text: str, depth: int) -> str | None:
    word, _, rest = text.partition(" ")
    if word == "-interpreter-exec":
        args = _split(rest)
        while args and args[0].startswith("--"):  # --thread N, --frame N
            args = args[2:] if args[0] in ("--thread", "--frame", "--thread-group") else args[1:]
        for inner in args[1:]:
            reason = _check(inner, depth + 1)
            if reason is not None:
                return reason
        return None
    cli = _MI.get(word)
    if cli is None:
        return None
    if cli in _INSTRUCTION_STEPS:
        return f"Use 'send {cli}' (pkdb waits for its stop)."
    return _check(cli, depth + 1)


def _is(word: str, name: str, shortest: str) -> bool:
    return name.startswith(word) and len(word) >= len(shortest)


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _applied(text: str) -> str:
    """The command of ``thread apply IDS [FLAGS] COMMAND`` (``text`` after ``apply``)."""
    words = text.split()
    if words and _is(words[0], "all", "a"):
        words.pop(0)
    while words and (words[0][:1].isdigit() or words[0][:1] in ("$", "*")):
        words.pop(0)  # thread ids: 3, 1-4, 2.1, 1.*, $n
    return _without_options(" ".join(words))


def _without_options(text: str) -> str:
    words = text.split()
    while words and words[0].startswith("-"):
        if words.pop(0) == "--":
            break
    return " ".join(words)


def _piped(text: str) -> str:
    """The gdb command of ``pipe [-d DELIM] COMMAND DELIM SHELL``."""
    words = text.split()
    delimiter = "|"
    if len(words) >= 2 and words[0] == "-d":
        delimiter = words[1]
        text = text.split(None, 2)[2] if len(words) > 2 else ""
    return text.split(delimiter, 1)[0]


def _first_string(text: str) -> str:
    match = re.match(r"\s*\"((?:[^\"\\]|\\.)*)\"", text)
    return match.group(1) if match else ""
