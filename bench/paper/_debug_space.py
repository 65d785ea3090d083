"""Run a program with ``pk.Debug`` (or another space) as the default execution space,
unchanged: ``python _debug_space.py SPACE PROGRAM [ARGS...]``.

What a PyKokkos user does to debug a kernel under pdb today: the same program, its
kernels run as plain Python loops. The program runs as ``__main__`` under its own file
name, so pdb's breakpoints in it (``break /path/program.py:LINE``) hit.
"""

import sys

import pkernels as pk

space, program = sys.argv[1], sys.argv[2]
pk.set_default_space({"debug": pk.Debug, "serial": pk.Serial, "openmp": pk.OpenMP}[space])
sys.argv = sys.argv[2:]
with open(program) as source:
    code = compile(source.read(), program, "exec")
exec(code, {"__name__": "__main__", "__file__": program, "__builtins__": __builtins__})
