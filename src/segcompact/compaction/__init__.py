"""Compaction semantics, pure: ordering (KIP-280), tombstones (KIP-87), horizons (KIP-534),
read-committed transactions, and a reference model of the whole that the Spark job must match.
"""
