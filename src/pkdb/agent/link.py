"""The agent's end of the channel: one reader thread, requests that wait for replies.

A background thread reads every message from the front end. Replies (messages with a
``reply_to``) go to the request waiting for them; other messages go to the handler
registered for their type. The thread also notices the front end going away (end of
stream) and then ends the debuggee, so it never outlives its session.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any

from ..channel import Channel, ChannelClosed
from ..protocol import Message, ProtocolError

_CLOSED = object()  # put in waiting reply queues when the channel ends


class AgentLink:
    """Send messages, make requests, dispatch notifications (thread-safe)."""

    def __init__(self, channel: Channel, on_closed: Callable[[], None]) -> None:
        self._channel = channel
        self._on_closed = on_closed
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.SimpleQueue[Any]] = {}
        self._handlers: dict[str, Callable[[Any], None]] = {}
        self._thread = threading.Thread(target=self._read_loop, name="pkdb-agent-link")
        self._thread.daemon = True  # must not keep the program alive at exit

    def start(self) -> None:
        self._thread.start()

    def on(self, message_type: str, handler: Callable[[Any], None]) -> None:
        """Call ``handler(message)`` (in the reader thread) for each message of that
        JSON type (a Message class's ``TYPE``: the class itself may not be loaded yet)."""
        self._handlers[message_type] = handler

    def new_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def send(self, message: Message) -> None:
        self._channel.send(message)

    def request(self, message: Message, *, interruptible: bool = True) -> Message:
        """Send ``message`` (whose ``id`` came from :meth:`new_id`) and block until the
        reply arrives. With ``interruptible`` false, Ctrl-C (KeyboardInterrupt) while
        waiting is ignored: the front end owns the terminal then, and an interrupt
        that slips through must not desynchronise the conversation."""
        request_id = message.id  # type: ignore[attr-defined]
        replies: queue.SimpleQueue[Any] = queue.SimpleQueue()
        with self._lock:
            self._waiting[request_id] = replies
        try:
            self.send(message)
            while True:
                try:
                    reply = replies.get()
                except KeyboardInterrupt:
                    if interruptible:
                        raise
                    continue
                if reply is _CLOSED:
                    raise ChannelClosed("front end went away")
                return reply
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)

    def _read_loop(self) -> None:
        while True:
            try:
                message = self._channel.receive()
            except ProtocolError:
                continue  # a newer front end; nothing we can act on
            except ChannelClosed:
                break
            assert message is not None
            reply_to = getattr(message, "reply_to", None)
            if reply_to is not None:
                with self._lock:
                    waiter = self._waiting.get(reply_to)
                if waiter is not None:
                    waiter.put(message)
                continue
            handler = self._handlers.get(message.TYPE)
            if handler is not None:
                handler(message)
        with self._lock:
            for waiter in self._waiting.values():
                waiter.put(_CLOSED)
        self._on_closed()
