"""The small parts, without processes: protocol, channel, routing, settings, CLI."""

from __future__ import annotations

import socket

import pytest

from pkdb import protocol
from pkdb.channel import Channel, ChannelClosed
from pkdb.command_line import build_parser, read_commands, split_argv
from pkdb.commands.registry import Command, CommandRouter, split_command, split_commands
from pkdb.modes import HostMode
from pkdb.session import describe_exit
from pkdb.settings import SettingError, Settings


def test_messages_round_trip_as_single_json_lines():
    state = protocol.DebuggerState(
        breakpoints=[
            protocol.BreakpointState(number=3, file="/a b/x.py", line=7, commands=["p 1"])
        ],
        aliases={"pv": "p %1"},
        next_breakpoint=5,
    )
    messages = [
        protocol.Start(argv=["x.py", "a\nb"], entry=protocol.ENTRY_RUN, state=state.to_dict()),
        protocol.Command(reply_to=4, line="p 'é'"),
        protocol.Command(reply_to=4, line=None, interrupt=True),
        protocol.SettingsChanged(values={"debug_all_kernels": True}),
        protocol.Output(text="line\n"),
        protocol.Prompt(id=4, prompt="(com) ", main=False),
        protocol.StateChanged(state=state.to_dict()),
        protocol.Finished(reason="restart", argv=["x.py"]),
    ]
    for message in messages:
        encoded = protocol.encode(message)
        assert encoded.endswith(b"\n") and encoded.count(b"\n") == 1
        assert protocol.decode(encoded) == message
    assert protocol.DebuggerState.from_dict(state.to_dict()) == state


def test_decoding_is_lenient_about_new_fields_but_not_about_garbage():
    assert protocol.decode('{"type":"output","text":"x","colour":"red"}') == protocol.Output("x")
    for bad in ("nope", "[1]", '{"type":"warp"}', '{"type":"prompt"}'):
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(bad)


def test_channel_keeps_partial_lines_and_reports_the_end():
    left, right = socket.socketpair()
    ours, theirs = Channel(left), Channel(right)
    assert ours.receive(timeout=0) is None
    data = protocol.encode(protocol.Output("one")) + protocol.encode(protocol.Output("two"))
    right.sendall(data[:5])
    assert ours.receive(timeout=0.01) is None
    right.sendall(data[5:])
    assert ours.receive() == protocol.Output("one")
    assert ours.receive() == protocol.Output("two")
    theirs.close()
    with pytest.raises(ChannelClosed):
        ours.receive(timeout=1)
    with pytest.raises(ChannelClosed):
        theirs.send(protocol.Output("late"))
    ours.close()


def test_command_splitting_follows_pdb():
    assert split_command("break 5, x > 1") == ("break", "5, x > 1")
    assert split_command("  ?run") == ("help", "run")
    assert split_command("!x = 1") == ("", "!x = 1")
    assert split_command("p(x)") == ("p", "(x)")
    assert split_commands("p 1 ;; p 2;;c") == ("p 1", "p 2;;c")
    assert split_commands("alias x p 1;;p 2") == ("alias x p 1;;p 2", None)


def test_router_rejects_duplicates_and_finds_aliases():
    def handler(console, arg):
        """demo
        Does nothing."""

    router = CommandRouter([Command("demo", handler, aliases=("d",))])
    assert router.lookup("d").name == "demo"
    assert router.lookup("dem") is None  # no prefix matching, as in pdb
    assert router.lookup("demo").help == "demo\nDoes nothing."
    with pytest.raises(ValueError):
        router.add(Command("other", handler, aliases=("demo",)))


def test_host_mode_documents_every_command_it_owns():
    mode = HostMode()
    for command in mode.router.commands():
        assert command.handler.__doc__, command.name
    assert "b(reak)" in mode.fallback_help("break")
    assert {"run", "restart", "info", "set", "show", "break", "interact"} <= set(
        mode.completion_names()
    )


def test_settings():
    settings = Settings()
    assert settings.get("debug_all_kernels") is False
    assert settings.set("debug_all_kernels", "ON") is True
    assert settings.describe("debug_all_kernels") == "debug_all_kernels = on"
    assert settings.as_dict() == {
        "debug_all_kernels": True,
        "fast_debug_builds": True,
        "parallel_launch_checks": True,
        "checks": True,
    }
    with pytest.raises(SettingError, match="expected on or off"):
        settings.set("debug_all_kernels", "perhaps")
    with pytest.raises(SettingError, match="no setting"):
        settings.get("nope")


def test_command_line_keeps_program_arguments_verbatim(tmp_path):
    assert split_argv(["-c", "p 1", "prog.py", "-c", "--", "x"]) == (
        ["-c", "p 1", "prog.py"],
        ["-c", "--", "x"],
    )
    assert split_argv(["--debug-all-kernels", "--", "-odd.py", "a"]) == (
        ["--debug-all-kernels", "--", "-odd.py"],
        ["a"],
    )
    options = build_parser().parse_args(["-x", "f", "-c", "a", "-c", "b", "prog.py"])
    assert options.commands == [("file", "f"), ("command", "a"), ("command", "b")]
    script = tmp_path / "s"
    script.write_text("# comment\n\nbreak 3\n  c  \n")
    assert read_commands([("command", "x"), ("file", str(script))]) == ["x", "break 3", "c"]


def test_exit_descriptions():
    assert describe_exit(0) == "The program exited with code 0"
    assert describe_exit(2) == "The program exited with code 2"
    assert describe_exit(-11) == "The program was killed by signal SIGSEGV (Segmentation fault)"
