"""Generate ``gelu_numba/tables/approximations.py``: the constants, fits,
Taylor tables and measured errors of the GELU approximations.

Usage::

    python -m fitting.make_approximations          # rewrite
    python -m fitting.make_approximations --check  # compare

What it computes, all in mpmath (``reference.approx`` holds the
formulas):

* the published constants (0.044715, 1.702, Abramowitz & Stegun 7.1.26) and
  derived ones (2 sqrt(2/pi), p/sqrt 2, ...) as double-doubles;
* the fitted approximations ("T-forms", see :func:`fit_t_form`): for each
  entry of :data:`FITS`, the clamp point L and the coefficients, by a Remez
  exchange (polynomials) or a rational Remez exchange started from Lawson's
  fit (rationals), with T(0) = 1/2 imposed (so the derivative is continuous
  at 0) and T >= 0 on [0, L] required (so GELU keeps its sign in the tail),
  then the maximum absolute error over all real x of the stored (rounded)
  coefficients;
* for every derivative that has a zero, the zero as a double-double and the
  Taylor coefficients of ``g(x0 + d)/d`` (:func:`zero_table`);
* the maximum absolute error of every approximation and of its derivative
  against the exact GELU and GELU', over all real x, with where it occurs.

Deterministic: a rerun reproduces the file byte for byte (``--check``).
"""

import sys
from pathlib import Path

import mpmath as mp

from fitting import rational, remez
from fitting.make_tables import run_generator
from reference import approx
from reference.mp import to_dd

OUT = Path(__file__).resolve().parents[1] / "gelu_numba" / "tables" / "approximations.py"
COMMAND = "python -m fitting.make_approximations"
DPS = 40

#: The fitted approximations: name -> (numerator degree, denominator degree).
#: Chosen to trace the accuracy/speed frontier from 1e-3 to 1e-8.
FITS = {
    "poly3": (3, 0),
    "poly4": (4, 0),
    "poly6": (6, 0),
    "poly8": (8, 0),
    "poly10": (10, 0),
    "poly12": (12, 0),
    "poly14": (14, 0),
    "rat22": (2, 2),
    "rat44": (4, 4),
    "rat66": (6, 6),
}

# beyond |x| = 12 every approximation here and GELU itself differ from
# relu(x) by less than 1e-30, so the maxima lie inside
_SPAN = 12


def constants():
    """name -> dd pair of every constant the kernels use."""
    with mp.workdps(60):
        c2 = 2 * mp.sqrt(2 / mp.pi)
        k = mp.mpf(approx.TANH_K)
        p = mp.mpf(approx.AS26_P)
        a = [mp.mpf(v) for v in approx.AS26_A]
        return {
            "TANH_C2": (to_dd(c2), "2 sqrt(2/pi): 2u = TANH_C2 (x + k x**3)"),
            "TANH_K": (to_dd(k), "0.044715 (the decimal)"),
            "TANH_K3": (to_dd(3 * k), "3 * 0.044715"),
            "SIGMOID_BETA": (to_dd(mp.mpf(approx.SIGMOID_BETA)), "1.702 (the decimal)"),
            "AS26_Q": (to_dd(p / mp.sqrt(2)), "p/sqrt 2: t = 1/(1 + AS26_Q |x|)"),
            "AS26_PH": (to_dd(p / (2 * mp.sqrt(2))), "p/(2 sqrt 2), in Phi_AS'"),
        }, {
            "AS26_A": ([to_dd(v) for v in a], "a1..a5: P(t) = sum a_(j+1) t**j"),
            "AS26_DA": ([to_dd((j + 1) * a[j]) for j in range(5)],
                        "(j+1) a_(j+1): (t P(t))' = sum AS26_DA[j] t**j"),
        }


def zero_table(g, guess, delta=0.125, dps=DPS + 20):
    """``(x0_hi, x0_lo, delta, b0_hi, b0_lo, b1, ..., bJ)`` for the zero x0 of
    ``g`` near ``guess``: ``g(x0 + d) = d sum_j b_j d**j``, J chosen so that
    the first omitted term is below 2**-60 of ``b0`` for ``|d| < delta``."""
    with mp.workdps(dps):
        x0 = mp.findroot(g, mp.mpf(guess))
        coeffs = mp.taylor(g, x0, 40)[1:]
        b = [c for c in coeffs]
        J = next(j for j in range(2, len(b))
                 if abs(b[j]) * mp.mpf(delta)**j < abs(b[0]) * mp.mpf(2)**-60)
        x0h, x0l = to_dd(x0)
        b0h, b0l = to_dd(b[0])
        return (x0h, x0l, float(delta), b0h, b0l) + tuple(float(v) for v in b[1:J])


def max_error(f, exact, lo=-_SPAN, hi=_SPAN):
    """(max |f - exact| over [lo, hi], where), measured in mpmath."""
    with mp.workdps(DPS):
        v, at = remez.max_abs(lambda x: f(x) - exact(x), mp.mpf(lo), mp.mpf(hi),
                              grid=6000)
        return float(v), float(at)


# ------------------------------------------------------------------ the fits

def _t_form_problem(L):
    """F, basis maker and S for the T-form on [0, L]: minimise
    max |a ((L - a)**2 R(s) - Phi(-a))|, s = S a - 1, S = fl(2/L)."""
    S = mp.mpf(float(2 / L))

    def F(a):
        return a * mp.ncdf(-a)

    def basis(j):
        return lambda a: a * (L - a)**2 * (S * a - 1)**j
    return F, basis, S


def _half_at_zero(L):
    """The value R(-1) = 1/(2 L**2) that makes T(0) = 1/2 = Phi(0): the fit
    then has GELU'(0) = 1/2 from both sides (no derivative jump at 0)."""
    return 1 / (2 * L * L)


def _fit_poly(L, m):
    """Remez in the basis a (L - a)**2 (s + 1) s**j, j < m, for
    F(a) - a (L - a)**2 c0: R(s) = c0 + (s + 1) B(s) has R(-1) = c0 exactly
    (:func:`_half_at_zero`); returns R's coefficients in powers of s."""
    F, _, S = _t_form_problem(L)
    c0 = _half_at_zero(L)

    def G(a):
        return F(a) - a * (L - a)**2 * c0

    def basis(j):
        return lambda a: a * (L - a)**2 * (S * a) * (S * a - 1)**j
    fit = remez.remez(G, [basis(j) for j in range(m)], mp.mpf(0), L,
                      grid=1200, tol=1e-4, dps=DPS)
    b = list(fit.coeffs)
    r = [c0 + b[0]] + [b[k - 1] + b[k] for k in range(1, m)] + [b[m - 1]]
    return [float(c) for c in r], [1.0], S


def _in_s(c):
    """Coefficients in powers of s of the polynomial sum c[j] (s + 1)**j."""
    return [mp.fsum(mp.binomial(j, k) * c[j] for j in range(k, len(c)))
            for k in range(len(c))]


def _fit_rational(L, m, n):
    """Rational Remez exchange (:func:`fitting.rational.remez`,
    started from Lawson's fit) in u = s + 1 = S a, weight a (L - a)**2, with
    P(0) = c0 and Q(0) = 1 (T(0) = 1/2, :func:`_half_at_zero`); returns P
    and Q in powers of s, Q normalised to Q(s = 0) = 1."""
    F, _, S = _t_form_problem(L)
    c0 = _half_at_zero(L)

    def f(u):                           # Phi(-a)/(L - a)**2 at a = u/S
        a = u / S
        return mp.ncdf(-a) / (L - a)**2

    def w(u):
        a = u / S
        return a * (L - a)**2
    lo, hi = mp.mpf(0), mp.mpf(2)
    p, q = rational.lawson(f, lo, hi, m, n, nodes=240, iters=24, weight=w, p0=c0)
    p, q, _, _, _ = rational.remez(f, lo, hi, m, n, start=(p, q), weight=w, p0=c0, dps=DPS)
    ps, qs = _in_s(p), _in_s(q)
    return [float(c / qs[0]) for c in ps], [float(c / qs[0]) for c in qs], S


def _sign_changes(L, S, p, q, npts=600):
    """True if T = (L - a)**2 P(s)/Q(s) is negative somewhere on [0, L)
    (then x T(|x|) has the wrong sign in the tail) or Q vanishes there."""
    pm, qm = [mp.mpf(c) for c in p], [mp.mpf(c) for c in q]
    for k in range(npts + 1):
        s = S * (L * k / npts) - 1
        if rational.horner(qm, s) <= 0 or rational.horner(pm, s) < 0:
            return True
    return False


def t_form_error(L, S, p, q):
    """(max |GELU_fit - GELU| over all x, where): the error is even in x and
    vanishes at 0; beyond L it is a Phi(-a), decreasing."""
    fwd, _ = approx.t_form({"L": L, "S": S, "p": p, "q": q})
    return max_error(fwd, approx.gelu, lo=0, hi=_SPAN)


def fit_t_form(m, n):
    """The T-form of degrees (m, n) with the best clamp point L (a multiple
    of 1/64, by golden-section search of the fitted error)."""
    def err(L):
        L = mp.mpf(round(float(L) * 64)) / 64
        p, q, S = _fit_poly(L, m) if n == 0 else _fit_rational(L, m, n)
        if _sign_changes(L, S, p, q):
            # a fit whose T goes negative is not a candidate, however small
            # its error: GELU would have the wrong sign in the tail
            return mp.inf, None
        e, at = t_form_error(float(L), float(S), p, q)
        return e, (float(L), float(S), p, q, e, at)
    cache = {}

    def g(L):
        key = round(float(L) * 64)
        if key not in cache:
            cache[key] = err(L)
        return cache[key][0]
    # the prototypes put the best L near 3 + m/5 (polynomials) and
    # 3 + (m + n)/4 (rationals)
    L0 = 3.0 + (0.2 * m if n == 0 else 0.25 * (m + n))
    lo, hi = L0 - 0.8, L0 + 0.8
    r = (5 ** 0.5 - 1) / 2
    a, b = lo, hi
    c, d = b - r * (b - a), a + r * (b - a)
    for _ in range(7):
        if g(c) < g(d):
            b, d = d, c
            c = b - r * (b - a)
        else:
            a, c = c, d
            d = a + r * (b - a)
    best = min(cache.values(), key=lambda v: v[0])
    if best[1] is None:
        raise RuntimeError(f"degrees ({m}, {n}): every clamp point tried gives a "
                           "negative T")
    return best[1]


def cauchy_fit(degree=24):
    """C(t) = (atan(sqrt t) - sqrt t/(1 + t))/t**1.5 on [0, 1] in relative
    error, a polynomial in 2t - 1 (the x_cauchy derivative for x <= -1)."""
    def C(t):
        if t < mp.mpf("0.01"):      # the series, 2n/(2n+1) (-t)**(n-1)
            return sum((-1)**(k + 1) * mp.mpf(2 * k) / (2 * k + 1) * t**(k - 1)
                       for k in range(1, 40))
        y = mp.sqrt(t)
        return (mp.atan(y) - y / (1 + t)) / (t * y)
    basis = [(lambda j: (lambda t: (2 * t - 1)**j))(j) for j in range(degree + 1)]
    fit = remez.remez(C, basis, mp.mpf(0), mp.mpf(1), weight=lambda t: 1 / C(t),
                      dps=DPS)
    coeffs = [float(c) for c in fit.coeffs]
    err, _ = remez.certify(C, basis, coeffs, mp.mpf(0), mp.mpf(1),
                           weight=lambda t: 1 / C(t), dps=DPS)
    return coeffs, float(err)


def _fmt(v):
    return repr(float(v))


def generate(progress=True):
    def say(msg):
        if progress:
            print(msg, file=sys.stderr, flush=True)

    consts, arrays = constants()
    lines = [
        '"""Constants, fits and measured errors of the GELU approximations.',
        "",
        f"Generated by ``{COMMAND}`` in the gelu-numba repository (do not",
        "edit); the formulas are its ``reference/approx.py``, the method is",
        "described in its ``fitting/make_approximations.py``.",
        "",
        "Double-double constants are ``(hi, lo)`` pairs.  ``ZERO_*`` tuples are",
        "``(x0_hi, x0_lo, delta, b0_hi, b0_lo, b1, ..., bJ)`` with",
        "``g(x0 + d) = d sum b_j d**j`` for the derivative g (see",
        "``gelu_numba.kernels.primitives.polynomials.taylor_at_zero``).  Errors are",
        "``(max |f - exact|, at x)`` over all real x, measured in mpmath",
        "(Remez-style grid and local refinement, ``fitting.remez.max_abs``).",
        '"""',
        "",
    ]
    for name, ((h, lo), doc) in consts.items():
        lines.append(f"# {doc}")
        lines.append(f"{name} = ({_fmt(h)}, {_fmt(lo)})")
    for name, (pairs, doc) in arrays.items():
        lines.append(f"# {doc}")
        lines.append(f"{name}_HI = ({', '.join(_fmt(h) for h, _ in pairs)})")
        lines.append(f"{name}_LO = ({', '.join(_fmt(lo) for _, lo in pairs)})")
    with mp.workdps(60):
        ip = to_dd(1 / mp.pi)
    lines.append("# 1/pi")
    lines.append(f"INV_PI = ({_fmt(ip[0])}, {_fmt(ip[1])})")
    say("Cauchy C(t) fit")
    cc, cerr = cauchy_fit()
    lines.append("# x_cauchy derivative, x <= -1: C(t) = sum CAUCHY_C[j] (2t - 1)**j on")
    lines.append(f"# [0, 1], Remez, degree {len(cc) - 1}, certified relative error {cerr:.3g}")
    lines.append(f"CAUCHY_C = ({', '.join(_fmt(v) for v in cc)})")
    lines.append("")

    grads = {
        "TANH": (approx.gelu_tanh_grad, -0.75),
        "SIGMOID": (approx.gelu_sigmoid_grad, -0.75),
        "SILU": (approx.silu_grad, -1.28),
        "AS26": (approx.gelu_as26_grad, -0.75),
    }
    fits = {}
    for name, (m, n) in FITS.items():
        say(f"fit {name}")
        L, S, p, q, err, at = fit_t_form(m, n)
        fits[name] = {"L": L, "S": S, "p": p, "q": q}
        lines.append(f"# {name}: T(a) = (L - a)**2 P(s)/Q(s), s = S a - 1, degrees ({m}, {n});")
        lines.append(f"# max |error| against GELU {err:.4g} at |x| = {at:.4f}")
        lines.append(f"FIT_{name.upper()} = {{")
        lines.append(f"    'L': {_fmt(L)}, 'S': {_fmt(S)}, 'degrees': ({m}, {n}),")
        lines.append(f"    'p': ({', '.join(_fmt(v) for v in p)},),")
        lines.append(f"    'q': ({', '.join(_fmt(v) for v in q)},),")
        lines.append("}")
        grads[f"FIT_{name.upper()}"] = (approx.t_form(fits[name])[1], -0.75)
    lines.append("FITS_BY_NAME = {")
    lines += [f"    '{name}': FIT_{name.upper()}," for name in fits]
    lines.append("}")
    lines.append("")

    for name, (g, guess) in grads.items():
        say(f"zero of the {name} derivative")
        z = zero_table(g, guess)
        lines.append(f"# zero of the {name.lower()} derivative, Taylor form ({len(z) - 5} terms after b0)")
        lines.append(f"ZERO_{name} = ({', '.join(_fmt(v) for v in z)})")
    lines.append("")

    forms = dict(approx.CLOSED_FORMS)
    forms.update({name: approx.t_form(f) for name, f in fits.items()})
    lines.append("# name: (forward error, at x, derivative error, at x) against GELU, GELU'")
    lines.append("ERRORS = {")
    for name, (f, g) in forms.items():
        say(f"errors of {name}")
        e, at = max_error(f, approx.gelu)
        eg, atg = max_error(g, approx.gelu_grad)
        lines.append(f"    '{name}': ({e!r}, {at!r}, {eg!r}, {atg!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    return run_generator(generate, OUT, COMMAND,
                         "Regenerate the constants, fits and errors of the "
                         "GELU approximations.", argv)


if __name__ == "__main__":
    sys.exit(main())
