"""Linear algebra over views, as PyKokkos' ``pykokkos.linalg``: ``l3_blas.dgemm``."""
