"""Newline-delimited JSON messages over a connected stream socket (both ends use this)."""

from __future__ import annotations

import select
import socket
import threading

from .protocol import Message, decode, encode


class ChannelClosed(EOFError):
    """The other end closed the channel (or died)."""


class Channel:
    """One end of the front end ↔ agent socket pair.

    ``send`` is thread-safe. ``receive`` is meant for one reader at a time; it keeps
    partial lines between calls, so a timeout never loses data.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._send_lock = threading.RLock()
        self._closed = False

    def fileno(self) -> int:
        return self._sock.fileno()

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, message: Message) -> None:
        """Send one message; :class:`ChannelClosed` if the peer is gone."""
        data = encode(message)
        with self._send_lock:
            if self._closed:
                raise ChannelClosed("channel closed")
            try:
                self._sock.sendall(data)
            except OSError as exc:  # EPIPE, ECONNRESET, EBADF after close
                raise ChannelClosed(str(exc)) from None

    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message; ``None`` if none arrived within ``timeout`` seconds
        (``None``: wait forever). Raises :class:`ChannelClosed` at end of stream."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                return decode(line)
            if self._closed:
                raise ChannelClosed("channel closed")
            if timeout is not None:
                ready, _, _ = select.select([self._sock], [], [], timeout)
                if not ready:
                    return None
            try:
                data = self._sock.recv(65536)
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            if not data:
                raise ChannelClosed("end of stream")
            self._buffer += data

    def close(self) -> None:
        """Close our end (idempotent); the peer sees end of stream."""
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
