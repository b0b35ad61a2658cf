"""segcompact's test suite."""
