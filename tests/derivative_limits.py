"""The limits of GELU's higher derivatives at +-inf, from mathematics
(shared by the JAX and PyTorch tests)."""


def gelu_limit_is_negative_zero(order, x):
    """GELU^(n)(x) = phi(x) P_n(x) with P_n(x) ~ (-1)**(n + 1) x**n
    (P_2 = 2 - x**2, P_(n+1) = P_n' - x P_n): its limit is the zero of
    sign (-1)**(n + 1) at +inf and of sign -1 at -inf."""
    return x < 0 or order % 2 == 0
