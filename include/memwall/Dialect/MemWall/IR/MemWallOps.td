//===- MemWallOps.td - memwall operations ------------------*- tablegen -*-===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef MEMWALL_DIALECT_MEMWALL_IR_MEMWALLOPS_TD
#define MEMWALL_DIALECT_MEMWALL_IR_MEMWALLOPS_TD

include "memwall/Dialect/MemWall/IR/MemWallAttrs.td"
include "memwall/Dialect/MemWall/IR/MemWallInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Element types arithmetic runs in (norms, activations, softmax, ...).
def MemWall_ComputeTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
// Element types a contraction can consume (tensor cores take fp8 and int8).
def MemWall_ContractionTensor
    : StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2, I8]>;
// Element types attention supports (FlashAttention-3 takes fp8 e4m3).
// fp8 e5m2 appears as a KV cache (K/V) element type only.
def MemWall_AttentionTensor
    : StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;
// Token ids, positions and labels.
def MemWall_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
// Anything data movement can carry.
// I4: int4 groupwise-quantized weights (int4-weights), cast at use.
def MemWall_AnyTensor : StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2,
                                             I<4>, I8, I32, I64, I1]>;
// Weights stored quantized (weight-only quantization).
def MemWall_QuantizedTensor
    : StaticShapeTensorOf<[I<4>, I8, F8E4M3FN, F8E5M2]>;
def MemWall_MaskTensor : StaticShapeTensorOf<[I1, F32, BF16, F16]>;
def MemWall_CastElementType : AnyTypeOf<[F32, BF16, F16, F8E4M3FN, F8E5M2, I8,
                                          I32, I64]>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// `costMethods` names the CostOpInterface methods with a default
// implementation that the op overrides.
class MemWall_Op<string mnemonic, list<Trait> traits = [],
                 list<string> costMethods = []>
    : Op<MemWall_Dialect, mnemonic,
         !listconcat(traits, [Pure,
             DeclareOpInterfaceMethods<MemWall_CostOpInterface, costMethods>])>;

// The spelled-out result type is the inferred one (memwall::
// InferredResultType: checked before the op's verifier, one diagnostic).
def MemWall_InferredResultType : NativeOpTrait<"InferredResultType"> {
  let cppNamespace = "::memwall";
}

// Ops whose result type is computed from operands and attributes and also
// spelled out in their syntax.
class MemWall_InferredOp<string mnemonic, list<Trait> traits = [],
                         list<string> costMethods = []>
    : MemWall_Op<mnemonic, !listconcat(traits, [InferTypeOpAdaptor,
                                                MemWall_InferredResultType]),
                 costMethods>;

// The interfaces that give an op its meaning beyond cost, implemented next
// to the op's verifier (docs/design.md, "Adding an op").
defvar MemWall_VJP = DeclareOpInterfaceMethods<MemWall_AutodiffOpInterface>;
defvar MemWall_ScalarPayload =
    DeclareOpInterfaceMethods<MemWall_ElementwiseOpInterface>;
defvar MemWall_RowReduction = DeclareOpInterfaceMethods<
    MemWall_RowReductionOpInterface, ["isRowReduction"]>;
defvar MemWall_Aliasing =
    DeclareOpInterfaceMethods<MemWall_AliasingOpInterface>;
defvar MemWall_ReferenceAttrs =
    DeclareOpInterfaceMethods<MemWall_ReferenceAttrsOpInterface>;

class MemWall_UnaryElementwiseOp<string mnemonic, list<Trait> traits = []>
    : MemWall_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                InferTypeOpInterface,
                                                MemWall_VJP,
                                                MemWall_ScalarPayload])> {
  let arguments = (ins MemWall_ComputeTensor:$input);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class MemWall_BinaryElementwiseOp<string mnemonic, string formula>
    : MemWall_InferredOp<mnemonic, [MemWall_VJP, MemWall_ScalarPayload]> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = [{
    Elementwise `}] # formula # [{` with NumPy broadcasting: shapes are
    aligned at their trailing dimensions and each pair of dimensions must be
    equal or one of them 1 (a missing leading dimension counts as 1). Both
    operands have the same element type, which the result keeps.

    ```mlir
    %r = memwall.}] # mnemonic # [{ %x, %bias
        : tensor<4x128x768xbf16>, tensor<768xbf16> -> tensor<4x128x768xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$lhs, MemWall_ComputeTensor:$rhs);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def MemWall_MatmulOp : MemWall_InferredOp<"matmul",
    [MemWall_VJP, MemWall_ReferenceAttrs],
    ["getMathPrecision", "getKernelWork", "getBytesRead"]> {
  let summary = "batched matrix multiplication with optional bias";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`),
    `rhs` is `[batch..., K, N]` (`[batch..., N, K]` with `transpose_rhs`);
    both have rank >= 2 and their batch dimensions broadcast like NumPy (so a
    rank-3 activation times a rank-2 weight is a linear layer). The optional
    `bias` has shape `[N]` and is added to every row.

    Both operands share one element type. The result keeps it, except that
    fp8 products are returned in bf16 and i8 products in i32 (tensor cores
    accumulate them wider; cast the result to narrow it again).

    ```mlir
    %y = memwall.matmul %x, %w bias %b {transpose_rhs}
        : tensor<4x128x768xbf16>, tensor<3072x768xbf16>, tensor<3072xbf16>
        -> tensor<4x128x3072xbf16>
    ```
  }];
  let arguments = (ins MemWall_ContractionTensor:$lhs,
                       MemWall_ContractionTensor:$rhs,
                       Optional<MemWall_ComputeTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs StaticShapeTensorOf<[F32, BF16, F16, I32]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` $bias^)? attr-dict `:` type($lhs) `,` type($rhs)
    (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The contraction dimensions of this op, from operand shapes.
    struct Dims { int64_t batch, m, n, k; };
    Dims getDims();
  }];
}

def MemWall_AttentionOp : MemWall_InferredOp<"attention",
    [MemWall_VJP, MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten",
     "getKernelWork", "getWorkspaceBytes"]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(scale * query @ key^T + mask) @ value` per batch and head.
    `query` is `[B, Hq, Sq, D]`, `key` `[B, Hkv, Sk, D]`, `value`
    `[B, Hkv, Sk, Dv]`, the result `[B, Hq, Sq, Dv]`. Grouped-query attention:
    `Hq` must be a multiple of `Hkv` and query head `h` reads KV head
    `h / (Hq / Hkv)` (Hkv = 1 is multi-query attention).

    `scale` defaults to `1/sqrt(D)`. With `causal`, query `i` sees keys
    `j <= i + (Sk - Sq)`: the mask is aligned to the bottom-right corner, so a
    decode step (Sq = 1) over a KV cache sees every cached key; this needs
    `Sq <= Sk`. With a sliding `window` W as well (Mistral; causal only),
    query `i` sees the W keys ending at its diagonal, `i + (Sk - Sq) - W < j`.
    The optional `mask` broadcasts to `[B, Hq, Sq, Sk]`; an `i1`
    mask keeps positions where it is true, a floating mask is added to the
    scores.

    All three inputs share one element type; fp8 inputs give a bf16 result.

    ```mlir
    %o = memwall.attention %q, %k, %v causal
        : tensor<1x32x128x128xbf16>, tensor<1x8x128x128xbf16>,
          tensor<1x8x128x128xbf16> -> tensor<1x32x128x128xbf16>
    ```
  }];
  let arguments = (ins MemWall_AttentionTensor:$query,
                       MemWall_AttentionTensor:$key,
                       MemWall_AttentionTensor:$value,
                       Optional<MemWall_MaskTensor>:$mask,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)?
    (`window` $window^)? (`scale` $scale^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// 1/sqrt(D) unless `scale` is set.
    double getEffectiveScale();
    /// Number of (query, key) pairs that are not causally (or by the window)
    /// masked, summed over one head of one batch element.
    int64_t getUnmaskedPairsPerHead();
  }];
  let hasVerifier = 1;
}

def MemWall_FlashAttentionOp : MemWall_Op<"flash_attention",
    [MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten",
     "getKernelWork"]> {
  let summary = "attention tiled FlashAttention-style (online softmax)";
  let description = [{
    What `memwall-tile-attention` turns `memwall.attention` into: the same
    result, computed per block of `block_q` queries by a loop over blocks of
    `block_kv` keys that carries the running row maximum, the running sum of
    exponentials and the output accumulator, so no `[Sq, Sk]` tensor reaches
    memory. Causal blocks that are entirely masked (also those wholly before
    a sliding `window`) are skipped. Grouped-query
    heads read their shared K/V tiles. With `num_splits > 1` (flash-decoding)
    the key blocks are split into that many ranges computed in parallel and
    combined by their log-sum-exps. The second result is the log-sum-exp of
    each row's scaled scores (`[B, Hq, Sq]`, f32), which the backward
    (`flash_attention_grad`) reads instead of recomputing the softmax
    normalizer. Operands and attributes otherwise as `memwall.attention`
    (`scale` is the effective scale).

    ```mlir
    %o, %lse = memwall.flash_attention %q, %k, %v causal scale 0.125
        block_q 128 block_kv 64 splits 1
        : (tensor<1x32x1024x128xbf16>, tensor<1x8x1024x128xbf16>,
           tensor<1x8x1024x128xbf16>)
        -> (tensor<1x32x1024x128xbf16>, tensor<1x32x1024xf32>)
    ```
  }];
  let arguments = (ins MemWall_AttentionTensor:$query,
                       MemWall_AttentionTensor:$key,
                       MemWall_AttentionTensor:$value,
                       Optional<MemWall_MaskTensor>:$mask,
                       UnitAttr:$causal, F64Attr:$scale,
                       I64Attr:$block_q, I64Attr:$block_kv,
                       I64Attr:$num_splits, OptionalAttr<I64Attr>:$window);
  let results = (outs MemWall_ComputeTensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)?
    (`window` $window^)? `scale` $scale `block_q` $block_q `block_kv` $block_kv `splits`
    $num_splits attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getUnmaskedPairsPerHead();
    /// Key blocks read per KV head: its grouped-query heads' rows
    /// (`Hq / Hkv` heads x Sq queries, contiguous) are tiled in blocks of
    /// `block_q` rows that share each K/V tile; causal: fully masked blocks
    /// skipped.
    int64_t getVisibleKeyBlocksPerKVHead();
  }];
}

def MemWall_FlashAttentionGradOp : MemWall_Op<"flash_attention_grad",
    [MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten",
     "getKernelWork"]> {
  let summary = "FlashAttention-2 backward from the output and log-sum-exp";
  let description = [{
    The backward of `memwall.flash_attention`: per block of `block_kv` keys,
    a loop over blocks of `block_q` queries recomputes `P = exp(scale * Q K^T
    + mask - lse)` on chip and accumulates dK and dV; dQ is accumulated in
    fp32. Only the forward's output and `lse` are saved for it: no `[Sq, Sk]`
    tensor.

    ```mlir
    %dq, %dk, %dv = memwall.flash_attention_grad %q, %k, %v, %o, %do, %lse
        causal scale 0.125 block_q 64 block_kv 128 : (...) -> (...)
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$query,
                       MemWall_ComputeTensor:$key,
                       MemWall_ComputeTensor:$value,
                       MemWall_ComputeTensor:$out,
                       MemWall_ComputeTensor:$grad,
                       StaticShapeTensorOf<[F32]>:$lse,
                       Optional<MemWall_MaskTensor>:$mask,
                       UnitAttr:$causal, F64Attr:$scale,
                       I64Attr:$block_q, I64Attr:$block_kv,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs MemWall_ComputeTensor:$query_grad,
                      MemWall_ComputeTensor:$key_grad,
                      MemWall_ComputeTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $grad `,` $lse (`mask` $mask^)?
    (`causal` $causal^)? (`window` $window^)? `scale` $scale `block_q` $block_q `block_kv`
    $block_kv attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getUnmaskedPairsPerHead();
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic and activations
//===----------------------------------------------------------------------===//

def MemWall_AddOp : MemWall_BinaryElementwiseOp<"add", "lhs + rhs">;
def MemWall_SubOp : MemWall_BinaryElementwiseOp<"sub", "lhs - rhs">;
def MemWall_MulOp : MemWall_BinaryElementwiseOp<"mul", "lhs * rhs">;
def MemWall_DivOp : MemWall_BinaryElementwiseOp<"div", "lhs / rhs">;

def MemWall_ScaleOp : MemWall_Op<"scale", [SameOperandsAndResultType,
    InferTypeOpInterface, MemWall_VJP, MemWall_ScalarPayload]> {
  let summary = "multiplication by a constant";
  let description = [{
    `input * factor` elementwise.

    ```mlir
    %y = memwall.scale %x by 1.250000e-01 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input, F64Attr:$factor);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def MemWall_GeluOp : MemWall_Op<"gelu", [SameOperandsAndResultType,
    InferTypeOpInterface, MemWall_VJP, MemWall_ScalarPayload,
    MemWall_ReferenceAttrs]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with the exact `erf` form (default, BERT)
    `0.5 x (1 + erf(x / sqrt(2)))` or the `tanh` approximation (GPT-2)
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = memwall.gelu %x tanh : tensor<4x3072xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
      DefaultValuedAttr<MemWall_GeluApproximation,
                        "::memwall::GeluApproximation::Erf">:$approximation);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = "$input ($approximation^)? attr-dict `:` type($input)";
}

def MemWall_SiluOp : MemWall_UnaryElementwiseOp<"silu"> {
  let summary = "sigmoid linear unit `x * sigmoid(x)`";
  let description = [{
    ```mlir
    %y = memwall.silu %x : tensor<4x11008xbf16>
    ```
  }];
}

def MemWall_SigmoidOp : MemWall_UnaryElementwiseOp<"sigmoid"> {
  let summary = "logistic sigmoid `1 / (1 + exp(-x))`";
  let description = [{
    Gates a branch by a learned scalar (Qwen2-MoE's shared expert).

    ```mlir
    %g = memwall.sigmoid %x : tensor<4x1xbf16>
    ```
  }];
}

def MemWall_ReluOp : MemWall_UnaryElementwiseOp<"relu"> {
  let summary = "rectified linear unit `max(x, 0)`";
  let description = [{
    ```mlir
    %y = memwall.relu %x : tensor<4x8xf32>
    ```
  }];
}

def MemWall_TanhOp : MemWall_UnaryElementwiseOp<"tanh"> {
  let summary = "hyperbolic tangent (BERT's pooler activation)";
  let description = [{
    ```mlir
    %y = memwall.tanh %x : tensor<4x768xf32>
    ```
  }];
}

def MemWall_SwigluOp : MemWall_Op<"swiglu", [SameOperandsAndResultType,
    InferTypeOpInterface, MemWall_VJP, MemWall_ScalarPayload]> {
  let summary = "SwiGLU gate `silu(gate) * up`";
  let description = [{
    The gated activation of Llama's MLP: `silu(gate) * up`, elementwise on
    two tensors of the same type.

    ```mlir
    %h = memwall.swiglu %gate, %up : tensor<1x128x11008xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$gate, MemWall_ComputeTensor:$up);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def MemWall_DropoutOp : MemWall_Op<"dropout", [SameOperandsAndResultType,
    InferTypeOpInterface, MemWall_VJP, MemWall_ScalarPayload]> {
  let summary = "inverted dropout";
  let description = [{
    Zeroes each element with probability `rate` and scales the survivors by
    `1 / (1 - rate)`. The mask is drawn from a counter-based generator keyed
    by `seed`, so the op is a pure function of its input and attributes and a
    backward pass can regenerate the mask instead of storing it.
    `0 <= rate < 1`.

    The generator is Philox4x32-10 (Salmon et al., SC'11; as cuRAND and
    PyTorch use it): element i (flat, row-major) is dropped when word 0 of
    Philox4x32-10(counter = {lo32(i), hi32(i), 0, 0}, key = {lo32(seed),
    hi32(seed)}) is below floor(rate * 2^32). Kernels and the reference
    interpreter compute the same mask.

    ```mlir
    %y = memwall.dropout %x rate 1.000000e-01 seed 7 : tensor<4x768xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input, F64Attr:$rate,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `rate` $rate (`seed` $seed^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

def MemWall_LayerNormOp : MemWall_Op<"layer_norm", [InferTypeOpAdaptor,
    MemWall_VJP, MemWall_RowReductionOpInterface]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * weight + bias`, with mean and
    (biased) variance over the last dimension of `input`. `weight` and the
    optional `bias` have shape `[D]` for a last dimension of size D and may
    have a wider float type than `input` (fp32 LayerNorm parameters under
    bf16 autocast). The result has the input's type.

    ```mlir
    %y = memwall.layer_norm %x, %g, %b eps 1.000000e-05
        : tensor<4x128x768xbf16>, tensor<768xbf16>, tensor<768xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$weight,
                       Optional<MemWall_ComputeTensor>:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`eps` $epsilon^)? attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def MemWall_RmsNormOp : MemWall_Op<"rms_norm", [InferTypeOpAdaptor,
    MemWall_VJP, MemWall_RowReductionOpInterface]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * weight` over the last dimension of
    `input`; `weight` has shape `[D]`. The result has the input's type.

    ```mlir
    %y = memwall.rms_norm %x, %g eps 1.000000e-06
        : tensor<1x128x4096xbf16>, tensor<4096xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`eps` $epsilon^)? attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def MemWall_SoftmaxOp : MemWall_Op<"softmax", [SameOperandsAndResultType,
    InferTypeOpInterface, MemWall_VJP, MemWall_RowReduction,
    MemWall_ReferenceAttrs]> {
  let summary = "softmax along one axis";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `axis` (default -1, the
    last; negative axes count from the end).

    ```mlir
    %p = memwall.softmax %s axis -1 : tensor<1x12x128x128xf32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = "$input (`axis` $axis^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def MemWall_ReduceOp : MemWall_InferredOp<"reduce",
    [MemWall_VJP, MemWall_RowReduction, MemWall_ReferenceAttrs]> {
  let summary = "sum, max or mean over a set of axes";
  let description = [{
    Reduces `input` over `axes` (distinct, negative counts from the end).
    The reduced dimensions are removed, or kept with size 1 under
    `keep_dims`.

    ```mlir
    %m = memwall.reduce mean %x axes [2] keep_dims
        : tensor<4x128x768xf32> -> tensor<4x128x1xf32>
    ```
  }];
  let arguments = (ins MemWall_ReduceKind:$kind, MemWall_ComputeTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keep_dims);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $kind $input `axes` $axes (`keep_dims` $keep_dims^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Position and token handling
//===----------------------------------------------------------------------===//

def MemWall_RopeOp : MemWall_Op<"rope", [InferTypeOpAdaptor, MemWall_VJP,
    MemWall_ReferenceAttrs]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of features of `input` `[B, H, S, D]` (D even) by angles
    `position * theta^(-2i/D)`, `i < D/2`, pairing feature `i` with
    `i + D/2` (the "rotate half" layout of GPT-NeoX and Hugging Face Llama).
    `positions` holds integer positions of shape `[S]` or `[B, S]`; `theta`
    defaults to 10000. With `inverse` the rotation is by the negated angles:
    the inverse (and transpose) of the forward rotation, which is the
    vector-Jacobian product of rope. `llama3_scaling` `[factor,
    low_freq_factor, high_freq_factor, original_context]` rescales the
    frequencies as Llama-3.1 does (Hugging Face's rope_type "llama3"):
    wavelengths `2π / f` longer than `original_context / low_freq_factor`
    are divided by `factor`, those shorter than `original_context /
    high_freq_factor` kept, and those between interpolated by
    `smooth = (original_context / wavelength - low) / (high - low)`:
    `(1 - smooth) f / factor + smooth f`.

    ```mlir
    %qr = memwall.rope %q, %pos theta 1.000000e+04
        : tensor<1x32x128x128xbf16>, tensor<128xi64>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_IndexTensor:$positions,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       UnitAttr:$inverse,
                       OptionalAttr<DenseF64ArrayAttr>:$llama3_scaling);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions (`theta` $theta^)? (`inverse` $inverse^)?
    (`llama3_scaling` $llama3_scaling^)? attr-dict
    `:` type($input) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def MemWall_EmbeddingOp : MemWall_InferredOp<"embedding", [MemWall_VJP],
                                              ["getBytesRead"]> {
  let summary = "row gather from an embedding table";
  let description = [{
    `table[indices]`: `table` is `[V, D]`, `indices` any integer tensor `[...]`,
    the result `[..., D]` with the table's element type.

    ```mlir
    %h = memwall.embedding %wte[%tokens]
        : tensor<50257x768xbf16>, tensor<4x128xi64> -> tensor<4x128x768xbf16>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2,
                                            I8]>:$table,
                       MemWall_IndexTensor:$indices);
  let results = (outs StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2,
                                           I8]>:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` type($table) `,` type($indices) `->`
    type($result)
  }];
}

def MemWall_KVCacheAppendOp : MemWall_InferredOp<"kv_cache_append",
    [MemWall_VJP, MemWall_Aliasing],
    ["getBytesRead", "getBytesWritten"]> {
  let summary = "append new keys or values to a KV cache";
  let description = [{
    Concatenates `update` `[B, Hkv, T, D]` after `cache` `[B, Hkv, L, D]`
    along the sequence axis, giving `[B, Hkv, L + T, D]`. Semantically a
    concat; it is costed as the in-place write of the `T` new positions into
    a preallocated cache, which is what serving systems do.

    ```mlir
    %k2 = memwall.kv_cache_append %kcache, %k
        : tensor<1x8x4096x128xbf16>, tensor<1x8x1x128xbf16>
        -> tensor<1x8x4097x128xbf16>
    ```
  }];
  let arguments = (ins MemWall_AttentionTensor:$cache,
                       MemWall_AttentionTensor:$update);
  let results = (outs MemWall_AttentionTensor:$result);
  let assemblyFormat = [{
    $cache `,` $update attr-dict `:` type($cache) `,` type($update) `->`
    type($result)
  }];
  let extraClassDeclaration = [{
    /// True when codegen can write the new rows into the cache's own
    /// buffer (isCacheAnArgumentOnlyItReads). memwall-configure-kernels
    /// pins the answer as `memwall.in_place` for the lowering, which
    /// converts the function's arguments while it runs.
    bool canAppendInPlace();
    /// The cache is a function argument (passed through the memwall.fusion
    /// holding this op, if any) that nothing else reads: no reader sees it
    /// at the appended length's pitch and no second append writes the same
    /// rows.
    bool isCacheAnArgumentOnlyItReads();
  }];
}

def MemWall_CrossEntropyOp : MemWall_InferredOp<"cross_entropy",
    [MemWall_VJP, MemWall_ReferenceAttrs]> {
  let summary = "softmax cross-entropy against integer labels";
  let description = [{
    `-log(softmax(logits)[label])` per position, with `logits` `[..., V]` and
    `labels` `[...]`. Positions whose label equals `ignore_index` (when set)
    contribute nothing and are excluded from the mean. `reduction` is `mean`
    (default), `sum` (both give a rank-0 f32 tensor) or `none` (an f32 tensor
    shaped like `labels`). Labels outside `[0, V)` other than `ignore_index`
    are undefined behaviour.

    ```mlir
    %loss = memwall.cross_entropy %logits, %labels
        : tensor<4x128x50257xbf16>, tensor<4x128xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$logits,
                       MemWall_IndexTensor:$labels,
                       DefaultValuedAttr<MemWall_LossReduction,
                           "::memwall::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels ($reduction^)? (`ignore_index` $ignore_index^)?
    attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

def MemWall_LinearCrossEntropyOp : MemWall_InferredOp<"linear_cross_entropy",
    [MemWall_VJP, MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten", "getKernelWork",
     "getWorkspaceBytes"]> {
  let summary = "cross-entropy of a linear layer's logits, never stored whole";
  let description = [{
    `cross_entropy(matmul(hidden, weight), labels)`: the language-model head
    and its loss in one op (Liger-Kernel's fused linear cross-entropy, Apple's
    Cut Cross-Entropy), formed by `memwall-fuse-linear-cross-entropy`.
    `hidden` is `[..., D]`, `weight` `[V, D]` with `transpose_weight` (a tied
    embedding, `nn.Linear`'s layout) or `[D, V]` without; `labels` is
    `[...]`. The logits are computed in chunks of columns
    (`LinearHeadDims::getChunkColumns`, about an eighth of V): each chunk's `[N, V / chunks]` logits (rounded to the operands'
    type, as the matmul stores them) update every row's running max and sum
    of exponentials and pick the label's logit, so the `[..., V]` logits
    never exist. `reduction` and `ignore_index` as `memwall.cross_entropy`.
    The second result is each position's log-sum-exp (f32, shaped like
    `labels`), which the backward (`linear_cross_entropy_grad`) reads
    instead of a second pass over the vocabulary.

    ```mlir
    %loss, %lse = memwall.linear_cross_entropy %h, %wte, %labels
        transpose_weight
        : tensor<16x1024x1024xbf16>, tensor<50257x1024xbf16>,
          tensor<16x1024xi64> -> tensor<f32>, tensor<16x1024xf32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$hidden,
                       MemWall_ComputeTensor:$weight,
                       MemWall_IndexTensor:$labels,
                       DefaultValuedAttr<MemWall_LossReduction,
                           "::memwall::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       UnitAttr:$transpose_weight);
  let results = (outs StaticShapeTensorOf<[F32]>:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels ($reduction^)?
    (`ignore_index` $ignore_index^)? (`transpose_weight` $transpose_weight^)?
    attr-dict `:` type($hidden) `,` type($weight) `,` type($labels) `->`
    type($result) `,` type($lse)
  }];
  let extraClassDeclaration = [{
    ::memwall::LinearHeadDims getDims() {
      return ::memwall::LinearHeadDims::get(
          getHidden().getType(), getWeight().getType(), getTransposeWeight());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def MemWall_MoeGatingOp : MemWall_InferredOp<"moe_gating",
    [MemWall_VJP, MemWall_ReferenceAttrs]> {
  let summary = "softmax top-k routing of tokens to experts";
  let description = [{
    The router of a mixture of experts: per row of `logits` `[..., E]` (the
    router's linear layer applied to each token), the softmax over the `E`
    experts, then the `experts_per_token` (`k`) largest probabilities in
    descending order (ties to the lower expert index). `weights` `[..., k]`
    are those probabilities, renormalized to sum to one under `normalize`
    (Mixtral; Qwen2-MoE's `norm_topk_prob`), in the logits' element type;
    `indices` `[..., k]` (i32) are the chosen experts. The softmax runs in
    f32.

    ```mlir
    %w, %e = memwall.moe_gating %logits top 2 normalize
        : tensor<4x128x8xbf16> -> tensor<4x128x2xbf16>, tensor<4x128x2xi32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$logits,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$experts_per_token,
                       UnitAttr:$normalize);
  let results = (outs MemWall_ComputeTensor:$weights,
                      StaticShapeTensorOf<[I32]>:$indices);
  let assemblyFormat = [{
    $logits `top` $experts_per_token (`normalize` $normalize^)? attr-dict `:`
    type($logits) `->` type($weights) `,` type($indices)
  }];
}

def MemWall_MoeGatingGradOp : MemWall_InferredOp<"moe_gating_grad",
    [MemWall_ReferenceAttrs]> {
  let summary = "gradient of moe_gating w.r.t. the router logits";
  let description = [{
    From the gradient of the routing weights `[..., k]`, the logits
    `[..., E]` (whose softmax it recomputes) and the chosen experts: with
    `normalize`, the weights are the softmax of the chosen logits, so
    `dlogits[i_m] = w_m (dw_m - sum_j dw_j w_j)` at the chosen experts and 0
    elsewhere; without it, `dlogits_c = p_c (g_c - sum_j dw_j w_j)` with
    `g_c = dw_j` where `c = i_j` (0 otherwise). The result has the logits'
    type.

    ```mlir
    %dl = memwall.moe_gating_grad %dw, %logits, %e normalize
        : tensor<4x128x2xbf16>, tensor<4x128x8xbf16>, tensor<4x128x2xi32>
        -> tensor<4x128x8xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$grad,
                       MemWall_ComputeTensor:$logits,
                       StaticShapeTensorOf<[I32]>:$indices,
                       UnitAttr:$normalize);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $indices (`normalize` $normalize^)? attr-dict `:`
    type($grad) `,` type($logits) `,` type($indices) `->` type($result)
  }];
}

def MemWall_ExpertMatmulOp : MemWall_InferredOp<"expert_matmul",
    [MemWall_VJP, MemWall_ReferenceAttrs],
    ["getMathPrecision", "getKernelWork", "getBytesRead"]> {
  let summary = "grouped GEMM: each token slot times its expert's weight";
  let description = [{
    The experts' GEMM of a mixture of experts, with the token dispatch (the
    gather of each expert's tokens) and the un-permutation of the results
    folded in: `indices` `[..., k]` names each token's `k` experts, `weight`
    is `[E, K, N]` (`[E, N, K]` under `transpose_weight`), and
    `result[..., j, :] = x @ weight[indices[..., j]]` is `[..., k, N]`. The
    input is one row per token, `[..., K]`, shared by its `k` slots (the
    up-projections), or one row per slot, `[..., k, K]` (the
    down-projection). The combine is a weighted sum over the `k` axis
    (`memwall.mul` by the routing weights, `memwall.reduce sum`).

    It does the FLOPs of the chosen experts only, `2 T k K N` for `T`
    tokens, and reads the weights of the experts the tokens hit: in
    expectation under uniform routing `E (1 - (1 - k / E)^T)` of them (all
    of them once `T` is large, few at decode), at worst `min(E, T k)`.
    Indices outside `[0, E)` are undefined behaviour.

    ```mlir
    %h = memwall.expert_matmul %x, %w_up[%e]
        : tensor<4x128x4096xbf16>, tensor<8x4096x14336xbf16>,
          tensor<4x128x2xi32> -> tensor<4x128x2x14336xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$weight,
                       StaticShapeTensorOf<[I32]>:$indices,
                       UnitAttr:$transpose_weight);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `[` $indices `]`
    (`transpose_weight` $transpose_weight^)? attr-dict `:` type($input) `,`
    type($weight) `,` type($indices) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The contraction's sizes: tokens T, slots per token k, experts E,
    /// and each expert's [K, N].
    struct Dims { int64_t tokens, slots, experts, k, n; };
    Dims getDims();
    /// True when the input is one row per token shared by its slots.
    bool hasSharedInput();
    /// Experts the tokens hit in expectation under uniform routing,
    /// E (1 - (1 - k / E)^T), and at worst, min(E, T k).
    double getExpectedExpertsRead();
    int64_t getWorstCaseExpertsRead();
    /// Bytes of one expert's weight.
    int64_t getExpertWeightBytes();
  }];
}

def MemWall_ExpertMatmulWeightGradOp
    : MemWall_InferredOp<"expert_matmul_weight_grad",
    [MemWall_ReferenceAttrs], ["getMathPrecision", "getKernelWork"]> {
  let summary = "gradient of expert_matmul w.r.t. its expert weights";
  let description = [{
    `dweight[e] = sum over slots routed to e of x^T dy` (`dy^T x` under
    `transpose_weight`), `[experts, K, N]` (`[experts, N, K]`): `input` as
    `expert_matmul`'s (shared `[..., K]` or per slot `[..., k, K]`), `grad`
    `[..., k, N]`. Experts no token chose get zeros.

    ```mlir
    %dw = memwall.expert_matmul_weight_grad %x, %dy[%e] experts 8
        : tensor<4x128x4096xbf16>, tensor<4x128x2x14336xbf16>,
          tensor<4x128x2xi32> -> tensor<8x4096x14336xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$grad,
                       StaticShapeTensorOf<[I32]>:$indices,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$experts,
                       UnitAttr:$transpose_weight);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `[` $indices `]` `experts` $experts
    (`transpose_weight` $transpose_weight^)? attr-dict `:` type($input) `,`
    type($grad) `,` type($indices) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def MemWall_ReshapeOp : MemWall_InferredOp<"reshape",
    [MemWall_VJP, MemWall_Aliasing],
    ["getBytesRead", "getBytesWritten", "launchesKernel"]> {
  let summary = "reinterpret a tensor with a new shape";
  let description = [{
    Same elements in row-major order, new `shape` (same element count). It
    moves no data: a view of a contiguous buffer, costing no kernel.

    ```mlir
    %y = memwall.reshape %x [4, 128, 12, 64]
        : tensor<4x128x768xbf16> -> tensor<4x128x12x64xbf16>
    ```
  }];
  let arguments = (ins MemWall_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $input $shape attr-dict `:` type($input) `->` type($result)
  }];
}

def MemWall_TransposeOp : MemWall_InferredOp<"transpose", [MemWall_VJP]> {
  let summary = "permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`; the data is
    materialized in the new order (one read, one write).

    ```mlir
    %y = memwall.transpose %x [0, 2, 1, 3]
        : tensor<4x128x12x64xbf16> -> tensor<4x12x128x64xbf16>
    ```
  }];
  let arguments = (ins MemWall_AnyTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  // A permutation that moves only dims of size 1 is a reshape (a view).
  let hasCanonicalizer = 1;
}

def MemWall_SliceOp : MemWall_InferredOp<"slice",
    [MemWall_VJP, MemWall_ReferenceAttrs], ["getBytesRead"]> {
  let summary = "strided static slice";
  let description = [{
    Takes `sizes[i]` elements along each dimension `i`, starting at
    `offsets[i]` with step `strides[i]` (default 1). Every selected index must
    be in bounds.

    ```mlir
    %cls = memwall.slice %h offsets [0, 0, 0] sizes [4, 1, 768]
        : tensor<4x128x768xbf16> -> tensor<4x1x768xbf16>
    ```
  }];
  let arguments = (ins MemWall_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $input `offsets` $offsets `sizes` $sizes (`strides` $strides^)? attr-dict
    `:` type($input) `->` type($result)
  }];
}

def MemWall_ConcatOp : MemWall_InferredOp<"concat",
    [MemWall_VJP, MemWall_ReferenceAttrs]> {
  let summary = "concatenate tensors along an axis";
  let description = [{
    Joins one or more tensors of one element type and rank that agree on
    every dimension but `axis` (negative counts from the end).

    ```mlir
    %y = memwall.concat %a, %b axis 2
        : tensor<1x8x16x64xbf16>, tensor<1x8x1x64xbf16>
        -> tensor<1x8x17x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<MemWall_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
}

def MemWall_CastOp : MemWall_InferredOp<"cast",
    [MemWall_VJP, MemWall_Aliasing,
     DeclareOpInterfaceMethods<MemWall_ElementwiseOpInterface,
                               ["isFusibleElementwise"]>],
    ["getBytesRead", "getBytesWritten", "launchesKernel"]> {
  let summary = "element type conversion";
  let description = [{
    Converts each element to `element_type` (round to nearest even for
    floats, saturating for fp8, truncation toward zero for float to integer).

    A cast that widens quantized storage (i4, i8 or an 8-bit float) and is
    read only by matmuls is a *dequantize at use* (`isDequantizeAtUse`) with
    unit scales (an fp8 training step's backward reads its fp8 copies so):
    it runs inside the GEMM, launches no kernel, moves no bytes and holds no
    buffer. Weights quantized with scales are read through
    `memwall.dequantize`.

    ```mlir
    %y = memwall.cast %x to bf16 : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins MemWall_AnyTensor:$input,
                       TypeAttrOf<MemWall_CastElementType>:$element_type);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $input `to` $element_type attr-dict `:` type($input) `->` type($result)
  }];
}

def MemWall_DequantizeOp : MemWall_Op<"dequantize", [MemWall_Aliasing],
    ["getFlops", "getBytesRead", "getBytesWritten", "launchesKernel"]> {
  let summary = "quantized weights times their block scales";
  let description = [{
    `result[i] = round(float(input[i]) * float(scales[i / block]))`, rounded
    once to the result's element type: the weight-only quantization of AWQ,
    GPTQ and TensorRT-LLM. `scales` has the input's rank and each of its dims
    divides the input's; the quotients are the block each scale covers. A
    weight `[N, K]` quantized per output channel has scales `[N, 1]` (`[1, N]`
    for `[K, N]`); groups of 128 along K, scales `[N, K / 128]`. Asymmetric
    quantization adds `zero_points` of the scales' type, one per block:
    `round((float(input[i]) - float(zero_points[i / block])) *
    float(scales[i / block]))` (AWQ's and GPTQ's unsigned 4-bit weights with
    zero z are the signed i4 `q - 8` with zero point `z - 8`).

    A `codebook` of 2^bits values replaces `float(input[i])` by
    `codebook[code]`, the code being the stored integer's bits read unsigned
    (an i4 `-8` is code 8): QLoRA's 4-bit NormalFloat (NF4,
    `getNF4Codebook()`) is i4 codes, one absmax scale per 64 weights along
    K, and those scales double-quantized: themselves a dequantize of i8
    with one f32 scale per 256 of them (4.127 bits a weight).

    Read only by matmuls, it is a *dequantize at use* (`isDequantizeAtUse`):
    memwall-fuse puts it in its GEMM's kernel, which dequantizes each tile
    after loading it (docs/codegen.md), so it launches no kernel, moves no
    bytes of its own and holds no buffer; the matmul reads the quantized
    bytes and the scales (docs/cost-model.md). A dequantize read only as the
    scales of dequantizes at use (double quantization) is one at use too:
    the GEMM dequantizes the scales it loads.

    With `materialize` it runs as its own kernel instead (a *dequantize
    kernel*, dequantizing the scales it reads as the GEMM's prologue would)
    and writes the dequantized tensor, which its matmuls read as any
    weight: dequantize-then-GEMM, as bitsandbytes runs QLoRA's layers and
    vLLM large batches of AWQ weights, where dequantizing in every row of
    tiles of a GEMM with many rows costs more than writing the weight once.
    memwall-fuse sets it per GEMM by predicted time (docs/fusion.md).

    ```mlir
    %w = memwall.dequantize %q, %s
        : tensor<4096x4096xi8>, tensor<4096x1xbf16> -> tensor<4096x4096xbf16>
    %v = memwall.dequantize %q4, %s4 zero_points %z4
        : tensor<4096x4096xi4>, tensor<4096x32xbf16>, tensor<4096x32xbf16>
        -> tensor<4096x4096xbf16>
    %absmax = memwall.dequantize %a8, %a32
        : tensor<64x4096xi8>, tensor<64x16xf32> -> tensor<64x4096xf32>
    %u = memwall.dequantize %nf4, %absmax {codebook = array<f32: -1.0,
        -0.6961928, ..., 0.7229568, 1.0>}
        : tensor<4096x4096xi4>, tensor<64x4096xf32> -> tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins MemWall_QuantizedTensor:$input,
                       MemWall_ComputeTensor:$scales,
                       Optional<MemWall_ComputeTensor>:$zeroPoints,
                       OptionalAttr<DenseF32ArrayAttr>:$codebook,
                       UnitAttr:$materialize);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input `,` $scales (`zero_points` $zeroPoints^)? attr-dict `:`
    type($input) `,` type($scales) (`,` type($zeroPoints)^)? `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training: vector-Jacobian products and the optimizer update
//
// Built by memwall-autodiff; each runs as one kernel, as the fused backward
// kernels of PyTorch and cuDNN do. Result types are spelled out; verifiers
// check them against the forward op's shapes.
//===----------------------------------------------------------------------===//

def MemWall_ActivationGradOp : MemWall_Op<"activation_grad",
    [AllTypesMatch<["input", "grad", "result"]>, MemWall_ScalarPayload,
     MemWall_ReferenceAttrs]> {
  let summary = "gradient of a pointwise activation: `grad * f'(input)`";
  let description = [{
    The vector-Jacobian product of `gelu` (erf or tanh form), `silu`, `relu`
    or `tanh` at the forward input `input`, applied to the incoming gradient
    `grad`.

    ```mlir
    %dx = memwall.activation_grad gelu_tanh %x, %dy : tensor<4x3072xbf16>
    ```
  }];
  let arguments = (ins MemWall_ActivationKind:$activation,
                       MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$grad);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $grad attr-dict `:` type($result)
  }];
}

def MemWall_LayerNormGradOp : MemWall_Op<"layer_norm_grad",
    [MemWall_ReferenceAttrs]> {
  let summary = "gradients of layer_norm w.r.t. input, weight and bias";
  let description = [{
    Given the forward input `input` `[..., D]`, `weight` `[D]` and the
    gradient `grad` of the output, returns the input gradient (the input's
    type), the weight gradient and, with `has_bias`, the bias gradient (the
    weight's type). Mean and variance are recomputed per row, so nothing but
    the forward input is saved (PyTorch saves the per-row mean and rstd too:
    8 bytes a row).

    ```mlir
    %dx, %dw, %db = memwall.layer_norm_grad %x, %w, %dy has_bias
        : (tensor<8x768xbf16>, tensor<768xbf16>, tensor<8x768xbf16>)
        -> (tensor<8x768xbf16>, tensor<768xbf16>, tensor<768xbf16>)
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$weight,
                       MemWall_ComputeTensor:$grad,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       UnitAttr:$has_bias);
  let results = (outs MemWall_ComputeTensor:$input_grad,
                      MemWall_ComputeTensor:$weight_grad,
                      Optional<MemWall_ComputeTensor>:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad (`eps` $epsilon^)? (`has_bias` $has_bias^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$grad, "double":$epsilon, "bool":$hasBias)>
  ];
}

def MemWall_RmsNormGradOp : MemWall_Op<"rms_norm_grad",
    [AllTypesMatch<["input", "grad", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "gradients of rms_norm w.r.t. input and weight";
  let description = [{
    ```mlir
    %dx, %dw = memwall.rms_norm_grad %x, %w, %dy
        : tensor<8x4096xbf16>, tensor<4096xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input,
                       MemWall_ComputeTensor:$weight,
                       MemWall_ComputeTensor:$grad,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs MemWall_ComputeTensor:$input_grad,
                      MemWall_ComputeTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad (`eps` $epsilon^)? attr-dict `:`
    type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$grad, "double":$epsilon)>
  ];
}

def MemWall_AttentionGradOp : MemWall_Op<"attention_grad",
    [MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten",
     "getKernelWork", "getWorkspaceBytes"]> {
  let summary = "gradients of attention w.r.t. query, key and value";
  let description = [{
    The backward of `memwall.attention` in the recompute form of
    FlashAttention-2: from the forward inputs, the forward output `out` and
    its gradient `grad`, the probabilities are recomputed, so no `[Sq, Sk]`
    tensor is saved between forward and backward. Grouped-query heads sum
    their key and value gradients. `causal`, `window`, `scale` and `mask` are
    the forward's. A floating-point (additive) mask that is trained, such as a
    learned relative-position bias, gets its gradient as a fourth result
    `mask_grad`: the score gradient summed over the mask's broadcast
    dimensions. Costed, like untiled attention, as if the scores and their
    gradient went through DRAM.

    ```mlir
    %dq, %dk, %dv = memwall.attention_grad %q, %k, %v, %o, %do causal
        scale 0.125 : (tensor<1x4x64x64xbf16>, tensor<1x2x64x64xbf16>,
        tensor<1x2x64x64xbf16>, tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16>)
        -> (tensor<1x4x64x64xbf16>, tensor<1x2x64x64xbf16>,
        tensor<1x2x64x64xbf16>)
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$query,
                       MemWall_ComputeTensor:$key,
                       MemWall_ComputeTensor:$value,
                       MemWall_ComputeTensor:$out,
                       MemWall_ComputeTensor:$grad,
                       Optional<MemWall_MaskTensor>:$mask,
                       UnitAttr:$causal, F64Attr:$scale,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs MemWall_ComputeTensor:$query_grad,
                      MemWall_ComputeTensor:$key_grad,
                      MemWall_ComputeTensor:$value_grad,
                      Optional<MemWall_ComputeTensor>:$mask_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $grad (`mask` $mask^)?
    (`causal` $causal^)? (`window` $window^)? `scale` $scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::memwall::AttentionOp":$forward, "::mlir::Value":$grad,
                   CArg<"bool", "false">:$withMaskGrad)>
  ];
  let extraClassDeclaration = [{
    /// Unmasked (query, key) pairs of one head of one batch element.
    int64_t getUnmaskedPairsPerHead();
  }];
}

def MemWall_EmbeddingGradOp : MemWall_Op<"embedding_grad"> {
  let summary = "scatter-add of row gradients into a table gradient";
  let description = [{
    The gradient of `memwall.embedding`: a zero `[V, D]` table into which
    row `grad[i]` is added at `indices[i]` (repeated indices accumulate).

    ```mlir
    %dtable = memwall.embedding_grad %dy[%tokens]
        : tensor<4x128x768xbf16>, tensor<4x128xi64> -> tensor<50257x768xbf16>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$grad,
                       MemWall_IndexTensor:$indices);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $grad `[` $indices `]` attr-dict `:` type($grad) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def MemWall_CrossEntropyGradOp : MemWall_Op<"cross_entropy_grad",
    [AllTypesMatch<["logits", "result"]>, MemWall_ReferenceAttrs]> {
  let summary = "gradient of cross_entropy w.r.t. the logits";
  let description = [{
    `(softmax(logits) - onehot(labels)) * dloss`, divided by the number of
    counted positions for `mean`; positions at `ignore_index` get zero.
    `grad` is the loss gradient: rank 0 for `mean`/`sum`, shaped like
    `labels` for `none`. The result has the logits' type.

    ```mlir
    %dlogits = memwall.cross_entropy_grad %logits, %labels, %dloss
        : tensor<4x128x50257xbf16>, tensor<4x128xi64>, tensor<f32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$logits,
                       MemWall_IndexTensor:$labels,
                       StaticShapeTensorOf<[F32]>:$grad,
                       DefaultValuedAttr<MemWall_LossReduction,
                           "::memwall::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad ($reduction^)?
    (`ignore_index` $ignore_index^)? attr-dict `:` type($logits) `,`
    type($labels) `,` type($grad)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::memwall::CrossEntropyOp":$forward, "::mlir::Value":$grad)>
  ];
}

def MemWall_LinearCrossEntropyGradOp : MemWall_Op<"linear_cross_entropy_grad",
    [AllTypesMatch<["hidden", "hidden_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>, MemWall_ReferenceAttrs],
    ["getMathPrecision", "getBytesRead", "getBytesWritten", "getKernelWork",
     "getWorkspaceBytes"]> {
  let summary = "gradients of linear_cross_entropy, chunk by chunk";
  let description = [{
    The backward of `memwall.linear_cross_entropy`: per chunk of vocabulary
    columns, the chunk's logits are recomputed, turned into
    `(exp(logits - lse) - onehot(labels)) * dloss` (divided by the counted
    positions for `mean`, zero at `ignore_index`, rounded to the operands'
    type as `cross_entropy_grad` stores it), and multiplied into the hidden
    gradient (accumulated in fp32 across chunks) and the chunk's rows of the
    weight gradient (one GEMM over every position). `grad` is the loss
    gradient (rank 0 for `mean`/`sum`, shaped like `labels` for `none`).

    ```mlir
    %dh, %dw = memwall.linear_cross_entropy_grad %h, %wte, %labels, %lse,
        %dloss transpose_weight
        : tensor<16x1024x1024xbf16>, tensor<50257x1024xbf16>,
          tensor<16x1024xi64>, tensor<16x1024xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$hidden,
                       MemWall_ComputeTensor:$weight,
                       MemWall_IndexTensor:$labels,
                       StaticShapeTensorOf<[F32]>:$lse,
                       StaticShapeTensorOf<[F32]>:$grad,
                       DefaultValuedAttr<MemWall_LossReduction,
                           "::memwall::LossReduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       UnitAttr:$transpose_weight);
  let results = (outs MemWall_ComputeTensor:$hidden_grad,
                      MemWall_ComputeTensor:$weight_grad);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels `,` $lse `,` $grad ($reduction^)?
    (`ignore_index` $ignore_index^)? (`transpose_weight` $transpose_weight^)?
    attr-dict `:` type($hidden) `,` type($weight) `,` type($labels) `,`
    type($lse) `,` type($grad)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::memwall::LinearCrossEntropyOp":$forward,
                   "::mlir::Value":$grad)>
  ];
  let extraClassDeclaration = [{
    ::memwall::LinearHeadDims getDims() {
      return ::memwall::LinearHeadDims::get(
          getHidden().getType(), getWeight().getType(), getTransposeWeight());
    }
  }];
}

def MemWall_BroadcastOp : MemWall_InferredOp<"broadcast",
    [MemWall_ScalarPayload]> {
  let summary = "NumPy broadcast of a tensor to a shape";
  let description = [{
    Materializes `input` broadcast to `shape` (trailing dimensions aligned;
    each input dimension equals the target's or is 1). The vector-Jacobian
    product of a reduction.

    ```mlir
    %b = memwall.broadcast %x [4, 128, 768]
        : tensor<4x128x1xf32> -> tensor<4x128x768xf32>
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs MemWall_ComputeTensor:$result);
  let assemblyFormat = [{
    $input $shape attr-dict `:` type($input) `->` type($result)
  }];
}

def MemWall_PadOp : MemWall_InferredOp<"pad"> {
  let summary = "zero padding";
  let description = [{
    Places `input` at offset `low` inside a zero tensor with `low[i]` and
    `high[i]` extra elements before and after dimension `i` (both >= 0). The
    vector-Jacobian product of `memwall.slice`.

    ```mlir
    %p = memwall.pad %x low [0, 768] high [0, 1536]
        : tensor<8x768xbf16> -> tensor<8x3072xbf16>
    ```
  }];
  let arguments = (ins MemWall_AnyTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs MemWall_AnyTensor:$result);
  let assemblyFormat = [{
    $input `low` $low `high` $high attr-dict `:` type($input) `->`
    type($result)
  }];
}

def MemWall_AdamWOp : MemWall_Op<"adamw", [MemWall_Aliasing]> {
  let summary = "one AdamW step on one parameter (decoupled weight decay)";
  let description = [{
    PyTorch's `torch.optim.AdamW` update for step `step` (>= 1):

    ```
    p <- p - lr * weight_decay * p
    m <- beta1 * m + (1 - beta1) * g
    v <- beta2 * v + (1 - beta2) * g^2
    p <- p - lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + epsilon)
    ```

    `p` is `master` when given (fp32 master weights under mixed precision,
    and the new `param` is the updated master rounded to the param's type),
    else `param`. Results: the new param, m, v and, with `master`, the new
    master. The update is in place: each result reuses its operand's buffer
    (memory planning counts no new bytes).

    ```mlir
    %p2, %m2, %v2, %w2 = memwall.adamw %p, %g, %m, %v master %w lr 3.0e-04
        : (tensor<768xbf16>, tensor<768xbf16>, tensor<768xf32>,
           tensor<768xf32>, tensor<768xf32>)
        -> (tensor<768xbf16>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins MemWall_ComputeTensor:$param,
                       MemWall_ComputeTensor:$grad,
                       MemWall_ComputeTensor:$exp_avg,
                       MemWall_ComputeTensor:$exp_avg_sq,
                       Optional<MemWall_ComputeTensor>:$master,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<I64Attr, "1">:$step);
  let results = (outs MemWall_ComputeTensor:$new_param,
                      MemWall_ComputeTensor:$new_exp_avg,
                      MemWall_ComputeTensor:$new_exp_avg_sq,
                      Optional<MemWall_ComputeTensor>:$new_master);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq (`master` $master^)?
    `lr` $lr (`beta1` $beta1^)? (`beta2` $beta2^)? (`eps` $epsilon^)?
    (`weight_decay` $weight_decay^)? (`step` $step^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$param, "::mlir::Value":$grad,
                   "::mlir::Value":$expAvg, "::mlir::Value":$expAvgSq,
                   "::mlir::Value":$master, "double":$lr)>
  ];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def MemWall_FusionOp : MemWall_Op<"fusion",
    [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">,
     MemWall_VJP, MemWall_Aliasing],
    ["getBytesRead", "getBytesWritten", "getMathPrecision"]> {
  let summary = "ops that run as one kernel";
  let description = [{
    The body runs as one GPU kernel (or, for `matmul_epilogue`, one GEMM call
    with its epilogue): values passed between body ops stay in registers, so
    only the `inputs` are read from and the results written to DRAM. The
    block arguments are the inputs, in order; `memwall.yield` gives the
    results. Built by `memwall-fuse`; the kind says which kernel template
    codegen uses:

    - `elementwise`: elementwise ops over one iteration shape;
    - `reduction`: one row reduction (layer_norm, rms_norm, softmax or reduce
      over the last axis) with elementwise prologue and epilogue;
    - `matmul_epilogue`: one matmul with what cuBLASLt applies after it
      (bias, relu or tanh-GELU, or a residual add), or sibling matmuls of one
      lhs as one strided-batched cuBLASLt call;
    - `horizontal`: independent AdamW updates as one multi-tensor launch
      (each CTA updates a slice of one parameter), as XLA's horizontal loop
      fusion and PyTorch's fused AdamW do.

    A result that a body op updates in place (AdamW's states, a KV-cache
    append) reuses the buffer of the input it updates.

    Its cost is the fused kernel's: the body's FLOPs, the inputs' bytes read
    once and the results' bytes written once.

    ```mlir
    %r = memwall.fusion elementwise (%x, %b)
        : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %0 = memwall.add %a, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
      %1 = memwall.relu %0 : tensor<4x8xf32>
      memwall.yield %1 : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins MemWall_FusionKind:$kind, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::memwall::FusionKind":$kind, "::mlir::ValueRange":$inputs,
                   "::mlir::TypeRange":$resultTypes)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// Kernels (and GEMM calls) the body's ops launch when unfused.
    unsigned getNumUnfusedKernels();
  }];
}

def MemWall_YieldOp : Op<MemWall_Dialect, "yield",
    [Pure, HasParent<"FusionOp">, ReturnLike, Terminator]> {
  let summary = "results of a memwall.fusion body";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

#endif // MEMWALL_DIALECT_MEMWALL_IR_MEMWALLOPS_TD
