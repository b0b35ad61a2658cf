"""Shared test helpers: a real Kafka broker and Kafka's own tools."""
