"""Linear algebra and products: matmul, dot, einsum, tensordot, det, solve, inv, cholesky, eigh, svd, sparse @ dense."""
