"""Compaction semantics, pure: ordering (KIP-280), tombstones (KIP-87), horizons (KIP-534),
read-committed transactions. The reference model of the whole, which the Spark job must match,
is the tests' oracle: ``tests/support/model.py``.
"""
