"""Spark tests: one local session with Delta, shared by the run."""
