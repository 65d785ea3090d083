"""Entry point of the debuggee process: ``python -m pkdb.agent --channel-fd N``.

Only an import and a call: the program runs in this module's namespace (``__main__``),
which is cleared first, so nothing here may be needed after the call.
"""

from pkdb.agent.runner import main

main()
