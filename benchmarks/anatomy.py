"""Where the time of the exact kernels goes: timing-only variants and the
instruction mix of their vectorised loops.

Usage::

    python -m benchmarks.anatomy [--n 100000] [--rounds 31] [--calls 10] [--isa avx2] [--out FILE]

Each variant is a piece of a kernel (or the kernel with one piece removed:
its values are wrong, it exists to be timed) compiled into the same
unit-stride element loop as the ufuncs (:func:`gelu_numba.targets.cpu.
serial_loop`), run on one pinned core in cache (n standard normal inputs,
output preallocated), interleaved rounds of back-to-back calls, median ns
per element.  For each, the packed instructions of its vector loop body
are counted from the assembly (the innermost loop with the most
``zmm``/``ymm`` code).
Two peers run in the same rounds, on the same array, for scale: the naive
Numba formula that ``benchmarks.targets`` compares float64 against, and
PyTorch's ``F.gelu`` (one thread, into a preallocated tensor), its float32
peer; they have no instruction columns.  The "FMA bound" column divides a
loop's FMAs and products by the core's measured rate of them (a probe
row): the time those alone need, against which the loop's own time shows
how far the core is from its arithmetic limit.  Prints a markdown table.
"""

import argparse
import collections
import contextlib
import io
import math
import os
import re
import statistics
import sys

import numpy as np
from numba import types
from numba.core.registry import CPUDispatcher as Dispatcher

from benchmarks import isa
from benchmarks.machine import machine_info, machine_line
from benchmarks.targets import race

from gelu_numba import catalog
from gelu_numba.kernels import lean32, normal, normal32_cpu_f64, gpu32, rounded32
from gelu_numba.kernels.primitives import clamp_abs, fma, horner, inline, nan_to_zero
from gelu_numba.tables.normal_cdf import A_MAX
from gelu_numba.tables.normal_cdf32_cpu_f64 import A32, R32_P, R32_Q
from gelu_numba.targets import cpu
from gelu_numba.targets.cpu import serial_loop


# float32 kernel (float64 arithmetic) and its pieces
def f32_exp(x):
    return normal32_cpu_f64.exp_neg_half_sq_plain(clamp_abs(np.float64(x), A32, 0.0),
                                                 normal32_cpu_f64.TABLES)


def f32_rational(x):
    a = clamp_abs(np.float64(x), A32, 0.0)
    return horner(a, R32_P) / horner(a, R32_Q)


# The fewest operations found for float32 GELU in float64 lanes:
# Phi(-a) = exp(S(a)), S = log Phi(-a) one polynomial on 0 <= a < 4
# (Chebyshev interpolation, degree 14: about 2**-35 absolute, within the
# kernel's 0.5 + 2**-7 ulp), one exp, no division and no E R product.  Valid
# for |x| < 4 only: it exists to be timed beside the kernel (it takes more
# FMAs than the division it saves).
_S_DEGREE = 14


def _s_coefficients(degree=_S_DEGREE, end=4.0):
    """Monomial coefficients, in w = a/2 - 1, of the interpolant of
    S(a) = log(erfc(a/sqrt 2)/2) at the Chebyshev points of [0, end]."""
    k = np.arange(degree + 1)
    nodes = (np.cos(np.pi * (k + 0.5) / (degree + 1)) + 1.0) * end / 2
    values = [math.log(0.5 * math.erfc(a / math.sqrt(2.0))) for a in nodes]
    cheb = np.polynomial.chebyshev.chebfit(2.0 * nodes / end - 1.0, values, degree)
    return tuple(float(c) for c in np.polynomial.chebyshev.cheb2poly(cheb))


S_ONE_EXP = _s_coefficients()


def f32_gelu_one_exp(x):
    xd = np.float64(x)
    s = horner(0.5 * abs(xd) - 1.0, S_ONE_EXP)
    q = normal32_cpu_f64.exp_plain(s, normal32_cpu_f64.TABLES)
    return xd * q if xd < 0.0 else xd - xd * q


# float64: the ordinary form's method in plain float64 (E and R as one
# Horner chain each, products unsplit, ln 2 as one double): timing only, the
# price of the double-double steps (its rounding errors reach several ulps)
# (exp_plain's tables: exp's coefficients first, (1/ln 2, ln 2) last)
_PLAIN_EXP = (normal.EXP_PIECES[0][0], (), (), (), (),
              (normal.INV_LN2, normal.LN2_1 + normal.LN2_2))


def f64_gelu_plain(x):
    xd = np.float64(x)
    a = abs(xd)
    e = normal32_cpu_f64.exp_plain(-0.5 * (a * a), _PLAIN_EXP)
    v = 1.5 - 2.0 * normal.C_T / (a + normal.C_T)
    q = e * horner(v, normal.R_PIECES[0][0])
    return xd * q if xd < 0.0 else xd - xd * q


def f32_gelu_no_division(x):
    xd = np.float64(x)
    xs = nan_to_zero(xd)
    a = clamp_abs(xs, A32, 0.0)
    q = (normal32_cpu_f64.exp_neg_half_sq_plain(a, normal32_cpu_f64.TABLES)
         * (horner(a, R32_P) * horner(a, R32_Q)))
    r = (xs if xs > -A32 else -0.0) * (q if xs < 0.0 else 1.0 - q)
    return r if xd == xd else xd


# float64 kernel (double-double) and its pieces
def f64_exp_dd(x):
    h, l, k = normal.exp_neg_half_sq_dd(clamp_abs(np.float64(x), A_MAX))
    return h + l + k


def f64_variable(x):
    h, l, upper = normal.tail_variable(clamp_abs(np.float64(x), A_MAX))
    return h + l + upper


def f64_tail(x):
    h, l = normal.tail_ratio_dd(clamp_abs(np.float64(x), A_MAX))
    return h + l


def f64_tail_one_piece(x):
    # the a >= 4 polynomial for every element: no blends, wrong values below 4
    vh, vl, _ = normal.tail_variable(clamp_abs(np.float64(x), A_MAX))
    h, l = normal.r_poly(vh, vl, True)
    return h + l


# The core's rate of packed FMAs: eight independent chains of 8 FMAs an
# element (elements independent too), so that the FMA pipes, not a chain's
# latency, bound the loop, whatever LLVM's scheduling model for the CPU.
# Its FMAs per ns turn each loop's count of FMAs and products (which only
# the FMA pipes execute) into the fewest ns an element those alone take:
# the "FMA bound" column.
_PROBE_CHAINS = tuple((0.5 / (j + 1),) * 9 for j in range(8))


def fma_probe(x):
    v = np.float64(x)
    c = _PROBE_CHAINS
    a = fma(fma(horner(v, c[0]), v, horner(v, c[1])), v, fma(horner(v, c[2]), v, horner(v, c[3])))
    b = fma(fma(horner(v, c[4]), v, horner(v, c[5])), v, fma(horner(v, c[6]), v, horner(v, c[7])))
    return fma(a, v, b)


PROBE = "eight independent chains of 8 FMAs an element and nothing else (the core's FMA rate)"


# the kernel (float32: the plain one) in a loop without the wide-vector
# attribute: the vector width LLVM's tuning picks for the host (256 bits on
# Intel server cores)
NARROW = "gelu, vector width left to LLVM's tuning"
# the kernel (float32: the plain one), one vector an iteration (LLVM's own interleave count,
# 1 for loops this long) instead of cpu.INTERLEAVE independent vectors
ONE = "gelu, one vector an iteration (no interleave)"
ONE_ORDINARY = "gelu, ordinary form, one vector an iteration (no interleave)"
ONE_EXP = ("gelu as Phi(-a) = exp(S(a)), S one degree-14 polynomial: no division, no E R "
         "product (timing only: valid for abs(x) < 4)")
# peers in the same rounds (not loops of ours: no instruction columns)
NAIVE = "naive Numba ufunc 0.5 x (1 + erf(x/sqrt 2)) (libm; benchmarks.targets' baseline)"
TORCH = ("PyTorch F.gelu into a preallocated tensor (aten.gelu.out), one thread "
         "(benchmarks.targets' peer)")
#: the variants compiled without cpu.interleaved
NOT_INTERLEAVED = (ONE, ONE_ORDINARY)

#: the float32 ufunc's loop: the correctly rounded kernel's blocks (fast
#: path, rounding test, the rare accurate path; a variant that is a catalog
#: record's ``rounded`` triple compiles that loop)
ROUNDED = "gelu, correctly rounded (the ufunc's loop: fast path, test, accurate path)"
# the same two, timed by one call a round, after the other rows' calls:
# what a call costs amid other work
AFTER = " (one call a round, after the other rows' calls)"
ROUNDED_AFTER = ROUNDED + AFTER
TORCH_AFTER = TORCH + AFTER

VARIANTS = {
    "float32": {
        ROUNDED: catalog.lookup("gelu"),
        "gelu, the fast path alone, rounded on store (timing only: no test)": rounded32.gelu_fast,
        "gelu, plain float32 kernel (normal32_cpu_f64: 0.5 + 2**-7 ulp, what full-rate-FP64 GPUs run)":
            normal32_cpu_f64.gelu,
        ONE: normal32_cpu_f64.gelu,
        "exp(-a^2/2) alone": f32_exp,
        "R rational alone": f32_rational,
        "gelu, division made a product (timing only)": f32_gelu_no_division,
        NARROW: normal32_cpu_f64.gelu,
        # the GPU's float32 kernel (float32 arithmetic: twice the lanes;
        # bound 0.875 ulp against the CPU kernel's 0.5 + 2**-7)
        "gelu in float32 arithmetic (kernels.gpu32, the GPU's)": gpu32.gelu,
        ONE_EXP: f32_gelu_one_exp,
        # the lean design of the GPU's float32 kernels (11 table reads an element: gathers)
        "gelu in float32 arithmetic, one table row (kernels.lean32, what GPUs with slow FP64 launch)":
            lean32.gelu,
        PROBE: fma_probe,
        TORCH: None,
        ROUNDED_AFTER: None,
        TORCH_AFTER: None,
    },
    "float64": {
        "gelu (the ufunc's general kernel: blocks with an element out of range)": normal.gelu,
        "gelu, ordinary form (the ufunc's, blocks all in range: 2**-900 to 4 in magnitude)": normal.gelu_ordinary,
        ONE: normal.gelu,
        ONE_ORDINARY: normal.gelu_ordinary,
        "exp(-a^2/2) double-double alone": f64_exp_dd,
        "t = (a - 4)/(a + 4) as a dd alone": f64_variable,
        "R alone (t, two pieces by blends)": f64_tail,
        "R, one piece for all (no blend, timing only)": f64_tail_one_piece,
        "norm_pdf (the ufunc's general kernel)": normal.norm_pdf,
        "norm_pdf, ordinary form": normal.norm_pdf_ordinary,
        NARROW: normal.gelu,
        "gelu, ordinary form's method in plain float64 (no double-double step; timing only: "
        "errors of several ulps)": f64_gelu_plain,
        PROBE: fma_probe,
        NAIVE: None,
        TORCH: None,
    },
}

# (a mnemonic may hold an underscore: vcmpneq_oqps, the rounding test's
# comparison)
_INSTR = re.compile(r"^\s+([a-z][a-z0-9_]*)\s")


def vector_loop_mix(compiled, sig):
    """``(count, Counter)`` of the instructions of the vector loop of a
    compiled loop: of the innermost loops in its assembly (each from a label
    to a later jump back to it), the one with the most packed
    (``zmm``/``ymm``) instructions.

    The loop itself, not the basic block with the most packed code: with
    16 ``ymm`` registers (AVX2) LLVM spills the kernel's constants once
    before the loop, and that preheader holds more packed moves than the
    body holds arithmetic."""
    best = vector_loop(compiled, sig)
    ops = collections.Counter(_INSTR.match(i).group(1) for i in best)
    return len(best), ops


def vector_loop(compiled, sig):
    """The instructions (assembly lines) of the vector loop of a compiled
    loop, as :func:`vector_loop_mix` finds it."""
    lines = [ln for ln in compiled.inspect_asm(sig).splitlines()
             if _LABEL.match(ln) or _INSTR.match(ln)]
    where = {_LABEL.match(ln).group(1): i for i, ln in enumerate(lines) if _LABEL.match(ln)}
    loops = []
    for j, line in enumerate(lines):
        jump = _JUMP.match(line)
        if jump and where.get(jump.group(1), j) < j:
            loops.append((where[jump.group(1)], j))
    best = []
    for begin, end in loops:
        # innermost loops only: a block loop around the vector loop (the
        # correctly rounded kernels') holds all of its packed code and more
        if any(begin <= b and e < end for b, e in loops if (b, e) != (begin, end)):
            continue
        body = [ln for ln in lines[begin:end + 1] if _INSTR.match(ln)]
        if _packed(body) > _packed(best):
            best = body
    return best


def selects(instructions):
    """How many of ``instructions`` choose between lanes: what each ISA
    compiles a vector select to.  AVX2 has ``vblendvpd`` (a vector mask);
    AVX-512 ``vblendmpd`` and, more often, any instruction written under a
    mask register (``{%k1}``, merging or zeroing: a masked move, or
    arithmetic fused with its select).  Compares that only write a mask
    register are not selects."""
    return sum("blend" in _INSTR.match(i).group(1) or "{%k" in i for i in instructions)


_LABEL = re.compile(r"^(\.?[A-Za-z_][\w.]*):")
_JUMP = re.compile(r"^\s+j[a-z]+\s+(\.?[A-Za-z_][\w.]*)\s*$")


def _packed(instructions):
    return sum(("zmm" in i) or ("ymm" in i) for i in instructions)


def vector_bits(compiled, sig):
    """Width of the packed floating-point arithmetic (float64 ``pd``, or
    ``ps`` for a loop in float32 arithmetic) of a compiled loop: 512 (zmm),
    256 (ymm) or 0."""
    return _vector_arithmetic(compiled, sig)[0]


def vector_lanes(compiled, sig):
    """Elements a vector of the loop's packed arithmetic holds: its width
    over 64 bits for float64 arithmetic (``pd``), 32 for float32 (``ps``)."""
    bits, element = _vector_arithmetic(compiled, sig)
    return bits // element if bits else 1


def _vector_arithmetic(compiled, sig):
    arith = [ins for ins in compiled.inspect_asm(sig).splitlines()
             if re.match(r"^\s+v(add|sub|mul|div|f\w*)p[sd]\s", ins)]
    bits = 512 if any("zmm" in i for i in arith) else 256 if any("ymm" in i for i in arith) else 0
    return bits, 64 if any(re.match(r"^\s+v\w*pd\s", i) for i in arith) else 32


def loop_of(label, kernel):
    """The element loop that variant ``label`` times: ``kernel`` in the
    ufuncs' unit-stride loop (a kernel's function, or a catalog record,
    whose correctly rounded float32 loop it is)."""
    if isinstance(kernel, catalog.Function):
        return serial_loop(inline(kernel.kernel("f")), "never",
                           rounded=kernel.rounded_kernel("f"), name="rounded")
    return serial_loop(kernel if isinstance(kernel, Dispatcher) else inline(kernel), "never",
                       wide=label != NARROW)


def _per_iteration(loop, sig, label):
    return vector_lanes(loop, sig) * (1 if label in NOT_INTERLEAVED else cpu.INTERLEAVE)


def _peer(label, x, out):
    """A call of peer ``label`` on ``x`` into a preallocated output, as our
    loops are timed (None where it is not installed): the naive Numba
    ufunc into ``out``; PyTorch's GELU on one thread into a tensor of its
    own, allocated once (a new tensor a call would add the allocator's work
    to the kernel's)."""
    if label not in (NAIVE, TORCH):
        raise ValueError(f"no peer {label!r}")
    if label == NAIVE:
        from benchmarks.peers import naive_gelu
        naive_gelu(x, out=out)
        return lambda: naive_gelu(x, out=out)
    try:
        import torch
    except ImportError:  # pragma: no cover - optional peer
        return None
    torch.set_num_threads(1)
    tx = torch.from_numpy(x)
    into = torch.empty_like(tx)
    return lambda: torch.ops.aten.gelu.out(tx, out=into)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.anatomy",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--calls", type=int, default=10,
                   help="back-to-back calls of each loop a round (a call after other work "
                        "can be slower than the next, PyTorch's especially)")
    p.add_argument("--isa", choices=isa.CHOICES, default="native",
                   help="the ISA Numba compiles for (benchmarks.isa)")
    p.add_argument("--out", help="write the table here (Markdown), its first line naming "
                   "this command")
    args = p.parse_args(argv)
    isa.run_as(args.isa, "benchmarks.anatomy")
    if not args.out:
        _report(args)
        return 0
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        _report(args)
    command = " ".join(["python -m benchmarks.anatomy", *(argv or sys.argv[1:])])
    with open(args.out, "w") as f:
        f.write(f"<!-- generated by benchmarks/anatomy.py: {command} -->\n\n"
                f"{machine_line(machine_info())}; {buffer.getvalue()}")
    return 0


def _report(args):
    """Print the table (its header line, then a row a variant)."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"ISA: {isa.describe()}.  "
          f"n = {args.n} (in cache), one pinned core, {args.rounds} interleaved rounds of "
          f"{args.calls} back-to-back calls each (one where a row says so), median ns per "
          "element; instructions of the vector loop body, which holds "
          f"{cpu.INTERLEAVE} independent vectors of elements (cpu.interleaved) except where "
          "a row says otherwise.  FMA bound: the loop's FMAs and products per element "
          f"over the FMAs per ns of the row \"{PROBE}\" (the fewest ns an element "
          "those alone take on this core; only the FMA pipes execute them).\n")
    print("| dtype | variant | ns/element | FMA bound | vector bits | elements per iteration "
          "| loop instructions | per element | FMA | div | gathers |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for dtype, variants in VARIANTS.items():
        x = np.random.default_rng(0).standard_normal(args.n).astype(dtype)
        out = np.empty_like(x)
        ty = types.Array(types.float32 if dtype == "float32" else types.float64, 1, "C")
        loops, mixes = {}, {}
        for label, kernel in variants.items():
            base = label.removesuffix(AFTER)
            if base != label:
                # the same call as its row's, timed otherwise (below)
                if base in loops:
                    loops[label] = loops[base]
                    if base in mixes:
                        mixes[label] = mixes[base]
                continue
            if kernel is None:
                peer = _peer(label, x, out)
                if peer is not None:
                    loops[label] = peer
                continue
            loop = loop_of(label, kernel)
            with cpu.interleaved(1 if label in NOT_INTERLEAVED else cpu.INTERLEAVE):
                loop((x, out))
            loops[label] = (lambda f: (lambda: f((x, out))))(loop)
            sig = cpu.element_signature((ty, ty))
            mixes[label] = vector_loop_mix(loop, sig) + (
                vector_bits(loop, sig), _per_iteration(loop, sig, label))
        calls = {label: 1 if label.endswith(AFTER) else args.calls for label in loops}
        t = race(loops, args.rounds, calls=calls, rotate=True)
        ns = {label: statistics.median(v) / args.n * 1e9 for label, v in t.items()}
        counts = {label: _counts(ops) for label, (_, ops, _, _) in mixes.items()}
        # the probe's FMAs per ns, at its vector width
        _, _, probe_bits, probe_elements = mixes[PROBE]
        rate = counts[PROBE]["fma"] / probe_elements / ns[PROBE]
        for label in variants:
            if label not in t:
                continue
            if label not in mixes:
                print(f"| {dtype} | {label} | {ns[label]:.2f} | - | - | - | - | - | - | - | - |")
                continue
            count, _, bits, per_iteration = mixes[label]
            c = counts[label]
            bound = (f"{(c['fma'] + c['mul']) / per_iteration / rate:.2f}"
                     if bits == probe_bits else "-")
            print(f"| {dtype} | {label} | {ns[label]:.2f} | {bound} | {bits} | {per_iteration} "
                  f"| {count} | {count / per_iteration:.1f} | {c['fma']} | {c['div']} "
                  f"| {c['gathers']} |")


def _counts(ops):
    """FMAs, products, divisions and gathers among a loop's instructions
    (an instruction :class:`collections.Counter`)."""
    def n(test):
        return sum(v for k, v in ops.items() if test(k))
    return {"fma": n(lambda k: re.match(r"vf(n)?m(add|sub)", k) is not None),
            "mul": n(lambda k: re.match(r"vmulp[sd]$", k) is not None),
            "div": n(lambda k: k.startswith("vdiv")),
            "gathers": n(lambda k: "gather" in k)}


if __name__ == "__main__":
    sys.exit(main())
