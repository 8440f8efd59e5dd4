"""Helpers shared by the analysis scripts: JSON conversion of non-finite
floats, and the integer argument type.  The machine description is
:mod:`benchmarks.machine`'s (the benchmarks record it too)."""

from __future__ import annotations

import argparse
import math



def jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def from_json(v):
    """The inverse of :func:`jsonable`: "inf", "-inf" and "nan" back to floats."""
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, dict):
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


def int_arg(text: str) -> int:
    """Positive int, also written as ``a**b`` (e.g. ``2**22``)."""
    try:
        if "**" in text:
            base, _, exp = text.partition("**")
            value = int(base) ** int(exp)
        else:
            value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def section_main(argv, prog, doc, page, markers, make):
    """The ``main`` of a generator of one page section: print ``make()``,
    and with ``--update`` write it between ``markers`` of ``page``."""
    import argparse
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    p.add_argument("--update", action="store_true", help=f"write it into {page.name}")
    args = p.parse_args(argv)
    text = make()
    print(text)
    if args.update:
        replace_section(page, markers, text.rstrip("\n") + "\n")
    return 0


def with_section(path, markers, body):
    """The text of file ``path`` with the part between the two ``markers``
    (kept) replaced by ``body``; exit with a message where the file has no
    such section."""
    text = path.read_text()
    start, end = markers
    if start not in text or end not in text:
        raise SystemExit(f"{path} has no {start} ... {end} section to update")
    return text[:text.index(start) + len(start)] + "\n" + body + text[text.index(end):]


def replace_section(path, markers, body):
    """Rewrite the part of the text file ``path`` between the two
    ``markers`` (kept) with ``body`` (:func:`with_section`)."""
    path.write_text(with_section(path, markers, body))
