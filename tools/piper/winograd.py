"""Toom-Cook (Winograd) matrices for a 1-D correlation, in exact rationals.

F(m, r) computes m outputs of a correlation with an r-tap filter from m + r - 1 inputs,
    y[j] = sum_i d[j + i] g[i]      (j < m, i < r),
as y = AT @ ((G @ g) * (BT @ d)): m + r - 1 products where the direct form takes m * r. With
the filter transform G @ g folded into the weights once, a convolution of C to O channels costs
(m + r - 1) / m products per output sample and channel pair instead of r (a 5-tap filter at m = 4:
8/4 against 5, 0.4x), plus the transforms, which are additions and small constant scalings.

The matrices come from interpolation at the points given (K - 1 finite ones and infinity,
K = m + r - 1): AT evaluates, G interpolates, and BT is solved exactly from the identity above,
so every entry is a Fraction and the float32 weights made from them do not depend on the machine.
Small points (0, +-1, +-2, +-1/2) keep float32 rounding near the direct form's (docs/MODELS.md).
"""
from fractions import Fraction


def toom_cook(m, r, points):
    """(AT [m][K], G [K][r], BT [K][K]) as lists of Fractions, for F(m, r) at `points`."""
    k_all = m + r - 1
    pts = [Fraction(p) for p in points]
    if len(pts) != k_all - 1 or len(set(pts)) != len(pts):
        raise ValueError(f"F({m}, {r}) needs {k_all - 1} distinct finite points, got {points}")
    at = [[p ** j for p in pts] + [Fraction(int(j == m - 1))] for j in range(m)]
    g = []
    for k, p in enumerate(pts):
        f = Fraction(1)
        for q in pts[:k] + pts[k + 1:]:
            f *= p - q
        g.append([p ** i / f for i in range(r)])
    g.append([Fraction(int(i == r - 1)) for i in range(r)])
    # BT[:, l] solves sum_k AT[j][k] G[k][i] BT[k][l] = [l == j + i] for every (j, i).
    rows = [[at[j][k] * g[k][i] for k in range(k_all)] + [Fraction(int(l == j + i)) for l in range(k_all)]
            for j in range(m) for i in range(r)]
    pivots = []
    for col in range(k_all):
        pivot = next((n for n in range(len(pivots), len(rows)) if rows[n][col] != 0), None)
        if pivot is None:
            raise ValueError(f"F({m}, {r}) at {points}: the system is singular")
        top = len(pivots)
        rows[top], rows[pivot] = rows[pivot], rows[top]
        lead = rows[top][col]
        rows[top] = [v / lead for v in rows[top]]
        for n in range(len(rows)):
            if n != top and rows[n][col] != 0:
                factor = rows[n][col]
                rows[n] = [a - factor * b for a, b in zip(rows[n], rows[top])]
        pivots.append(col)
    if any(v != 0 for row in rows[k_all:] for v in row):
        raise ValueError(f"F({m}, {r}) at {points}: no exact transform")
    bt = [[rows[k][k_all + l] for l in range(k_all)] for k in range(k_all)]
    return at, g, bt


def correlate(at, g, bt, filt, data):
    """y = AT @ ((G @ filt) * (BT @ data)), in whatever number type the inputs are (a check)."""
    u = [sum(gk[i] * filt[i] for i in range(len(filt))) for gk in g]
    v = [sum(bk[l] * data[l] for l in range(len(data))) for bk in bt]
    return [sum(aj[k] * u[k] * v[k] for k in range(len(u))) for aj in at]


# The forms brisvox's WinogradConv operator runs (src/models/tts/piper/winograd_matrices.h, written by
# `python3 tools/piper/winograd.py --cxx`): F(4, r) for the decoder's 3-, 5- and 7-tap layers.
# Small points first; 7 taps need nine finite points, so +-3 join (float32 error ~1e-5 relative).
RUNTIME_FORMS = [(4, 3, [0, 1, -1, 2, -2]),
                 (4, 5, [0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2)]),
                 (4, 7, [0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2), 3, -3])]


def cxx_header():
    """The C++ header with RUNTIME_FORMS' matrices: AT and BT as float, G as double (the weight
    transform runs once, in double)."""
    lines = ["// Written by `python3 tools/piper/winograd.py --cxx` from exact rationals (Toom-Cook at the",
             "// points named below). Do not edit: change RUNTIME_FORMS there and run it again.",
             "#pragma once", "", "namespace brisvox::piper::winograd {", ""]

    def flat(a, suffix):
        return ", ".join(repr(float(v)) + suffix for row in a for v in row)

    for m, r, points in RUNTIME_FORMS:
        at, g, bt = toom_cook(m, r, points)
        lines += [f"// F({m}, {r}) at {', '.join(str(p) for p in points)} and infinity.",
                  f"struct F{m}x{r} {{",
                  f"  static constexpr int m = {m}, r = {r}, K = {m + r - 1};",
                  f"  static constexpr float at[m * K] = {{{flat(at, 'f')}}};",
                  f"  static constexpr float bt[K * K] = {{{flat(bt, 'f')}}};",
                  f"  static constexpr double g[K * r] = {{{flat(g, '')}}};",
                  "};", ""]
    lines += ["}  // namespace brisvox::piper::winograd", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--cxx"]:
        sys.stdout.write(cxx_header())
        sys.exit(0)
    import random
    for m, r, points in [(2, 3, [0, 1, -1]), (4, 3, [0, 1, -1, 2, -2]),
                         (4, 5, [0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2)])]:
        at, g, bt = toom_cook(m, r, points)
        rng = random.Random(0)
        filt = [Fraction(rng.randint(-9, 9)) for _ in range(r)]
        data = [Fraction(rng.randint(-9, 9)) for _ in range(m + r - 1)]
        want = [sum(data[j + i] * filt[i] for i in range(r)) for j in range(m)]
        assert correlate(at, g, bt, filt, data) == want, (m, r)
        print(f"F({m}, {r}): exact")
