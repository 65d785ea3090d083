"""Python kernel source -> typed kernel IR -> C++ text (with ``#line`` mapping)."""
