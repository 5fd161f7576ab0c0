"""Write kernels/special_tables.py: Chebyshev coefficients of the Bessel and Airy functions.

    .venv/bin/python scripts/gen_special_tables.py      # needs mpmath (PyTorch's sympy has it)

Each function is expanded on [-1, 1] in a variable t that maps its interval there; the
coefficients c_j of f = sum c_j T_j(t) come from f at Chebyshev nodes computed by mpmath at
40 digits, and the series is cut where the coefficients fall below 1e-18 of the largest.
Evaluated by Clenshaw's recurrence in float64 (`scalar_special._chebyshev`), they reproduce
the functions within a few float64 ulp. The tables are numbers of our own making; the
layout (a Chebyshev series per interval, exp(-x)-scaled) is the classic Cephes one.
"""
import os

import mpmath as mp

mp.mp.dps = 40
NODES = 80


def chebyshev(f, tol=mp.mpf("1e-18")):
    """Coefficients c_0..c_n with f(t) = sum c_j T_j(t) on [-1, 1] (c_0 halved in)."""
    N = NODES
    theta = [mp.pi * (k + mp.mpf(1) / 2) / N for k in range(N)]
    values = [f(mp.cos(th)) for th in theta]
    coefs = []
    for j in range(N):
        c = 2 * mp.fsum(v * mp.cos(j * th) for v, th in zip(values, theta)) / N
        coefs.append(c / 2 if j == 0 else c)
    big = max(abs(c) for c in coefs)
    while abs(coefs[-1]) < tol * big:
        coefs.pop()
    return [float(c) for c in coefs]


def table():
    x_low = lambda t: 4 * (t + 1)                   # [0, 8]   <- t in [-1, 1]
    x_high = lambda t: 16 / (t + 1)                 # [8, inf) <- t in (-1, 1]
    x_k_low = lambda t: mp.sqrt(2 * (t + 1))        # x**2 in [0, 4] (x in [0, 2])
    x_k_high = lambda t: 4 / (t + 1)                # [2, inf)

    def i_scaled(nu, x):
        return mp.besseli(nu, x) * mp.exp(-x)

    def k0_regular(t):                              # K0(x) + ln(x/2) I0(x), entire in x**2
        x = x_k_low(t)
        if x == 0:
            return -mp.euler
        return mp.besselk(0, x) + mp.log(x / 2) * mp.besseli(0, x)

    def k1_regular(t):                              # x K1(x) - x ln(x/2) I1(x), entire in x**2
        x = x_k_low(t)
        if x == 0:
            return mp.mpf(1)
        return x * mp.besselk(1, x) - x * mp.log(x / 2) * mp.besseli(1, x)

    x_j_low = lambda t: mp.sqrt(32 * (t + 1))      # x**2 in [0, 64] (x in [0, 8])
    w_j = lambda t: 16 / (t + 1)                    # x in [8, inf) <- t in (-1, 1]
    two_pi = 2 / mp.pi

    def y0_regular(t):                              # Y0(x) - (2/pi) ln(x/2) J0(x)
        x = x_j_low(t)
        return mp.bessely(0, x) - two_pi * mp.log(x / 2) * mp.besselj(0, x)

    def y1_regular(t):                              # x Y1(x) - (2/pi)(x ln(x/2) J1(x) - 1)
        x = x_j_low(t)
        return x * mp.bessely(1, x) - two_pi * (x * mp.log(x / 2) * mp.besselj(1, x) - 1)

    def hankel(nu, which):
        """P or Q of J = sqrt(2/(pi x)) (P cos chi - Q sin chi), Y = ... (P sin + Q cos),
        chi = x - (2 nu + 1) pi / 4, as functions of t = 16/x - 1."""
        def f(t):
            x = w_j(t)
            chi = x - (2 * nu + 1) * mp.pi / 4
            j, y = mp.besselj(nu, x), mp.bessely(nu, x)
            scale = mp.sqrt(mp.pi * x / 2)
            if which == "P":
                return scale * (j * mp.cos(chi) + y * mp.sin(chi))
            return scale * (y * mp.cos(chi) - j * mp.sin(chi))
        return f

    airy_x = lambda t: 5 * t - 3                    # [-8, 2]
    airy_w_pos = lambda t: (t + 1) * mp.mpf(3) / (8 * mp.sqrt(2))      # 1/zeta, x >= 2
    airy_w_neg = lambda t: (t + 1) * mp.mpf(3) / (4 * mp.sqrt(512))    # 1/zeta, x <= -8

    def airy_pos(t):                                # Ai(x) 2 sqrt(pi) x**(1/4) exp(zeta)
        w = airy_w_pos(t)
        if w == 0:
            return mp.mpf(1)
        x = (3 / (2 * w)) ** (mp.mpf(2) / 3)
        return mp.airyai(x) * 2 * mp.sqrt(mp.pi) * x ** (mp.mpf(1) / 4) * mp.exp(1 / w)

    def airy_neg(which):
        """P or Q of Ai(-x) = pi**-1/2 x**-1/4 (sin(th) P - cos(th) Q), th = zeta + pi/4."""
        def f(t):
            w = airy_w_neg(t)
            if w == 0:
                return mp.mpf(1) if which == "P" else mp.mpf(0)
            x = (3 / (2 * w)) ** (mp.mpf(2) / 3)
            th = 1 / w + mp.pi / 4
            ai, bi = mp.airyai(-x), mp.airybi(-x)
            scale = mp.sqrt(mp.pi) * x ** (mp.mpf(1) / 4)
            if which == "P":
                return scale * (ai * mp.sin(th) + bi * mp.cos(th))
            return scale * (bi * mp.sin(th) - ai * mp.cos(th))
        return f

    return {
        "J0_LOW": chebyshev(lambda t: mp.besselj(0, x_j_low(t))),
        "J1_LOW": chebyshev(lambda t: mp.besselj(1, x_j_low(t)) / x_j_low(t)),
        "Y0_LOW": chebyshev(y0_regular),
        "Y1_LOW": chebyshev(y1_regular),
        "P0_HIGH": chebyshev(hankel(0, "P")),
        "Q0_HIGH": chebyshev(hankel(0, "Q")),
        "P1_HIGH": chebyshev(hankel(1, "P")),
        "Q1_HIGH": chebyshev(hankel(1, "Q")),
        "AI_MID": chebyshev(lambda t: mp.airyai(airy_x(t))),
        "AI_POS": chebyshev(airy_pos),
        "AI_NEG_P": chebyshev(airy_neg("P")),
        "AI_NEG_Q": chebyshev(airy_neg("Q")),
        "I0E_LOW": chebyshev(lambda t: i_scaled(0, x_low(t))),
        "I0E_HIGH": chebyshev(lambda t: i_scaled(0, x_high(t)) * mp.sqrt(x_high(t))
                              if t > -1 else 1 / mp.sqrt(2 * mp.pi)),
        "I1E_LOW": chebyshev(lambda t: i_scaled(1, x_low(t)) / x_low(t) if t > -1
                             else mp.mpf(1) / 2),
        "I1E_HIGH": chebyshev(lambda t: i_scaled(1, x_high(t)) * mp.sqrt(x_high(t))
                              if t > -1 else 1 / mp.sqrt(2 * mp.pi)),
        "K0_LOW": chebyshev(k0_regular),
        "K0E_HIGH": chebyshev(lambda t: mp.besselk(0, x_k_high(t)) * mp.exp(x_k_high(t))
                              * mp.sqrt(x_k_high(t)) if t > -1 else mp.sqrt(mp.pi / 2)),
        "K1_LOW": chebyshev(k1_regular),
        "K1E_HIGH": chebyshev(lambda t: mp.besselk(1, x_k_high(t)) * mp.exp(x_k_high(t))
                              * mp.sqrt(x_k_high(t)) if t > -1 else mp.sqrt(mp.pi / 2)),
    }


HEADER = '''"""Chebyshev coefficients of the Bessel and Airy functions (`kernels/scalar_special.py`).

Generated by scripts/gen_special_tables.py (mpmath, 40 digits): do not edit by hand.
f(x) = sum_j c_j T_j(t) on each interval; t maps the interval onto [-1, 1]:

    I0E_LOW              exp(-x) I0(x)                     x in [0, 8],   t = x/4 - 1
    I1E_LOW              exp(-x) I1(x) / x                 x in [0, 8],   t = x/4 - 1
    I0E_HIGH, I1E_HIGH   exp(-x) I(x) sqrt(x)              x > 8,         t = 16/x - 1
    K0_LOW               K0(x) + ln(x/2) I0(x)             x in (0, 2],   t = x**2/2 - 1
    K1_LOW               x K1(x) - x ln(x/2) I1(x)         x in (0, 2],   t = x**2/2 - 1
    K0E_HIGH, K1E_HIGH   exp(x) K(x) sqrt(x)               x > 2,         t = 4/x - 1
    J0_LOW               J0(x)                             x in [0, 8],   t = x**2/32 - 1
    J1_LOW               J1(x) / x                         x in [0, 8],   t = x**2/32 - 1
    Y0_LOW               Y0(x) - 2/pi ln(x/2) J0(x)        x in (0, 8],   t = x**2/32 - 1
    Y1_LOW               x Y1(x) - 2/pi (x ln(x/2) J1(x) - 1)             t = x**2/32 - 1
    P0_HIGH, Q0_HIGH     J0 = sqrt(2/(pi x)) (P cos c - Q sin c), Y0 = sqrt(2/(pi x))
                         (P sin c + Q cos c), c = x - pi/4;  x > 8,  t = 16/x - 1
    P1_HIGH, Q1_HIGH     the same for J1, Y1 with c = x - 3 pi/4
    AI_MID               Ai(x)                             x in [-8, 2],  t = (x + 3)/5
    AI_POS               Ai(x) 2 sqrt(pi) x**(1/4) exp(z), z = 2/3 x**(3/2), x > 2,
                                                           t = (8 sqrt 2 / 3) / z - 1
    AI_NEG_P, AI_NEG_Q   Ai(-x) = (sin(z + pi/4) P - cos(z + pi/4) Q) / (sqrt(pi) x**(1/4)),
                         x > 8,  t = (4 sqrt(512) / 3) / z - 1
"""
import numpy as np

'''


def main():
    path = os.path.join(os.path.dirname(__file__), "..", "kernels", "special_tables.py")
    lines = [HEADER]
    for name, coefs in table().items():
        body = ",\n    ".join(repr(c) for c in coefs)
        lines.append(f"{name} = np.array([\n    {body},\n])\n\n")
    text = "".join(lines).rstrip() + "\n"
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
