"""Whether a kernel cache directory or file can be trusted: only this user may write it.

pkernels loads and runs the shared objects it finds in its cache, so a cache that
another user can write is a way for them to run code as this user (as root, for a
root process). As ssh does with ``~/.ssh`` and pip with its cache, such a directory
or file is refused, with what to do: it must belong to this user and be writable by
no one else (no group or other write bit).
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from ..errors import UnsafeCacheError

#: Write permission for the group or for others.
_FOREIGN_WRITE = stat.S_IWGRP | stat.S_IWOTH


def require_private_directory(path: Path, *, root: bool) -> None:
    """Raise :class:`UnsafeCacheError` unless ``path`` is a directory of this user that
    no one else can write. ``root``: ``path`` is the cache's root (``PKERNELS_CACHE_DIR``
    may be a symbolic link to it); below the root, a link is refused."""
    try:
        info = path.stat() if root else path.lstat()
    except OSError:
        return  # missing: whoever makes it next makes it ours
    if not stat.S_ISDIR(info.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
        raise UnsafeCacheError(_message(path, f"it is {what}", root))
    _require_own(path, info, root)


def require_private_file(path: Path, info: os.stat_result) -> None:
    """Raise :class:`UnsafeCacheError` unless ``info`` (``path``'s ``lstat``) is a
    regular file of this user that no one else can write."""
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeCacheError(_message(path, "it is not a regular file", False))
    _require_own(path, info, False)


def _require_own(path: Path, info: os.stat_result, root: bool) -> None:
    me = os.geteuid()
    if info.st_uid != me:
        reason = f"it belongs to {_user(info.st_uid)}, not to you ({_user(me)})"
        raise UnsafeCacheError(_message(path, reason, root))
    if info.st_mode & _FOREIGN_WRITE:
        who = " and ".join(
            name
            for bit, name in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "every user"))
            if info.st_mode & bit
        )
        reason = f"it is writable by {who} (mode {stat.S_IMODE(info.st_mode):04o})"
        raise UnsafeCacheError(_message(path, reason, root))


def _message(path: Path, reason: str, root: bool) -> str:
    danger = "another user could put code there that pkernels would load and run as you"
    if root:
        todo = (
            f"Make it private (if it is yours: chmod go-w '{path}') or point "
            "PKERNELS_CACHE_DIR at a directory of your own (unset, pkernels uses "
            "$XDG_CACHE_HOME/pkernels or ~/.cache/pkernels)."
        )
        return f"pkernels will not use the kernel cache {path}: {reason}; {danger}. {todo}"
    todo = f"Delete it (rm -r '{path}'); pkernels builds the kernel again."
    return f"pkernels will not use the cached build {path}: {reason}; {danger}. {todo}"


def _user(uid: int) -> str:
    try:
        return f"uid {uid}, {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"
