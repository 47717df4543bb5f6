"""Blocked matrix multiply, C = A @ B, in numpy tiles of BLOCK x BLOCK.

Every tile product is one numpy call, so small tiles pay Python overhead per
call and large tiles let the BLAS routine do the work.
"""

import numpy as np

BLOCK = 16


def matmul(a, b):
    n, k = a.shape
    m = b.shape[1]
    c = np.zeros((n, m), dtype=a.dtype)
    for i in range(0, n, BLOCK):
        for j in range(0, m, BLOCK):
            tile = c[i : i + BLOCK, j : j + BLOCK]
            for p in range(0, k, BLOCK):
                tile += a[i : i + BLOCK, p : p + BLOCK] @ b[p : p + BLOCK, j : j + BLOCK]
    return c
