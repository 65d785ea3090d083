"""Running kernels: argument marshalling, loading, launching, dispatch hooks."""
