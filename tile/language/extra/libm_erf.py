"""Error functions of tile's libdevice: erf erfc erfcx normcdf, erfinv erfcinv normcdfinv.

Accuracy (maximum error measured in tests/test_libdevice_math.py, ulps of the exact result):

    function     fp32   fp64   (CUDA's documented bound, fp32/fp64)
    erf          1      1.5    (2 / 2)
    erfc         1      2      (4 / 5)
    erfcx        1      1.5    (4 / 4)
    normcdf      1.5    2.5    (5 / 5)
    erfinv       1.5    2.5    (2 / 5)
    erfcinv      2      2.5    (4 / 6)
    normcdfinv   2.5    2.5    (5 / 8)

erf(x) = x P(x^2) for |x| < 1 (tools/libm_fit.py erf_*). Everything else goes through the
scaled complementary function erfcx(x) = e^(x^2) erfc(x), which is smooth on [0, inf): with
t = (x - K) / (x + K) mapping [0, inf) to [-1, 1), erfcx(x) = P(t) / (1 + 2x) for one polynomial
P on all of [0, inf) (the form of Shepherd and Laframboise; P is our fit erfcx_*). Then

    erfc(x) = e^(-x^2) erfcx(x)        x >= 1/2 (e^(-x^2) with x^2 in double-word)
            = 1 - erf(x)               -1 <= x < 1/2
            = 2 - erfc(-x)             x < -1
    erf(x)  = +-(1 - erfc(|x|))        |x| >= 1
    normcdf(x) = erfc(-x / sqrt 2) / 2  (the argument in double-word: erfc is steep)

The inverses follow M. Giles ("Approximating the erfinv function", 2010): with
w = -log(1 - x^2) = -log(y (2 - y)), y = 1 - x, erfinv(x) = x G(w) where G is smooth in w near
0 and in sqrt(w) beyond; G is fitted piecewise (erfinv_*), reaching the deepest tail erfcinv
needs (y down to the smallest subnormal).
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float64
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (copysign, dw_add, dw_div, dw_mul, fast_two_sum, full_like, is_nan, mul_dw_const, poly,
                        poly_pieces, scale2, sqrt_dw, two_prod, two_sum)
from .libm_exp_log import exp_dw, log_dw, log1p_of_dw

# The tables below start with c0 as two floats (hi, lo): on fp32 rounding c0 alone would cost
# half an ulp (fp64 tables have lo = 0).
# tools/libm_fit.py erf_*: erf(x) = x P(x^2) on [0, 1]
ERF_P = (
    (1.1283791065216064, 5.9186639589370316e-08, -0.3761262595653534, 0.1128358319401741, -0.02685372158885002,
     0.0051881358958780766, -0.0008008344448171556, 7.847214874345809e-05),
    (1.1283791670955126, 0.0, -0.37612638903183754, 0.11283791670955119, -0.0268661706451297, 0.005223977625421696,
     -0.0008548327021825435, 0.00012055332898093267, -1.4925647426595623e-05, 1.6462042606221766e-06,
     -1.636460299208197e-07, 1.479203592112792e-08, -1.216236213568418e-09, 8.7013431877496e-11,
     -4.21900573825298e-12),
)
# tools/libm_fit.py erfcx_*: erfcx(x) = P(t) / (1 + 2x), t = (x - K) / (x + K), x in [0, inf)
ERFCX_K = (3.0, 4.0)
ERFCX_P = (
    (1.2530080080032349, 5.0134016049696584e-08, -0.1356210708618164, -0.047562286257743835, 0.12964409589767456,
     -0.11927374452352524, 0.06831668317317963, -0.02377019263803959, 0.0024988309014588594, 0.0018879466224461794,
     -0.0007261522696353495, -0.00010406081128166988, 7.719615678070113e-05, 3.8600833249802236e-06),
    (1.2329951186255526, 0.0, -0.1396211168405625, 0.015379652102619629, 0.06809705425468948, -0.10103906603630167,
     0.09373283499846595, -0.06633036581216721, 0.03716751553553659, -0.016197734059981046, 0.0050319699957864904,
     -0.0007577732603848092, -0.0001992567910599517, 0.00015062148659970316, -2.439889549306906e-05,
     -1.1221279240642636e-05, 5.709100313194115e-06, 2.9196151088809954e-07, -8.247654381131546e-07,
     7.748183453499408e-08, 1.0994670853320768e-07, -2.0568263514972418e-08, -1.4615467106885278e-08,
     3.17238934957765e-09, 1.7563352605956186e-09, -2.664114397443962e-10, -1.3205848661821452e-10),
)
ERFCX_ASYMPTOTIC = (2.0**30, 2.0**60)  # beyond: erfcx(x) = 1 / (x sqrt(pi)) to working precision
INV_SQRT_PI_DW = ((0.564189612865448, -2.9317691385699618e-08), (0.5641895835477563, 7.66772980658294e-18))
TWO_OVER_SQRT_PI = 1.1283791670955126
INV_SQRT2_DW = ((0.7071067690849304, 1.2101617485882343e-08), (0.7071067811865476, -4.833646656726457e-17))
SQRT2_DW = ((1.4142135381698608, 2.4203234971764687e-08), (1.4142135623730951, -9.667293313452913e-17))
ERFC_ZERO = 40.0  # erfc underflows to 0 well before (27.3 on fp64): keeps x^2 in exp's range

# erfinv(x) = x G(w), w = -log(1 - x^2), s = sqrt(w): the pieces of G (tools/libm_fit.py erfinv_*)
#   fp32: w < 5: t = w;  s < 4: t = s - 3.25;  else t = (s - 7) / 4   (the last padded with 0)
#   fp64: w < 2: t = w;  s < 2.5: t = s - 1.96;  s < 4: t = s - 3.25;  s < 6.25: t = s - 5.125;
#         s < 12: t = (s - 9) / 4;  else t = (s - 20) / 8
ERFINV_W_END = (5.0, 2.0)
ERFINV_W_P = (
    (0.8862268924713135, 2.80098628735459e-08, 0.23201382160186768, 0.011548650451004505, -0.002334288088604808,
     -0.00012749094457831234, 4.457110117073171e-05, 3.981063400715357e-06, -1.975995928660268e-06,
     2.2097712815138948e-07, -8.788476613119656e-09),
    (0.886226925452758, 0.0, 0.23201366653465463, 0.011549342038263962, -0.002335101641489945,
     -0.0001280432953635803, 4.661144649704165e-05, 2.01996678817187e-06, -1.012499269397962e-06,
     -3.739355232604089e-08, 2.2921362248774096e-08, 6.321538288108364e-10, -4.3835533214832997e-10,
     -5.998072291814959e-11, 2.7864821583440228e-11, -3.2345397052317945e-12, 1.308231077863083e-13),
)
# the s pieces: (start of each piece in s, its center, 1 / scale), then the tables (of one length)
ERFINV_S_PIECES = (
    ((0.0, 3.25, 1.0), (4.0, 7.0, 0.25)),
    ((0.0, 1.96, 1.0), (2.5, 3.25, 1.0), (4.0, 5.125, 1.0), (6.25, 9.0, 0.25), (12.0, 20.0, 0.125)),
)
ERFINV_S_P = (
    ((3.083885669708252, -6.283882214574987e-08, 1.0052590370178223, 0.005371181759983301, -0.0037520965561270714,
      0.0024882929865270853, -0.0016827223589643836, 0.0009665777906775475, -0.00036970703513361514,
      -2.378819203840976e-07, 8.71242446010001e-05, -2.8990618375246413e-05),
     (6.869019508361816, 2.0732855432470387e-07, 4.034381866455078, -0.008207738399505615, 0.0004167546867392957,
      0.001617118832655251, -0.0017576970858499408, 0.0009980826871469617, -0.0005983520532026887,
      0.0010424008360132575, -0.0006995240109972656, 0.0)),
    ((1.822427436878853, 0.0, 0.9040500974559419, 0.12143729708864315, -0.07276816994496897, 0.010846897881931694,
      0.013615307401704788, -0.005954890018696496, -0.0028820933966026267, 0.002259820876609806,
      0.0005267425906952928, -0.0007451430706582658, -6.326319881244472e-05, 0.00022944619315607781,
      -8.253242390951171e-06, -6.694256429091544e-05, 1.0009304686693244e-05, 1.787676211559435e-05,
      -4.536371184055976e-06, -3.4354955515253383e-06, 1.1112140708674628e-06),
     (3.0838856104922208, 0.0, 1.005258967694166, 0.005370914553575051, -0.00375120850827541, 0.0024914420968034615,
      -0.0016882755338935643, 0.0009532893673249384, -0.0003550378354765839, 2.4031221366665593e-05,
      6.828728123216229e-05, -4.7318786545647945e-05, 1.2464301359907567e-05, 2.9250906704853422e-06,
      -3.983757037961034e-06, 1.4999082872567847e-06, -3.072260465529111e-08, -2.725451492749069e-07,
      1.3429280374424563e-07, 1.1966468905530265e-09, -1.6298380114349706e-08),
     (4.9761913900163, 0.0, 1.0102562759886626, -0.00021259950370250893, -0.00017993907257861377, 6.469075785172679e-05,
      -1.6589895259106076e-05, 3.747576991401703e-06, -7.962388548399625e-07, 1.6935921493261785e-07,
      -4.155584530598992e-08, 1.4467196286708277e-08, -6.973070115062948e-09, 3.6674393125112777e-09,
      -1.768933054075771e-09, 7.134639724788845e-10, -2.4692831693398295e-10, 7.825906536432168e-11,
      -8.52122007542679e-12, -1.0198954368073055e-11, 3.853682077466775e-12),
     (8.884270510145466, 0.0, 4.026909459528167, -0.006543000877099865, 0.0013155426413190812, -6.0617619025332396e-05,
      -0.0001555019594310076, 0.00013450997821306407, -8.353529448391899e-05, 4.576867163934655e-05,
      -2.3460285233205076e-05, 1.1531976921662334e-05, -5.503337242472762e-06, 2.5661746634331296e-06,
      -1.1792489862130003e-06, 5.402158954935821e-07, -2.3590746282054745e-07, 9.139730554659725e-08,
      -4.4981560555265795e-08, 3.09938921764486e-08, -1.0937300088865105e-08),
     (19.92805556415854, 0.0, 8.018810913919946, -0.005537381237712551, 0.001686476073327511, -0.0005163824711232499,
      0.0001560213123729674, -4.559764947140597e-05, 1.2488957632025422e-05, -2.9896830761598817e-06,
      4.866405585631694e-07, 6.039700518825687e-08, -1.1875836391646602e-07, 7.832321308992675e-08,
      -3.8394510943196826e-08, 2.4242658701924802e-08, -1.6716442938020678e-08, 2.5916065547891285e-09,
      1.8716372808108606e-09, 2.0469631130017786e-09, -1.6203029369714142e-09)),
)


# ----------------------------------------------------------------------------- erf family


@jit
def split_poly(t, coeffs: core.constexpr):
    """(hi, lo) = P(t) for a table (c0 hi, c0 lo, c1, ...): hi = c0 hi, lo = the rest, unrounded."""
    return full_like(t, coeffs[0]), math.fma(t, poly(t, coeffs[2:]), coeffs[1])


@jit
def erf_small(x):
    """erf(x) for |x| <= 1 as a double-word number: x P(x^2), the rounding error of x^2 fed back
    through P's slope."""
    C: core.constexpr = ERF_P[x.dtype == float64]
    z, ze = two_prod(x, x)
    ph, pl = split_poly(z, C)
    h, e = two_prod(x, ph)
    return fast_two_sum(h, math.fma(x, math.fma(ze, C[2], pl), e))


@jit
def erfcx_nonneg(x, huge: core.constexpr = True):
    """erfcx(x) = e^(x^2) erfc(x) for x >= 0 as a double-word number: P(t) / (1 + 2x) with
    t = (x - K) / (x + K); with `huge`, also 1 / (x sqrt(pi)) where the asymptotic series is exact
    and 0 at inf (erf and erfc clamp x to 40 and need neither)."""
    D: core.constexpr = x.dtype == float64
    k: core.constexpr = ERFCX_K[D]
    far = x > ERFCX_ASYMPTOTIC[D]
    xs = core.where(far, full_like(x, 1.0), x)
    t = math.div_rn(xs - k, xs + k)
    ph, pl = split_poly(t, ERFCX_P[D])
    ph, pl = fast_two_sum(ph, pl)
    dh, dl = two_sum(1.0, 2.0 * xs)
    qh, ql = dw_div(ph, pl, dh, dl)
    if huge:
        ah, al = dw_div(full_like(x, INV_SQRT_PI_DW[D][0]), full_like(x, INV_SQRT_PI_DW[D][1]), x,
                        full_like(x, 0.0))
        inf = x == float("inf")
        qh, ql = core.where(far, core.where(inf, 0.0, ah), qh), core.where(far & ~inf, al, ql)
    return qh, ql


@jit
def erfc_large(xh, xl):
    """erfc(xh + xl) = e^(-x^2) erfcx(x) for xh >= 1/2, x^2 in double-word; 0 once it underflows."""
    xl = core.where(xh < ERFC_ZERO, xl, 0.0)
    xh = math.min(xh, ERFC_ZERO)
    sh, sl = two_prod(xh, xh)
    sl = sl + 2.0 * xh * xl
    ph, pl, k = exp_dw(-sh, -sl)
    eh, el = erfcx_nonneg(xh, False)
    return scale2(math.fma(ph, eh, math.fma(ph, el, pl * eh)), k)


@jit
def erfc_of_dw(xh, xl):
    """erfc(xh + xl), xl below half an ulp of xh."""
    a = math.abs(xh)
    eh, el = erf_small(xh)
    h, l = two_sum(1.0, -eh)
    mid = h + (l - (el + xl * TWO_OVER_SQRT_PI * (1.0 - xh * xh)))
    big = erfc_large(core.where(a >= 0.5, a, full_like(xh, 1.0)), core.where(xh < 0.0, -xl, xl))
    r = core.where(xh >= 0.5, big, core.where(xh >= -1.0, mid, 2.0 - big))
    r = core.where(xh == float("inf"), 0.0, core.where(xh == float("-inf"), full_like(xh, 2.0), r))
    return core.where(is_nan(xh), xh, r)


@jit
def erf(x):
    """erf(x): x P(x^2) for |x| < 1, else +-(1 - erfc(|x|)); odd."""
    a = math.abs(x)
    big = 1.0 - erfc_large(core.where(a >= 1.0, a, full_like(x, 1.0)), full_like(x, 0.0))
    sh, sl = erf_small(x)
    r = core.where(a < 1.0, sh, copysign(big, x))
    return core.where(is_nan(x) | (x == 0.0), x, r)


@jit
def erfc(x):
    """erfc(x) = 1 - erf(x), accurate where it is tiny (x large)."""
    return erfc_of_dw(x, full_like(x, 0.0))


@jit
def erfcx(x):
    """erfcx(x) = e^(x^2) erfc(x); for x < 0, 2 e^(x^2) - erfcx(-x) (overflows below -26.6 on fp64)."""
    a = math.abs(x)
    eh, el = erfcx_nonneg(a)
    b = math.min(a, ERFC_ZERO)
    sh, sl = two_prod(b, b)
    ph, pl, k = exp_dw(sh, sl)
    twice = scale2(2.0 * ph, k)
    th, tl = dw_add(twice, scale2(2.0 * pl, k), -eh, -el)
    r = core.where(x >= 0.0, eh, core.where(twice == float("inf"), twice, th))
    return core.where(is_nan(x), x, r)


@jit
def normcdf(x):
    """The standard normal distribution function: erfc(-x / sqrt 2) / 2, -x / sqrt 2 in double-word."""
    D: core.constexpr = x.dtype == float64
    uh, ul = mul_dw_const(-x, INV_SQRT2_DW[D][0], INV_SQRT2_DW[D][1])
    finite = math.abs(x) < float("inf")
    return 0.5 * erfc_of_dw(core.where(finite, uh, -x), core.where(finite, ul, 0.0))


# ----------------------------------------------------------------------------- inverses


@jit
def erfinv_ratio(w):
    """G(w) = erfinv(x) / x as (hi, lo), for w = -log(1 - x^2) >= 0 (the pieces above)."""
    D: core.constexpr = w.dtype == float64
    nh, nl = split_poly(w, ERFINV_W_P[D])
    # the variable of an s piece is computed as a double-word t: rounding it would move G by P'(t) dt
    sh, sl = sqrt_dw(w, full_like(w, 0.0))
    pieces: core.constexpr = ERFINV_S_PIECES[D]
    piece = full_like(w, 0.0)
    c = full_like(w, pieces[0][1])
    h = full_like(w, pieces[0][2])
    for i in core.static_range(1, len(pieces)):
        later = sh >= pieces[i][0]
        piece = core.where(later, i * 1.0, piece)
        c = core.where(later, pieces[i][1], c)
        h = core.where(later, pieces[i][2], h)
    uh, ul = two_sum(sh, -c)
    fh, fl = poly_pieces(uh * h, piece, ERFINV_S_P[D])
    slope = full_like(w, ERFINV_S_P[D][0][2])
    for i in core.static_range(1, len(pieces)):
        slope = core.where(piece == i, ERFINV_S_P[D][i][2], slope)
    fl = fl + slope * ((ul + sl) * h)
    near = w < ERFINV_W_END[D]
    return core.where(near, nh, fh), core.where(near, nl, fl)


@jit
def erfinv(x):
    """The inverse of erf on (-1, 1): x G(w), w = -log1p(-x^2) with x^2 in double-word; +-inf at
    +-1, NaN beyond."""
    a = math.abs(x)
    b = core.where(a < 1.0, a, full_like(x, 0.0))
    sh, sl = two_prod(b, b)
    lh, ll = log1p_of_dw(-sh, -sl)
    gh, gl = erfinv_ratio(-lh)
    r = math.fma(x, gh, x * gl)
    r = core.where(a == 1.0, copysign(full_like(x, float("inf")), x), r)
    return core.where((a > 1.0) | is_nan(x), full_like(x, float("nan")), r)


@jit
def erfcinv(y):
    """The inverse of erfc on (0, 2): (1 - y) G(w), w = -log(y (2 - y)) in double-word (the tail
    y -> 0 keeps its relative accuracy); +inf at 0, -inf at 2, NaN outside."""
    ok = (y > 0.0) & (y < 2.0)
    b = core.where(ok, y, full_like(y, 1.0))
    dh, dl = two_sum(2.0, -b)
    th, tl = dw_mul(b, full_like(y, 0.0), dh, dl)
    lh, ll = log_dw(th)
    w = -(lh + (ll + math.div_rn(tl, th)))
    gh, gl = erfinv_ratio(w)
    r = math.fma(1.0 - b, gh, (1.0 - b) * gl)
    r = core.where(y == 0.0, full_like(y, float("inf")), r)
    r = core.where(y == 2.0, full_like(y, float("-inf")), r)
    return core.where(ok | (y == 0.0) | (y == 2.0), r, full_like(y, float("nan")))


@jit
def normcdfinv(p):
    """The inverse of normcdf on (0, 1): -sqrt(2) erfcinv(2p); -inf at 0, +inf at 1."""
    D: core.constexpr = p.dtype == float64
    r = erfcinv(2.0 * p)
    h, l = mul_dw_const(r, SQRT2_DW[D][0], SQRT2_DW[D][1])
    v = core.where(math.abs(r) == float("inf"), -r, -h)
    return core.where(r == 0.0, full_like(p, 0.0), core.where(is_nan(r), r, v))
