"""The runtime headers generated kernels include: found by the compilers, hashed into
the cache key, and in agreement with what the translator writes inline."""

from __future__ import annotations

import re

from pkernels.build import cache, compiler, runtime
from pkernels.translate.cpp_prelude import ATOMIC_OPERATIONS, atomic_operation_struct, atomic_update


def test_the_atomic_structs_of_the_header_are_the_inline_updates():
    text = (runtime.INCLUDE_DIR / "pkernels" / "cpu.hpp").read_text()
    structs = dict(re.findall(r"^PK_ATOMIC_OPERATION\((\w+), (.*)\)$", text, re.MULTILINE))
    variants = [(base, False) for base in ATOMIC_OPERATIONS] + [("div", True)]
    expected = {
        atomic_operation_struct(base, integer): atomic_update(base, integer, "a", "b", "file, line")
        for base, integer in variants
    }
    assert structs == expected


def test_editing_a_header_changes_every_cache_key(tmp_path, monkeypatch):
    include = tmp_path / "include"
    (include / "pkernels").mkdir(parents=True)
    header = include / "pkernels" / "cpu.hpp"
    header.write_text("// one\n")
    monkeypatch.setattr(runtime, "INCLUDE_DIR", include)
    runtime.runtime_digest.cache_clear()
    try:
        first = runtime.runtime_digest()
        header.write_text("// two\n")
        runtime.runtime_digest.cache_clear()
        second = runtime.runtime_digest()
    finally:
        runtime.runtime_digest.cache_clear()
    assert first != second
    keys = {cache.cache_key("src", "g++", "12", ("-O3",), "", d) for d in (first, second)}
    assert len(keys) == 2


def test_a_kernel_source_includes_the_runtime_rather_than_carrying_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path / "cache"))
    source = (
        '#include "pkernels/cpu.hpp"\nextern "C" int pk_probe() { return pk_rt::thread_id(); }\n'
    )
    module = compiler.build(source, False, "a probe")
    assert module.source.read_text() == source
    assert module.library.exists()
