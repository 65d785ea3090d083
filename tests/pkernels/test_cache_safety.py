"""The kernel cache loads only what this user built: a cache directory another user can
write is refused, a build whose bytes changed (planted, cut short) is built again
instead of loaded, a full disk names the path it could not write, and processes
compiling one kernel together compile it once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pkt_support import load_module

import pkernels as pk
from pkernels.build.elf import elf_problem
from pkernels.errors import CacheWriteError, UnsafeCacheError

KERNEL = """\
import pkernels as pk


@pk.workunit
def poly(i, x, out):
    out[i] = 3 * x[i] * x[i] + 1
"""
# Same name and parameters, so the same exported symbols: its library would load in
# poly's place and compute something else.
IMPOSTOR = KERNEL.replace("+ 1", "- 666")

# A child process: dispatch poly from module `kmod` in its directory, print the result.
CHILD = """\
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import pkernels as pk
import kmod

out = np.zeros(4)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), kmod.poly, x=np.arange(4.0), out=out)
print(out.tolist())
"""
EXPECTED = [1.0, 4.0, 13.0, 28.0]
NOBODY = 65534


def _env(cache: Path, **extra: str) -> dict[str, str]:
    src = str(Path(pk.__file__).resolve().parents[1])
    pythonpath = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PKERNELS_CACHE_DIR=str(cache), PYTHONPATH=pythonpath, **extra)


def _run_child(directory: Path, cache: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run CHILD over ``directory/kmod.py`` with the cache at ``cache``."""
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(directory)],
        env=_env(cache, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _dispatch(module) -> list[float]:
    out = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), module.poly, x=np.arange(4.0), out=out)
    return out.tolist()


def _library(module) -> Path:
    (kernel,) = module.poly.__pkernels__.specializations.values()
    return kernel.library


def _forget(module) -> None:
    """Drop the in-process memo, so the next dispatch goes to the disk cache."""
    module.poly.__pkernels__.specializations.clear()


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "kcache"
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(root))
    return root


# ------------------------------------------------------------------ who may write


@pytest.mark.parametrize(
    "mode, who",
    [(0o777, "its group and every user"), (0o770, "its group"), (0o1703, "every user")],
    ids=["0777", "0770", "sticky-0703"],
)
def test_a_cache_root_others_can_write_is_refused(tmp_path, cache, mode, who):
    cache.mkdir(mode=0o700)
    cache.chmod(mode)
    module = load_module(tmp_path, KERNEL)
    with pytest.raises(UnsafeCacheError) as info:
        _dispatch(module)
    message = str(info.value)
    assert f"the kernel cache {cache}: it is writable by {who} (mode {mode:04o})" in message
    assert f"chmod go-w '{cache}'" in message and "PKERNELS_CACHE_DIR" in message
    assert not any(cache.iterdir())  # nothing compiled into it


def test_a_cache_root_of_another_user_is_refused(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        root = tmp_path / "theirs"
        root.mkdir(mode=0o700)
        os.chown(root, NOBODY, NOBODY)
        owner = f"uid {NOBODY}"
    else:
        root = Path("/")  # root's, and never this user's
        owner = "uid 0"
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(root))
    module = load_module(tmp_path, KERNEL)
    with pytest.raises(UnsafeCacheError, match=f"it belongs to {owner}") as info:
        _dispatch(module)
    assert f"the kernel cache {root}:" in str(info.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the cache to another user")
def test_a_library_planted_in_another_users_open_cache_does_not_run(tmp_path):
    # The audit's attack: another user's mode-0777 cache, a kernel.so planted at the
    # path pkernels computes for the kernel; it ran as root.
    (tmp_path / "kmod.py").write_text(KERNEL)
    impostor = tmp_path / "impostor"
    impostor.mkdir()
    (impostor / "kmod.py").write_text(IMPOSTOR)
    theirs = tmp_path / "theirs"
    assert _run_child(impostor, theirs).stdout.strip() == str([v - 667 for v in EXPECTED])
    (entry,) = theirs.glob("*/*")
    planted = next(p for p in entry.iterdir() if p.name == "kernel.so")
    # Give the planted build the key of the real kernel, as the attacker would.
    ours = tmp_path / "ours"
    assert _run_child(tmp_path, ours).stdout.strip() == str(EXPECTED)
    (real_entry,) = ours.glob("*/*")
    target = theirs / real_entry.parent.name / real_entry.name
    target.parent.mkdir(exist_ok=True)
    shutil.copytree(entry, target, dirs_exist_ok=True)
    shutil.copy(planted, target / "kernel.so")
    for path in [theirs, *theirs.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        path.chmod(0o777)
    done = _run_child(tmp_path, theirs)
    assert done.returncode == 1
    assert "UnsafeCacheError: pkernels will not use the kernel cache" in done.stderr
    assert "666" not in done.stdout


def test_a_cache_entry_others_can_write_is_refused(tmp_path, cache):
    module = load_module(tmp_path, KERNEL)
    assert _dispatch(module) == EXPECTED
    entry = _library(module).parent
    entry.chmod(0o775)
    _forget(module)
    with pytest.raises(UnsafeCacheError) as info:
        _dispatch(module)
    assert f"the cached build {entry}: it is writable by its group (mode 0775)" in str(info.value)
    assert f"rm -r '{entry}'" in str(info.value)
    entry.chmod(0o700)
    _library_path = entry / "kernel.so"
    _library_path.chmod(0o757)
    _forget(module)
    with pytest.raises(UnsafeCacheError, match="writable by every user"):
        _dispatch(module)


# ------------------------------------------------------------------ what is loaded


def test_a_library_that_is_not_the_recorded_build_is_built_again(tmp_path, cache):
    module = load_module(tmp_path, KERNEL)
    impostor = load_module(tmp_path, IMPOSTOR)
    assert _dispatch(module) == EXPECTED
    assert _dispatch(impostor) == [v - 667 for v in EXPECTED]
    library = _library(module)
    # Same user, same modes, a new file (this process has the old one mapped): only the
    # bytes differ.
    planted = library.with_name("planted")
    shutil.copy(_library(impostor), planted)
    os.replace(planted, library)
    _forget(module)
    with pytest.warns(RuntimeWarning, match="do not match the checksum recorded"):
        assert _dispatch(module) == EXPECTED
    record = library.with_name("kernel.so.sha256")
    digest = subprocess.run(
        ["sha256sum", "-c", record.name], cwd=library.parent, capture_output=True, text=True
    )
    assert digest.stdout.strip() == "kernel.so: OK"


def test_a_library_cut_in_half_is_built_again_not_a_sigbus(tmp_path):
    (tmp_path / "kmod.py").write_text(KERNEL)
    cache = tmp_path / "kcache"
    assert _run_child(tmp_path, cache).stdout.strip() == str(EXPECTED)
    (library,) = cache.glob("*/*/kernel.so")
    size = library.stat().st_size
    os.truncate(library, size // 2)
    done = _run_child(tmp_path, cache)
    assert done.returncode == 0, done.stderr  # was -7: SIGBUS, no message
    assert done.stdout.strip() == str(EXPECTED)
    assert "was not loaded" in done.stderr and "building it again" in done.stderr
    assert library.stat().st_size == size


def test_elf_problem_finds_every_cut():
    data = Path(sys.executable).read_bytes()
    assert elf_problem(data) is None
    for cut in (0, 3, 20, 63, 200, len(data) // 2, len(data) - 1):
        assert elf_problem(data[:cut]) is not None, cut
    assert elf_problem(b"#!/bin/sh\n" * 10) == "not an ELF file (100 bytes)"


# ------------------------------------------------------------------ writes that fail


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=4k none '{tmp_path}'"],
        capture_output=True,
    )
    return probe.returncode == 0


def _child_on_small_disk(
    directory: Path, mount: Path, size: int, readonly: bool = False
) -> subprocess.CompletedProcess[str]:
    """CHILD with its cache on a fresh tmpfs of ``size`` bytes at ``mount`` (in a mount
    namespace of its own: no privileges needed where user namespaces are allowed)."""
    cache = mount / "kcache"
    script = (
        f"mount -t tmpfs -o size={size} none '{mount}' && mkdir -m 700 '{cache}'"
        + (f" && mount -o remount,ro '{mount}'" if readonly else "")
        + ' && exec "$0" -c "$1" "$2"'
    )
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, sys.executable, CHILD, str(directory)],
        env=_env(cache),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_full_disk_names_the_file_that_could_not_be_written(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if not _can_mount_tmpfs(mount):
        pytest.skip("cannot mount a small tmpfs here (no user namespaces)")
    (tmp_path / "kmod.py").write_text(KERNEL)
    reference = tmp_path / "reference"
    assert _run_child(tmp_path, reference).stdout.strip() == str(EXPECTED)
    (cpp,) = reference.glob("*/*/kernel.cpp")
    key = cpp.parent.relative_to(reference)
    page = 4096

    # No room for the generated source.
    done = _child_on_small_disk(tmp_path, mount, page)
    assert done.returncode == 1
    assert (
        f"CacheWriteError: pkernels could not write {mount}/kcache/{key}/kernel.cpp: "
        "No space left on device. The disk (or your quota) is full" in done.stderr
    ), done.stderr
    assert "bug in pkernels" not in done.stderr

    # Room for the source, none for the library: the linker fails (or, worse, stops
    # at a page boundary and exits 0: then the library is cut short).
    room = -(-cpp.stat().st_size // page) * page + page
    done = _child_on_small_disk(tmp_path, mount, room)
    assert done.returncode == 1
    assert (
        f"CacheWriteError: pkernels could not write {mount}/kcache/{key}/kernel.so: " in done.stderr
    ), done.stderr
    assert "bug in pkernels" not in done.stderr


def test_a_read_only_cache_names_the_directory(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if not _can_mount_tmpfs(mount):
        pytest.skip("cannot mount a small tmpfs here (no user namespaces)")
    (tmp_path / "kmod.py").write_text(KERNEL)
    done = _child_on_small_disk(tmp_path, mount, 1 << 20, readonly=True)
    assert done.returncode == 1
    assert f"pkernels could not create the cache directory {mount}/kcache/" in done.stderr
    assert "Read-only file system. Set PKERNELS_CACHE_DIR to a directory you can write" in (
        done.stderr
    )


def test_a_cache_path_that_cannot_be_made_says_so(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(blocker / "kcache"))
    module = load_module(tmp_path, KERNEL)
    with pytest.raises(CacheWriteError) as info:
        _dispatch(module)
    assert str(info.value).startswith(
        f"pkernels could not create the kernel cache directory {blocker / 'kcache'}: "
        "Not a directory. Set PKERNELS_CACHE_DIR to a directory you can write"
    )


# ------------------------------------------------------------------ one compile


def test_processes_starting_together_compile_a_kernel_once(tmp_path):
    """Six processes on an empty cache: the compiler runs once (it ran six times)."""
    (tmp_path / "kmod.py").write_text(KERNEL)
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "counting-g++"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$1" in --version) ;; *) echo "$$" >> "{log}" ;; esac\n'
        f'exec "{shutil.which("g++")}" "$@"\n'
    )
    wrapper.chmod(0o755)
    go = tmp_path / "go"
    waiting = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.001)\n"
    cache = tmp_path / "kcache"
    env = _env(cache, PKERNELS_CXX=str(wrapper))
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD.replace("import kmod\n", "import kmod\n" + waiting),
                str(tmp_path),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(6)
    ]
    go.touch()
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out.strip() == str(EXPECTED)
    assert len(log.read_text().splitlines()) == 1
    (entry,) = cache.glob("*/*")
    assert sorted(p.name for p in entry.iterdir()) == [
        "kernel.cpp", "kernel.so", "kernel.so.sha256", "lock"
    ]  # fmt: skip
    assert stat.S_IMODE((entry / "kernel.so").stat().st_mode) == 0o700
