"""Every file made from committed results, made again by one command.

Usage::

    python -m analysis.regenerate           # write whatever is out of date
    python -m analysis.regenerate --check   # list what is out of date; exit 1 if any

Each part is a generator of its own (run alone, it prints what it makes):

==============  ======================================================  ========================
part            what it writes                                          alone
==============  ======================================================  ========================
readme          the README's headline table                             ``analysis.readme``
accuracy_docs   the float32 sweep table of ``docs/accuracy.md``         ``analysis.accuracy_docs``
gpu32_docs      the float32 GPU-kernel table of ``docs/guide/gpu.md``   ``analysis.gpu.gpu32_docs``
gpu_docs        the measured GPU section of ``docs/results/gpu.md``     ``analysis.gpu.docs``
first_call      the first-call table of ``docs/guide/first_call.md``    ``analysis.first_call``
choose          the guide's "which function" table (``docs/guide/``)    ``analysis.choose``
figures         ``gelu_numba/figures.py``, the docstrings' figures      ``analysis.figures``
cpu_benchmarks  ``benchmarks/results/cpu_benchmarks.md``, the tables    ``benchmarks.report``
                of the saved pytest-benchmark run
gpu_choice      ``gelu_numba/targets/cuda/choice.py``, the float32      ``analysis.gpu.choice``
                kernel each measured GPU launches
==============  ======================================================  ========================

``gelu_numba/measured.py`` is not among them: it is a measurement
(``python -m analysis.accuracy --no-peers --no-plots --write-measured``),
not a rendering of committed results.  The first-call table keeps the
result labels its page names in its "Made by" line.
"""

import argparse
import re
import sys

from analysis import accuracy_docs, choose, figures, first_call, readme
from analysis.gpu import choice as gpu_choice
from analysis.gpu import docs as gpu_docs
from analysis.gpu import gpu32_docs
from analysis.common import with_section
from benchmarks import report


def _first_call():
    text = first_call.PAGE.read_text()
    labels = re.search(r"python -m analysis\.first_call --table ([\w ]+?) --update-docs",
                       text).group(1).split()
    made = f"Made by `python -m analysis.first_call --table {' '.join(labels)} --update-docs`."
    return with_section(first_call.PAGE, first_call.MARKERS,
                    f"{first_call.table(labels)}\n\n{made}\n")


#: part -> (the file, a function giving its whole text as it should be)
PARTS = {
    "readme": (readme.README, lambda: with_section(
        readme.README, readme.MARKERS, readme.table().rstrip("\n") + "\n")),
    "accuracy_docs": (accuracy_docs.PAGE, lambda: with_section(
        accuracy_docs.PAGE, accuracy_docs.MARKERS, accuracy_docs.section().rstrip("\n") + "\n")),
    "gpu32_docs": (gpu32_docs.PAGE, lambda: with_section(
        gpu32_docs.PAGE, gpu32_docs.MARKERS, gpu32_docs.section().rstrip("\n") + "\n")),
    "gpu_docs": (gpu_docs.PAGE, lambda: with_section(
        gpu_docs.PAGE, gpu_docs.MARKERS, gpu_docs.section().rstrip("\n") + "\n")),
    "first_call": (first_call.PAGE, _first_call),
    "choose": (choose.PAGE, lambda: with_section(
        choose.PAGE, choose.MARKERS, choose.section().rstrip("\n") + "\n")),
    "figures": (figures.OUT, figures.source),
    "cpu_benchmarks": (report.ROOT / "benchmarks" / "results" / "cpu_benchmarks.md", lambda: report.page(
        report.ROOT / "benchmarks" / "results" / "cpu_benchmarks.json",
        report.ROOT / "benchmarks" / "results" / "cpu_benchmarks.md")),
    "gpu_choice": (gpu_choice.MODULE, gpu_choice.render),
}


def stale():
    """``[(part, path, text), ...]``: the parts whose file differs from what
    its generator makes, with the text it makes."""
    out = []
    for name, (path, make) in PARTS.items():
        text = make()
        if path.read_text() != text:
            out.append((name, path, text))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m analysis.regenerate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a generated file is out of date")
    args = p.parse_args(argv)
    out = stale()
    for name, path, text in out:
        if args.check:
            print(f"out of date: {path} (python -m analysis.regenerate, part {name})")
        else:
            path.write_text(text)
            print(f"wrote {path} ({name})")
    if not out:
        print(f"all {len(PARTS)} generated files are current")
    return 1 if (args.check and out) else 0


if __name__ == "__main__":
    sys.exit(main())
