"""Benchmarks: segcompact side by side with a reference measured in the same run, as ratios."""
