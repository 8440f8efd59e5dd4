"""pytest-benchmark suite: ``pytest benchmarks`` (not part of the test run).

Run (in one process: ``-n 0`` undoes the repository's ``-n auto``, under
which pytest-benchmark times nothing)::

    .venv/bin/python -m pytest benchmarks -n 0 --benchmark-json=reports/bench.json
    .venv/bin/python -m benchmarks.report reports/bench.json --out reports/bench.md

Each group is one function x dtype x size; its rows are the implementations
of :mod:`benchmarks.peers`.
"""

import pytest

#: pytest-benchmark's options that keep or compare a run's timings
_KEEPING = ("benchmark_json", "benchmark_save", "benchmark_autosave", "benchmark_compare")


def pytest_configure(config):
    # under pytest-xdist pytest-benchmark disables itself with a warning: a
    # run asked to keep its timings would end without them
    workers = config.getoption("numprocesses", None)
    if workers and any(config.getoption(name, None) for name in _KEEPING):
        raise pytest.UsageError(
            "the benchmarks time in one process: add -n 0 to save, compare or write "
            "their timings (--benchmark-json, --benchmark-save, --benchmark-autosave, "
            "--benchmark-compare)")
