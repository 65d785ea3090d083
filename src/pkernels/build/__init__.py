"""Compiling generated C++ into loadable modules, cached on disk."""
