#!/usr/bin/env bash
# The wheel as a user gets it: built from this checkout, installed alone in a
# fresh venv (numba and numpy from the package index, no mpmath, no SciPy) and
# run from outside the checkout, so that nothing of the repository can stand
# in for what the wheel lacks.  Fails on any failed check or doctest.
#
#   .ci/wheel_smoke.sh [PYTHON]    # PYTHON builds the wheel and the venv (python3)

set -euo pipefail

PY=${1:-python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wheel_smoke.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Build from a copy of what a clone would hold (plus uncommitted files): an
# in-tree build reuses build/lib, where a stale copy of a module removed from
# the package would slip back into the wheel.
mkdir "$TMP/src"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
        | xargs -0 cp -P --parents -t "$TMP/src")
else
    tar -C "$ROOT" --exclude=./.git --exclude=./.venv --exclude=./build \
        --exclude='*.egg-info' --exclude=__pycache__ -cf - . | tar -C "$TMP/src" -xf -
fi

echo "wheel smoke: building with $("$PY" --version 2>&1)"
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$TMP/dist" "$TMP/src"
WHEEL=$(ls "$TMP"/dist/gelu_numba-*.whl)
echo "wheel smoke: $(basename "$WHEEL")"

VENV=$TMP/venv
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"

mkdir "$TMP/run"
cd "$TMP/run"
export NUMBA_CACHE_DIR="$TMP/numba_cache"
"$VENV/bin/python" - <<'PY'
import doctest
import importlib
import importlib.metadata
import importlib.util
import math
import sys
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


# --- what is installed: gelu_numba/ only, no generators or references

import gelu_numba as g  # noqa: E402

pkg = Path(g.__file__).resolve().parent
check(Path(sys.prefix).resolve() in pkg.parents,
      f"gelu_numba imported from {pkg}, not from the venv")
for name in ("mpmath", "scipy", "fitting", "reference",
             "gelu_numba.fitting", "gelu_numba.reference"):
    check(importlib.util.find_spec(name) is None, f"{name} is importable")
stray = sorted(str(p) for p in (q.relative_to(pkg) for q in pkg.rglob("*.py"))
               if p.name.startswith("make_") or {"fitting", "reference"} & set(p.parts))
check(not stray, f"generators or references installed: {stray}")
outside = sorted(str(f) for f in importlib.metadata.files("gelu-numba")
                 if f.parts[0] != "gelu_numba" and not f.parts[0].endswith(".dist-info"))
check(not outside, f"the wheel installs files outside gelu_numba/: {outside}")

# --- values against the mathematics, in the standard library only

# math.erfc would not do: rounding -x/sqrt 2 alone costs ~x**2 ulps of erfc
# in the tail, more than the tolerance.  The Maclaurin series of erf in
# 120-digit decimals gives every value here to far beyond float64.
PREC = 120
with localcontext() as ctx:
    ctx.prec = PREC
    # pi by Machin's formula (16 atan(1/5) - 4 atan(1/239))
    def _atan_inv(n):
        total, term, k, n2 = Decimal(0), Decimal(1) / n, 0, n * n
        while term:
            total += term / (2 * k + 1) if k % 2 == 0 else -term / (2 * k + 1)
            term /= n2
            k += 1
        return total
    PI = 16 * _atan_inv(5) - 4 * _atan_inv(239)


def Phi(x):
    """Standard normal CDF, (1 + erf(x/sqrt 2))/2, to ~PREC digits."""
    with localcontext() as ctx:
        ctx.prec = PREC
        z = Decimal(x) / Decimal(2).sqrt()
        total, term, n = Decimal(0), z, 0   # term = (-1)^n z^(2n+1)/n!
        while abs(term) > Decimal(10) ** -(PREC + 10):
            total += term / (2 * n + 1)
            n += 1
            term = -term * z * z / n
        return (1 + 2 / PI.sqrt() * total) / 2


def phi(x):
    with localcontext() as ctx:
        ctx.prec = PREC
        return (-Decimal(x) ** 2 / 2).exp() / (2 * PI).sqrt()


EXACT = {
    "gelu": lambda x: Decimal(x) * Phi(x),
    "ndtr": Phi,
    # gelu_backward(dy, x) = dy GELU'(x), GELU' = Phi + x phi
    "gelu_backward": lambda dy, x: Decimal(dy) * (Phi(x) + Decimal(x) * phi(x)),
}
# float32-representable, from the tail (results near 1e-23) to x > 0
XS = [-10.0, -5.5, -1.5, -0.75, -0.125, 0.3125, 1.0, 2.5, 4.0]
DY = -1.75
TOL = {np.float32: 1.0, np.float64: 2.0}    # ulps of the exact value

for name, exact in EXACT.items():
    fn = getattr(g, name)
    for dtype in (np.float32, np.float64):
        x = np.array(XS, dtype)
        args = (np.full_like(x, DY), x) if name == "gelu_backward" else (x,)
        got = fn(*args)
        check(got.dtype == dtype, f"{name}: {got.dtype} result for {dtype.__name__}")
        worst = 0.0
        for i, xi in enumerate(XS):
            ref = exact(DY, xi) if name == "gelu_backward" else exact(xi)
            ulp = float(np.spacing(dtype(abs(float(ref)))))
            worst = max(worst, float(abs(Decimal(float(got[i])) - ref) / Decimal(ulp)))
        check(worst <= TOL[dtype],
              f"{name} {dtype.__name__}: {worst:.3f} ulp (tolerance {TOL[dtype]})")
        print(f"  {name:14s} {dtype.__name__:8s} max {worst:.3f} ulp")

# --- the installed package's doctests

modules = sorted(
    ".".join(("gelu_numba",) + p.relative_to(pkg).with_suffix("").parts).removesuffix(".__init__")
    for p in pkg.rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))
check(modules, "no module of the installed package has a doctest")
tried = 0
for mod in modules:
    try:
        result = doctest.testmod(importlib.import_module(mod), optionflags=doctest.ELLIPSIS)
    except Exception as exc:  # an import error is a failed doctest module
        check(False, f"{mod}: {type(exc).__name__}: {exc}")
        continue
    tried += result.attempted
    passed += result.attempted - result.failed
    failed += result.failed
    print(f"  doctest {mod}: {result.attempted - result.failed}/{result.attempted}")
check(tried > 0, "the doctests ran no example")

print(f"wheel_smoke: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
echo "wheel smoke: ${SECONDS} s"
