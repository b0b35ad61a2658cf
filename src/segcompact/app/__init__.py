"""The commands, each run from start to end: a module per command, which the entry points
(``segcompact.cli``, and through it ``streaming/``) call after parsing their arguments; each
returns what the command says (:class:`~segcompact.app.reply.Reply`; the demo yields its lines
as it goes), which they print.

A command's checks before any work (the config, its locations, the ledger's secret, the lease)
are :mod:`segcompact.app.preconditions`'; a Spark session is :mod:`segcompact.app.session`'s.
"""
