"""``segcompact ship``: copies a broker's rolled segments to a source root, whole, checked and
once, and names what it could not copy. No Spark, no JVM: it runs beside the broker.

- :mod:`~segcompact.ship.rules`: which segments are rolled, in which order; gaps (pure).
- :mod:`~segcompact.ship.manifest`: what was shipped, kept beside the data.
- :mod:`~segcompact.ship.upload`: one segment streamed, checked and published whole.
- :mod:`~segcompact.ship.broker`: which log dir it is, its partitions' high watermarks.
- :mod:`~segcompact.ship.shipper`: the poll over log dirs and partitions, the lease.
- :mod:`~segcompact.ship.results`: what a poll did.
- :mod:`~segcompact.ship.gaps`: what could not be shipped, listed for ``segcompact status``.
- :mod:`~segcompact.ship.metrics`: ``/metrics``.
"""
