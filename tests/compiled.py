"""What numba-cuda compiles for a GPU, read without one, shared by the tests
(importable from the test modules and from the code they run: pytest puts
this folder on sys.path, :func:`without_simulator` puts it on the child's).

The suite may run under numba-cuda's simulator, where nothing is compiled:
PTX and SASS come from a Python process without it (``cuda.compile_ptx``
and the test extra's ptxas need no GPU; ``analysis.gpu.sass``'s
``without_a_driver`` keeps numba-cuda from looking for one)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def without_simulator(*args, timeout=900):
    """``python *args`` from the repository root with NUMBA_ENABLE_CUDASIM
    unset: the finished run, its exit status checked."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    run = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def json_of(code, *argv):
    """The JSON that ``python -c code *argv`` prints last, run
    :func:`without_simulator`.  Under pytest-xdist, kept for the other
    workers of the same run (:func:`shared_result`): a module whose tests
    two workers share compiles once, unless both ask at once."""
    def run():
        return without_simulator("-c", code, *argv).stdout.strip().splitlines()[-1]
    # (Numba's settings, read from the environment, are part of the key)
    numba = sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA_"))
    return json.loads(shared_result(repr((code, argv, numba)), run))


def shared_result(key, compute):
    """``compute()`` (a str), or what another worker of this pytest-xdist
    run computed for ``key`` (the run's id names the folder, so no other run
    sees it); outside xdist, ``compute()``.  For computations that ``key``
    determines within a run (the run's environment and checkout)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run_id:
        return compute()
    import hashlib
    import tempfile
    folder = Path(tempfile.gettempdir()) / f"gelu-numba-tests-{run_id}"
    path = folder / hashlib.sha256(key.encode()).hexdigest()
    if path.exists():
        return path.read_text()
    text = compute()
    folder.mkdir(exist_ok=True)
    part = path.with_suffix(f".{os.getpid()}")
    part.write_text(text)
    os.replace(part, path)      # (whole or absent for a reader)
    return text


#: PTX lines counted by :func:`ptx_counts`: a pattern each, matched at the
#: start of the stripped line (``local``: anywhere in it)
PTX_PATTERNS = {
    "local": r".*\.local",
    "calls": r"call(\.uni)?\b",
    "f64": r"[a-z][\w.]*\.f64\b",
    "div": r"(div|rcp)\.",
    # memory reads other than the parameters: tables read per element
    "loads": r"ld\.(?!param)",
    "global_loads": r"ld\.global\b",
    "const_loads": r"ld\.const\b",
    "votes": r"vote\.sync\.all\b",
    "fma_f64": r"fma\.rn\.f64",
    "fma_f32": r"fma\.rn\.f32",
    # a product or sum without an explicit rounding: ptxas may fuse it
    "fusable_f32": r"(add|sub|mul)\.f32\b",
}


def ptx_counts(ptx, names):
    """``{name: lines of ptx matching PTX_PATTERNS[name]}``."""
    body = [line.strip() for line in ptx.splitlines()]
    return {n: sum(re.match(PTX_PATTERNS[n], line) is not None for line in body)
            for n in names}


def ptx_abi(ptx):
    """A kernel's parameters as PTX declares them (``params``: their types,
    in order) and the ones its code reads (``read``: their indices)."""
    return {"params": re.findall(r"\.param\s+\.(\w+)\s+\w+_param_\d+", ptx),
            "read": sorted({int(m) for m in re.findall(
                r"ld\.param\.\w+\s+%\w+,\s*\[\w+_param_(\d+)\]", ptx)})}
