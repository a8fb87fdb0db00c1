#!/usr/bin/env python3
"""wheel.py PAYLOAD VERSION OUTDIR — gpuext as a Python wheel (`make dist`).

The wheel holds make dist's install tree (PAYLOAD) as the package data
gpuext/_root/ and two console scripts, `gpuext` and `gpuext-run`, that exec
the programs in it; they find lib/ and share/ next to themselves as in the
tarball. Nothing is compiled for Python (py3-none), and the platform tag is
the glibc floor scripts/dist-check.sh enforces (manylinux_2_34).

A wheel is a zip file with a .dist-info folder (PEP 427, 491); written here
with the standard library, so it builds with no network. Wheels cannot hold
symbolic links: lib/libcuda.so becomes a copy of libcuda.so.1 (both the shim)
and share/gpuext/cuda/bin/ptxas a copy of gpuext-ptxas, which finds gpuext
from either place (cli/ptxas.c).
"""
import base64
import hashlib
import os
import stat
import sys
import zipfile

NAME = "gpuext"
TAG = "py3-none-manylinux_2_34_x86_64"

INIT = '''"""gpuext: eBPF-programmable CUDA runtime. The programs are in prefix()/bin."""
import os

__version__ = "{version}"


def prefix():
    """The install folder: bin/, lib/ (the shim libcuda.so.1), share/."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_root")
'''

CLI = '''"""Console scripts: exec the gpuext programs shipped in the package."""
import os
import sys

from . import prefix


def _exec(prog):
    path = os.path.join(prefix(), "bin", prog)
    try:
        os.execv(path, [prog] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("gpuext: cannot run %s: %s\\n" % (path, e.strerror))
        return 127


def gpuext():
    return _exec("gpuext")


def gpuext_run():
    return _exec("gpuext-run")
'''

MAIN = '''from ._cli import gpuext

raise SystemExit(gpuext())
'''


def record_hash(data):
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + d.decode()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: wheel.py PAYLOAD VERSION OUTDIR")
    payload, version, outdir = sys.argv[1:]
    whl = os.path.join(outdir, "%s-%s-%s.whl" % (NAME, version, TAG))
    distinfo = "%s-%s.dist-info" % (NAME, version)
    # Reproducible: every entry dated by the last commit (zip needs >= 1980).
    when = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = __import__("time").gmtime(max(when, 315532800))[:6]
    records = []
    tmp = whl + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:

        def add(arc, data, mode=0o644):
            info = zipfile.ZipInfo(arc, date_time=date)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | mode) << 16
            z.writestr(info, data)
            records.append("%s,%s,%d" % (arc, record_hash(data), len(data)))

        add(NAME + "/__init__.py", INIT.format(version=version).encode())
        add(NAME + "/_cli.py", CLI.encode())
        add(NAME + "/__main__.py", MAIN.encode())
        for top, dirs, files in os.walk(payload):
            dirs.sort()
            for f in sorted(files):
                src = os.path.join(top, f)
                rel = os.path.relpath(src, payload)
                st = os.stat(src)  # follows links: a link becomes a copy
                with open(src, "rb") as fh:
                    data = fh.read()
                mode = 0o755 if st.st_mode & 0o111 else 0o644
                add("%s/_root/%s" % (NAME, rel), data, mode)
        readme = open(os.path.join(payload, "README.md"), "rb").read().decode()
        meta = (
            "Metadata-Version: 2.1\n"
            "Name: %s\nVersion: %s\n"
            "Summary: eBPF-programmable CUDA runtime: a drop-in libcuda.so.1 with device and host policies\n"
            "License: GPL-2.0-only OR BSD-2-Clause\n"
            "Requires-Python: >=3.8\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Environment :: GPU :: NVIDIA CUDA\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, version, readme)
        )
        add(distinfo + "/METADATA", meta.encode())
        wheel = "Wheel-Version: 1.0\nGenerator: gpuext scripts/wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" % TAG
        add(distinfo + "/WHEEL", wheel.encode())
        eps = "[console_scripts]\ngpuext = gpuext._cli:gpuext\ngpuext-run = gpuext._cli:gpuext_run\n"
        add(distinfo + "/entry_points.txt", eps.encode())
        records.append(distinfo + "/RECORD,,")
        info = zipfile.ZipInfo(distinfo + "/RECORD", date_time=date)
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        z.writestr(info, ("\n".join(records) + "\n").encode(), zipfile.ZIP_DEFLATED)
    os.replace(tmp, whl)
    print("wheel: %s (%d KiB)" % (whl, os.path.getsize(whl) >> 10))


if __name__ == "__main__":
    main()
