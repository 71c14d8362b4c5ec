"""A user's GGUF file as a judge: its content hash pinned in the model name, its own name read from its header.

`local:/models/judge.gguf` becomes the model `/models/judge.gguf#sha256=<hex>`: a frozen prompt and a run then
name the file's content, not only its path, and a changed file is refused instead of scoring as the old one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import struct
from pathlib import Path
from typing import BinaryIO

from ..errors import ConfigError

PIN = "#sha256="
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
MAX_KEYS_READ = 64  # general.name comes among the first keys; a header is never read to its end


def split_pin(model: str) -> tuple[str, str | None]:
    """'/m/j.gguf#sha256=ab..' -> ('/m/j.gguf', 'ab..'); an unpinned path -> (path, None)."""
    path, _, digest = model.partition(PIN)
    return path, digest or None


def is_model_file(model: str) -> bool:
    """Whether a local judge's model names a GGUF file (pinned or not) rather than the bundled model."""
    return split_pin(model)[0].lower().endswith(".gguf")


def file_digest(path: str) -> str:
    """The file's sha256 (hex), computed once per path, size and modification time."""
    stat = os.stat(path)
    return _digest(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def pin_model_file(model: str) -> str:
    """The model name with the file's content hash: the absolute path, then #sha256=."""
    path = checked_file(split_pin(model)[0])
    return f"{path}{PIN}{file_digest(path)}"


def checked_file(path: str) -> str:
    """The absolute path of an existing .gguf file, or ConfigError saying what is wrong with it."""
    if not path.lower().endswith(".gguf"):
        raise ConfigError(f"{path!r} is not a GGUF model file: name a file ending in .gguf")
    if not Path(path).is_file():
        raise ConfigError(f"the local judge's model file {path} does not exist (or is not a file)")
    return os.path.abspath(path)


def verified_path(model: str) -> tuple[str, str]:
    """(path, digest) of a model file whose content matches its pin (a path without one is hashed now)."""
    path, pinned = split_pin(model)
    path = checked_file(path)
    digest = file_digest(path)
    if pinned is not None and digest != pinned:
        raise ConfigError(
            f"the model file {path} changed since it was pinned: its sha256 is {digest[:12]}…, "
            f"the prompt or run names {pinned[:12]}…; restore that file or freeze a new version"
        )
    return path, digest


def gguf_name(path: str) -> str | None:
    """The model's name from the file's header (general.name), None when the header does not say."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"GGUF":
                return None
            version, _tensors, keys = struct.unpack("<IQQ", handle.read(20))
            if version < 2:
                return None
            for _ in range(min(keys, MAX_KEYS_READ)):
                key = _string(handle)
                kind = struct.unpack("<I", handle.read(4))[0]
                if key == "general.name" and kind == _STRING:
                    return _string(handle)
                _skip(handle, kind)
    except (OSError, struct.error, UnicodeDecodeError, ValueError):
        return None
    return None


def _string(handle: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", handle.read(8))
    if length > 1 << 20:
        raise ValueError("a header string longer than 1 MiB")
    return handle.read(length).decode("utf-8")


def _skip(handle: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        (length,) = struct.unpack("<Q", handle.read(8))
        handle.seek(length, os.SEEK_CUR)
    elif kind == _ARRAY:
        inner, count = struct.unpack("<IQ", handle.read(12))
        if inner in _SCALARS:
            handle.seek(struct.calcsize(_SCALARS[inner]) * count, os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip(handle, inner)
    elif kind in _SCALARS:
        handle.seek(struct.calcsize(_SCALARS[kind]), os.SEEK_CUR)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def model_file_version(path: str, digest: str) -> str:
    """What a run records as the model version of a user's file: its own name and its content hash."""
    return f"{gguf_name(path) or Path(path).stem} (GGUF {Path(path).name}, sha256 {digest[:12]})"
