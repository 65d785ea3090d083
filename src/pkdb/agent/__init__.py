"""The agent: runs inside the debuggee process, around the user's program.

It speaks to the front end over the channel (:mod:`pkdb.protocol`) and debugs the
program's Python code with a real :class:`pdb.Pdb` whose input and output are the
channel (:mod:`pkdb.agent.host_debugger`, :mod:`pkdb.agent.channel_io`). Started by the
front end as ``python -m pkdb.agent --channel-fd N``; never run by hand.
"""
