"""The kernels of bench_exact_math.py: Python's x ** 2 and the product g++ made of it."""

import pkernels as pk


@pk.workunit
def power(i: int, x: pk.View1D[pk.double], y: pk.View1D[pk.double]) -> None:
    y[i] = x[i] ** 2


@pk.workunit
def product(i: int, x: pk.View1D[pk.double], y: pk.View1D[pk.double]) -> None:
    y[i] = x[i] * x[i]
