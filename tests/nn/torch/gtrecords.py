"""Reader/writer of gridtrain's parity record files (tests/nn/torch).

Layout (little endian), shared with tests/nn/torch/records.h:
  magic   8 bytes  b"GTPARITY"
  version u32      1
  count   u32      number of records
  record: u32 name_len, name (utf-8, no NUL), u32 dtype (0 f32, 1 i32, 2 f64),
          u32 ndim, u64 dims[ndim], data (prod(dims) elements, row-major).
"""
import struct

import numpy as np

MAGIC = b"GTPARITY"
VERSION = 1
_DTYPES = {0: np.float32, 1: np.int32, 2: np.float64}
_CODES = {np.dtype(np.float32): 0, np.dtype(np.int32): 1, np.dtype(np.float64): 2}


def read_records(path):
    """Return an ordered dict name -> numpy array."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != MAGIC:
        raise ValueError(f"{path}: bad magic {buf[:8]!r}")
    version, count = struct.unpack_from("<II", buf, 8)
    if version != VERSION:
        raise ValueError(f"{path}: version {version}, expected {VERSION}")
    off = 16
    out = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", buf, off)
        off += 4
        name = buf[off:off + n].decode()
        off += n
        dtype, ndim = struct.unpack_from("<II", buf, off)
        off += 8
        dims = struct.unpack_from(f"<{ndim}Q", buf, off)
        off += 8 * ndim
        dt = np.dtype(_DTYPES[dtype])
        count_el = int(np.prod(dims)) if ndim else 1
        arr = np.frombuffer(buf, dtype=dt, count=count_el, offset=off).reshape(dims)
        off += count_el * dt.itemsize
        out[name] = arr
    if off != len(buf):
        raise ValueError(f"{path}: {len(buf) - off} trailing bytes")
    return out


def write_records(path, records):
    """records: iterable of (name, numpy array of float32/int32/float64)."""
    records = list(records)
    with open(path + ".tmp", "wb") as f:
        f.write(MAGIC + struct.pack("<II", VERSION, len(records)))
        for name, arr in records:
            arr = np.ascontiguousarray(arr)
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<II", _CODES[arr.dtype], arr.ndim))
            f.write(struct.pack(f"<{arr.ndim}Q", *arr.shape))
            f.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    import os
    os.replace(path + ".tmp", path)
