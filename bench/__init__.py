"""Benchmarks: each a runnable module that measures Trawl against a baseline in the same run.

Run one with ``.venv/bin/python -m bench.<name> --help``; results and the commands that
produced them are in ``docs/benchmarks.md``.
"""
