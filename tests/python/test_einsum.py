"""The eigen backend's Einsum (transposes plus batched GEMM,
frameworks/eigen/einsum.cc) against NumPy's einsum on every kind of
equation: matrix products, attention's two contractions, several contracted
or kept labels, transposes, diagonals, traces, sums, outer products, an
ellipsis that broadcasts, three operands and an implicit output. Gradients
against float64 finite differences (deep500.check_gradient)."""
import numpy as np
import pytest

import deep500

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores: B read transposed
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),  # attention values
    ("bqhd,bkhd->bhqk", [(2, 4, 3, 5), (2, 6, 3, 5)]),  # heads inside: both operands gathered
    ("bhqk,bkhd->bqhd", [(2, 3, 4, 6), (2, 6, 3, 5)]),  # the product scattered to the output
    ("abcd,cdef->abef", [(2, 3, 4, 5), (4, 5, 2, 3)]),  # two contracted, two kept labels a side
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),  # contracted labels split around a kept one
    ("ij,kj->jik", [(3, 4), (5, 4)]),  # batch label in the middle, output permuted
    ("ij,ij->i", [(3, 4), (3, 4)]),  # row-wise dot products
    ("i,j->ij", [(3,), (4,)]),  # outer product
    ("bij->bji", [(2, 3, 4)]),  # a transpose
    ("ii->i", [(4, 4)]),  # a diagonal
    ("ii", [(4, 4)]),  # the trace, implicit output
    ("ij->", [(3, 4)]),  # everything summed
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),  # implicit output: b, i, k
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),  # ellipsis dims broadcast
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),  # three operands
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # a bilinear form
    ("ab,ab,ab->", [(2, 3), (2, 3), (2, 3)]),
]


def inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("equation,shapes", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy(equation, shapes, dtype):
    xs = inputs(shapes, dtype)
    (y,) = deep500.run_operator(deep500.op("Einsum", equation=equation), xs, "eigen")
    expected = np.einsum(equation, *[x.astype(np.float64) for x in xs])
    assert y.dtype == dtype and y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("equation,shapes", [c for c in CASES if len(c[1]) <= 2])
def test_gradient_matches_finite_differences(equation, shapes):
    r = deep500.check_gradient(deep500.op("Einsum", equation=equation),
                               inputs(shapes, np.float64, seed=1), "eigen")
    assert r["passed"] and r["method"] == "finite differences", r


def test_bad_equations_are_errors():
    with pytest.raises(deep500.Error, match="2 operand terms but the node has 1 inputs"):
        deep500.run_operator(deep500.op("Einsum", equation="ij,jk->ik"),
                             inputs([(2, 2)], np.float32), "eigen")
    with pytest.raises(deep500.Error, match="size 3 and 4"):
        deep500.run_operator(deep500.op("Einsum", equation="ij,jk->ik"),
                             inputs([(2, 3), (4, 2)], np.float32), "eigen")
