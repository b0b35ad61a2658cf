"""Unit tests of the pure codec and logic: no Spark, no broker, seconds."""
