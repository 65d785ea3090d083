"""The two halves of a HYBRID launch in a C++ kernel module (:mod:`.emit_launch`): the
debug build's ``pk_iteration`` (one index in debug code) and the ``PK_HYBRID`` build's
``pk_launch_hybrid`` (the release loops, handing a thread's remaining indices to
``pk_iteration`` once a debugger asks for the debug code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .emit_loops import ReleaseLaunch


def has_hybrid_launch(operation: str, rank: int) -> bool:
    """Whether a module has the two halves of a HYBRID launch: a range for or reduce, an
    MDRangePolicy box's for. (A box's reduce would split its indices among the threads
    otherwise than its debug build does; scans and teams have none.)"""
    return (rank == 1 and operation in ("for", "reduce")) or (rank > 1 and operation == "for")


#: Indices a hybrid launch's release code runs between two looks at its debug request.
HYBRID_BLOCK = 16


#: ``chunk_done``'s hook in a hybrid launcher.
_CHUNK_DONE = [
    "// Each thread calls it when its indices are done, before OpenMP's barrier: a",
    "// debugger stepping a thread out of its last index stops it here (pkdb does).",
    'extern "C" __attribute__((noinline, visibility("default"))) void pk_hybrid_chunk_done() {',
    '    __asm__ volatile("");',
    "}",
]


def _hybrid_head(
    leading: list[str],
    c_params: list[str],
    build_views: list[str],
    call: str,
    chunk_done: bool = False,
) -> list[str]:
    """What both kinds of hybrid launch share: the debug build's ``pk_iteration``, taking
    ``leading`` (the indices, a reduce's accumulator) then the kernel's arguments and
    making ``call``; and the opening of ``pk_launch_hybrid`` in a ``PK_HYBRID`` build,
    up to its views and ``pk_slow``, the debug build's entry (preceded, with
    ``chunk_done``, by ``pk_hybrid_chunk_done``, which the launcher must call)."""
    arg_params = c_params[3:]
    types = [param.rsplit(" ", 1)[0] for param in [*leading, *arg_params]]
    return [
        "#if PK_DEBUG",
        'extern "C" __attribute__((visibility("default"))) void pk_iteration('
        + ", ".join([*leading, *arg_params])
        + ") {",
        *build_views,
        f"    {call}",
        "}",
        "#endif",
        "#if PK_HYBRID",
        f"typedef void (*pk_iteration_fn)({', '.join(types)});",
        *(_CHUNK_DONE if chunk_done else []),
        'extern "C" __attribute__((visibility("default"))) void pk_launch_hybrid('
        + ", ".join(
            [
                "const volatile int* pk_to_debug",
                "void* pk_debug_index",
                "const unsigned char* pk_debug_mask",
                "bool pk_parallel",
            ]
            + c_params
        )
        + ") {",
        *build_views,
        "    const pk_iteration_fn pk_slow = (pk_iteration_fn)pk_debug_index;",
    ]


def hybrid_entries(
    operation: str,
    c_params: list[str],
    c_names: list[str],
    build_views: list[str],
    release: ReleaseLaunch,
    kname: str,
    args: str,
) -> list[str]:
    """The two halves of a hybrid launch (BuildMode.HYBRID) of a range for or reduce.

    The debug build exports ``pk_iteration``: one index in debug code (adding to
    ``*pk_acc`` for a reduce). A build with ``PK_HYBRID`` exports ``pk_launch_hybrid``:
    the release loop, in blocks of :data:`HYBRID_BLOCK` indices; once ``*pk_to_debug`` is
    set (a debugger wants to stop in the kernel), each thread hands its remaining indices,
    one at a time, to the debug build's ``pk_iteration``. Until then, where
    ``pk_debug_mask`` is not null, index ``i`` runs in the debug build when
    ``pk_debug_mask[i - pk_begin]`` is not 0 (a debugger's breakpoint condition holds
    only there), the others in release code; such a loop looks at ``*pk_to_debug`` at
    every index, so that a thread stepped past the end of one index in the debug build
    runs its next one there too. The indices of a parallel_for
    are independent, and a reduce's thread adds its indices in order, in the chunk the
    release and debug launchers give it (``schedule(static)``), whichever code runs them:
    which build runs which index changes no result (OpenMP then adds the threads'
    partial sums in the order they finish, as in the other launchers)."""
    reduce = operation == "reduce"
    acc = release.acc.ctype if reduce and release.acc is not None else ""
    leading = ["int64_t pk_i", *([f"{acc}* pk_acc"] if reduce else [])]
    call = f"{kname}({release.idx}{', *pk_acc' if reduce else ''}{args});"
    lines = _hybrid_head(leading, c_params, build_views, call, chunk_done=True)
    # Each thread runs the indices schedule(static) gives it in the release and debug
    # launchers (the same thread for the same index whichever code runs it), in blocks.
    # (A dynamic schedule here made some runs of a stencil 2x slower.)
    lines += [
        *([f"    {acc} pk_total = PK_REDUCE_INIT;"] if reduce else []),
        "    #pragma omp parallel "
        + ("reduction(PK_REDUCE:pk_total) " if reduce else "")
        + "if(pk_parallel)",
        "    {",
        "        int64_t pk_first = pk_begin, pk_last = pk_end;",
        "        if (pk_parallel) pk_rt::static_chunk(pk_begin, pk_end, &pk_first, &pk_last);",
    ]
    loop = [
        f"    for (int64_t pk_lo = pk_first; pk_lo < pk_last; pk_lo += {HYBRID_BLOCK}) {{",
        f"        const int64_t pk_hi = pk_last - pk_lo > {HYBRID_BLOCK} "
        f"? pk_lo + {HYBRID_BLOCK} : pk_last;",
    ]
    slow_args = ", &pk_total" if reduce else ""
    slow_args += "".join(", " + name for name in c_names[3:])

    def blocks(na: str, args: str) -> list[str]:
        fast_args = (", pk_total" if reduce else "") + args
        return [
            *loop,
            "        if (__builtin_expect(*pk_to_debug != 0, 0)) {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
            f"                pk_slow(pk_i{slow_args});",
            "        } else if (pk_debug_mask != nullptr) {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i) {",
            "                if (*pk_to_debug != 0 || pk_debug_mask[pk_i - pk_begin])",
            f"                    pk_slow(pk_i{slow_args});",
            "                else",
            f"                    {kname}<{na}>({release.idx}{fast_args});",
            "            }",
            "        } else {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
            f"                {kname}<{na}>({release.idx}{fast_args});",
            "        }",
            "    }",
        ]

    lines += release.per_variant(blocks, indent="    ")
    lines += ["        pk_hybrid_chunk_done();", "    }"]
    if reduce:
        lines += [f"    *({acc}*)pk_result = pk_total;"]
    return [*lines, "}", "#endif"]


def md_hybrid_entries(
    rank: int,
    c_params: list[str],
    c_names: list[str],
    build_views: list[str],
    release: ReleaseLaunch,
    kname: str,
    args: str,
) -> list[str]:
    """:func:`hybrid_entries` for an MDRangePolicy box's parallel_for: ``pk_iteration``
    takes the ``rank`` indices; the release loop looks at the debug request once per row
    of the innermost index (the loop g++ vectorises), so a thread hands over at most the
    rest of the row it is in. Boxes take no ``pk_debug_mask`` (the launcher passes null)."""
    indices = [f"pk_i{k}" for k in range(rank)]
    last = rank - 1
    lines = _hybrid_head(
        [f"int64_t {i}" for i in indices], c_params, build_views, f"{kname}({release.idx}{args});"
    )
    lines += [
        *(
            f"    const int64_t pk_b{k} = pk_begins[{k}], "
            f"pk_e{k} = pk_ends[{k}] > pk_b{k} ? pk_ends[{k}] : pk_b{k};"
            for k in range(rank)
        ),
    ]
    slow_args = "".join(", " + name for name in c_names[3:])
    row = f"for (int64_t pk_i{last} = pk_b{last}; pk_i{last} < pk_e{last}; ++pk_i{last})"
    inner = "    " * rank

    def rows(na: str, args: str) -> list[str]:
        return [
            f"    #pragma omp parallel for collapse({last}) schedule(static) if(pk_parallel)",
            *(
                "    " * (d + 1) + f"for (int64_t pk_i{d} = pk_b{d}; pk_i{d} < pk_e{d}; ++pk_i{d})"
                for d in range(last)
            ),
            inner + "{",
            inner + "    if (__builtin_expect(*pk_to_debug != 0, 0)) {",
            inner + f"        {row}",
            inner + f"            pk_slow({', '.join(indices)}{slow_args});",
            inner + "    } else {",
            inner + f"        {row}",
            inner + f"            {kname}<{na}>({release.idx}{args});",
            inner + "    }",
            inner + "}",
        ]

    return [*lines, *release.per_variant(rows), "}", "#endif"]
