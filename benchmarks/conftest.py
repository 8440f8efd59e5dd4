"""pytest-benchmark suite: ``pytest benchmarks`` (not part of the test run).

Run::

    .venv/bin/python -m pytest benchmarks --benchmark-json=reports/bench.json
    .venv/bin/python -m benchmarks.report reports/bench.json > reports/bench.md

Each group is one function x dtype x size; its rows are the implementations
of :mod:`benchmarks.peers`.
"""
