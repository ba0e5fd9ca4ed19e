# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Prints the GPT-2-medium-shaped training step of ../shared/docs/baselines.md
as memwall IR, written out by hand (not memwall-gen): 24 pre-LN blocks
(LN -> QKV -> causal attention -> proj -> residual -> LN -> 4h MLP with
GELU -> residual), d = 1024, 16 heads of 64, batch 16, sequence 1024, bf16
weights and activations, no embedding, head or optimizer; the loss is
mean(out^2), as PyTorch measured it (forward + backward, 80.4 ms eager)."""
import sys

B, T, D, H = 16, 1024, 1024, 16
HD = D // H
F = 4 * D
L = int(sys.argv[1]) if len(sys.argv) > 1 else 24
act = f"tensor<{B}x{T}x{D}xbf16>"
heads = f"tensor<{B}x{H}x{T}x{HD}xbf16>"
split = f"tensor<{B}x{T}x{H}x{HD}xbf16>"

args = [f"%x: {act} {{memwall.kind = #memwall.arg_kind<input>}}"]
body = []
x = "%x"
for l in range(L):
    def w(name, shape):
        args.append(f"%l{l}_{name}: tensor<{shape}xbf16> "
                    "{memwall.kind = #memwall.arg_kind<weight>}")
        return f"%l{l}_{name}"
    ln1w, ln1b = w("ln1w", D), w("ln1b", D)
    qkvw, qkvb = w("qkvw", f"{D}x{3 * D}"), w("qkvb", 3 * D)
    projw, projb = w("projw", f"{D}x{D}"), w("projb", D)
    ln2w, ln2b = w("ln2w", D), w("ln2b", D)
    fcw, fcb = w("fcw", f"{D}x{F}"), w("fcb", F)
    fc2w, fc2b = w("fc2w", f"{F}x{D}"), w("fc2b", D)
    p = f"%b{l}_"
    loc = lambda name: f'loc("layers.{l}.{name}")'
    body.append(f"{p}ln1 = memwall.layer_norm {x}, {ln1w}, {ln1b} : {act}, tensor<{D}xbf16>, tensor<{D}xbf16> {loc('ln_1')}")
    body.append(f"{p}qkv = memwall.matmul {p}ln1, {qkvw} bias {qkvb} : {act}, tensor<{D}x{3 * D}xbf16>, tensor<{3 * D}xbf16> -> tensor<{B}x{T}x{3 * D}xbf16> {loc('attn.qkv')}")
    for i, n in enumerate("qkv"):
        body.append(f"{p}{n}s = memwall.slice {p}qkv offsets [0, 0, {i * D}] sizes [{B}, {T}, {D}] : tensor<{B}x{T}x{3 * D}xbf16> -> {act} {loc('attn.' + n)}")
        body.append(f"{p}{n}r = memwall.reshape {p}{n}s [{B}, {T}, {H}, {HD}] : {act} -> {split} {loc('attn.' + n + '.split')}")
        body.append(f"{p}{n} = memwall.transpose {p}{n}r [0, 2, 1, 3] : {split} -> {heads} {loc('attn.' + n + '.heads')}")
    body.append(f"{p}a = memwall.attention {p}q, {p}k, {p}v causal : {heads}, {heads}, {heads} -> {heads} {loc('attn')}")
    body.append(f"{p}at = memwall.transpose {p}a [0, 2, 1, 3] : {heads} -> {split} {loc('attn.heads')}")
    body.append(f"{p}am = memwall.reshape {p}at [{B}, {T}, {D}] : {split} -> {act} {loc('attn.merge')}")
    body.append(f"{p}proj = memwall.matmul {p}am, {projw} bias {projb} : {act}, tensor<{D}x{D}xbf16>, tensor<{D}xbf16> -> {act} {loc('attn.proj')}")
    body.append(f"{p}r1 = memwall.add {x}, {p}proj : {act}, {act} -> {act} {loc('attn.residual')}")
    body.append(f"{p}ln2 = memwall.layer_norm {p}r1, {ln2w}, {ln2b} : {act}, tensor<{D}xbf16>, tensor<{D}xbf16> {loc('ln_2')}")
    body.append(f"{p}fc = memwall.matmul {p}ln2, {fcw} bias {fcb} : {act}, tensor<{D}x{F}xbf16>, tensor<{F}xbf16> -> tensor<{B}x{T}x{F}xbf16> {loc('mlp.fc')}")
    body.append(f"{p}g = memwall.gelu {p}fc erf : tensor<{B}x{T}x{F}xbf16> {loc('mlp.gelu')}")
    body.append(f"{p}fc2 = memwall.matmul {p}g, {fc2w} bias {fc2b} : tensor<{B}x{T}x{F}xbf16>, tensor<{F}x{D}xbf16>, tensor<{D}xbf16> -> {act} {loc('mlp.proj')}")
    body.append(f"{p}r2 = memwall.add {p}r1, {p}fc2 : {act}, {act} -> {act} {loc('mlp.residual')}")
    x = f"{p}r2"
body.append(f"%sq = memwall.mul {x}, {x} : {act}, {act} -> {act} loc(\"loss.square\")")
body.append(f"%sqf = memwall.cast %sq to f32 : {act} -> tensor<{B}x{T}x{D}xf32> loc(\"loss.cast\")")
body.append(f"%loss = memwall.reduce mean %sqf axes [0, 1, 2] : tensor<{B}x{T}x{D}xf32> -> tensor<f32> loc(\"loss\")")
print("module @gpt2_medium_step {")
print("  func.func @train_step(" + ", ".join(args) + ") -> tensor<f32> {")
for line in body:
    print("    " + line)
print("    return %loss : tensor<f32>")
print("  }")
print("}")
