"""pkdb for MPI programs: one front end over every rank.

``pkdb --np N prog.py`` starts the program under ``mpirun`` (or the user's own
launcher); each rank runs the ordinary pkdb agent (:mod:`pkdb.agent`), connected back
to this front end over a private Unix socket. The front end drives one ordinary
per-rank session (:class:`pkdb.frontend.Frontend`, with its own gdb for kernels) per
rank, each in a thread of its own, sends each command to the focused ranks, and shows
their answers aggregated.

Modules, one job each:

* :mod:`.ranksets` -- rank-set syntax (``0-3,6``) both ways;
* :mod:`.aggregate` -- answers of many ranks shown once per distinct text, or side by side;
* :mod:`.rank_conditions` -- ``break 30 if rank == 2``, decided by the front end;
* :mod:`.options` -- whether a command line asks for an MPI session (tiny, loaded first);
* :mod:`.listener` -- the private socket ranks connect to, and who may connect;
* :mod:`.rank` -- the rank side (``python -m pkdb --rank DIR``): keeper and agent;
* :mod:`.rank_process` -- a rank as a :class:`pkdb.session.Debuggee`;
* :mod:`.launcher` -- the ``mpirun`` command line and environment;
* :mod:`.job` -- the launcher's process, the ranks as they connect, their output;
* :mod:`.worker` -- one rank's session in its own thread;
* :mod:`.console` -- the multi-rank REPL;
* :mod:`.main` -- ``pkdb --np N``'s command line.

The only hooks outside this package: :mod:`pkdb.cli` hands a command line with
``--np``, ``--launcher`` or ``--rank`` to :mod:`.main`; the agent's ``run_agent`` takes
the front end's pid as its tracer (a rank's parent is its keeper); the agent answers a
``where`` request (where the program's main thread is).
"""
