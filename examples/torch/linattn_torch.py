"""A LinAttn GPU library as a PyTorch autograd function.

    linattn-compile SPEC.mlir --backward -o lib.so      # NAME and NAME_backward

    import linattn_torch
    lib = linattn_torch.Library("lib.so")
    deltanet = lib.function("deltanet")                 # o, s = deltanet(q, k, v, beta, s0)
    o, s = deltanet(q, k, v, beta, s0)
    (o.float() * target).sum().backward()               # dq, dk, dv, dbeta, ds0

The C entry pair is the library's `_mlir_ciface_NAME_async` (forward) and
`_mlir_ciface_NAME_backward_async` (gradients of every input from dL/do and
dL/ds), both on PyTorch's current stream (runtime/include/linattn/Abi.h).
The backward recomputes what it needs from the forward's inputs, so the
forward saves only its inputs (docs/backward.md). Tensors are converted to
the types the library's signature records and made contiguous; results are
copied into PyTorch tensors and the library's buffers freed on the stream.
Only ctypes and PyTorch are needed (no build step).
"""

import ctypes
import re

import torch

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def memref_type(rank):
    """MLIR's ranked memref descriptor (LinAttnMemRefR in Abi.h)."""
    return type(f"MemRef{rank}", (ctypes.Structure,), {"_fields_": [
        ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
        ("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]})


def descriptor(t):
    d = memref_type(t.dim())()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    d.sizes[:] = list(t.shape)
    d.strides[:] = list(t.stride())
    return d


def _parse_signature(text):
    """'name(bf16[?,?,8,128],...)->(bf16[...],f32[...])' -> ([(dtype, rank)], [(dtype, rank)])."""
    match = re.fullmatch(r"[^(]*\((.*)\)->\((.*)\)", text)
    if not match:
        raise ValueError(f"not a LinAttn signature: {text!r}")

    def tensors(group):
        return [(DTYPES[elem], len(dims.split(","))) for elem, dims in re.findall(r"(\w+)\[([^\]]*)\]", group)]
    return tensors(match.group(1)), tensors(match.group(2))


class Library:
    """A library built by linattn-compile."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.linattnCudaGetFirstError.restype = ctypes.c_char_p
        self.cuda = ctypes.CDLL("libcuda.so.1")

    def signature(self, name):
        symbol = ctypes.c_char.in_dll(self.lib, f"__linattn_signature_{name}")
        return _parse_signature(ctypes.string_at(ctypes.addressof(symbol)).decode())

    def call(self, name, tensors):
        """Runs NAME on `tensors` (CUDA tensors, converted to the signature's
        types) on the current stream; returns its results as new tensors."""
        arg_types, result_types = self.signature(name)
        if len(tensors) != len(arg_types):
            raise TypeError(f"@{name} takes {len(arg_types)} tensors, got {len(tensors)}")
        args = [t.to(dtype).contiguous() for t, (dtype, _) in zip(tensors, arg_types)]
        descriptors = [descriptor(t) for t in args]
        results_type = type("Results", (ctypes.Structure,), {"_fields_": [
            (f"r{i}", memref_type(rank)) for i, (_, rank) in enumerate(result_types)]})
        results = results_type()
        stream = torch.cuda.current_stream()
        fn = getattr(self.lib, f"_mlir_ciface_{name}_async")
        fn.restype = None
        self.lib.linattnCudaClearError()
        fn(ctypes.byref(results), ctypes.c_void_p(stream.cuda_stream),
           *[ctypes.byref(d) for d in descriptors])
        error = self.lib.linattnCudaGetFirstError()
        if error:
            raise RuntimeError(f"@{name}: {error.decode()}")
        outs = []
        for i, (dtype, rank) in enumerate(result_types):
            r = getattr(results, f"r{i}")
            out = torch.empty(list(r.sizes), dtype=dtype, device=args[0].device)
            nbytes = out.numel() * out.element_size()
            source = r.aligned + r.offset * out.element_size()
            self.cuda.cuMemcpyDtoDAsync_v2(ctypes.c_uint64(out.data_ptr()), ctypes.c_uint64(source),
                                           ctypes.c_size_t(nbytes), ctypes.c_void_p(stream.cuda_stream))
            self.cuda.cuMemFreeAsync(ctypes.c_uint64(r.allocated), ctypes.c_void_p(stream.cuda_stream))
            outs.append(out)
        return outs

    def function(self, name):
        """NAME as an autograd function: (q, k, v, [gate], [beta], s0) -> (o, s),
        its backward NAME_backward (linattn-compile --backward)."""
        lib = self

        class Recurrence(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):
                ctx.save_for_backward(*inputs)
                o, s = lib.call(name, inputs)
                return o, s

            @staticmethod
            def backward(ctx, do, ds):
                inputs = ctx.saved_tensors
                o_type, s_type = lib.signature(name)[1]
                q, s0 = inputs[0], inputs[-1]
                if do is None:
                    do = torch.zeros(*q.shape[:2], s0.shape[1], s0.shape[3], dtype=o_type[0], device=q.device)
                if ds is None:
                    ds = torch.zeros_like(s0, dtype=s_type[0])
                grads = lib.call(name + "_backward", list(inputs) + [do, ds])
                return tuple(g.to(x.dtype) for g, x in zip(grads, inputs))

        return Recurrence.apply
