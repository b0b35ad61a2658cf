"""End-to-end tests: the ``segcompact`` command line as a user runs it, on generated and real
Kafka logs; restarts after a kill; the compactor on segments a real broker wrote."""
