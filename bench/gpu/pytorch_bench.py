#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""PyTorch baselines for the memwall GPU benchmark (bench/gpu/README.md).

Times PyTorch eager and torch.compile (default mode) on the workloads that
bench/gpu/bundles holds, with the same shapes, dtypes and formulas, and
writes one JSON file:

  { "device": ..., "torch": ..., "cuda": ..., "warmup": 10, "iters": 50,
    "workloads": [ { "name", "shape", "dtype", "eager_ms", "compile_ms",
                     "eager_GBps", "compile_GBps", "bytes", "flops",
                     "eager_TFLOPs", "compile_TFLOPs", "compile_error" } ] }

The attention workloads (kind "attention", names attention_*) are timed
instead once per scaled_dot_product_attention backend, each forced alone
with torch.nn.attention.sdpa_kernel, and as a naive matmul-softmax-matmul;
their records are

  { "name", "kind": "attention", "shape", "dtype", "bytes", "flops",
    "attention": {"B", "Hq", "Hkv", "Sq", "Sk", "D", "causal"},
    "backends": { "flash" | "cudnn" | "efficient" | "naive":
                  { "ms", "TFLOPs", "GBps", "error", "gqa" } } }

with ms null and the error text where a backend refuses the shape. flops =
4*B*Hq*D * (query-key pairs computed): Sq*Sk, half of it when causal with
Sq = Sk (the usual convention), the exact count of visible pairs otherwise
(a one-token causal decode sees all Sk keys). memwall's causal mask is
aligned bottom-right (query i sees keys j <= i + Sk - Sq); SDPA's is_causal
is aligned top-left, so is_causal is used only when Sq = Sk, no mask when
Sq = 1, and torch.nn.attention.bias.causal_lower_right otherwise. With
fewer KV heads than query heads SDPA gets enable_gqa=True; where the
installed PyTorch or the backend refuses that, K and V are expanded with
repeat_interleave once, outside the timing, and "gqa" says so.

Times are the median over `iters` iterations, each between its own pair of
CUDA events, after `warmup` untimed iterations. `bytes` counts every input
(activations and weights) and every output once; GB/s is bytes / median time
(1 GB = 1e9 bytes). `flops` counts the matmuls only (2*M*N*K); it is 0 for
the memory-bound workloads. A torch.compile failure is recorded as null
times and the error text, and the run goes on. With --max-autotune-budget
the GEMM workloads (gemm_*, mlp_*, attn_proj_*, the 16-bit seeds) are also
timed under torch.compile(mode="max-autotune") while the budget lasts
("autotune_ms", "autotune_GBps", "autotune_TFLOPs", "autotune_error").

  python3 bench/gpu/pytorch_bench.py --out pytorch.json
  python3 bench/gpu/pytorch_bench.py --list          # no GPU, no torch needed

Standard library and torch only.
"""

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
import traceback

DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2}

# torch and torch.nn.functional, imported by run() only, so that --list
# works without PyTorch; the workload functions use these globals.
torch = None
F = None


def numel(shape):
    return math.prod(shape)


# ---------------------------------------------------------------------------
# Workloads. Every input is (name, shape, kind) with kind "input" or
# "weight", exactly the arguments of the memwall function of the same name
# (bench/gpu/ops/*.mlir, examples/*.mlir). Random values follow
# memwall-run --inputs=random: inputs U(-1, 1), weights of rank >= 2
# U(-a, a) with a = 1/sqrt(shape[0]), rank-1 weights U(0.5, 1.5).
# ---------------------------------------------------------------------------


def _layernorm(d):
    def fn(x, w, b):
        return F.layer_norm(x, (d,), w, b, eps=1e-5)
    return fn


def _rmsnorm(d):
    def fn(x, w):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (d,), w, eps=1e-6)
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (y * w.float()).to(x.dtype)
    return fn


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _add_gelu(x, b):
    return F.gelu(x + b, approximate="tanh")


def _residual_add_layernorm(d):
    def fn(x, r, w, b):
        h = x + r
        return h, F.layer_norm(h, (d,), w, b, eps=1e-5)
    return fn


def _seed_model(d):
    # nn.Sequential(Linear(d, d), GELU(), Linear(d, d), LayerNorm(d)):
    # Linear weights are [out, in], GELU is the exact erf form.
    def fn(x, w1, b1, w2, b2, g, be):
        h = F.gelu(F.linear(x, w1, b1))
        return F.layer_norm(F.linear(h, w2, b2), (d,), g, be, eps=1e-5)
    return fn


def _linear(x, w):
    return F.linear(x, w)


def _w8_linear(x, q, s):
    return F.linear(x, q.to(x.dtype) * s)


def _fp8_linear(x, w, fast_accum=False):
    # x [M, K], w [N, K] in float8_e4m3fn: cuBLASLt's fp8 GEMM through
    # torch._scaled_mm (mat2 column-major: w.t()), unit scales, bf16 out.
    # use_fast_accum=False (the default) promotes into f32 as memwall's
    # default does; True is memwall.gemm_fp8_fast_accumulation's (.fastacc).
    one = torch.ones((), device=x.device, dtype=torch.float32)
    return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one,
                            out_dtype=torch.bfloat16,
                            use_fast_accum=fast_accum)


def _fp8_linear_fast_accum(x, w):
    return _fp8_linear(x, w, fast_accum=True)


def _w4_linear(x, p, s):
    # p: uint8 [N, K/2], two int4 a byte, the even element in the low nibble
    # (memwall's i4 layout); s: [N, K/128], one scale per group of 128.
    lo = (p & 15).to(torch.int16)
    hi = (p >> 4).to(torch.int16)
    q = torch.stack((lo, hi), dim=-1).reshape(p.shape[0], -1)
    q = (q ^ 8) - 8
    groups = s.shape[1]
    w = (q.to(x.dtype).reshape(q.shape[0], groups, -1) *
         s.unsqueeze(-1)).reshape(q.shape)
    return F.linear(x, w)


# QLoRA's NF4 codebook (bitsandbytes' table; memwall::getNF4Codebook).
_NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
        0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
        0.7229568362236023, 1.0]


def _nf4_linear(x, p, a8, a32):
    # p: uint8 [K, N/2], two codes a byte along N, the even one in the low
    # nibble; a8: int8 absmax [K/64, N]; a32: f32 [K/64, N/256], one scale
    # per 256 absmax. Dequantize (bitsandbytes' order), then x @ w.
    codes = torch.stack((p & 15, p >> 4), dim=-1).reshape(p.shape[0], -1)
    table = torch.tensor(_NF4, device=x.device, dtype=torch.float32)
    absmax = a8.to(torch.float32) * a32.repeat_interleave(
        a8.shape[1] // a32.shape[1], dim=1)
    w = table[codes.long()] * absmax.repeat_interleave(
        codes.shape[0] // absmax.shape[0], dim=0)
    return x @ w.to(x.dtype)


def _llama_mlp(x, r, wg, wu, wd):
    return r + F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)


def _llama_attention_projections(heads):
    # Hugging Face's LlamaAttention up to the attention core: q, k, v
    # projections, view + transpose(1, 2) to [B, H, S, D], and
    # apply_rotary_pos_emb (rotate_half) on q and k at `positions`.
    def fn(x, positions, wq, wk, wv):
        b, s, _ = x.shape

        def split(t):
            return t.view(b, s, heads, -1).transpose(1, 2)

        q, k, v = split(F.linear(x, wq)), split(F.linear(x, wk)), \
            split(F.linear(x, wv))
        d = q.shape[-1]
        inv_freq = 10000.0 ** (-torch.arange(0, d, 2, device=x.device,
                                             dtype=torch.float32) / d)
        angles = positions.float()[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        def rotate(t):
            half = torch.cat((-t[..., d // 2:], t[..., :d // 2]), dim=-1)
            return t * cos + half * sin
        return rotate(q), rotate(k), v
    return fn


def _gpt2_mlp(x, r, w1, b1, w2, b2):
    return r + F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)


def gemm_workloads():
    """bench/gpu/ops/gemm_*.mlir and mlp_*.mlir: plain GEMMs (y = x W^T) and
    the Llama-2-7B / GPT-2 MLPs."""
    wl = []
    for m, n, k in [(8192, 8192, 8192), (16384, 4096, 4096), (1, 4096, 4096),
                    (16, 11008, 4096)]:
        wl.append({"name": "gemm_%dx%dx%d_bf16" % (m, n, k), "dtype": "bf16",
                   "inputs": [("x", [m, k], "input"),
                              ("weight", [n, k], "weight")],
                   "outputs": [[m, n]], "flops": 2 * m * n * k,
                   "fn": _linear})
    # fp8 operands (bench/gpu/ops/gemm_fp8_*.mlir): both e4m3, the product
    # bf16.
    m = n = k = 8192
    for suffix, fn in [("", _fp8_linear), (".fastacc", _fp8_linear_fast_accum)]:
        wl.append({"name": "gemm_fp8_%dx%dx%d%s" % (m, n, k, suffix),
                   "dtype": "bf16",
                   "inputs": [("x", [m, k], "fp8"), ("weight", [n, k], "fp8")],
                   "outputs": [[m, n]], "flops": 2 * m * n * k,
                   "fn": fn})
    # Weight-only int8 (W8A16): the weight int8, a bf16 scale per output
    # channel (bench/gpu/ops/gemm_w8_*.mlir).
    for m, n, k in [(1, 4096, 4096), (16, 11008, 4096)]:
        wl.append({"name": "gemm_w8_%dx%dx%d_bf16" % (m, n, k), "dtype": "bf16",
                   "inputs": [("x", [m, k], "input"),
                              ("weight", [n, k], "int8"),
                              ("weight.scales", [n, 1], "scale")],
                   "outputs": [[m, n]], "flops": 2 * m * n * k,
                   "fn": _w8_linear})
    # Weight-only int4 (W4A16, groups of 128 along K, packed two a byte;
    # bench/gpu/ops/gemm_w4_*.mlir).
    for m, n, k in [(1, 4096, 4096), (16, 11008, 4096)]:
        wl.append({"name": "gemm_w4_%dx%dx%d_bf16" % (m, n, k), "dtype": "bf16",
                   "inputs": [("x", [m, k], "input"),
                              ("weight", [n, k // 2], "int4packed"),
                              ("weight.scales", [n, k // 128], "scale")],
                   "outputs": [[m, n]], "flops": 2 * m * n * k,
                   "fn": _w4_linear})
    # QLoRA's NF4 weight (bench/gpu/ops/gemm_nf4_*.mlir): codes [K, N],
    # double-quantized absmax.
    m, n, k = 2048, 4096, 4096
    wl.append({"name": "gemm_nf4_%dx%dx%d_bf16" % (m, n, k), "dtype": "bf16",
               "inputs": [("x", [m, k], "input"),
                          ("weight", [k, n // 2], "int4packed"),
                          ("weight.absmax", [k // 64, n], "int8"),
                          ("weight.absmax_scales", [k // 64, n // 256],
                           "scale")],
               "outputs": [[m, n]], "flops": 2 * m * n * k,
               "fn": _nf4_linear})
    t, h, i = 2048, 4096, 11008
    wl.append({"name": "mlp_llama2_7b_2048_bf16", "dtype": "bf16",
               "inputs": [("x", [t, h], "input"), ("residual", [t, h], "input"),
                          ("mlp.gate.weight", [i, h], "weight"),
                          ("mlp.up.weight", [i, h], "weight"),
                          ("mlp.down.weight", [h, i], "weight")],
               "outputs": [[t, h]], "flops": 2 * t * h * i * 3,
               "fn": _llama_mlp})
    b, s, h, heads = 2, 1024, 4096, 32
    wl.append({"name": "attn_proj_llama2_7b_2048_bf16", "dtype": "bf16",
               "inputs": [("x", [b, s, h], "input"),
                          ("positions", [s], "positions"),
                          ("attn.q.weight", [h, h], "weight"),
                          ("attn.k.weight", [h, h], "weight"),
                          ("attn.v.weight", [h, h], "weight")],
               "outputs": [[b, heads, s, h // heads]] * 3,
               "flops": 2 * b * s * h * h * 3,
               "fn": _llama_attention_projections(heads)})
    t, c = 16384, 768
    wl.append({"name": "mlp_gpt2_16x1024_bf16", "dtype": "bf16",
               "inputs": [("x", [t, c], "input"), ("residual", [t, c], "input"),
                          ("mlp.c_fc.weight", [4 * c, c], "weight"),
                          ("mlp.c_fc.bias", [4 * c], "weight"),
                          ("mlp.c_proj.weight", [c, 4 * c], "weight"),
                          ("mlp.c_proj.bias", [c], "weight")],
               "outputs": [[t, c]], "flops": 2 * t * c * 4 * c * 2,
               "fn": _gpt2_mlp})
    return wl


def _gpt2_block(x, ln1_w, ln1_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b,
                out_w, out_b):
    # Hugging Face GPT2Block with the attention core replaced by the identity;
    # Conv1D weights are [in, out] and Conv1D is addmm(bias, x2d, weight).
    d = x.shape[-1]

    def conv1d(t, w, b):
        return torch.addmm(b, t.reshape(-1, t.shape[-1]), w).view(
            *t.shape[:-1], w.shape[1])

    a = conv1d(F.layer_norm(x, (d,), ln1_w, ln1_b, eps=1e-5), proj_w, proj_b)
    h = x + a
    m = F.gelu(conv1d(F.layer_norm(h, (d,), ln2_w, ln2_b, eps=1e-5), fc_w, fc_b),
               approximate="tanh")
    return h + conv1d(m, out_w, out_b)


def _seed_workload(rows, d, dtype):
    return {
        "name": "memory_bound_model_%dx%d_%s" % (rows, d, dtype),
        "dtype": dtype,
        "inputs": [("x", [rows, d], "input"),
                   ("fc1.weight", [d, d], "weight"), ("fc1.bias", [d], "weight"),
                   ("fc2.weight", [d, d], "weight"), ("fc2.bias", [d], "weight"),
                   ("ln.weight", [d], "weight"), ("ln.bias", [d], "weight")],
        "outputs": [[rows, d]],
        "flops": 2 * (2 * rows * d * d),
        "fn": _seed_model(d),
    }


def attention_pairs(sq, sk, causal):
    """Query-key pairs the FLOP count charges for: Sq*Sk, half of it when
    causal with Sq = Sk (the FlashAttention convention baselines.md uses),
    else the exact count under the bottom-right mask."""
    if not causal:
        return sq * sk
    if sq == sk:
        return sq * sk // 2
    return sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq))


def _attention_workload(b, hq, sq, d, causal, hkv=None, sk=None, name=None,
                        backward=False):
    """Attention's forward, or with `backward` its backward alone: dq, dk
    and dv from q, k, v, the output, its gradient and the log-sum-exp
    (memwall.flash_attention_grad; PyTorch times torch.autograd.grad of the
    backend's forward, run once outside the timing). The backward's FLOPs
    are FlashAttention-2's five matmuls, 2.5x the forward's."""
    hkv = hkv or hq
    sk = sk or sq
    if name is None:
        name = "attention%s_b%d_h%d_s%d_d%d%s_bf16" % (
            "_grad" if backward else "", b, hq, sq, d,
            "_causal" if causal else "")
    inputs = [("q", [b, hq, sq, d], "input"),
              ("k", [b, hkv, sk, d], "input"),
              ("v", [b, hkv, sk, d], "input")]
    outputs = [[b, hq, sq, d]]
    if backward:
        inputs += [("o", [b, hq, sq, d], "input"),
                   ("do", [b, hq, sq, d], "input"),
                   ("lse", [b, hq, sq], "input")]
        outputs = [[b, hq, sq, d], [b, hkv, sk, d], [b, hkv, sk, d]]
    forward_flops = 4 * b * hq * d * attention_pairs(sq, sk, causal)
    return {
        "name": name, "kind": "attention", "dtype": "bf16",
        "inputs": inputs, "outputs": outputs,
        "attention": {"B": b, "Hq": hq, "Hkv": hkv, "Sq": sq, "Sk": sk,
                      "D": d, "causal": causal, "backward": backward},
        "flops": forward_flops * 5 // 2 if backward else forward_flops,
    }


def attention_workloads():
    """bench/gpu/ops/attention_*.mlir: baselines.md's shapes, two small
    prefills that --check quickly, and a GQA decode step."""
    return [
        _attention_workload(4, 32, 4096, 128, False),
        _attention_workload(4, 32, 4096, 128, True),
        _attention_workload(8, 16, 2048, 64, False),
        _attention_workload(1, 32, 16384, 128, True),
        _attention_workload(1, 8, 1024, 64, True),
        _attention_workload(1, 8, 1024, 128, True),
        _attention_workload(
            1, 32, 1, 128, True, hkv=8, sk=4096,
            name="attention_decode_b1_hq32_hkv8_sk4096_d128_bf16"),
        # The backward: GPT-2-medium's training step's shape, and a small
        # one that --check runs quickly.
        _attention_workload(16, 16, 1024, 64, True, backward=True),
        _attention_workload(1, 8, 1024, 64, True, backward=True),
    ]


def workloads():
    r, d = 16384, 4096
    x = ("x", [r, d], "input")
    wl = [
        {"name": "layernorm_%dx%d_bf16" % (r, d), "dtype": "bf16",
         "inputs": [x, ("ln.weight", [d], "weight"), ("ln.bias", [d], "weight")],
         "outputs": [[r, d]], "flops": 0, "fn": _layernorm(d)},
        {"name": "layernorm_%dx%d_f32" % (r, d), "dtype": "f32",
         "inputs": [x, ("ln.weight", [d], "weight"), ("ln.bias", [d], "weight")],
         "outputs": [[r, d]], "flops": 0, "fn": _layernorm(d)},
        {"name": "rmsnorm_%dx%d_bf16" % (r, d), "dtype": "bf16",
         "inputs": [x, ("norm.weight", [d], "weight")],
         "outputs": [[r, d]], "flops": 0, "fn": _rmsnorm(d)},
        {"name": "softmax_%dx%d_bf16" % (r, d), "dtype": "bf16",
         "inputs": [x], "outputs": [[r, d]], "flops": 0, "fn": _softmax},
        {"name": "add_gelu_%dx%d_bf16" % (r, d), "dtype": "bf16",
         "inputs": [x, ("bias", [d], "weight")],
         "outputs": [[r, d]], "flops": 0, "fn": _add_gelu},
        {"name": "residual_add_layernorm_%dx%d_bf16" % (r, d), "dtype": "bf16",
         "inputs": [x, ("residual", [r, d], "input"),
                    ("ln.weight", [d], "weight"), ("ln.bias", [d], "weight")],
         "outputs": [[r, d], [r, d]], "flops": 0,
         "fn": _residual_add_layernorm(d)},
        _seed_workload(16384, 4096, "bf16"),
        _seed_workload(65536, 1024, "bf16"),
        _seed_workload(512, 1024, "f32"),
    ]
    b, t, c = 8, 1024, 768
    wl.append({
        "name": "gpt2_block_no_attention", "dtype": "bf16",
        "inputs": [("x", [b, t, c], "input"),
                   ("ln_1.weight", [c], "weight"), ("ln_1.bias", [c], "weight"),
                   ("attn.c_proj.weight", [c, c], "weight"),
                   ("attn.c_proj.bias", [c], "weight"),
                   ("ln_2.weight", [c], "weight"), ("ln_2.bias", [c], "weight"),
                   ("mlp.c_fc.weight", [c, 4 * c], "weight"),
                   ("mlp.c_fc.bias", [4 * c], "weight"),
                   ("mlp.c_proj.weight", [4 * c, c], "weight"),
                   ("mlp.c_proj.bias", [c], "weight")],
        "outputs": [[b, t, c]],
        "flops": 2 * b * t * (c * c + c * 4 * c + 4 * c * c),
        "fn": _gpt2_block,
    })
    wl += attention_workloads()
    wl += gemm_workloads()
    for w in wl:
        size = DTYPE_BYTES[w["dtype"]]
        w["shape"] = w["inputs"][0][1]
        # int8 (quantized weights) takes one byte an element, as do packed
        # int4's bytes.
        w["bytes"] = (sum(numel(s) * (1 if kind in ("int8", "int4packed",
                                                    "fp8")
                                      else 8 if kind == "positions"
                                      else size)
                          for _, s, kind in w["inputs"]) +
                      size * sum(numel(s) for s in w["outputs"]))
    return wl


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def is_gemm_workload(w):
    """Workloads whose time is mostly GEMMs: torch.compile's max-autotune
    mode tunes those."""
    return w["name"].startswith(("gemm_", "mlp_", "attn_proj_")) or (
        w["name"].startswith("memory_bound_model_") and w["dtype"] != "f32")


def make_inputs(w, seed):
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16,
             "f16": torch.float16}[w["dtype"]]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    tensors = []
    for _, shape, kind in w["inputs"]:
        if kind == "int8":
            # Quantized weights: symmetric int8 as a quantizer writes them.
            tensors.append(torch.randint(-127, 128, shape, device="cuda",
                                         dtype=torch.int8, generator=gen))
            continue
        if kind == "positions":
            # Token positions 0..S-1.
            tensors.append(torch.arange(shape[0], device="cuda"))
            continue
        if kind == "int4packed":
            # Packed int4 weights: every byte (every nibble pair) is valid.
            tensors.append(torch.randint(0, 256, shape, device="cuda",
                                         dtype=torch.uint8, generator=gen))
            continue
        t = torch.empty(shape, device="cuda", dtype=torch.float32)
        if kind == "fp8":
            # fp8 operands: U(-1, 1) rounded to e4m3.
            t.uniform_(-1.0, 1.0, generator=gen)
            tensors.append(t.to(torch.float8_e4m3fn))
            continue
        if kind == "scale":
            # Per-channel scales of weights ~ U(-1/sqrt(K), 1/sqrt(K)).
            t.fill_(1.0 / (127 * math.sqrt(shape[0])))
        elif kind == "input":
            t.uniform_(-1.0, 1.0, generator=gen)
        elif len(shape) >= 2:
            a = 1.0 / math.sqrt(shape[0])
            t.uniform_(-a, a, generator=gen)
        else:
            t.uniform_(0.5, 1.5, generator=gen)
        tensors.append(t.to(dtype))
    return tensors


def time_compiled(record, key, w, inputs, mode, args):
    """record[key + "_ms"]: w's function under torch.compile(mode=mode),
    or record[key + "_error"] with why it failed (the run goes on)."""
    try:
        compiled = torch.compile(w["fn"], mode=mode)
        record[key + "_ms"] = time_ms(compiled, inputs, args.warmup,
                                      args.iters)
    except Exception as e:
        record[key + "_error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        traceback.print_exc()


def time_ms(fn, args, warmup, iters):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            starts[i].record()
            fn(*args)
            ends[i].record()
        torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


ATTENTION_BACKENDS = ("flash", "cudnn", "efficient", "naive")
# The naive path materializes [B, Hq, Sq, Sk] scores (and softmax); above
# this many bytes of bf16 scores it is skipped (B1 H32 S16384: 16 GiB).
NAIVE_SCORES_LIMIT = 8 << 30
# Backends faster than this are also timed as a CUDA-graph replay.
GRAPH_BELOW_MS = 1.0


def _sdpa_backend(name):
    """(context-manager factory, error) forcing one SDPA backend alone."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None, "torch.nn.attention.sdpa_kernel not available"
    member = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
              "efficient": "EFFICIENT_ATTENTION"}[name]
    backend = getattr(SDPBackend, member, None)
    if backend is None:
        return None, "SDPBackend.%s not available in this PyTorch" % member
    return (lambda: sdpa_kernel([backend])), None


def _causal_args(a):
    """SDPA keyword arguments for memwall's bottom-right causal mask."""
    if not a["causal"] or a["Sq"] == 1:
        return {"is_causal": False}  # one query at the end sees every key
    if a["Sq"] == a["Sk"]:
        return {"is_causal": True}
    from torch.nn.attention.bias import causal_lower_right
    return {"attn_mask": causal_lower_right(a["Sq"], a["Sk"])}


def _naive_attention(a, scale):
    """matmul -> (mask) -> softmax -> matmul in the inputs' dtype, GQA by
    broadcasting the KV heads over their query-head group."""
    b, hq, hkv, sq, sk, d = (a[x] for x in ("B", "Hq", "Hkv", "Sq", "Sk", "D"))
    g = hq // hkv
    hidden = None
    if a["causal"]:
        i = torch.arange(sq, device="cuda").unsqueeze(1)
        j = torch.arange(sk, device="cuda").unsqueeze(0)
        hidden = j > i + (sk - sq)
        if not bool(hidden.any()):
            hidden = None

    def fn(q, k, v):
        q5 = q.view(b, hkv, g, sq, d)
        s = torch.matmul(q5, k.unsqueeze(2).transpose(-2, -1)).mul_(scale)
        if hidden is not None:
            s.masked_fill_(hidden, float("-inf"))
        p = torch.softmax(s, dim=-1)
        del s
        return torch.matmul(p, v.unsqueeze(2)).view(b, hq, sq, d)
    return fn


def graph_time_ms(fn, args, warmup, iters):
    """fn captured once in a CUDA graph and timed by replaying it: the GPU
    time without Python's launch overhead (which dominates a decode step)."""
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn(*args)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn(*args)
        ms = time_ms(lambda: graph.replay(), [], warmup, iters)
        del out, graph
    return ms


def time_attention(w, inputs, args):
    """Times every backend of ATTENTION_BACKENDS on one attention workload;
    returns {backend: {"ms", "graph_ms", "error", "gqa"}}."""
    a = w["attention"]
    q, k, v = inputs[:3]
    scale = 1.0 / math.sqrt(a["D"])
    gqa = a["Hq"] != a["Hkv"]
    results = {}
    expanded = None
    backward = a.get("backward", False)

    def timed(fn, fn_args):
        """What is timed: fn, or for a backward workload fn's backward
        alone (its forward run here, once)."""
        if not backward:
            return fn, fn_args
        leaves = [t.detach().requires_grad_() for t in fn_args]
        with torch.enable_grad():
            out = fn(*leaves)

        def grads():
            return torch.autograd.grad(out, leaves, inputs[4],
                                       retain_graph=True)
        return grads, []
    for backend in ATTENTION_BACKENDS:
        res = {"ms": None, "graph_ms": None, "error": None, "gqa": None}
        results[backend] = res
        try:
            if backend == "naive":
                scores = 2 * a["B"] * a["Hq"] * a["Sq"] * a["Sk"]
                if scores > NAIVE_SCORES_LIMIT:
                    res["error"] = ("skipped: the [B, Hq, Sq, Sk] scores "
                                    "would take %.1f GiB" % (scores / 2**30))
                    continue
                if gqa:
                    res["gqa"] = "KV heads broadcast over their query heads"
                fn, fn_args = timed(_naive_attention(a, scale), [q, k, v])
                res["ms"] = time_ms(fn, fn_args, args.warmup, args.iters)
            else:
                ctx, err = _sdpa_backend(backend)
                if ctx is None:
                    res["error"] = err
                    continue
                kw = _causal_args(a)
                kw["scale"] = scale
                fn_args = [q, k, v]
                with ctx():
                    if gqa:
                        def fn(q_, k_, v_):
                            return F.scaled_dot_product_attention(
                                q_, k_, v_, enable_gqa=True, **kw)
                        try:
                            fn, fn_args = timed(fn, fn_args)
                            res["ms"] = time_ms(fn, fn_args, args.warmup,
                                                args.iters)
                            res["gqa"] = "enable_gqa=True"
                        except Exception as e:  # old PyTorch or refused
                            note = "%s: %s" % (type(e).__name__,
                                               str(e).strip()[:500])
                            if expanded is None:
                                g = a["Hq"] // a["Hkv"]
                                expanded = [k.repeat_interleave(g, dim=1),
                                            v.repeat_interleave(g, dim=1)]
                            res["gqa"] = (
                                "K and V expanded with repeat_interleave "
                                "(outside the timing); enable_gqa=True "
                                "failed: " + note)
                            fn_args = [q] + expanded
                    if res["ms"] is None:
                        def fn(q_, k_, v_):
                            return F.scaled_dot_product_attention(
                                q_, k_, v_, **kw)
                        fn, fn_args = timed(fn, fn_args)
                        res["ms"] = time_ms(fn, fn_args, args.warmup,
                                            args.iters)
            # Under a millisecond, Python's launch overhead can show in the
            # eager time: time a CUDA-graph replay as well.
            if res["ms"] is None or res["ms"] >= GRAPH_BELOW_MS:
                continue
            with contextlib.ExitStack() as stack:
                if backend != "naive":
                    stack.enter_context(ctx())
                try:
                    res["graph_ms"] = graph_time_ms(fn, fn_args, args.warmup,
                                                    args.iters)
                except Exception as e:
                    res["graph_error"] = "%s: %s" % (type(e).__name__,
                                                     str(e).strip()[:500])
        except Exception as e:  # recorded; the other backends still run
            res["ms"] = res["graph_ms"] = None
            res["error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:2000])
            print("%s %s: %s" % (w["name"], backend,
                                 res["error"].splitlines()[0]),
                  file=sys.stderr, flush=True)
        finally:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return results


def run_attention(w, args):
    record = {k: w[k] for k in ("name", "kind", "shape", "dtype", "bytes",
                                "flops", "attention")}
    try:
        inputs = make_inputs(w, args.seed)
        record["backends"] = time_attention(w, inputs, args)
    except Exception as e:
        record["backends"] = {}
        record["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        traceback.print_exc()
        inputs = None
    for res in record["backends"].values():
        res["TFLOPs"] = rate(w["flops"], res["ms"], 1e12)
        res["GBps"] = rate(w["bytes"], res["ms"], 1e9)
        res["graph_TFLOPs"] = rate(w["flops"], res["graph_ms"], 1e12)
    del inputs
    torch.cuda.empty_cache()

    def fmt(res):
        if res.get("ms") is None:
            return "null"
        text = "%.4f ms %.0f TFLOP/s" % (res["ms"], res["TFLOPs"])
        if res.get("graph_ms") is not None:
            text += " (graph %.4f ms)" % res["graph_ms"]
        return text
    print("%-42s %s" % (w["name"], "  ".join(
        "%s %s" % (b, fmt(record["backends"].get(b, {})))
        for b in ATTENTION_BACKENDS)), flush=True)
    return record


def rate(amount, ms, scale):
    if ms is None or ms <= 0:
        return None
    return amount / (ms * 1e-3) / scale


def write_json(path, doc):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def run(args, selected):
    global torch, F
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        sys.exit("pytorch_bench.py: error: no CUDA device visible to PyTorch")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    doc = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "warmup": args.warmup,
        "iters": args.iters,
        "settings": {
            "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul.allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "compile_mode": "default",
            "max_autotune_budget_s": args.max_autotune_budget,
        },
        "workloads": [],
    }
    # The ceiling of every memory-bound kernel: a device-to-device copy of
    # 1 GiB, bytes read plus bytes written.
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda a, b: b.copy_(a), (src, dst), args.warmup,
                      args.iters)
    doc["device_copy"] = {"bytes": 2 * src.numel(), "ms": copy_ms,
                          "GBps": rate(2 * src.numel(), copy_ms, 1e9)}
    print("device copy (1 GiB): %.4f ms, %.1f GB/s read+written" % (
        copy_ms, doc["device_copy"]["GBps"]), flush=True)
    del src, dst
    torch.cuda.empty_cache()
    # Attention first: it has no torch.compile run and takes seconds, so
    # the --time-budget cannot skip it and run.sh's timeout does not cut it.
    for w in selected:
        if w.get("kind") == "attention":
            doc["workloads"].append(run_attention(w, args))
            write_json(args.out, doc)
    start = time.monotonic()
    for w in selected:
        if w.get("kind") == "attention":
            continue
        record = {k: w[k] for k in ("name", "shape", "dtype", "bytes", "flops")}
        record.update(eager_ms=None, compile_ms=None, compile_error=None)
        try:
            inputs = make_inputs(w, args.seed)
            record["eager_ms"] = time_ms(w["fn"], inputs, args.warmup,
                                         args.iters)
        except Exception as e:  # recorded; the other workloads still run
            record["eager_error"] = "%s: %s" % (type(e).__name__, e)
            traceback.print_exc()
            inputs = None
        elapsed = time.monotonic() - start
        if args.no_compile:
            record["compile_error"] = "skipped (--no-compile)"
        elif args.time_budget and elapsed > args.time_budget:
            record["compile_error"] = (
                "skipped: --time-budget of %g s spent" % args.time_budget)
        elif inputs is not None:
            time_compiled(record, "compile", w, inputs, "default", args)
        if args.max_autotune_budget and is_gemm_workload(w):
            # torch.compile's GEMM autotuning (Triton templates against
            # cuBLAS): minutes of compilation a workload, so only while its
            # budget lasts.
            record.update(autotune_ms=None, autotune_error=None)
            if time.monotonic() - start > args.max_autotune_budget:
                record["autotune_error"] = (
                    "skipped: --max-autotune-budget of %g s spent" %
                    args.max_autotune_budget)
            elif inputs is not None:
                torch._dynamo.reset()
                time_compiled(record, "autotune", w, inputs, "max-autotune",
                              args)
        for mode in ("eager", "compile") + (
                ("autotune",) if "autotune_ms" in record else ()):
            ms = record[mode + "_ms"]
            record[mode + "_GBps"] = rate(w["bytes"], ms, 1e9)
            record[mode + "_TFLOPs"] = (rate(w["flops"], ms, 1e12)
                                        if w["flops"] else None)
        doc["workloads"].append(record)
        write_json(args.out, doc)  # partial results survive a timeout

        def fmt(v):
            return "%.4f" % v if v is not None else "null"
        print("%-42s eager %s ms (%s GB/s)  compile %s ms (%s GB/s)" % (
            w["name"], fmt(record["eager_ms"]), fmt(record["eager_GBps"]),
            fmt(record["compile_ms"]), fmt(record["compile_GBps"])),
            flush=True)
        del inputs
        try:
            torch._dynamo.reset()
        except Exception:
            pass
        torch.cuda.empty_cache()
    return doc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="JSON file to write")
    parser.add_argument("--list", action="store_true",
                        help="print the workloads and exit (no GPU needed)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only this workload (repeatable)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compile", action="store_true",
                        help="time eager only")
    parser.add_argument("--max-autotune-budget", type=float, default=0,
                        help="also time torch.compile(mode='max-autotune') "
                             "on the GEMM workloads until this many seconds "
                             "have passed (0: never)")
    parser.add_argument("--time-budget", type=float, default=0,
                        help="seconds after which the remaining torch.compile "
                             "runs are skipped (0: no limit)")
    args = parser.parse_args()

    all_workloads = workloads()
    selected = [w for w in all_workloads
                if not args.only or w["name"] in args.only]
    unknown = set(args.only) - {w["name"] for w in all_workloads}
    if unknown:
        parser.error("unknown workload(s): %s" % ", ".join(sorted(unknown)))
    if args.list:
        print("%-42s %-18s %-5s %14s %16s" % ("name", "shape", "dtype",
                                            "bytes", "flops"))
        for w in selected:
            print("%-42s %-18s %-5s %14d %16d" % (
                w["name"], "x".join(map(str, w["shape"])), w["dtype"],
                w["bytes"], w["flops"]))
        return
    if not args.out:
        parser.error("--out FILE is required (or --list)")
    if args.iters < 1 or args.warmup < 0:
        parser.error("--iters must be >= 1 and --warmup >= 0")
    run(args, selected)


if __name__ == "__main__":
    main()
