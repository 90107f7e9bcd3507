"""graft's build backend (PEP 517): `pip install .` builds the Python package with CMake and the
compilers and libraries Debian packages, with nothing from a package index.

pyproject.toml names this module with `backend-path`, and it requires no other package, so pip's
isolated build environment stays empty and the build works offline. It configures a build tree
(build/wheel; or builds the `graft_python` target of an existing one named by GRAFT_BUILD_DIR, as
tools/python.sh and the tests do), then writes a wheel of build/<tree>/python/graft: the package's .py
files and the extension `_graft`, which links graft's C++ library in.
"""
import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = "graft"
SUMMARY = "A deep learning toolkit in C++ with JAX's composable function transformations"


def _version():
    m = re.search(r"project\(graft VERSION ([0-9]+\.[0-9]+\.[0-9]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        raise RuntimeError("graft_build: no version in CMakeLists.txt's project() call")
    return m.group(1)


def _tag():
    """The wheel's tag: the extension is built for this interpreter and platform."""
    impl = "cp%d%d" % sys.version_info[:2]
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{plat}"


def _metadata():
    return "\n".join([
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        "License: Apache-2.0",
        "Requires-Python: >=3.9",
        "Requires-Dist: numpy",
        "",
        "graft: grad, jvp, vjp, vmap, jit and make_jaxpr over a typed IR, eager by default, compiled by jit, "
        "with CPU and CUDA backends. See README.md.",
        "",
    ])


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = pathlib.Path(metadata_directory) / _dist_info()
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata())
    return d.name


def _run(cmd):
    print("graft_build:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _build_package(config_settings):
    """Builds the package; returns the folder holding it (…/python/graft)."""
    given = os.environ.get("GRAFT_BUILD_DIR") or (config_settings or {}).get("build-dir")
    build = pathlib.Path(given).resolve() if given else ROOT / "build" / "wheel"
    if not (build / "CMakeCache.txt").exists():
        cmd = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DGRAFT_BUILD_TESTS=OFF",
               "-DGRAFT_BUILD_EXAMPLES=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        _run(cmd)
    _run(["cmake", "--build", str(build), "--target", "graft_python"])
    pkg = build / "python" / "graft"
    if not any(pkg.glob("_graft*.so")):
        raise RuntimeError(f"graft_build: no extension module in {pkg} (is pybind11-dev installed? see README.md)")
    return pkg


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    pkg = _build_package(config_settings)
    tag = _tag()
    wheel = pathlib.Path(wheel_directory) / f"{NAME}-{_version()}-{tag}.whl"
    tmp = wheel.with_suffix(".tmp")
    records = []
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        def add(arc, data):
            z.writestr(arc, data)
            records.append(_record_line(arc, data))

        for f in sorted(pkg.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                add(f"graft/{f.relative_to(pkg).as_posix()}", f.read_bytes())
        info = _dist_info()
        add(f"{info}/METADATA", _metadata().encode())
        add(f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: graft_build\nRoot-Is-Purelib: false\nTag: {tag}\n".encode())
        add(f"{info}/LICENSE", (ROOT / "LICENSE").read_bytes())
        add(f"{info}/top_level.txt", b"graft\n")
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    tmp.replace(wheel)  # a half-written wheel never has the wheel's name
    return wheel.name


def build_sdist(sdist_directory, config_settings=None):
    """The source tree as git tracks it (or without build trees where there is no git)."""
    base = f"{NAME}-{_version()}"
    try:
        files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split("\n")
        files = [f for f in files if f]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                 if p.is_file() and not any(part.startswith(("build", ".git")) for part in p.relative_to(ROOT).parts)]
    out = pathlib.Path(sdist_directory) / f"{base}.tar.gz"
    with tarfile.open(out, "w:gz") as t:
        for f in files:
            t.add(ROOT / f, arcname=f"{base}/{f}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        import io
        t.addfile(info, io.BytesIO(data))
    return out.name
