"""Exceptions raised by pkernels. Every one names the Python source it is about."""

from __future__ import annotations


class PkernelsError(Exception):
    """Base class of every error pkernels raises."""


class TranslationError(PkernelsError):
    """A kernel uses a construct pkernels cannot translate.

    The message names the file, line and column, shows the source line with a caret
    under the construct, and says what to write instead.
    """

    def __init__(
        self,
        message: str,
        filename: str,
        lineno: int,
        col: int,
        source_line: str = "",
        hint: str = "",
    ) -> None:
        self.reason = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        text = f"{self.filename}:{self.lineno}:{self.col + 1}: {self.reason}"
        if self.source_line:
            stripped = self.source_line.rstrip("\n")
            text += f"\n    {stripped}\n    {' ' * self.col}^"
        if self.hint:
            text += f"\n{self.hint}"
        return text


class ArgumentTypeError(TranslationError, TypeError):
    """A dispatch argument whose type is not the one its parameter is annotated with
    (a ``TypeError`` too, as Python calls it; reported at the parameter, like any
    translation error)."""


class DispatchError(PkernelsError, TypeError):
    """A ``parallel_*`` call whose arguments do not fit the workunit."""


class SpaceError(PkernelsError, TypeError):
    """A value given where an execution space belongs that is none, e.g. the string in
    ``RangePolicy("OpenMP", 0, n)``."""


class UnsupportedSpaceError(SpaceError, AttributeError):
    """An execution space PyKokkos or Kokkos has that pkernels does not (``pk.HIP``,
    ``pk.ExecutionSpace.SYCL``); an ``AttributeError`` too, so ``hasattr`` says False."""


class AnnotationError(PkernelsError, TypeError):
    """A type annotation kernels cannot take, e.g. ``pk.Acc[str]``."""


class CompileError(PkernelsError):
    """The C++ compiler rejected generated code: a bug in pkernels, reported with context."""


class CacheError(PkernelsError, OSError):
    """The kernel cache cannot be used: the message names the path and what to do."""


class UnsafeCacheError(CacheError, PermissionError):
    """A kernel cache directory or file another user could write (not owned by this
    user, or writable by its group or by others): pkernels will not load code from it,
    as ssh and pip refuse such files."""


class CacheWriteError(CacheError):
    """A build could not be written (a full disk, a read-only or missing directory):
    the message names the path that could not be written."""


class KernelError(PkernelsError, RuntimeError):
    """A kernel failed while running (detected by a debug build's checks)."""


class KernelIndexError(KernelError, IndexError):
    """A view was indexed out of its extent in a debug build."""


class KernelZeroDivisionError(KernelError, ZeroDivisionError):
    """Integer division or modulo by zero in a debug build."""


class KernelValueError(KernelError, ValueError):
    """``int()`` (or ``round``, ``math.floor`` ...) of a NaN in a debug build, or an
    integer ``**`` a negative integer (a float in Python, where the kernel's result is an
    integer)."""


class KernelOverflowError(KernelError, OverflowError):
    """``int()`` (or ``round``, ``math.floor`` ...) of an infinity, or of a float past the
    kernel's integer type (int64), in a debug build."""


class KernelTeamError(KernelError):
    """A team kernel went wrong as a team: threads of one team reached different
    ``team_barrier()`` calls (a barrier in a branch some threads skip), or a scratch view
    needed more scratch memory than ``set_scratch_size`` reserved."""
