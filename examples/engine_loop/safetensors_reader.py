"""A small safetensors reader: json for the header, torch.frombuffer for the tensors.

The format (https://github.com/huggingface/safetensors): 8 bytes little-endian u64 N, N bytes of
JSON header {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data; offsets are relative to the end of the header. No safetensors package needed.
"""

import json
import mmap
import os
import struct

import torch

# safetensors dtype name -> torch dtype (the ones the runtime's reader takes, bf16 included).
DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_safetensors(path):
    """{name: tensor} of one .safetensors file. Tensors are copies (the file is closed after)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} exceeds the file ({size} bytes)")
        header = json.loads(f.read(n).decode("utf-8"))
        data_start = 8 + n
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size > data_start else None
    out = {}
    try:
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype_name = info.get("dtype")
            if dtype_name not in DTYPES:
                raise ValueError(f"{path}: {name}: dtype {dtype_name!r} not supported")
            dtype = DTYPES[dtype_name]
            shape = [int(d) for d in info["shape"]]
            begin, end = (int(o) for o in info["data_offsets"])
            count = 1
            for d in shape:
                count *= d
            itemsize = torch.empty((), dtype=dtype).element_size()
            if end - begin != count * itemsize or data_start + end > size:
                raise ValueError(f"{path}: {name}: data_offsets [{begin}, {end}] do not hold "
                                 f"{shape} {dtype_name}")
            if count == 0:
                out[name] = torch.empty(shape, dtype=dtype)
                continue
            # frombuffer aliases the mapping; clone so the tensor outlives it.
            t = torch.frombuffer(mm, dtype=dtype, count=count, offset=data_start + begin)
            out[name] = t.reshape(shape).clone()
    finally:
        if mm is not None:
            mm.close()
    return out


def read_checkpoint(directory):
    """{name: tensor} of a HuggingFace checkpoint directory: model.safetensors, or the shards
    listed by model.safetensors.index.json."""
    single = os.path.join(directory, "model.safetensors")
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(single):
        return read_safetensors(single)
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(weight_map.values())):
            out.update(read_safetensors(os.path.join(directory, shard)))
        return out
    raise FileNotFoundError(f"{directory}: no model.safetensors or model.safetensors.index.json")
