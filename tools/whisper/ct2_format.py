"""Reads a CTranslate2 model.bin (the format faster-whisper loads) with the standard library and
numpy only. Written from CTranslate2's own writer (python/ctranslate2/specs/model_spec.py,
ModelSpec._serialize, CURRENT_BINARY_VERSION 6) and reader (src/models/model.cc).

Binary format (little-endian; version 6, the only one accepted here):

  u32    binary version (6)
  str    spec name, e.g. "WhisperSpec"
  u32    spec revision (WhisperSpec: 3)
  u32    number of variables N
  N x variable:
    str    name, '/'-separated scope, e.g. "encoder/layer_0/self_attention/linear_0/weight"
    u8     rank R
    R x u32  dims
    u8     dtype id: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16
    u32    size in bytes
    bytes  the values, row-major (C order)
  u32    number of aliases M
  M x (str alias, str target): a name that refers to another variable
         (Whisper: "decoder/projection/weight" -> "decoder/embeddings/weight", tied output layer)

  where str = u16 length L (including a trailing NUL), then L bytes (UTF-8 + NUL).

Scalar attributes of a spec (num_heads, pre_norm, activation, ...) are variables of rank 0.
Quantized models (int8, int16) also hold "<weight>_scale" variables; this reader returns them as
they are and leaves the decision to the caller (convert_ct2.py refuses them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

BINARY_VERSION = 6
_DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<f2"),
    5: None,  # bfloat16: no numpy dtype; widened to float32 below
}
DTYPE_NAMES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}


class Ct2FormatError(ValueError):
    pass


@dataclass
class Ct2Model:
    spec_name: str
    spec_revision: int
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)  # stored dtype name per variable
    aliases: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> np.ndarray:
        name = self.aliases.get(name, name)
        try:
            return self.variables[name]
        except KeyError:
            raise Ct2FormatError(f"model.bin has no variable '{name}'") from None

    def has(self, name: str) -> bool:
        return self.aliases.get(name, name) in self.variables

    def scalar(self, name: str) -> int:
        v = self.get(name)
        if v.shape != ():
            raise Ct2FormatError(f"variable '{name}' has shape {list(v.shape)}, expected a scalar")
        return int(v)


class _Reader:
    def __init__(self, data: bytes, path: str):
        self.data = data
        self.pos = 0
        self.path = path

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Ct2FormatError(
                f"'{self.path}' is truncated: needs {n} bytes at offset {self.pos}, "
                f"file has {len(self.data)}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return struct.unpack("<H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def string(self) -> str:
        n = self.u16()
        raw = self.take(n)
        if n == 0 or raw[-1] != 0:
            raise Ct2FormatError(f"'{self.path}': malformed string at offset {self.pos - n}")
        return raw[:-1].decode("utf-8")


def read_model_bin(path: str) -> Ct2Model:
    with open(path, "rb") as f:
        data = f.read()
    r = _Reader(data, path)
    version = r.u32()
    if version != BINARY_VERSION:
        raise Ct2FormatError(
            f"'{path}' has CTranslate2 binary version {version}; this reader handles version "
            f"{BINARY_VERSION} (CTranslate2 >= 3.0)")
    model = Ct2Model(spec_name=r.string(), spec_revision=r.u32())
    for _ in range(r.u32()):
        name = r.string()
        dims = [r.u32() for _ in range(r.u8())]
        type_id = r.u8()
        num_bytes = r.u32()
        if type_id not in _DTYPES:
            raise Ct2FormatError(f"'{path}': variable '{name}' has unknown dtype id {type_id}")
        raw = r.take(num_bytes)
        count = int(np.prod(dims)) if dims else 1
        if type_id == 5:  # bfloat16: the high half of a float32
            if num_bytes != 2 * count:
                raise Ct2FormatError(f"'{path}': variable '{name}' size {num_bytes} != 2 x {count}")
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32).reshape(dims)
        else:
            dt = _DTYPES[type_id]
            if num_bytes != dt.itemsize * count:
                raise Ct2FormatError(
                    f"'{path}': variable '{name}' holds {num_bytes} bytes, its shape {dims} and "
                    f"dtype {DTYPE_NAMES[type_id]} need {dt.itemsize * count}")
            array = np.frombuffer(raw, dtype=dt).reshape(dims)
        model.variables[name] = array
        model.dtypes[name] = DTYPE_NAMES[type_id]
    for _ in range(r.u32()):
        alias = r.string()
        model.aliases[alias] = r.string()
    if r.pos != len(data):
        raise Ct2FormatError(f"'{path}': {len(data) - r.pos} bytes after the last alias")
    return model
