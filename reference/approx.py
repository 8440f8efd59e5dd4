"""mpmath definitions of the approximations and of the paper's generalisations.

Each function here *is* the formula: the kernels in
:mod:`gelu_numba.kernels.logistic`, :mod:`~gelu_numba.kernels.erf_as`,
:mod:`~gelu_numba.kernels.fitted` and :mod:`~gelu_numba.kernels.family` are
judged against it (implementation error, in ulps), and the generator
``python -m fitting.make_approximations`` measures it against the
exact GELU (approximation error).  Decimal constants of the published
formulas (0.044715, 1.702, the Abramowitz & Stegun coefficients) are taken
as the exact decimals, not as their nearest doubles.

Every function takes a finite Python float ``x`` (plus parameters) and
returns an mpf at the working precision of the caller's ``mp.workdps`` block
(:func:`evaluate` sets 50 digits, far more than any double needs: none of
these formulas cancels except the derivatives next to their zeros, where
50 digits still leave 30 or more).
"""

import mpmath as mp


def horner(coeffs, x):
    """``sum coeffs[j] x**j`` (ascending powers): mpmath's ``polyval``,
    which takes them descending."""
    return mp.polyval(list(coeffs)[::-1], x)


# tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))
TANH_K = "0.044715"
# sigmoid form: x sigma(1.702 x)
SIGMOID_BETA = "1.702"
# Abramowitz & Stegun 7.1.26 (Hastings): erf z = 1 - t P(t) exp(-z**2),
# t = 1/(1 + p z), |error| <= 1.5e-7 for z >= 0
AS26_P = "0.3275911"
AS26_A = ("0.254829592", "-0.284496736", "1.421413741", "-1.453152027",
          "1.061405429")


def _sig(y):
    return 1 / (1 + mp.exp(-y))


def gelu(x):
    """The exact GELU, x Phi(x)."""
    x = mp.mpf(x)
    return x * mp.ncdf(x)


def gelu_grad(x):
    """The exact GELU', Phi(x) + x phi(x)."""
    x = mp.mpf(x)
    return mp.ncdf(x) + x * mp.npdf(x)


# ------------------------------------------------------------ logistic forms

def _tanh_y(x):
    """2u = 2 sqrt(2/pi) (x + k x**3) and its derivative."""
    c = 2 * mp.sqrt(2 / mp.pi)
    k = mp.mpf(TANH_K)
    return c * (x + k * x**3), c * (1 + 3 * k * x**2)


def _x_sigmoid(x, y, dy):
    s = _sig(y)
    return x * s, s + x * dy * s * _sig(-y)


def gelu_tanh(x):
    x = mp.mpf(x)
    return _x_sigmoid(x, *_tanh_y(x))[0]


def gelu_tanh_grad(x):
    x = mp.mpf(x)
    return _x_sigmoid(x, *_tanh_y(x))[1]


def _beta_form(beta):
    def f(x):
        x = mp.mpf(x)
        b = mp.mpf(beta)
        return _x_sigmoid(x, b * x, b)[0]

    def g(x):
        x = mp.mpf(x)
        b = mp.mpf(beta)
        return _x_sigmoid(x, b * x, b)[1]
    return f, g


gelu_sigmoid, gelu_sigmoid_grad = _beta_form(SIGMOID_BETA)
silu, silu_grad = _beta_form("1")


# ----------------------------------------------------------- A&S 7.1.26 erf

def _as26_parts(x):
    """(Phi_AS(x), Phi_AS'(x)) of the A&S 7.1.26 erf, odd extension."""
    x = mp.mpf(x)
    p = mp.mpf(AS26_P)
    a = [mp.mpf(c) for c in AS26_A]
    z = abs(x) / mp.sqrt(2)
    t = 1 / (1 + p * z)
    tp = t * horner(a, t)                          # t P(t)
    dtp = horner([(j + 1) * a[j] for j in range(5)], t)  # (tP)'
    e = mp.exp(-z * z)
    k = tp * e
    phi = k / 2 if x < 0 else 1 - k / 2
    dphi = e * (p * t * t * dtp + 2 * z * tp) / (2 * mp.sqrt(2))
    return phi, dphi


def gelu_as26(x):
    x = mp.mpf(x)
    return x * _as26_parts(x)[0]


def gelu_as26_grad(x):
    x = mp.mpf(x)
    phi, dphi = _as26_parts(x)
    return phi + x * dphi


# ------------------------------------------------- fitted "T-form" formulas

def t_form(fit):
    """(forward, grad) of a fitted approximation ``fit`` (a dict of the
    generated table): GELU(x) ~ x T(|x|) for x < 0 and x (1 - T(|x|)) for
    x >= 0, T(a) = (L - a)**2 P(s)/Q(s), s = S a - 1, T = 0 for a >= L."""
    L = mp.mpf(fit["L"])
    S = mp.mpf(fit["S"])
    p = [mp.mpf(c) for c in fit["p"]]
    q = [mp.mpf(c) for c in fit["q"]]
    # exact products: the table may be built at any working precision
    dp = [mp.fmul(j, p[j], exact=True) for j in range(1, len(p))] or [mp.mpf(0)]
    dq = [mp.fmul(j, q[j], exact=True) for j in range(1, len(q))] or [mp.mpf(0)]

    def parts(a):
        if a >= L:
            return mp.mpf(0), mp.mpf(0)
        s = S * a - 1
        P, Q = horner(p, s), horner(q, s)
        dP, dQ = horner(dp, s), horner(dq, s)
        r = P / Q
        dr = S * (dP * Q - P * dQ) / (Q * Q)
        d = L - a
        return d * d * r, d * (d * dr - 2 * r)     # T, T'

    def forward(x):
        x = mp.mpf(x)
        t, _ = parts(abs(x))
        return x * t if x < 0 else x * (1 - t)

    def grad(x):
        x = mp.mpf(x)
        a = abs(x)
        t, dt = parts(a)
        g = t + a * dt
        return g if x < 0 else 1 - g

    return forward, grad


# ------------------------------------------------- the paper's generalisations

def gelu_general(x, mu, sigma):
    """x Phi((x - mu)/sigma); sigma = 0 is the limit x * H(x - mu) with
    H(0) = 1/2."""
    x, mu, sigma = mp.mpf(x), mp.mpf(mu), mp.mpf(sigma)
    if sigma == 0:
        return x * (1 if x > mu else (mp.mpf(1) / 2 if x == mu else 0))
    return x * mp.ncdf((x - mu) / sigma)


def cauchy_cdf(x):
    return mp.mpf(1) / 2 + mp.atan(x) / mp.pi


def x_cauchy(x):
    x = mp.mpf(x)
    return x * cauchy_cdf(x)


def x_cauchy_grad(x):
    x = mp.mpf(x)
    return cauchy_cdf(x) + x / (mp.pi * (1 + x * x))


def laplace_cdf(x):
    return mp.exp(x) / 2 if x < 0 else 1 - mp.exp(-x) / 2


def lalu(x):
    x = mp.mpf(x)
    return x * laplace_cdf(x)


def lalu_grad(x):
    x = mp.mpf(x)
    return laplace_cdf(x) + x * mp.exp(-abs(x)) / 2


#: name -> (forward, grad) of the closed-form approximations
CLOSED_FORMS = {
    "tanh": (gelu_tanh, gelu_tanh_grad),
    "sigmoid": (gelu_sigmoid, gelu_sigmoid_grad),
    "as26": (gelu_as26, gelu_as26_grad),
}

#: name -> (forward, grad) of the x F(x) family
FAMILY = {
    "silu": (silu, silu_grad),
    "x_cauchy": (x_cauchy, x_cauchy_grad),
    "lalu": (lalu, lalu_grad),
}


def formulas(name):
    """(forward, derivative) formulas of the registered approximation
    ``name`` (``"tanh"``, ``"poly6"``, ...; a key of
    :data:`gelu_numba.approximations.APPROXIMATIONS`)."""
    if name in CLOSED_FORMS:
        return CLOSED_FORMS[name]
    from gelu_numba.tables import approximations as tab
    return t_form(tab.FITS_BY_NAME[name])


def __getattr__(name):
    """``gelu_<fit>`` and ``gelu_<fit>_grad`` of every fitted approximation,
    under the names of their catalog records (``reference.lookup``)."""
    key = name.removeprefix("gelu_").removesuffix("_grad")
    from gelu_numba.tables import approximations as tab
    if name.startswith("gelu_") and key in tab.FITS_BY_NAME:
        return formulas(key)[name.endswith("_grad")]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def evaluate(f, x, dps=50):
    """``f(x)`` at ``dps`` digits, as an mpf."""
    with mp.workdps(dps):
        return +f(x)
