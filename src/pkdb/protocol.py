"""The messages the pkdb front end and the agent inside the debuggee exchange.

Transport: a private ``socket.socketpair()``; each message is one line of JSON (an object
with a ``"type"`` key plus the dataclass fields below), see :mod:`pkdb.channel`.

Conversation (``→`` front end to agent, ``←`` agent to front end)::

    → start        what to run, how to enter it, the debugger state to restore
    ← output       text for the terminal (pdb's own output; the program writes straight
                   to the inherited terminal)
    ← state        breakpoints and aliases, sent whenever they changed, so they survive
                   the debuggee (restart after a crash keeps them)
    ← prompt       a request: the agent blocks until it gets the matching ``command``
    → command      the reply: one line typed by the user (or EOF, or Ctrl-C)
    → settings     session settings changed (``set NAME VALUE``)
    ← finished     the agent ends the run on the user's request (quit / restart)

Requests carry an ``id`` and their replies a ``reply_to`` with that id; the agent's link
(:class:`pkdb.agent.link.AgentLink`) routes any reply to the request waiting for it. The
kernel integration adds one more such pair without changing anything here but two
classes: the dispatch hook sends a ``kernel-launch`` request before a debug launch and
waits for the front end's reply (target debugger attached, breakpoints set) to proceed.

Decoding ignores fields it does not know, so either side may add optional fields.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

#: The prompt of host mode (pdb's, renamed).
HOST_PROMPT = "(pkdb) "

PROTOCOL_VERSION = 1

#: How the program starts: stop before its first line and show where (like ``python -m
#: pdb``), the same without showing it (the front end loads the program only to take
#: breakpoint commands), or run until the first breakpoint (``run``).
ENTRY_STOP = "stop"
ENTRY_QUIET = "quiet"
ENTRY_RUN = "run"
ENTRY_MODES = (ENTRY_STOP, ENTRY_QUIET, ENTRY_RUN)


class ProtocolError(ValueError):
    """A line on the channel is not a message we know."""


_MESSAGE_TYPES: dict[str, type[Message]] = {}

M = TypeVar("M", bound="Message")


def message_type(name: str):
    """Class decorator: register a :class:`Message` subclass under its JSON ``type``."""

    def register(cls: type[M]) -> type[M]:
        if name in _MESSAGE_TYPES:
            raise ValueError(f"duplicate message type {name!r}")
        cls.TYPE = name
        _MESSAGE_TYPES[name] = cls
        return cls

    return register


@dataclass
class Message:
    """Base of every message; subclasses are dataclasses of JSON-native fields."""

    TYPE: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object for this message, ``type`` first."""
        return {"type": self.TYPE, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls: type[M], data: dict[str, Any]) -> M:
        """Build the message from its JSON object, ignoring unknown keys."""
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError as exc:  # a required field is missing
            raise ProtocolError(f"bad {cls.TYPE!r} message: {exc}") from None


def encode(message: Message) -> bytes:
    """One message as one line of JSON (newline-terminated, ASCII only)."""
    return json.dumps(message.to_dict(), separators=(",", ":")).encode("ascii") + b"\n"


def decode(line: bytes | str) -> Message:
    """Parse one line written by :func:`encode`."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = data.get("type")
    cls = _MESSAGE_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None and isinstance(kind, str) and kind.startswith("kernel-"):
        from . import kernel_protocol  # noqa: F401 - registers the kernel messages

        cls = _MESSAGE_TYPES.get(kind)
    if cls is None:
        raise ProtocolError(f"unknown message type {kind!r}")
    return cls.from_dict(data)


# -- debugger state carried across runs ------------------------------------------------


@dataclass
class BreakpointState:
    """One host breakpoint, with everything pdb keeps about it."""

    number: int
    file: str
    line: int
    temporary: bool = False
    condition: str | None = None
    enabled: bool = True
    ignore: int = 0
    hits: int = 0
    funcname: str | None = None
    commands: list[str] | None = None  # ``commands N`` list; None when never defined
    silent: bool = False
    prompt: bool = True  # stop at a prompt after running ``commands``


@dataclass
class DebuggerState:
    """What a restart keeps: breakpoints (numbers included) and aliases."""

    breakpoints: list[BreakpointState] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    next_breakpoint: int = 1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> DebuggerState:
        data = data or {}
        return cls(
            breakpoints=[BreakpointState(**bp) for bp in data.get("breakpoints", [])],
            aliases=dict(data.get("aliases", {})),
            next_breakpoint=int(data.get("next_breakpoint", 1)),
        )


# -- front end → agent ---------------------------------------------------------------


@message_type("start")
@dataclass
class Start(Message):
    """First message of a run: ``argv[0]`` is the program (a module's name with
    ``module``, as ``python -m`` runs it), the rest its arguments."""

    argv: list[str]
    entry: str = ENTRY_STOP
    module: bool = False
    state: dict[str, Any] = field(default_factory=dict)  # DebuggerState.to_dict()
    settings: dict[str, Any] = field(default_factory=dict)
    version: int = PROTOCOL_VERSION


@message_type("command")
@dataclass
class Command(Message):
    """Reply to a :class:`Prompt`: a line (without newline), EOF (``line`` None), or
    Ctrl-C typed at an agent sub-prompt such as ``(com)`` or ``>>>`` (``interrupt``)."""

    reply_to: int
    line: str | None = None
    interrupt: bool = False


@message_type("settings")
@dataclass
class SettingsChanged(Message):
    """New values of session settings (name → JSON value)."""

    values: dict[str, Any]


# -- agent → front end ---------------------------------------------------------------


@message_type("output")
@dataclass
class Output(Message):
    """Debugger output for the terminal."""

    text: str


@message_type("prompt")
@dataclass
class Prompt(Message):
    """Request for one input line. ``main`` is true at the debugger's own command prompt
    (the front end routes commands there) and false at sub-prompts it merely relays
    (``(com)`` of ``commands``, ``>>>`` of ``interact``, a nested ``debug``)."""

    id: int
    prompt: str
    main: bool = True


@message_type("state")
@dataclass
class StateChanged(Message):
    """The debugger state (a :class:`DebuggerState` as a dict) changed."""

    state: dict[str, Any]


@message_type("finished")
@dataclass
class Finished(Message):
    """The agent ends this run because the user asked: ``reason`` is ``"quit"`` (end
    the session) or ``"restart"`` (start again with ``argv``, entering with ``entry``)."""

    reason: str
    argv: list[str] | None = None
    entry: str = ENTRY_STOP


#: How many evaluations at a kernel stop (eval, parallel_launch) the agent can run at
#: once: one the user stopped waiting for runs on while the next ones are answered.
EVALUATION_THREADS = 3
