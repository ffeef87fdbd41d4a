"""The smallest PEP 517 build backend: a wheel of the `mypkg` folder."""

import base64
import hashlib
import os
import zipfile

NAME, VERSION = "mypkg", "0.1"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = {}
    for root, _, names in os.walk(NAME):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as source:
                    files[path.replace(os.sep, "/")] = source.read()
    files[f"{DIST_INFO}/METADATA"] = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode()
    files[f"{DIST_INFO}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{DIST_INFO}/RECORD,,")
    files[f"{DIST_INFO}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return wheel_name
