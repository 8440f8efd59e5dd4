"""The repository speaks of the software only: no tracked file says how it
is made (work sessions, numbered issues, lent machines).

Allowed: pytest's and ONNX Runtime's session objects, and the GPU's
instruction issue (an SM issues instructions; a kernel has an issue bound).
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
    (re.compile(r"\blent\b|\bthe device tool\b|\bsubagents?\b|\bwork session", re.I), None),
]


def _tracked():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in out.stdout.decode().split("\0"):
        path = ROOT / name
        # (this file states the rules, so it names what they forbid)
        if (name and path.suffix in SUFFIXES and path.is_file() and path.stat().st_size < 2**21
                and path != Path(__file__).resolve()):
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
    bad = tmp_path / "bad.md"
    bad.write_text("as the PyTorch issue asked\nsee issue 33\nin the sessions up to today\n"
                   "on a machine lent to us\n")
    good = tmp_path / "good.md"
    good.write_text("An H100 SM issues one warp instruction per cycle\nits issue bound\n"
                    "ort.InferenceSession(model)\n@pytest.fixture(scope=\"session\")\n"
                    "y = session.run(None, feeds)\n")
    assert len(offending_lines([bad])) == 4
    assert offending_lines([good]) == []
