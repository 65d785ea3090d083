"""Front-end commands, one module per command family.

A family module exports ``COMMANDS``, a list of :class:`~pkdb.commands.registry.Command`;
each handler is a function ``(console, arg)`` whose docstring is its ``help`` text. A
mode (:mod:`pkdb.modes`) builds its :class:`~pkdb.commands.registry.CommandRouter` from
the families it offers:

* :mod:`.program` -- ``run``, ``restart``, ``quit``
* :mod:`.settings` -- ``set``, ``show``
* :mod:`.info` -- ``info breakpoints``
* :mod:`.help` -- ``help``

Host mode sends everything else to pdb in the debuggee. Kernel-mode families (kernel
breakpoints, threads, views, ...) are further modules here, used by the kernel mode's
router; handlers only see the :class:`~pkdb.commands.registry.Console` interface.
"""
