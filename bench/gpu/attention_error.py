#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""How far PyTorch's own bf16 attention lands from a float64 reference.

memwall-run --check judges an output element by |got - ref| / max(|ref|,
rms(ref)) (runtime/reference: compare). This script applies the same
measure to SDPA's flash and cuDNN backends on the small causal shapes of
bench/gpu (q, k, v uniform in [-1, 1] as memwall-run --inputs=random), so
the tolerance memwall's attention kernels are held to can be set against
what FlashAttention-2 itself reaches on the same kind of data.
  python3 bench/gpu/attention_error.py [--out FILE.json]
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F

SHAPES = [  # B, Hq, Hkv, Sq, Sk, D, causal
    (1, 8, 8, 1024, 1024, 64, True),
    (1, 8, 8, 1024, 1024, 128, True),
    (8, 16, 16, 2048, 2048, 64, False),
    (1, 32, 8, 1, 4096, 128, False),
]


def relative_error(got, ref):
    ref = ref.double()
    rms = ref.pow(2).mean().sqrt().clamp_min(1e-300)
    err = (got.double() - ref).abs() / torch.maximum(ref.abs(), rms)
    return err.max().item()


def reference(q, k, v, causal):
    q, k, v = q.double(), k.double(), v.double()
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:  # bottom-right aligned, as memwall: query i sees j <= i + Sk - Sq
        sq, sk = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device)[:, None]
        j = torch.arange(sk, device=s.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    results = []
    for b, hq, hkv, sq, sk, d, causal in SHAPES:
        def rand(h, s):
            t = torch.empty(b, h, s, d, device="cuda")
            return t.uniform_(-1, 1, generator=gen).to(torch.bfloat16)
        q, k, v = rand(hq, sq), rand(hkv, sk), rand(hkv, sk)
        ref = reference(q, k, v, causal)
        row = {"shape": [b, hq, hkv, sq, sk, d], "causal": causal,
               "bf16_rounding_of_ref": relative_error(
                   ref.to(torch.bfloat16), ref)}
        for name, backend in (("flash", "FLASH_ATTENTION"),
                              ("cudnn", "CUDNN_ATTENTION")):
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel(getattr(SDPBackend, backend)):
                    out = F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal and sq == sk,
                        enable_gqa=hq != hkv)
                row[name] = relative_error(out, ref)
            except Exception as e:  # a backend that refuses the shape
                row[name] = None
                row[name + "_error"] = "%s: %s" % (type(e).__name__, e)
        results.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
