"""Helpers the test layers share: config files, Kafka's jars and tools, a real broker and
producing to it, Spark settings, and generated logs."""
