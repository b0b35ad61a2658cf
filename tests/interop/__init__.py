"""Interop with real Apache Kafka: segcompact against Kafka's own log cleaner on the same log,
Kafka's DumpLogSegments on segcompact's output, and a broker serving that output to a consumer.
"""
