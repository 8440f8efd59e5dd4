"""The repository speaks of the software only: no tracked file says how it
is made (the words of :data:`RULES`), this one included.

Allowed: the objects of that name of pytest and ONNX Runtime, and the GPU's
instruction issue and its issue bound.
"""

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".sh", ".toml", ".cfg", ".txt", ".rst", ".ipynb", ".json", ".yml",
            ".yaml", ".cff", ".ini", ""}

#: (what is forbidden, a line it is allowed on anyway)
RULES = [
    (re.compile(r"\bsessions?\b", re.I),
     re.compile(r"InferenceSession|SessionOptions|onnxruntime|\bort\b|pytest|scope=.session"
                r"|\bsession\.\w+\(", re.I)),
    (re.compile(r"\bissues?\s*#?\s*\d+", re.I), None),
    (re.compile(r"\b(the|this|that|an?|its|our|each)\s+(\w+\s+)?issue('s|s'|s)?\b"
                r"(?![\s-]*(bound|rate|slot|width|one warp))", re.I), None),
    (re.compile(r"\blent\b|\bthe device tool\b|\bsubagents?\b|\bwork\ssession", re.I), None),
]


def _tracked():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in out.stdout.decode().split("\0"):
        path = ROOT / name
        if name and path.suffix in SUFFIXES and path.is_file() and path.stat().st_size < 2**21:
            yield path


def offending_lines(paths):
    """``path:line: text`` for every line a rule forbids."""
    found = []
    for path in paths:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for forbidden, allowed in RULES:
                if forbidden.search(line) and not (allowed and allowed.search(line)):
                    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                    found.append(f"{name}:{number}: {line.strip()[:120]}")
    return found


def test_no_tracked_file_speaks_of_how_the_software_is_made():
    assert offending_lines(_tracked()) == []


def test_the_scan_finds_what_it_should(tmp_path):
    # assembled from pieces, so that this file, which the scan reads too,
    # holds none of the lines it must reject
    bad = tmp_path / "bad.md"
    w1, w2, w3 = "iss" + "ue", "sess" + "ions", "le" + "nt"
    bad.write_text(f"as the PyTorch {w1} asked\nsee {w1} 33\nin the {w2} up to today\n"
                   f"on a machine {w3} to us\n")
    good = tmp_path / "good.md"
    good.write_text("An H100 SM issues one warp instruction per cycle\nits issue bound\n"
                    "ort.InferenceSession(model)\n@pytest.fixture(scope=\"session\")\n"
                    "y = session.run(None, feeds)\n")
    assert len(offending_lines([bad])) == 4
    assert offending_lines([good]) == []
