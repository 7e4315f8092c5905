"""A PEP 517 build backend for the shufflefl package, standard library only.

It builds a pure-Python wheel of the package directory shufflefl/ and the
module shufflefl_trainer.py (the trainer protocol's loop; it needs NumPy),
and an sdist of this directory, so that `pip install ./python` needs no network:
pip's isolated build environment requires nothing (pyproject.toml's
build-system.requires is empty).
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "shufflefl"
VERSION = "0.3.0"
SUMMARY = "Python entry point to shufflefl: privacy bounds and federated runs of the shufflefl binary"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
TAG = "py3-none-any"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            f"Summary: {SUMMARY}\nRequires-Python: >=3.9\n").encode()


def _wheel_file():
    return f"Wheel-Version: 1.0\nGenerator: shufflefl-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()


MODULES = ["shufflefl_trainer.py"]


def _package_files():
    """(archive name, path) of every .py file of the package, sorted, then
    the top-level modules."""
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, NAME)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                files.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return files + [(m, os.path.join(ROOT, m)) for m in MODULES]


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "wb") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "wb") as f:
        f.write(_wheel_file())
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-{TAG}.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        entries = [(arc, open(path, "rb").read()) for arc, path in _package_files()]
        entries += [(f"{DIST_INFO}/METADATA", _metadata()), (f"{DIST_INFO}/WHEEL", _wheel_file())]
        for arc, data in entries:
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(f"{DIST_INFO}/RECORD,,")
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "build_backend/backend.py"] + [arc for arc, _ in _package_files()]:
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
