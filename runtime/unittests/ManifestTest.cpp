//===- ManifestTest.cpp - Tests of manifest parsing and validation --------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Manifest.h"
#include "memwall-runtime/BundleSchema.h"

#include <gtest/gtest.h>

#include <cstring>

#include <climits>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

using namespace memwall::runtime;

namespace {

// x [4,8] . w [8,16] -> t (a gemm), relu(t) -> out (a kernel).
const char *kValidManifest = R"({
  "format": "memwall-bundle", "version": 1, "model": "m",
  "target": "h100-sxm", "arch": "sm_90a",
  "modules": [ { "name": "kernels", "file": "kernels.ptx" } ],
  "arena_bytes": 1280,
  "buffers": [
    { "name": "x", "offset": 0, "bytes": 128, "dtype": "f32",
      "shape": [4, 8], "role": "input" },
    { "name": "w", "offset": 256, "bytes": 512, "dtype": "f32",
      "shape": [8, 16], "role": "weight" },
    { "name": "t", "offset": 768, "bytes": 256, "dtype": "f32",
      "shape": [4, 16], "role": "intermediate" },
    { "name": "out", "offset": 1024, "bytes": 256, "dtype": "f32",
      "shape": [4, 16], "role": "output" }
  ],
  "inputs": [ { "name": "x", "buffer": "x", "value": "x" },
              { "name": "w", "buffer": "w", "value": "w" } ],
  "outputs": [ { "name": "result0", "buffer": "out", "value": "v2" } ],
  "steps": [
    { "kind": "gemm", "name": "gemm_0", "ops": ["fc"], "a": "x", "b": "w",
      "c": null, "bias": null, "d": "t", "m": 4, "n": 16, "k": 8,
      "batch": 1, "stride_a": 0, "stride_b": 0, "stride_c": 0,
      "stride_d": 0, "trans_a": false, "trans_b": false, "dtype": "f32",
      "epilogue": "none", "predicted_time_s": 1e-06 },
    { "kind": "kernel", "name": "relu_1", "module": "kernels",
      "function": "relu_1", "grid": [1, 1, 1], "block": [64, 1, 1],
      "shared_bytes": 0, "args": ["t", "out"], "ops": ["act"],
      "predicted_time_s": 2e-06 }
  ],
  "predicted": { "time_s": 3e-06, "peak_bytes": 1280 },
  "reference": {
    "values": [ { "name": "x", "dtype": "f32", "shape": [4, 8] },
                { "name": "w", "dtype": "f32", "shape": [8, 16] },
                { "name": "v1", "dtype": "f32", "shape": [4, 16] },
                { "name": "v2", "dtype": "f32", "shape": [4, 16] } ],
    "ops": [
      { "op": "matmul", "loc": "fc", "operands": ["x", "w"],
        "results": ["v1"], "attrs": { "transpose_lhs": false,
        "transpose_rhs": false, "scale": 0.5, "axes": [0, 1],
        "kind": "sum" } },
      { "op": "relu", "loc": "act", "operands": ["v1"], "results": ["v2"] }
    ]
  }
})";

std::string parseText(const std::string &text, Manifest &manifest) {
  json::Value root;
  std::string error = json::parse(text, root).message();
  if (!error.empty())
    return "json: " + error;
  return parseManifest(root, manifest).message();
}

Manifest validManifest() {
  Manifest manifest;
  EXPECT_EQ(parseText(kValidManifest, manifest), "");
  return manifest;
}

Buffer &buffer(Manifest &manifest, const std::string &name) {
  for (Buffer &candidate : manifest.buffers)
    if (candidate.name == name)
      return candidate;
  ADD_FAILURE() << "no buffer " << name;
  return manifest.buffers[0];
}

// Asserts that validation fails with a message containing `expected`.
void expectInvalid(const Manifest &manifest, const std::string &expected) {
  std::string error = validateManifest(manifest).message();
  EXPECT_NE(error.find(expected), std::string::npos)
      << "error: '" << error << "'\nexpected: '" << expected << "'";
}

// Replaces the first `from` in the valid manifest and parses it.
std::string parseEdited(const std::string &from, const std::string &to) {
  std::string text = kValidManifest;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  Manifest manifest;
  return parseText(text, manifest);
}

TEST(Manifest, ValidManifestParsesAndValidates) {
  Manifest manifest = validManifest();
  EXPECT_EQ(validateManifest(manifest).message(), "");
  EXPECT_EQ(manifest.arenaBytes, 1280);
  ASSERT_EQ(manifest.steps.size(), 2u);
  EXPECT_EQ(manifest.steps[0].kind, StepKind::Gemm);
  EXPECT_EQ(manifest.steps[0].gemm.c, "");
  EXPECT_EQ(manifest.steps[0].gemm.k, 8);
  EXPECT_EQ(manifest.steps[1].kernel.args,
            (std::vector<std::string>{"t", "out"}));
  EXPECT_EQ(manifest.steps[1].kernel.block[0], 64);
  EXPECT_DOUBLE_EQ(manifest.predicted.timeS, 3e-6);
  EXPECT_EQ(manifest.predicted.peakBytes, 1280);
  ASSERT_TRUE(manifest.hasReference);
  ASSERT_EQ(manifest.reference.ops.size(), 2u);
  const auto &attrs = manifest.reference.ops[0].attrs;
  using Kind = memwall::reference::Attr::Kind;
  EXPECT_EQ(attrs.at("transpose_lhs").kind, Kind::Bool);
  EXPECT_EQ(attrs.at("scale").kind, Kind::Number);
  EXPECT_DOUBLE_EQ(attrs.at("scale").number, 0.5);
  EXPECT_EQ(attrs.at("axes").kind, Kind::IntList);
  EXPECT_EQ(attrs.at("axes").ints, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(attrs.at("kind").kind, Kind::String);
  EXPECT_EQ(manifest.reference.ops[0].loc, "fc");
}

TEST(BundleSchema, EnumNamesAreTheRuntimesEnums) {
  // Enum fields are read by position in their EnumSpec: each name must map
  // back to itself.
  for (size_t i = 0; i < schema::kDTypes.size; ++i) {
    std::optional<DType> dtype =
        memwall::reference::parseDType(schema::kDTypeNames[i]);
    ASSERT_TRUE(dtype) << schema::kDTypeNames[i];
    EXPECT_STREQ(memwall::reference::dtypeName(*dtype), schema::kDTypeNames[i]);
  }
  EXPECT_STREQ(roleName(BufferRole::Intermediate), "intermediate");
  EXPECT_STREQ(epilogueName(Epilogue::GeluBias), "gelu_bias");
  EXPECT_EQ(schema::kStepKinds.find("gemm"), static_cast<int>(StepKind::Gemm));
  EXPECT_EQ(schema::kStepKinds.find("all_reduce"),
            static_cast<int>(StepKind::AllReduce));
  EXPECT_STREQ(stepKindName(StepKind::AllReduce), "all_reduce");
  EXPECT_STREQ(stepKindName(StepKind::Kernel), "kernel");
}

TEST(BundleSchema, NullableFieldsReadNullAsAbsent) {
  // "c" and "bias" of a gemm, and the descriptive "model", may be null.
  Manifest manifest;
  EXPECT_EQ(parseText(kValidManifest, manifest), "");
  EXPECT_EQ(parseEdited("\"model\": \"m\"", "\"model\": null"), "");
  EXPECT_NE(
      parseEdited("\"a\": \"x\"", "\"a\": null")
          .find("step 'gemm_0': field \"a\" must be a string, not a null"),
      std::string::npos);
}

TEST(ManifestParse, UnknownDtypeNamesTheBuffer) {
  std::string error =
      parseEdited("\"dtype\": \"f32\",\n      \"shape\": [8, 16]",
                  "\"dtype\": \"f33\",\n      \"shape\": [8, 16]");
  EXPECT_NE(error.find("buffer 'w': unknown dtype \"f33\""), std::string::npos)
      << error;
}

TEST(ManifestParse, MissingFieldAndWrongTypeSayWhichAndWhere) {
  EXPECT_NE(parseEdited("\"arena_bytes\": 1280,", "")
                .find("manifest: missing field \"arena_bytes\""),
            std::string::npos);
  std::string error = parseEdited("\"m\": 4,", "\"m\": \"4\",");
  EXPECT_NE(error.find("step 'gemm_0': field \"m\" must be a number, not a "
                       "string"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("manifest.json:"), std::string::npos);
}

TEST(ManifestParse, UnknownStepKindRoleAndEpilogue) {
  EXPECT_NE(parseEdited("\"kind\": \"kernel\"", "\"kind\": \"copy\"")
                .find("step 'relu_1': unknown step kind \"copy\""),
            std::string::npos);
  EXPECT_NE(parseEdited("\"role\": \"weight\"", "\"role\": \"param\"")
                .find("buffer 'w': unknown role \"param\""),
            std::string::npos);
  EXPECT_NE(parseEdited("\"epilogue\": \"none\"", "\"epilogue\": \"silu\"")
                .find("step 'gemm_0': unknown epilogue \"silu\""),
            std::string::npos);
}

TEST(ManifestParse, WrongFormatOrVersion) {
  EXPECT_NE(parseEdited("\"version\": 1", "\"version\": 2")
                .find("unsupported bundle version 2"),
            std::string::npos);
  EXPECT_NE(parseEdited("\"memwall-bundle\"", "\"other\"")
                .find("expected \"memwall-bundle\""),
            std::string::npos);
}

TEST(ManifestValidate, BufferOutsideTheArena) {
  Manifest manifest = validManifest();
  buffer(manifest, "out").offset = 1280;
  expectInvalid(manifest, "buffer 'out': range [1280, 1536) is outside the "
                          "arena of 1280 bytes");
}

TEST(ManifestValidate, MisalignedBuffer) {
  Manifest manifest = validManifest();
  buffer(manifest, "w").offset = 128;
  expectInvalid(manifest, "buffer 'w': offset 128 is not a multiple of 256");
}

TEST(ManifestValidate, SizeDisagreesWithShape) {
  Manifest manifest = validManifest();
  buffer(manifest, "t").bytes = 200;
  expectInvalid(manifest, "buffer 't': 200 bytes, but a dense f32 [4, 16] "
                          "array has 256");
}

// x [4, 8] f32 held at a pitch of 10 elements a row: 4 x 10 x 4 bytes.
TEST(ManifestParse, StridedBufferReadsItsStrides) {
  Manifest manifest;
  std::string text = kValidManifest;
  std::string from = R"("bytes": 128, "dtype": "f32",
      "shape": [4, 8], "role": "input" })";
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), R"("bytes": 160, "dtype": "f32",
      "shape": [4, 8], "role": "input", "strides": [10, 1] })");
  ASSERT_EQ(parseText(text, manifest), "");
  EXPECT_EQ(buffer(manifest, "x").strides, (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(validateManifest(manifest).message(), "");
  EXPECT_TRUE(buffer(manifest, "w").strides.empty());
}

TEST(ManifestValidate, StridesMustSpanThePitchWithoutOverlap) {
  Manifest manifest = validManifest();
  Buffer &x = buffer(manifest, "x");
  x.strides = {10, 1};
  expectInvalid(manifest, "buffer 'x': 128 bytes, but shape [4, 8] at "
                          "strides [10, 1] spans 160");
  x.strides = {6, 1}; // rows of 8 at a pitch of 6 share elements
  x.bytes = 96;
  expectInvalid(manifest, "buffer 'x': strides [6, 1] overlap the elements "
                          "of shape [4, 8]");
  x.strides = {10};
  expectInvalid(manifest, "buffer 'x': 1 strides for shape [4, 8]");
  x.strides = {INT64_MAX / 2, 1};
  expectInvalid(manifest, "buffer 'x': the strided bytes do not fit in a "
                          "64-bit integer");
}

// A [2, 3, 2] tensor whose rows of 2 lie at a pitch of 3, and each [3, 2]
// block at a pitch of 10 (a cache of 3 rows with room for a fourth would
// be strided so; here both gaps differ, to catch a mixed-up stride).
TEST(BufferBytes, StridedBuffersPlaceEachRowAtItsPitchAndRoundTrip) {
  Buffer cache;
  cache.dtype = DType::I32;
  cache.shape = {2, 3, 2};
  cache.strides = {10, 3, 1};
  cache.bytes = 2 * 10 * 4;
  memwall::reference::Tensor tensor;
  tensor.dtype = DType::I32;
  tensor.shape = cache.shape;
  for (int i = 0; i < 12; ++i)
    tensor.data.push_back(i + 1);
  std::vector<uint8_t> bytes = toBufferBytes(cache, tensor);
  ASSERT_EQ(bytes.size(), 80u);
  auto at = [&](int element) {
    int32_t value;
    std::memcpy(&value, bytes.data() + 4 * element, 4);
    return value;
  };
  // Dense element n = 6 i + 2 j + k sits at 10 i + 3 j + k; the gaps are 0.
  std::vector<int32_t> expected(20, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k)
        expected[10 * i + 3 * j + k] = 6 * i + 2 * j + k + 1;
  for (int element = 0; element < 20; ++element)
    EXPECT_EQ(at(element), expected[element]) << "element " << element;
  memwall::reference::Tensor back = fromBufferBytes(cache, bytes.data());
  EXPECT_EQ(back.shape, tensor.shape);
  EXPECT_EQ(back.data, tensor.data);
  // Storing leaves the gaps as they were.
  std::vector<uint8_t> arena(80, 0xAB);
  storeToBuffer(cache, tensor, arena.data());
  EXPECT_EQ(arena[4 * 2], 0xAB);  // (0, 0, 2): a gap
  EXPECT_EQ(arena[4 * 19], 0xAB); // past the last row of the first outer
  EXPECT_EQ(fromBufferBytes(cache, arena.data()).data, tensor.data);
}

TEST(ManifestValidate, OverlappingInputs) {
  Manifest manifest = validManifest();
  buffer(manifest, "w").offset = 0;
  expectInvalid(manifest, "input 'w': buffer 'w' [0, 512) overlaps the "
                          "buffer of another input, 'x' [0, 128)");
}

TEST(ManifestValidate, OverlappingOutputsUnlessSameBytes) {
  Manifest manifest = validManifest();
  manifest.outputs.push_back(Binding{"result1", "t", "v1"});
  buffer(manifest, "t").offset = 1024; // exactly out's bytes: an alias
  EXPECT_EQ(validateManifest(manifest).message(), "");
  Buffer &t = buffer(manifest, "t");
  t.offset = 768;
  t.shape = {4, 32};
  t.bytes = 512; // [768, 1280): half of it is out's
  manifest.reference.values[2].shape = {4, 32};
  expectInvalid(manifest, "output 'result1': buffer 't' [768, 1280) overlaps "
                          "the buffer of another output, 'out' [1024, 1280)");
}

TEST(ManifestValidate, DuplicateBuffer) {
  Manifest manifest = validManifest();
  manifest.buffers.push_back(manifest.buffers[2]);
  expectInvalid(manifest, "buffer 't' is defined twice");
}

TEST(ManifestValidate, KernelArgumentNamesMissingBuffer) {
  Manifest manifest = validManifest();
  manifest.steps[1].kernel.args[1] = "nope";
  expectInvalid(manifest,
                "step 'relu_1': argument names unknown buffer 'nope'");
}

// The relu step with its input passed as a tensor map of t ([4, 16] f32).
const char *kTensorMapStep =
    R"("args": ["t", "out"], "tensor_maps": [ { "arg": 0, "shape": [4, 16],
      "strides": [16, 1], "box": [2, 8], "swizzle": "32b",
      "l2_promotion": "128b", "oob_fill": "zero", "interleave": "none" } ],)";

Manifest manifestWithTensorMap() {
  std::string text = kValidManifest;
  std::string from = R"("args": ["t", "out"],)";
  text.replace(text.find(from), from.size(), kTensorMapStep);
  Manifest manifest;
  EXPECT_EQ(parseText(text, manifest), "");
  return manifest;
}

TEST(ManifestParse, TensorMapsAreReadWithTheirEnums) {
  Manifest manifest = manifestWithTensorMap();
  EXPECT_EQ(validateManifest(manifest).message(), "");
  ASSERT_EQ(manifest.steps[1].kernel.tensorMaps.size(), 1u);
  const TensorMap &map = manifest.steps[1].kernel.tensorMaps[0];
  EXPECT_EQ(map.arg, 0);
  EXPECT_EQ(map.shape, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(map.strides, (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(map.box, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(map.swizzle, TensorMapSwizzle::Bytes32);
  EXPECT_EQ(map.l2Promotion, TensorMapL2Promotion::Bytes128);
  EXPECT_EQ(map.oobFill, TensorMapOobFill::Zero);
  EXPECT_EQ(map.interleave, TensorMapInterleave::None);
  // Steps without the field have none.
  EXPECT_TRUE(validManifest().steps[1].kernel.tensorMaps.empty());
}

TEST(ManifestValidate, TensorMapsTheDriverWouldRefuse) {
  auto expectMapInvalid = [](auto edit, const std::string &expected) {
    Manifest manifest = manifestWithTensorMap();
    edit(manifest.steps[1].kernel.tensorMaps[0]);
    expectInvalid(manifest,
                  "step 'relu_1': tensor map of argument " + expected);
  };
  expectMapInvalid([](TensorMap &map) { map.arg = 2; },
                   "2, but the kernel has 2");
  expectMapInvalid([](TensorMap &map) { map.box = {2}; },
                   "0: shape, strides and box must have 2 entries each");
  // 3 f32 = 12 bytes: the innermost box must be whole 16-byte units.
  expectMapInvalid(
      [](TensorMap &map) {
        map.box = {2, 3};
      },
      "0: the innermost box is 12 bytes, not a multiple of 16");
  // 16 f32 = 64 bytes do not fit the 32-byte swizzle span.
  expectMapInvalid(
      [](TensorMap &map) {
        map.box = {2, 16};
      },
      "0: the innermost box (64 bytes) exceeds the 32-byte "
      "swizzle span");
  expectMapInvalid(
      [](TensorMap &map) {
        map.strides = {10, 1};
      },
      "0: stride of dim 0 is 40 bytes, not a multiple of 16");
  expectMapInvalid(
      [](TensorMap &map) {
        map.strides = {16, 2};
      },
      "0: the innermost stride must be 1");
  expectMapInvalid(
      [](TensorMap &map) {
        map.box = {512, 4};
      },
      "0: box extent 512 of dim 0, expected 1..256");
  // A view past the end of t (64 elements).
  expectMapInvalid(
      [](TensorMap &map) {
        map.shape = {5, 16};
      },
      "0: the view [5, 16] reaches element 79 of buffer 't', which "
      "has 64");
  expectMapInvalid(
      [](TensorMap &map) {
        map.shape = {INT64_C(1) << 32, 16};
        map.strides = {INT64_C(1) << 37, 1};
      },
      "0: stride 137438953472 of dim 0 out of range");
  expectMapInvalid(
      [](TensorMap &map) { map.interleave = TensorMapInterleave::Bytes16; },
      "0: interleaved tensor maps are not supported");
  Manifest twice = manifestWithTensorMap();
  twice.steps[1].kernel.tensorMaps.push_back(
      twice.steps[1].kernel.tensorMaps[0]);
  expectInvalid(twice, "step 'relu_1': argument 0 has two tensor maps");
}

TEST(ManifestParse, UnknownSwizzleNamesTheChoices) {
  std::string text = kValidManifest;
  std::string from = R"("args": ["t", "out"],)";
  std::string step = kTensorMapStep;
  step.replace(step.find("\"32b\""), 5, "\"16b\"");
  text.replace(text.find(from), from.size(), step);
  Manifest manifest;
  std::string error = parseText(text, manifest);
  EXPECT_NE(error.find("unknown swizzle \"16b\" (expected none, 32b, 64b "
                       "or 128b)"),
            std::string::npos)
      << error;
}

TEST(ManifestValidate, GemmOperandNamesMissingBuffer) {
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.a = "nope";
  expectInvalid(manifest,
                "step 'gemm_0': operand a names unknown buffer 'nope'");
}

TEST(ManifestValidate, KernelUnknownModuleAndBadLaunchShape) {
  Manifest manifest = validManifest();
  manifest.steps[1].kernel.module = "other";
  expectInvalid(manifest, "step 'relu_1': unknown module 'other'");
  manifest = validManifest();
  manifest.steps[1].kernel.block = {64, 32, 1};
  expectInvalid(manifest, "step 'relu_1': block has 2048 threads");
  manifest = validManifest();
  manifest.steps[1].kernel.grid = {0, 1, 1};
  expectInvalid(manifest, "step 'relu_1': grid dimension 0 is 0");
}

TEST(ManifestValidate, GemmSizesMustFitTheBuffers) {
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.k = 16;
  expectInvalid(manifest, "step 'gemm_0': operand a (buffer 'x') holds 128 "
                          "bytes, but 1 x 4 x 16 elements at batch stride 0 "
                          "need 256");
}

TEST(ManifestValidate, GemmBatchStridesMustFitTheBuffers) {
  Manifest manifest = validManifest();
  GemmStep &gemm = manifest.steps[0].gemm;
  gemm.batch = 2;
  gemm.strideA = 32; // (2 - 1) * 32 + 32 elements: 256 bytes > 128
  expectInvalid(manifest, "operand a (buffer 'x') holds 128 bytes, but 2 x "
                          "4 x 8 elements at batch stride 32 need 256");
  // Broadcasting A (stride 0) fits; D must not be shared between batches.
  gemm.strideA = 0;
  expectInvalid(manifest, "step 'gemm_0': stride_d 0 is smaller than one 4 x "
                          "16 result matrix");
}

TEST(ManifestValidate, GemmTransposedOperandSizes) {
  Manifest manifest = validManifest();
  GemmStep &gemm = manifest.steps[0].gemm;
  gemm.transB = true; // w must then be [16, 8]: the same bytes
  EXPECT_EQ(validateManifest(manifest).message(), "");
  gemm.n = 32; // [32, 8] no longer fits
  expectInvalid(manifest, "operand b (buffer 'w') holds 512 bytes, but 1 x "
                          "32 x 8 elements");
}

TEST(ManifestValidate, GemmDtypeAndEpilogue) {
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.dtype = DType::BF16;
  expectInvalid(manifest, "operand a (buffer 'x') has dtype f32, but the "
                          "gemm's dtype is bf16");
  manifest = validManifest();
  manifest.steps[0].gemm.dtype = DType::I8;
  expectInvalid(manifest, "gemm dtype i8 is not supported");
  manifest = validManifest();
  manifest.steps[0].gemm.epilogue = Epilogue::Bias;
  expectInvalid(manifest, "epilogue 'bias' needs a bias buffer");
  manifest = validManifest();
  manifest.steps[0].gemm.bias = "x";
  expectInvalid(manifest, "epilogue 'none' does not take a bias");
}

// An f32 accumulator beside bf16 A and B (out_dtype, the fused head's dH):
// C and D hold out_dtype, A, B and the bias dtype; absent, it is dtype.
TEST(ManifestValidate, GemmOutDtypeIsTheTypeOfCAndD) {
  Manifest manifest = validManifest();
  EXPECT_EQ(manifest.steps[0].gemm.outDtype, DType::F32);
  for (Buffer &buffer : manifest.buffers)
    if (buffer.name == "x" || buffer.name == "w") {
      buffer.dtype = DType::BF16;
      buffer.bytes /= 2;
    }
  for (memwall::reference::ValueInfo &value : manifest.reference.values)
    if (value.name == "x" || value.name == "w")
      value.dtype = DType::BF16;
  manifest.steps[0].gemm.dtype = DType::BF16;
  manifest.steps[0].gemm.outDtype = DType::F32;
  EXPECT_EQ(validateManifest(manifest).message(), "");
  manifest.steps[0].gemm.outDtype = DType::BF16;
  expectInvalid(manifest, "operand d (buffer 't') has dtype f32, but the "
                          "gemm's out_dtype is bf16");
  manifest.steps[0].gemm.outDtype = DType::F16;
  expectInvalid(manifest, "out_dtype f16 with dtype bf16 is not supported");
  manifest.steps[0].gemm.outDtype = DType::F32;
  manifest.steps[0].gemm.epilogue = Epilogue::Relu;
  expectInvalid(manifest, "out_dtype f32 with dtype bf16 is not supported "
                          "(expected the dtype itself, or f32 beside bf16 or "
                          "f16 without an epilogue)");
}

TEST(Manifest, GemmOutDtypeParses) {
  Manifest manifest;
  ASSERT_EQ(parseText(kValidManifest, manifest), "");
  EXPECT_EQ(manifest.steps[0].gemm.outDtype, DType::F32);
  std::string text = kValidManifest;
  std::string from = "\"dtype\": \"f32\",\n      \"epilogue\"";
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(),
               "\"dtype\": \"f32\", \"out_dtype\": \"bf16\", \"epilogue\"");
  ASSERT_EQ(parseText(text, manifest), "");
  EXPECT_EQ(manifest.steps[0].gemm.outDtype, DType::BF16);
}

TEST(ManifestValidate, InputsAndOutputsMatchBuffersAndReference) {
  Manifest manifest = validManifest();
  manifest.inputs[0].buffer = "t";
  expectInvalid(manifest, "input 'x': buffer 't' has role intermediate");
  manifest = validManifest();
  manifest.inputs.pop_back();
  expectInvalid(manifest, "buffer 'w' has role weight but no entry of "
                          "\"inputs\" provides it");
  manifest = validManifest();
  manifest.outputs[0].value = "v9";
  expectInvalid(manifest,
                "output 'result0' names unknown reference value 'v9'");
  manifest = validManifest();
  manifest.reference.values[3].dtype = DType::BF16;
  expectInvalid(manifest, "output 'result0': buffer 'out' (f32 [4, 16]) does "
                          "not match reference value 'v2' (bf16 [4, 16])");
}

// Counters (a split-K GEMM's arrival counters) keep their zeros across
// launches: i32, sharing their bytes with no buffer, bound to no input or
// output.
TEST(ManifestValidate, CountersAreI32OwnBytesAndUnbound) {
  Manifest manifest = validManifest();
  Buffer counters;
  counters.name = "c";
  counters.offset = 1024 + 256;
  counters.bytes = 16;
  counters.dtype = DType::I32;
  counters.shape = {4};
  counters.role = BufferRole::Counters;
  manifest.arenaBytes = 1536;
  manifest.buffers.push_back(counters);
  EXPECT_EQ(validateManifest(manifest).message(), "");
  buffer(manifest, "c").dtype = DType::F32;
  expectInvalid(manifest, "buffer 'c' holds counters but is f32, not i32");
  buffer(manifest, "c").dtype = DType::I32;
  buffer(manifest, "c").offset = 1024;
  expectInvalid(manifest, "buffer 'c' [1024, 1040) holds counters, but "
                          "buffer 'out' [1024, 1280) overlaps it");
  buffer(manifest, "c").offset = 1280;
  manifest.outputs[0].buffer = "c";
  expectInvalid(manifest, "output 'result0': buffer 'c' holds counters, "
                          "which no binding may name");
}

// The valid manifest with relu_1 replaced by `step`.
std::string withStep(const std::string &step) {
  std::string text = kValidManifest;
  size_t begin = text.find("{ \"kind\": \"kernel\"");
  size_t end = text.find('}', text.find("\"predicted_time_s\": 2e-06", begin));
  EXPECT_NE(end, std::string::npos);
  text.replace(begin, end + 1 - begin, step);
  return text;
}

// An all-reduce of t into out, both f32 [4, 16].
const char *kAllReduceStep = R"({ "kind": "all_reduce", "name": "reduce_1",
  "ops": ["tp"], "predicted_time_s": 2e-06, "input": "t", "output": "out",
  "count": 64, "dtype": "f32", "group_size": 2 })";

Manifest allReduceManifest() {
  Manifest manifest;
  EXPECT_EQ(parseText(withStep(kAllReduceStep), manifest), "");
  return manifest;
}

TEST(ManifestParse, AllReduceStepReadsItsFields) {
  Manifest manifest = allReduceManifest();
  EXPECT_EQ(validateManifest(manifest).message(), "");
  ASSERT_EQ(manifest.steps.size(), 2u);
  const Step &step = manifest.steps[1];
  EXPECT_EQ(step.kind, StepKind::AllReduce);
  EXPECT_EQ(step.name, "reduce_1");
  EXPECT_EQ(step.ops, std::vector<std::string>{"tp"});
  EXPECT_EQ(step.allReduce.input, "t");
  EXPECT_EQ(step.allReduce.output, "out");
  EXPECT_EQ(step.allReduce.count, 64);
  EXPECT_EQ(step.allReduce.dtype, DType::F32);
  EXPECT_EQ(step.allReduce.groupSize, 2);
}

TEST(ManifestParse, AllReduceFieldsAreRequiredAndTyped) {
  Manifest manifest;
  std::string step = kAllReduceStep;
  std::string noGroup = step;
  noGroup.replace(noGroup.find(", \"group_size\": 2"), 17, "");
  EXPECT_NE(parseText(withStep(noGroup), manifest)
                .find("step 'reduce_1': missing field \"group_size\""),
            std::string::npos);
  std::string halfCount = step;
  halfCount.replace(halfCount.find("64"), 2, "6.5");
  EXPECT_NE(parseText(withStep(halfCount), manifest)
                .find("step 'reduce_1': field \"count\" must be an integer"),
            std::string::npos);
  std::string badType = step;
  badType.replace(badType.find("\"f32\""), 5, "\"f64\"");
  EXPECT_NE(parseText(withStep(badType), manifest)
                .find("step 'reduce_1': unknown dtype \"f64\""),
            std::string::npos);
}

TEST(ManifestValidate, AllReduceBuffersMustExistWithItsDtype) {
  Manifest manifest = allReduceManifest();
  manifest.steps[1].allReduce.input = "nope";
  expectInvalid(manifest, "step 'reduce_1': input names unknown buffer 'nope'");
  manifest = allReduceManifest();
  manifest.steps[1].allReduce.output = "nope";
  expectInvalid(manifest,
                "step 'reduce_1': output names unknown buffer 'nope'");
  manifest = allReduceManifest();
  manifest.steps[1].allReduce.dtype = DType::BF16;
  expectInvalid(manifest, "step 'reduce_1': input (buffer 't') has dtype "
                          "f32, but the all-reduce's dtype is bf16");
  manifest = allReduceManifest();
  manifest.hasReference = false; // out no longer holds v2's dtype
  buffer(manifest, "out").dtype = DType::I32;
  expectInvalid(manifest, "step 'reduce_1': output (buffer 'out') has dtype "
                          "i32, but the all-reduce's dtype is f32");
  // What NCCL sums: f32, bf16 and f16.
  manifest = allReduceManifest();
  manifest.steps[1].allReduce.dtype = DType::I32;
  expectInvalid(manifest, "step 'reduce_1': all-reduce dtype i32 is not "
                          "supported (expected f32, bf16 or f16)");
}

TEST(ManifestValidate, AllReduceCountAndGroupSize) {
  Manifest manifest = allReduceManifest();
  manifest.steps[1].allReduce.count = 0;
  expectInvalid(manifest, "step 'reduce_1': count 0 must be positive");
  manifest.steps[1].allReduce.count = 65;
  expectInvalid(manifest, "step 'reduce_1': input (buffer 't') holds 64 "
                          "elements, fewer than count 65");
  manifest = allReduceManifest();
  manifest.steps[1].allReduce.output = "x"; // [4, 8]
  expectInvalid(manifest, "step 'reduce_1': output (buffer 'x') holds 32 "
                          "elements, fewer than count 64");
  manifest.steps[1].allReduce.count = 32; // a prefix of t
  EXPECT_EQ(validateManifest(manifest).message(), "");
  manifest.steps[1].allReduce.groupSize = 0;
  expectInvalid(manifest, "step 'reduce_1': group_size 0 must be at least 1 "
                          "(the devices summed over)");
  manifest.steps[1].allReduce.groupSize = -3;
  expectInvalid(manifest, "step 'reduce_1': group_size -3 must be at least 1");
}

TEST(ManifestValidate, AllReduceInPlaceOrApartOnDenseBuffers) {
  Manifest manifest = allReduceManifest();
  manifest.steps[1].allReduce.output = "t"; // in place
  EXPECT_EQ(validateManifest(manifest).message(), "");
  // w [256, 768) summed into a view of its second half and beyond.
  Buffer view = buffer(manifest, "t");
  view.name = "w_view";
  view.offset = 512;
  view.bytes = 512;
  view.shape = {128};
  manifest.buffers.push_back(view);
  AllReduceStep &allReduce = manifest.steps[1].allReduce;
  allReduce.input = "w";
  allReduce.output = "w_view";
  allReduce.count = 128;
  expectInvalid(manifest, "step 'reduce_1': output (buffer 'w_view') overlaps "
                          "input (buffer 'w') without being it: NCCL reduces "
                          "in place only when both start at the same byte");
  allReduce.count = 64; // [256, 512) into [512, 768): apart
  EXPECT_EQ(validateManifest(manifest).message(), "");
  // NCCL reads count contiguous elements.
  manifest = allReduceManifest();
  buffer(manifest, "t").strides = {16, 1}; // a valid layout, but strided
  expectInvalid(manifest, "step 'reduce_1': input (buffer 't') is strided; an "
                          "all-reduce needs a dense buffer");
}

TEST(ManifestValidate, DuplicateStepName) {
  Manifest manifest = validManifest();
  manifest.steps[1].name = "gemm_0";
  expectInvalid(manifest, "step 'gemm_0' is defined twice");
}

// Hostile sizes (issue 16): every size, offset and stride is computed with
// overflow checks, so a wrapped quantity cannot slip through validation.

constexpr int64_t kInt64Max = INT64_MAX;

TEST(ManifestValidate, RejectsShapeWhoseElementCountOverflows) {
  // 2^62 x 4 elements wrap to 0, which matched "bytes": 0.
  Manifest manifest = validManifest();
  Buffer &x = buffer(manifest, "x");
  x.shape = {int64_t(1) << 62, 4};
  x.bytes = 0;
  expectInvalid(manifest, "buffer 'x': shape [4611686018427387904, 4] is too "
                          "large: the product of its dimensions does not "
                          "fit in a 64-bit integer");
}

TEST(ManifestValidate, RejectsShapeWhoseByteCountOverflows) {
  // 2^62 f32 elements are 2^64 bytes, which wrapped to 0.
  Manifest manifest = validManifest();
  Buffer &x = buffer(manifest, "x");
  x.shape = {int64_t(1) << 62};
  x.bytes = 0;
  expectInvalid(manifest, "buffer 'x': the bytes of a dense f32 "
                          "[4611686018427387904] array do not fit in a "
                          "64-bit integer");
}

TEST(ManifestValidate, RejectsEmptyShapeWithHugeDimensions) {
  // No elements, but the row-major strides of the other dimensions wrap.
  Manifest manifest = validManifest();
  Buffer &x = buffer(manifest, "x");
  x.shape = {0, int64_t(1) << 40, int64_t(1) << 40};
  x.bytes = 0;
  expectInvalid(manifest, "buffer 'x': shape [0, 1099511627776, "
                          "1099511627776] is too large");
}

TEST(ManifestValidate, RejectsNegativeDimension) {
  Manifest manifest = validManifest();
  buffer(manifest, "x").shape = {-4, -8};
  expectInvalid(manifest, "buffer 'x': negative dimension in shape [-4, -8]");
}

TEST(ManifestValidate, RejectsBufferPastArenaEnd) {
  // offset + bytes wrapped negative and passed "<= arena_bytes".
  Manifest manifest = validManifest();
  buffer(manifest, "out").offset = kInt64Max - 255; // 2^63 - 256
  expectInvalid(manifest, "buffer 'out': range [9223372036854775552, "
                          "9223372036854775552 + 256) is outside the arena "
                          "of 1280 bytes");
}

TEST(ManifestValidate, RejectsEmptyArenaWithBuffers) {
  Manifest manifest = validManifest();
  manifest.arenaBytes = 0;
  expectInvalid(manifest, "manifest: arena_bytes is 0, but there are 4 "
                          "buffers");
}

TEST(ManifestValidate, RejectsReferenceValueWhoseElementCountOverflows) {
  Manifest manifest = validManifest();
  manifest.reference.values[2].shape = {int64_t(1) << 32, int64_t(1) << 32};
  expectInvalid(manifest, "reference value 'v1': shape [4294967296, "
                          "4294967296] is too large");
  manifest = validManifest();
  manifest.reference.values[2].shape = {int64_t(1) << 61}; // x 8 bytes
  expectInvalid(manifest, "reference value 'v1': the bytes of "
                          "2305843009213693952 elements held as doubles do "
                          "not fit in a 64-bit integer");
}

TEST(ManifestValidate, RejectsGemmStrideOverflow) {
  Manifest manifest = validManifest();
  GemmStep &gemm = manifest.steps[0].gemm;
  gemm.batch = 2;
  gemm.strideA = kInt64Max;
  gemm.strideD = 64;
  expectInvalid(manifest, "step 'gemm_0': operand a (buffer 'x'): the bytes "
                          "of 2 x 4 x 8 elements at batch stride "
                          "9223372036854775807 do not fit in a 64-bit "
                          "integer");
}

TEST(ManifestValidate, RejectsGemmStrideBeyondTheBufferWithOneBatch) {
  // One batch addresses nothing through the stride, but cuBLASLt gets it.
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.strideB = kInt64Max;
  expectInvalid(manifest, "step 'gemm_0': operand b (buffer 'w'): batch "
                          "stride 9223372036854775807 is larger than the "
                          "buffer's 128 elements");
}

TEST(ManifestValidate, RejectsGemmSizeOverflow) {
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.k = kInt64Max;
  expectInvalid(manifest, "step 'gemm_0': operand a (buffer 'x'): the bytes "
                          "of 1 x 4 x 9223372036854775807 elements at batch "
                          "stride 0 do not fit in a 64-bit integer");
  manifest = validManifest();
  manifest.steps[0].gemm.m = int64_t(1) << 40;
  manifest.steps[0].gemm.n = int64_t(1) << 40;
  expectInvalid(manifest, "step 'gemm_0': operand a (buffer 'x') holds 128 "
                          "bytes, but 1 x 1099511627776 x 8 elements");
}

TEST(ManifestValidate, RejectsGemmBatchBeyondCublasLimit) {
  Manifest manifest = validManifest();
  manifest.steps[0].gemm.batch = int64_t(1) << 31;
  expectInvalid(manifest, "step 'gemm_0': batch 2147483648 is more than "
                          "cuBLASLt's limit of 2147483647");
}

TEST(ManifestValidate, RejectsKernelLaunchBeyondCudaLimits) {
  Manifest manifest = validManifest();
  manifest.steps[1].kernel.grid = {1, 65536, 1};
  expectInvalid(manifest, "step 'relu_1': grid dimension 1 is 65536, "
                          "expected 1..65535");
  manifest = validManifest();
  manifest.steps[1].kernel.block = {kInt64Max, 1, 1};
  expectInvalid(manifest, "step 'relu_1': block dimension 0 is "
                          "9223372036854775807, expected 1..1024");
}

TEST(ManifestParse, RejectsIntegerFieldBeyondInt64) {
  std::string error = parseEdited("\"offset\": 256", "\"offset\": "
                                                     "99999999999999999999");
  EXPECT_NE(error.find("buffer 'w': field \"offset\": 1e+20 is out of the "
                       "range of a 64-bit integer"),
            std::string::npos)
      << error;
  error = parseEdited("\"shape\": [8, 16]", "\"shape\": [8, 1e19]");
  EXPECT_NE(error.find("buffer 'w': field \"shape\": 1e+19 is out of the "
                       "range of a 64-bit integer"),
            std::string::npos)
      << error;
}

TEST(ManifestLoad, ParsesAndValidatesManifestText) {
  Manifest manifest;
  EXPECT_EQ(parseManifestText(kValidManifest, "b.bundle", manifest).message(),
            "");
  EXPECT_EQ(manifest.buffers.size(), 4u);
  std::string text = kValidManifest;
  text.replace(text.find("\"offset\": 1024"), 14, "\"offset\": 1000");
  Status invalid = parseManifestText(text, "b.bundle", manifest);
  EXPECT_EQ(invalid.code(), ErrorCode::InvalidManifest);
  EXPECT_EQ(invalid.message(),
            "b.bundle/manifest.json: buffer 'out': offset 1000 is not a "
            "multiple of 256");
  EXPECT_EQ(parseManifestText("[", "b.bundle", manifest).message(),
            "b.bundle/manifest.json:1:2: unexpected end of input, expected a "
            "value");
}

TEST(ManifestLoad, RefusesDirectoryAndDeviceAsManifest) {
  Manifest manifest;
  Status missing = loadManifest("/dev/null/x", manifest);
  EXPECT_EQ(missing.code(), ErrorCode::Io);
  EXPECT_EQ(missing.message().find("cannot open "), 0u);
  char pattern[] = "/tmp/memwall-manifest-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  ASSERT_EQ(mkdir((dir + "/manifest.json").c_str(), 0700), 0);
  EXPECT_EQ(loadManifest(dir, manifest).message(),
            "'" + dir + "/manifest.json' is a directory");
  rmdir((dir + "/manifest.json").c_str());
  rmdir(dir.c_str());
}

TEST(ReadFile, ReadsDevicesOnlyUpToTheCap) {
  // /dev/zero never ends: read up to the cap, then refused.
  std::string contents;
  EXPECT_EQ(readFile("/dev/zero", contents, 1 << 20).message(),
            "'/dev/zero' is larger than the limit of 1048576 bytes");
  EXPECT_TRUE(contents.empty());
}

TEST(ReadFile, RefusesRegularFileLargerThanTheCapWithoutReadingIt) {
  char path[] = "/tmp/memwall-readfile-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  std::string contents;
  EXPECT_EQ(readFile(path, contents, 4095).message(),
            "'" + std::string(path) +
                "' is larger than the limit "
                "of 4095 bytes");
  EXPECT_EQ(readFile(path, contents, 4096).message(), "");
  EXPECT_EQ(contents.size(), 4096u);
  std::remove(path);
}

} // namespace
