"""pkernels.linalg.l3_blas.dgemm, PyKokkos' pykokkos.linalg.l3_blas.dgemm: a kernel on
the default space, checked against NumPy's matrix product."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk
from pkernels.linalg.l3_blas import dgemm


@pytest.mark.parametrize("shapes", [((3, 3), (3, 3)), ((11, 7), (7, 5)), ((1, 4), (4, 1))])
def test_dgemm_is_alpha_a_b_plus_beta_c_on_every_space(space, shapes):
    pk.set_default_space(space)
    rng = np.random.default_rng(sum(shapes[0]))
    a, b = rng.random(shapes[0]), rng.random(shapes[1])
    c = rng.random((shapes[0][0], shapes[1][1]))
    product = dgemm(2.5, pk.array(a), pk.array(b))
    assert isinstance(product, pk.View) and product.shape == c.shape
    np.testing.assert_allclose(product, 2.5 * (a @ b), rtol=1e-13)
    with_c = dgemm(alpha=0.5, view_a=a, view_b=b, beta=3.0, view_c=c, tile_width=2)
    np.testing.assert_allclose(with_c, 0.5 * (a @ b) + 3.0 * c, rtol=1e-13)
    np.testing.assert_allclose(dgemm(1.0, a, b, 0.0, c), a @ b, rtol=1e-13)  # beta 0: C unread


def test_dgemm_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="Second dimensions shape of a is 3 .* b, 4"):
        dgemm(1.0, np.zeros((4, 3)), np.zeros((4, 3), np.int32))
    with pytest.raises(ValueError, match=r"view_c has shape \(2, 2\), the product \(4, 3\)"):
        dgemm(1.0, np.zeros((4, 2)), np.zeros((2, 3)), 1.0, np.zeros((2, 2)))
