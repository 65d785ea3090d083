"""Where generated C++ kernels get their runtime, and the atomic updates they inline.

The runtime (views, Python arithmetic, faults, print, teams) is the header files of
``src/pkernels/include/pkernels`` (``cpu.hpp``, ``cpu_team.hpp``; what the GPU computes
alike is in ``shared/``); a module starts with :data:`PRELUDE` and, for a TeamPolicy
kernel, :data:`TEAM_PRELUDE`. :mod:`pkernels.build.runtime` gives the compiler the include
path and hashes the headers into the cache key.
"""

#: The first lines of every generated C++ module: the CPU runtime.
PRELUDE = '#include "pkernels/cpu.hpp"\n'
#: What a TeamPolicy module adds after :data:`PRELUDE`.
TEAM_PRELUDE = '#include "pkernels/cpu_team.hpp"\n'


#: The operations of ``pk.atomic_*`` updates (``atomic_add`` ...), by the name Python
#: gives them; ``div`` is C's ``/``, which :func:`atomic_update` makes Kokkos'
#: truncating division for integers.
ATOMIC_OPERATIONS = (
    "add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "mod", "lshift", "rshift",
)  # fmt: skip


def atomic_update(base: str, integer: bool, old: str, value: str, where: str) -> str:
    """The new value an atomic update ``base`` (add, div, lshift, ...) computes from the
    element ``old`` and the operand ``value`` (C++ names), for the CPU's runtime and the
    GPU's alike: integer ``div`` truncates as Kokkos' does without trapping on 0, shifts
    and ``mod`` as the operators compute them; ``where`` names the Python file and line
    a failed check reports (C++ names too)."""
    if base == "div" and integer:
        return f"pk_rt::truncdiv({old}, {value}, {where})"
    return {
        "add": f"{old} + {value}", "sub": f"{old} - {value}",
        "mul": f"{old} * {value}", "div": f"{old} / {value}",
        "max": f"({old} < {value} ? {value} : {old})",
        "min": f"({value} < {old} ? {value} : {old})",
        "and": f"{old} & {value}", "or": f"{old} | {value}", "xor": f"{old} ^ {value}",
        "mod": f"pk_rt::mod({old}, {value}, {where})",
        "lshift": f"pk_rt::lshift({old}, {value})", "rshift": f"pk_rt::rshift({old}, {value})",
    }[base]  # fmt: skip


def atomic_operation_struct(base: str, integer: bool) -> str:
    """The name of the CPU runtime's struct (``cpu.hpp``'s ``PK_ATOMIC_OPERATION`` structs)
    that performs the atomic update ``base`` on integers (``integer``) or floats."""
    name = "TruncDiv" if base == "div" and integer else base.capitalize()
    return f"Atomic{name}"
