"""Bessel functions of tile's libdevice: j0 j1 jn, y0 y1 yn, cyl_bessel_i0 cyl_bessel_i1.

All are computed in fp64 (fp32 arguments are widened and the result rounded once: these are
rare in kernels, and fp32 could not keep the relative accuracy near their zeros). Accuracy
(maximum error measured in tests/test_libdevice_math.py):

    function       fp32                fp64                 (CUDA's documented bound, fp32 / fp64)
    j0, y0         1 ulp (|x| < 8)     3.5 ulp (|x| < 8)    (9 ulp, 2.2e-6 abs / 7 ulp, 5e-12 abs)
    j1, y1         1 ulp (|x| < 8)     2 ulp (|x| < 8)
                   2e-8 abs beyond     1e-16 abs beyond
    jn             2e-8 abs            5e-16 abs            (2.2e-6 / 5e-12 abs, for n = 128)
    yn             1 ulp (x <= |n|)    6 ulp (x <= |n|)     (ceil(2 + 2.5 n) ulp, 2.2e-6 / 5e-12 abs)
                   2e-8 abs beyond     5e-16 abs beyond
    i0, i1         1 ulp               3.5, 4.5 ulp         (6 / 6)
(measured for |n| <= 30 and |x| <= 40 for jn and yn)

On [0, 8) every function is a set of polynomial pieces (tools/libm_fit.py j0_*, j1_*, y0_*,
y1_*), each centered on a zero of the function where it has one:

    f(x) = (x - z) P(x - z),   z a zero as a double-word constant

so that the result keeps its relative accuracy next to the zero. Near 0, y0 and y1 take their
logarithmic form, y0(x) = (2/pi) log(x) j0(x) + R(x^2) and y1(x) = (2/pi) (log(x) j1(x) - 1/x) +
x R(x^2). From 8 on, Hankel's form with P and Q polynomials in u = 64/x^2 (p0, q0, p1, q1):

    j0(x) = (P0 (c + s) - Q0 (s - c)) / sqrt(pi x),   y0(x) = (P0 (s - c) + Q0 (c + s)) / sqrt(pi x)
    j1(x) = (P1 (s - c) + Q1 (s + c)) / sqrt(pi x),   y1(x) = (Q1 (s - c) - P1 (s + c)) / sqrt(pi x)

with s = sin x, c = cos x from one argument reduction (exact for every x).

jn and yn run the three-term recurrence J(k+1) = (2k/x) J(k) - J(k-1): forward for yn and for
jn with |x| > n (stable there), backward from an index K = n + sqrt(160 n) for jn with |x| <= n
(Miller's algorithm, normalized by J0 + 2 (J2 + J4 + ...) = 1). The loops are runtime loops
over the largest order in the block.

cyl_bessel_i0 and i1 are I(x) = P(x^2/64) (x I1: x P) below 8 and e^|x| / sqrt|x| P(8/|x|) above.
"""
from __future__ import annotations

from tile.frontend import builtins as core
from tile.frontend.core import float32, float64, int32
from tile.frontend.jit import jit
from tile.language import math

from .libm_core import (block_max, copysign, dw_mul, fast_two_sum, full_like, is_nan, mul_dw_const, poly, poly_pieces,
                        scale2, sign_bit, two_prod, two_sum)
from .libm_exp_log import exp_dw, log_dw
from .libm_trig import sincos

TWO_OVER_PI_DW = (0.6366197723675814, -3.935735335036497e-17)
HANKEL_FROM = 8.0

# ------------------------------------------------------------------------------------ tables
# Pieces: (start, zero or center as a double-word constant, whether the piece has the factor (x - z)),
# and their polynomials in the form (c0 hi, c0 lo = 0, c1, ...), padded with 0 to one length.
# tools/libm_fit.py j0_a: j0(x) = P(x^2) for x < 1.6; then j0_b, j0_c (zeros), j0_d (center 7.5)
J0_PIECES = ((1.6, (2.404825557695773, -1.176691651530894e-16), True), (4.0, (5.520078110286311, 8.088597146146722e-17), True), (7.0, (7.5, 0.0), False))
# tools/libm_fit.py j1_a: j1(x) = x P(x^2) for x < 2; then j1_b, j1_c (zeros)
J1_PIECES = ((2.0, (3.8317059702075125, -1.5269184090088067e-16), True), (5.5, (7.015586669815619, -9.414165653410389e-17), True))
# tools/libm_fit.py y0_a: the regular part R(x^2) for x < 0.7 and 1.1 <= x < 2.4; y0_b, y0_c, y0_d (zeros)
Y0_PIECES = ((0.7, (0.8935769662791675, 2.6596231539720385e-17), True), (2.4, (3.957678419314858, -1.0764340697562706e-16), True), (5.5, (7.086051060301773, -8.835285723085408e-17), True))
Y0_LOG_FORM = (0.7, 1.1, 2.4)  # below the first, or between the last two
# tools/libm_fit.py y1_a: the regular part R(x^2) for x < 1.8; y1_b (zero), y1_c (3.3), y1_d (zero), y1_e (7.5)
Y1_PIECES = ((1.8, (2.197141326031017, -4.8259835876454966e-17), True), (2.6, (3.3, 0.0), False), (4.0, (5.429681040794135, 4.162514026670377e-16), True),
             (7.0, (7.5, 0.0), False))
Y1_LOG_FORM = 1.8

J0_SMALL = (
    1.0, -0.25, 0.015625, -0.00043402777777777775, 6.781684027777777e-06, -6.781684027777741e-08,
    4.709502797062894e-10, -2.4028075490736128e-12, 9.385966718789539e-15, -2.8968925610450824e-17,
    7.23951118160325e-20, -1.4561491293801455e-22,
)

J0_P = (
    (-0.5191474972894667, 0.0, 0.1079387017549201, 0.05660177443794623, -0.008657669593304914,
     -0.002194200359016156, 0.00026437703675269815, 4.372919272906665e-05, -4.338826288615807e-06,
     -5.30491438347594e-07, 4.470055863485529e-08, 4.326565167896559e-09, -3.166612624588076e-10,
     -2.5338932997082338e-11, 1.6387142912666356e-12, 1.1169798368763563e-13, -6.469518523448216e-15,
     -3.8392709773915003e-16, 2.013220033862428e-17, 1.0577442720752913e-18, -5.0576549315711834e-20,
     -2.47151309081815e-21, 1.3478874434102435e-22),
    (0.34026480655836816, 0.0, -0.030820651425593648, -0.05298855286760463, 0.004631042145907645,
     0.0022574402290329, -0.00017518572899415777, -4.652109073974323e-05, 3.199786906827506e-06,
     5.716490707927497e-07, -3.5115359899467085e-08, -4.683396243365984e-09, 2.5922092042429565e-10,
     2.7452533823754248e-11, -1.3805762013248818e-12, -1.209162614409876e-13, 5.566431988313063e-15,
     4.149525911377642e-16, -1.7601956336392112e-17, -1.1406071339594603e-18, 4.482254335207806e-20,
     2.5098146575488253e-21, -9.022154251990139e-23),
    (0.2663396578803784, 0.0, -0.1352484275797055, -0.12415326710154216, 0.02765859149719071, 0.009083006748516987,
     -0.0015240951806913092, -0.0002563500559656702, 3.67501876903405e-05, 3.918955649663e-06,
     -5.001657868916468e-07, -3.7968368924035195e-08, 4.39900974380317e-09, 2.5405486118121537e-10,
     -2.7115880516786677e-11, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
)

J1_SMALL = (
    0.5, -0.0625, 0.0026041666666666665, -5.425347222222222e-05, 6.781684027777778e-07, -5.651403356481481e-09,
    3.363930569334215e-11, -1.5017547184527472e-13, 5.214426105722342e-16, -1.4484516953401013e-18,
    3.2919354645526647e-21, -6.234683944948444e-24, 9.985810636564382e-27, -1.3269026869168225e-29,
)

J1_P = (
    (-0.402759395702553, 0.0, 0.05255614585697724, 0.05341044413272481, -0.00517971924563857,
     -0.002233125339147478, 0.00017466429072012055, 4.6208701297458374e-05, -3.0368633802997826e-06,
     -5.727805735140382e-07, 3.2482862982120133e-08, 4.7353805694230664e-09, -2.3621961879296905e-10,
     -2.7988764988632037e-11, 1.2462295886825738e-12, 1.241854694108218e-13, -4.993136596118083e-15,
     -4.28910275388309e-16, 1.5719980581000214e-17, 1.185908998627765e-18, -3.993004301969239e-20,
     -2.6833321136714334e-21, 8.3313915689964e-23, 4.928457802899904e-24, -1.2804238098773345e-25),
    (0.30011575252613254, 0.0, -0.02138921280934158, -0.04697047894974149, 0.003130291726048091,
     0.0021055871432482764, -0.00012550790955145584, -4.499147530293068e-05, 2.4015807963093223e-06,
     5.665270011548331e-07, -2.7273427677991752e-08, -4.720483003545132e-09, 2.0653486761040437e-10,
     2.800572526315466e-11, -1.121638023408366e-12, -1.2445402114744064e-13, 4.5920250361686705e-15,
     4.299786244597685e-16, -1.4699569072564556e-17, -1.18870429881871e-18, 3.7738676295055734e-20,
     2.733474345039033e-21, -4.731418722169026e-23, 0.0, 0.0),
)

Y0_REGULAR = (
    -0.07380429510868723, 0.17760601686906713, -0.016073968025938426, 0.000538602666861655, -9.495005205221546e-06,
    1.0358476033628096e-07, -7.693079900902932e-10, 4.14356573651271e-12, -1.693271517935695e-14,
    5.4310606578548e-17, -1.4038708139145744e-19, 2.9871591749752105e-22, -5.323857951734599e-25,
    8.063719378372661e-28, -1.0508247502839965e-30, 1.190683837533367e-33, -1.1829707991001323e-36,
    9.998590566712836e-40,
)

Y0_P = (
    (0.8794208024971948, 0.0, -0.4920789342629775, 0.22055282848167126, -0.22612171354422897, 0.21894842701352846,
     -0.2048771978842284, 0.197335668587399, -0.19395009378998881, 0.19337627346128602, -0.19506468941582086,
     0.1986609396599917, -0.20397126605594507, 0.21104930381223466, -0.21900852139794985, 0.22384842711520928,
     -0.24062948485805102, 0.31513166087686945, -0.30026904629822443, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (-0.40254267177502423, 0.0, 0.05085590959215824, 0.0585238221051703, -0.006852566677111102,
     -0.0021835188740504242, 0.0001952694024521519, 5.092291381440769e-05, -4.893369334568152e-06,
     -2.9348817602582044e-07, -2.18533973251107e-08, 1.8928159316975806e-08, -3.656761709557903e-09,
     7.668478523910957e-10, -1.8608415655855494e-10, 4.47339515655009e-11, -1.064566052029983e-11,
     2.4745764332440375e-12, -5.847514818226217e-13, 1.684363955673371e-13, -4.28506672038023e-14,
     2.7561083590821604e-15, -2.794275300452964e-16, 1.245285756626224e-15, -3.300035804723624e-16),
    (0.3000976149104752, 0.0, -0.02117523655676953, -0.048024070076259875, 0.0033183482688956315,
     0.002175984016443104, -0.0001406025977408225, -4.595140670688437e-05, 2.7013637927390503e-06,
     5.749349569688458e-07, -3.0984702523609265e-08, -4.717221546965846e-09, 2.3029456505782052e-10,
     2.8268572991639152e-11, -1.3120079335659504e-12, -1.1656272896793783e-13, 4.265621591400451e-15,
     5.42535990021751e-16, -3.23107055521537e-17, 1.1267118401515387e-18, -2.7178130041465555e-19,
     -5.200022388907313e-22, -1.8348177058043937e-20, 0.0, 0.0),
)

Y1_REGULAR = (
    -0.19605709064623894, 0.05434868816051024, -0.0029553053360798338, 7.164268749973962e-05,
    -9.926740619424822e-07, 8.931879621220132e-09, -5.6480245515956583e-11, 2.6494815070087597e-13,
    -9.591486586322492e-16, 2.761635977749734e-18, -6.476490357403274e-21, 1.2611823933443845e-23,
    -2.07123809214846e-26, 2.828899077052926e-29,
)

Y1_P = (
    (0.5207864124022675, 0.0, -0.1185145457490966, -0.032857397405286495, -0.004797811670105455,
     0.00742255333272087, -0.0025952416882643325, 0.0010668529992387723, -0.0005096013042547413,
     0.00023587000862809973, -0.00010776044317919182, 4.9243860841897375e-05, -2.249101973030336e-05,
     1.0268112448162817e-05, -4.6826418443197435e-06, 2.109516082150873e-06, -9.63688350931364e-07,
     5.194930849135285e-07, -2.3321977730392488e-07, 0.0, 0.0, 0.0, 0.0),
    (0.3878529310237099, 0.0, 0.1515608038352278, -0.19908246742335825, -0.004109177280985918,
     0.012094471316062998, 0.00056233558490466, -0.0005216702150543464, 3.997890350665395e-05,
     -6.349377889234561e-06, 3.878027403984792e-06, -1.2560478215469318e-06, 3.648016315910709e-07,
     -1.1081711593590718e-07, 3.3901164125186235e-08, -1.0339793412615486e-08, 3.1494386760725913e-09,
     -9.275695401096927e-10, 2.764700621564753e-10, -1.1160514857781481e-10, 3.609186006755819e-11, 0.0, 0.0),
    (-0.3403180455234406, 0.0, 0.031338677444086686, 0.05094793974342009, -0.004160115934390694,
     -0.0021659987510881076, 0.0001466208928934753, 4.64586790611139e-05, -2.8638625373571097e-06,
     -5.464420654689612e-07, 2.5505145127812073e-08, 5.598034127243967e-09, -3.855623984363385e-10,
     2.277256399676538e-12, -4.437290975104712e-12, 1.1700285222652122e-12, -1.992255014391528e-13,
     3.587858087659264e-14, -6.57325959185917e-15, 1.1208852120555824e-15, -2.3487342031032317e-16,
     6.303769765838194e-17, -9.153135322816587e-18),
    (-0.25912851048611624, 0.0, 0.15186375421302414, 0.11713664042453548, -0.029412021737170262,
     -0.008370846373972056, 0.0015454993551702995, 0.00023636175253227462, -3.642356546830913e-05,
     -3.6573238824205126e-06, 4.93289548977785e-07, 3.55705577935468e-08, -4.301582617258769e-09,
     -2.4297745377700225e-10, 2.691937189528856e-11, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
)

HANKEL_P0 = (
    1.0, -0.001098632812499759, 2.738088367680769e-05, -2.183919136006748e-06, 3.620342434281535e-07,
    -1.0240012227749086e-07, 4.3846077902436296e-08, -2.5492201770028552e-08, 1.7428336636720487e-08,
    -1.1820714131963965e-08, 6.8087455267969336e-09, -2.9099549519940845e-09, 7.904388066946273e-10,
    -1.005604742873207e-10,
)

HANKEL_Q0 = (
    -0.015624999999999993, 0.00014305114745977876, -6.930786132832476e-06, 8.238435687542943e-07,
    -1.8163570428648598e-07, 6.407977381444574e-08, -3.2652786801501207e-08, 2.1497736860358778e-08,
    -1.5756265723198167e-08, 1.0952448484278839e-08, -6.290058846427967e-09, 2.643524328652161e-09,
    -7.018929660183755e-10, 8.710853413958006e-11,
)

HANKEL_P1 = (
    1.0, 0.0018310546874997459, -3.520399330264883e-05, 2.580995402166666e-06, -4.103060179418867e-07,
    1.1318222020040231e-07, -4.767091122354923e-08, 2.741276111079267e-08, -1.8612475013387247e-08,
    1.257311693093175e-08, -7.225458581565394e-09, 3.083845866047802e-09, -8.369591188339824e-10,
    1.0641853925191726e-10,
)

HANKEL_Q1 = (
    0.04687499999999999, -0.00020027160644409134, 8.470960837806329e-06, -9.505888440550363e-07,
    2.0300547556249564e-07, -7.018703939358034e-08, 3.528051220699853e-08, -2.3018273551767012e-08,
    1.6776698385973662e-08, -1.162392761940596e-08, 6.6631058850805375e-09, -2.7971090141910677e-09,
    7.421288707533233e-10, -9.205636588850775e-11,
)

I0_SMALL = (
    1.0, 16.0, 63.9999999999999, 113.77777777778236, 113.77777777766778, 72.81777777931286, 32.363456776505,
    10.567659441270933, 2.6419145022228427, 0.5218607228191273, 0.08349541590484427, 0.011044295210287727,
    0.0012231596639112714, 0.00011889297799101144, 8.119469989296956e-06, 1.060996950431324e-06,
)

I0_LARGE = (
    0.39894228040143265, 0.006233473131315842, 0.0004382910727986533, 5.7069566287891456e-05,
    1.0909873433492004e-05, 3.033633675124117e-06, -2.6790109536707365e-06, 3.330690150712552e-05,
    -0.00022343719165145596, 0.0011356128372559814, -0.004398127913078062, 0.013141844244105133,
    -0.030486161746418296, 0.05499618161135124, -0.07692439695801187, 0.08276464379089415, -0.06754062910368432,
    0.04087184895410716, -0.01769056999286157, 0.005152864715391029, -0.0008995533237921918, 7.053686148985553e-05,
)

I1_SMALL = (
    0.5, 4.0, 10.66666666666666, 14.22222222222246, 11.37777777777256, 6.068148148215668, 2.3116754844475986,
    0.6604787131661213, 0.14677303414594356, 0.026093021612521625, 0.0037952703637498123, 0.0004601503994940628,
    4.7067959946418296e-05, 4.233615917990266e-06, 2.7464436944927765e-07, 3.258700133399872e-08,
)

I1_LARGE = (
    0.3989422804014327, -0.018700419393863514, -0.0007304851254017314, -7.989725142004468e-05,
    -1.403008228495691e-05, -3.662329169357167e-06, 2.6980705788678037e-06, -3.4907216119936044e-05,
    0.00023326504224871722, -0.001182292177694213, 0.004565808132431876, -0.01360279259715562,
    0.031458439389309235, -0.05656431438586973, 0.07883643369850755, -0.08448751663301571, 0.06863886061078164,
    -0.04132169921279091, 0.017775422388909955, -0.005138622398578332, 0.0008884704688405648,
    -6.877278952566362e-05,
)


# the derivatives of the small-argument polynomials: the rounding error of x^2/64 goes through them
I0_SLOPE = tuple(k * c for k, c in enumerate(I0_SMALL))[1:]
I1_SLOPE = tuple(k * c for k, c in enumerate(I1_SMALL))[1:]


# ------------------------------------------------------------------------------- pieces


@jit
def on_pieces(x, pieces: core.constexpr, tables: core.constexpr):
    """The piecewise polynomial of a Bessel function at x (>= pieces[0][0]) as a double-word number:
    with t = x - z (in double-word), P(t) in a piece centered on z, t P(t) in a piece around a zero z."""
    zero = full_like(x, 0.0)
    piece = zero
    zh = full_like(x, pieces[0][1][0])
    zl = full_like(x, pieces[0][1][1])
    has_zero = x == x if pieces[0][2] else x != x
    for i in core.static_range(1, len(pieces)):
        later = x >= pieces[i][0]
        piece = core.where(later, i * 1.0, piece)
        zh = core.where(later, pieces[i][1][0], zh)
        zl = core.where(later, pieces[i][1][1], zl)
        has_zero = core.where(later, pieces[i][2], has_zero)
    th, tl = two_sum(x, -zh)  # exact near the zero: x and zh are close
    th, tl = fast_two_sum(th, tl - zl)
    ph, pl = poly_pieces(th, piece, tables)
    ph, pl = fast_two_sum(ph, pl)
    qh, ql = dw_mul(th, tl, ph, pl)
    return core.where(has_zero, qh, ph), core.where(has_zero, ql, pl)


@jit
def log_times(x, fh, fl):
    """(2/pi) log(x) (fh + fl) as a double-word number, for positive finite x."""
    lh, ll = log_dw(x)
    mh, ml = dw_mul(lh, ll, fh, fl)
    return dw_mul(mh, ml, full_like(x, TWO_OVER_PI_DW[0]), full_like(x, TWO_OVER_PI_DW[1]))


@jit
def j_below_eight(a, order: core.constexpr):
    """j0(a) or j1(a) for 0 <= a < 8: the small-argument polynomial, then the pieces."""
    if order == 0:
        r = core.where(a < J0_PIECES[0][0], poly(a * a, J0_SMALL),
                       on_pieces(math.max(a, J0_PIECES[0][0]), J0_PIECES, J0_P)[0])
    else:
        r = core.where(a < J1_PIECES[0][0], a * poly(a * a, J1_SMALL),
                       on_pieces(math.max(a, J1_PIECES[0][0]), J1_PIECES, J1_P)[0])
    return r


@jit
def hankel(a):
    """(1 / sqrt(pi b), sin b, cos b, 8 / b, 64 / b^2) for Hankel's form at b = max(a, 8)."""
    b = math.max(a, HANKEL_FROM)
    scale = math.div_rn(full_like(a, 1.0), math.sqrt_rn(b * 3.141592653589793))
    s, c = sincos(b)
    return scale, s, c, math.div_rn(full_like(a, 8.0), b), math.div_rn(full_like(a, 64.0), b * b)


@jit
def bessel_j(a, orders: core.constexpr):
    """j_k(a) for k in `orders` (a tuple of 0 and/or 1), a >= 0 finite, sharing one reduction."""
    scale, s, c, eight, u = hankel(a)
    out = ()
    for k in orders:
        if k == 0:
            far = scale * (poly(u, HANKEL_P0) * (c + s) - eight * poly(u, HANKEL_Q0) * (s - c))
        else:
            far = scale * (poly(u, HANKEL_P1) * (s - c) + eight * poly(u, HANKEL_Q1) * (s + c))
        out = out + (core.where(a >= HANKEL_FROM, far, j_below_eight(math.min(a, HANKEL_FROM), k)),)
    return out


@jit
def bessel_y(b, orders: core.constexpr):
    """y_k(b) for k in `orders` (a tuple of 0 and/or 1), b > 0 finite: the logarithmic form near
    0, the pieces, Hankel's form from 8 on, sharing one reduction."""
    scale, s, c, eight, u = hankel(b)
    out = ()
    for k in orders:
        th, tl = log_times(b, j_below_eight(math.min(b, 2.5), k), full_like(b, 0.0))
        if k == 0:
            near = th + (tl + poly(b * b, Y0_REGULAR))
            use_log = (b < Y0_LOG_FORM[0]) | ((b >= Y0_LOG_FORM[1]) & (b < Y0_LOG_FORM[2]))
            mid = core.where(use_log, near, on_pieces(math.max(b, Y0_PIECES[0][0]), Y0_PIECES, Y0_P)[0])
            far = scale * (poly(u, HANKEL_P0) * (s - c) + eight * poly(u, HANKEL_Q0) * (c + s))
        else:
            ih, il = mul_dw_const(math.div_rn(full_like(b, 1.0), b), TWO_OVER_PI_DW[0], TWO_OVER_PI_DW[1])
            near = (th - ih) + ((tl - il) + b * poly(b * b, Y1_REGULAR))
            mid = core.where(b < Y1_LOG_FORM, near, on_pieces(math.max(b, Y1_PIECES[0][0]), Y1_PIECES, Y1_P)[0])
            far = scale * (eight * poly(u, HANKEL_Q1) * (s - c) - poly(u, HANKEL_P1) * (s + c))
        out = out + (core.where(b >= HANKEL_FROM, far, mid),)
    return out


@jit
def j0_f64(x):
    a = math.abs(x)
    (j0,) = bessel_j(core.where(a < float("inf"), a, full_like(x, 0.0)), (0,))
    r = core.where(a == float("inf"), full_like(x, 0.0), j0)
    return core.where(is_nan(x), x, r)


@jit
def j1_f64(x):
    a = math.abs(x)
    (j1,) = bessel_j(core.where(a < float("inf"), a, full_like(x, 0.0)), (1,))
    r = core.where(a == float("inf"), full_like(x, 0.0), j1)
    r = core.where(sign_bit(x), -r, r)  # odd
    return core.where(is_nan(x), x, r)


@jit
def y_specials(x, r):
    """y0, y1, yn at the edges: 0 at +inf, -inf at 0, NaN below 0 (r elsewhere)."""
    r = core.where(x == float("inf"), full_like(x, 0.0), r)
    r = core.where(x == 0.0, full_like(x, float("-inf")), r)
    return core.where((x < 0.0) | is_nan(x), full_like(x, float("nan")), r)


@jit
def y0_f64(x):
    (y0,) = bessel_y(core.where((x > 0.0) & (x < float("inf")), x, full_like(x, 1.0)), (0,))
    return y_specials(x, y0)


@jit
def y1_f64(x):
    (y1,) = bessel_y(core.where((x > 0.0) & (x < float("inf")), x, full_like(x, 1.0)), (1,))
    return y_specials(x, y1)


# ---------------------------------------------------------------------------------- jn yn


@jit
def yn_f64(n, x):
    """Y_n(x) by the forward recurrence Y(k+1) = (2k/x) Y(k) - Y(k-1) from y0 and y1 (stable for Y)."""
    m = math.abs(n)
    ok = (x > 0.0) & (x < float("inf"))
    b = core.where(ok, x, full_like(x, 1.0))
    prev, cur = bessel_y(b, (0, 1))
    for k in range(1, block_max(m)):
        nxt = (2.0 * k.to(float64)) / b * cur - prev
        step = (k < m) & (math.abs(cur) < float("inf"))  # stay at -inf once the values overflow
        prev = core.where(step, cur, prev)
        cur = core.where(step, nxt, cur)
    r = core.where(m == 0, prev, cur)
    r = core.where((n < 0) & ((m & 1) == 1), -r, r)
    return y_specials(x, r)


@jit
def jn_f64(n, x):
    """J_n(x): forward recurrence from j0, j1 where |x| > n; Miller's backward recurrence where
    |x| <= n, from K = 2 floor((n + sqrt(160 n)) / 2) with J(K+1) = 0, J(K) = 1, normalized by
    J0 + 2 (J2 + J4 + ...) = 1 and rescaled by 2^-600 whenever the values pass 2^600."""
    m = math.abs(n)
    a = math.abs(x)
    b = core.where(a < float("inf"), a, full_like(x, 1.0))
    mf = m.to(float64)
    forward = b > mf
    # forward: k = 1 .. m - 1
    prev, cur = bessel_j(b, (0, 1))
    fwd_m = core.where(forward, m, 0)
    for k in range(1, block_max(fwd_m)):
        nxt = (2.0 * k.to(float64)) / b * cur - prev
        step = k < fwd_m
        prev = core.where(step, cur, prev)
        cur = core.where(step, nxt, cur)
    fwd = core.where(m == 0, prev, cur)
    # backward: j = K .. 1, the element joins when j <= its K
    start = core.where(forward | (m == 0), 0, 2 * ((m + math.sqrt_rn(160.0 * mf).to(int32)) // 2))
    safe_b = core.where(b > 0.0, b, full_like(x, 1.0))
    zero = full_like(x, 0.0)
    bj = full_like(x, 1.0)
    bjp = zero
    total = zero
    ans = zero
    for j in range(block_max(start), 0, -1):
        active = j <= start
        bjm = (2.0 * j.to(float64)) / safe_b * bj - bjp
        new_bjp = bj
        new_bj = bjm
        big = math.abs(new_bj) > 2.0**600
        new_bj = core.where(big, new_bj * 2.0**-600, new_bj)
        new_bjp = core.where(big, new_bjp * 2.0**-600, new_bjp)
        new_ans = core.where(big, ans * 2.0**-600, ans)
        new_total = core.where(big, total * 2.0**-600, total)
        new_total = core.where(((j - 1) & 1) == 0, new_total + new_bj, new_total)
        new_ans = core.where(j == m, new_bjp, new_ans)
        bj = core.where(active, new_bj, bj)
        bjp = core.where(active, new_bjp, bjp)
        total = core.where(active, new_total, total)
        ans = core.where(active, new_ans, ans)
    bwd = ans / (2.0 * total - bj)
    r = core.where(forward | (m == 0), fwd, bwd)
    r = core.where((b == 0.0) & (m != 0), zero, r)
    r = core.where(a == float("inf"), zero, r)
    odd = (m & 1) == 1
    r = core.where(odd & ((n < 0) != (x < 0.0)), -r, r)
    return core.where(is_nan(x), x, r)


# ---------------------------------------------------------------------------------- i0 i1


@jit
def bessel_i_f64(x, small_coeffs: core.constexpr, slope_coeffs: core.constexpr, large_coeffs: core.constexpr,
                 odd: core.constexpr):
    """I0 or I1 (odd) of an fp64 x: P(x^2/64) (times x for I1) below 8, e^|x| / sqrt|x| P(8/|x|) above."""
    a = math.abs(x)
    zh, zl = two_prod(a * 0.125, a * 0.125)
    small = math.fma(zl, poly(zh, slope_coeffs), poly(zh, small_coeffs))  # P(zh + zl), zl to first order
    if odd:
        small = a * small
    b = core.where(a >= 8.0, math.min(a, 800.0), full_like(x, 8.0))
    ph, pl, k = exp_dw(b, full_like(x, 0.0))
    w = poly(math.div_rn(full_like(x, 8.0), b), large_coeffs)
    large = scale2(math.div_rn(ph * w, math.sqrt_rn(b)), k)
    r = core.where(a < 8.0, small, large)
    if odd:
        r = copysign(r, x)
    return core.where(is_nan(x), x, r)


# -------------------------------------------------------------------------- fp32 via fp64


@jit
def _via_f64(fn: core.constexpr, x):
    if x.dtype == float32:
        return fn(x.to(float64)).to(float32)
    return fn(x)


@jit
def j0(x):
    return _via_f64(j0_f64, x)


@jit
def j1(x):
    return _via_f64(j1_f64, x)


@jit
def y0(x):
    return _via_f64(y0_f64, x)


@jit
def y1(x):
    return _via_f64(y1_f64, x)


@jit
def i0_f64(x):
    return bessel_i_f64(x, I0_SMALL, I0_SLOPE, I0_LARGE, False)


@jit
def i1_f64(x):
    return bessel_i_f64(x, I1_SMALL, I1_SLOPE, I1_LARGE, True)


@jit
def cyl_bessel_i0(x):
    return _via_f64(i0_f64, x)


@jit
def cyl_bessel_i1(x):
    return _via_f64(i1_f64, x)


@jit
def jn(n, x):
    if x.dtype == float32:
        return jn_f64(n, x.to(float64)).to(float32)
    return jn_f64(n, x)


@jit
def yn(n, x):
    if x.dtype == float32:
        return yn_f64(n, x.to(float64)).to(float32)
    return yn_f64(n, x)
