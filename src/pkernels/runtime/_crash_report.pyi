def install(addr2line: str) -> None:
    """Install the crash report for kernels (once; later calls do nothing)."""

def register(library: str, kernel: str) -> None:
    """Name the workunit whose kernel library ``library`` is, for reports."""
