//===- InputsTest.cpp - Tests of random inputs and inputs files -----------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "memwall-runtime/Inputs.h"
#include "memwall-runtime/Checked.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace memwall::runtime;
using memwall::reference::Tensor;

namespace {

TEST(RandomInputs, SameSeedSameValuesOtherSeedOrIndexOtherValues) {
  Tensor first =
      randomTensor(DType::F32, {64}, BufferRole::Input, inputStreamSeed(0, 0));
  Tensor again =
      randomTensor(DType::F32, {64}, BufferRole::Input, inputStreamSeed(0, 0));
  Tensor otherIndex =
      randomTensor(DType::F32, {64}, BufferRole::Input, inputStreamSeed(0, 1));
  Tensor otherSeed =
      randomTensor(DType::F32, {64}, BufferRole::Input, inputStreamSeed(1, 0));
  EXPECT_EQ(first.data, again.data);
  EXPECT_NE(first.data, otherIndex.data);
  EXPECT_NE(first.data, otherSeed.data);
}

TEST(RandomInputs, SplitMix64KnownValues) {
  // Reference values of splitmix64 seeded with 0 (Vigna's implementation).
  SplitMix64 generator(0);
  EXPECT_EQ(generator.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(generator.next(), 0x6e789e6aa1b965f4ULL);
}

void expectWithin(const Tensor &tensor, double low, double high) {
  double seenLow = high, seenHigh = low;
  for (double value : tensor.data) {
    EXPECT_GE(value, low);
    EXPECT_LE(value, high);
    seenLow = std::min(seenLow, value);
    seenHigh = std::max(seenHigh, value);
  }
  // 4096 uniform samples come close to both ends.
  EXPECT_LT(seenLow, low + 0.05 * (high - low));
  EXPECT_GT(seenHigh, high - 0.05 * (high - low));
}

TEST(RandomInputs, RangesFollowRoleAndRank) {
  expectWithin(randomTensor(DType::F32, {64, 64}, BufferRole::Input, 1), -1, 1);
  // Weights of rank >= 2: U(-a, a), a = 1/sqrt(shape[0]) = 1/16.
  expectWithin(randomTensor(DType::F32, {256, 16}, BufferRole::Weight, 2),
               -1.0 / 16, 1.0 / 16);
  expectWithin(randomTensor(DType::F32, {4096}, BufferRole::Weight, 3), 0.5,
               1.5);
  // Integer inputs (token ids, positions) count along the last dimension.
  Tensor ids = randomTensor(DType::I64, {2, 64}, BufferRole::Input, 4);
  for (int64_t i = 0; i < 128; ++i)
    EXPECT_EQ(ids.data[i], i % 64);
  Tensor mask = randomTensor(DType::I1, {16}, BufferRole::Input, 5);
  for (double value : mask.data)
    EXPECT_EQ(value, 0);
}

TEST(RandomInputs, ValuesAreRoundedToTheDtype) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F8E4M3FN}) {
    Tensor tensor = randomTensor(dtype, {512}, BufferRole::Input, 6);
    for (double value : tensor.data)
      ASSERT_EQ(memwall::reference::roundToDType(value, dtype), value);
    EXPECT_EQ(static_cast<int64_t>(tensor.toBytes().size()),
              512 * memwall::reference::dtypeBytes(dtype));
  }
}

// A manifest with inputs x (f32 [2, 2]) and ids (i32 [3]).
Manifest twoInputManifest() {
  Manifest manifest;
  manifest.arenaBytes = 512;
  manifest.buffers = {
      Buffer{"x", 0, 16, DType::F32, {2, 2}, BufferRole::Input},
      Buffer{"ids", 256, 12, DType::I32, {3}, BufferRole::Input}};
  manifest.inputs = {Binding{"x", "x", "x"}, Binding{"ids", "ids", "ids"}};
  return manifest;
}

class InputsFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/memwall-inputs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    writeFile("x.bin", std::string(16, '\0'));
    std::string ids(12, '\0');
    ids[4] = 7; // ids = [0, 7, 0]
    writeFile("ids.bin", ids);
    writeFile("short.bin", std::string(8, '\0'));
  }
  void TearDown() override {
    for (const char *name : {"x.bin", "ids.bin", "short.bin", "inputs.json"})
      std::remove((dir + "/" + name).c_str());
    rmdir(dir.c_str());
  }
  void writeFile(const std::string &name, const std::string &contents) {
    std::ofstream(dir + "/" + name, std::ios::binary) << contents;
  }
  // Loads an inputs file whose "inputs" array is `entries`.
  std::string load(const std::string &entries) {
    writeFile("inputs.json", "{ \"inputs\": [" + entries + "] }");
    return loadInputsFile(manifest, dir + "/inputs.json", inputs).message();
  }

  static constexpr const char *kX =
      R"({"name": "x", "dtype": "f32", "shape": [2, 2], "file": "x.bin"})";
  static constexpr const char *kIds =
      R"({"name": "ids", "dtype": "i32", "shape": [3], "file": "ids.bin"})";

  std::string dir;
  Manifest manifest = twoInputManifest();
  std::vector<HostInput> inputs;
};

TEST_F(InputsFileTest, LoadsEveryInputInManifestOrder) {
  ASSERT_EQ(load(std::string(kIds) + "," + kX), "");
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].binding->name, "x");
  EXPECT_EQ(inputs[1].tensor.data, (std::vector<double>{0, 7, 0}));
}

void expectError(const std::string &error, const std::string &expected) {
  EXPECT_NE(error.find(expected), std::string::npos)
      << "error: '" << error << "'\nexpected: '" << expected << "'";
}

TEST_F(InputsFileTest, MissingInputNamesWhatWasExpected) {
  expectError(load(kX), "input 'ids' is missing (expected i32 [3] in a file "
                        "of 12 bytes)");
}

TEST_F(InputsFileTest, ExtraAndDuplicateInputs) {
  expectError(load(std::string(kX) + "," + kIds +
                   R"(, {"name": "y", "dtype": "f32", "shape": [1],
                         "file": "x.bin"})"),
              "input 'y' is not an input of the bundle (its inputs: x, ids)");
  expectError(load(std::string(kX) + "," + kX + "," + kIds),
              "input 'x' is listed twice");
}

TEST_F(InputsFileTest, WrongDtypeShapeOrSize) {
  expectError(
      load(
          std::string(kIds) +
          R"(, {"name": "x", "dtype": "bf16", "shape": [2, 2], "file": "x.bin"})"),
      "input 'x': dtype bf16, expected f32 [2, 2] in a file of 16 bytes");
  expectError(
      load(std::string(kIds) +
           R"(, {"name": "x", "dtype": "f32", "shape": [4], "file": "x.bin"})"),
      "input 'x': shape [4], expected f32 [2, 2] in a file of 16 bytes");
  expectError(
      load(
          std::string(kIds) +
          R"(, {"name": "x", "dtype": "f32", "shape": [2, 2], "file": "short.bin"})"),
      "short.bin' has 8 bytes, expected f32 [2, 2] in a file of 16 bytes");
  expectError(
      load(
          std::string(kIds) +
          R"(, {"name": "x", "dtype": "f32", "shape": [2, 2], "file": "none.bin"})"),
      "input 'x': cannot open '");
}

TEST_F(InputsFileTest, MalformedFiles) {
  writeFile("inputs.json", "{ \"inputs\": [ }");
  expectError(loadInputsFile(manifest, dir + "/inputs.json", inputs).message(),
              "inputs.json:1:15: unexpected '}', expected a value");
  writeFile("inputs.json", "[]");
  expectError(loadInputsFile(manifest, dir + "/inputs.json", inputs).message(),
              "expected an object with an \"inputs\" array");
  expectError(load(R"({"dtype": "f32"})"),
              "every entry needs a string \"name\"");
}

TEST(RandomInputs, MakeRandomInputsCoversEveryInput) {
  Manifest manifest = twoInputManifest();
  std::vector<HostInput> inputs;
  ASSERT_EQ(makeRandomInputs(manifest, 42, inputs).message(), "");
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].tensor.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(inputs[1].tensor.data, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(inputs[0].buffer, &manifest.buffers[0]);
}

// Hostile input files (issue 16): devices, FIFOs and wrong sizes are refused
// without reading them whole; nothing larger than the machine is allocated.

TEST_F(InputsFileTest, RefusesDevZeroAsInput) {
  expectError(
      load(std::string(kIds) + R"(, {"name": "x", "dtype": "f32",
               "shape": [2, 2], "file": "/dev/zero"})"),
      "input 'x': '/dev/zero' is not a regular file (expected f32 [2, 2] in "
      "a file of 16 bytes)");
}

TEST_F(InputsFileTest, RefusesFifoAsInputWithoutOpeningIt) {
  // Opening a FIFO would wait for a writer: the test would hang.
  ASSERT_EQ(mkfifo((dir + "/fifo.bin").c_str(), 0600), 0);
  std::string error = load(
      std::string(kIds) +
      R"(, {"name": "x", "dtype": "f32", "shape": [2, 2], "file": "fifo.bin"})");
  std::remove((dir + "/fifo.bin").c_str());
  expectError(error, "fifo.bin' is not a regular file");
}

TEST_F(InputsFileTest, RefusesInputFileLargerThanTheBuffer) {
  writeFile("long.bin", std::string(17, '\0'));
  std::string error = load(
      std::string(kIds) +
      R"(, {"name": "x", "dtype": "f32", "shape": [2, 2], "file": "long.bin"})");
  std::remove((dir + "/long.bin").c_str());
  expectError(error, "long.bin' has 17 bytes, expected f32 [2, 2] in a file "
                     "of 16 bytes");
}

TEST_F(InputsFileTest, RefusesDevZeroAsInputsFile) {
  // Read up to the JSON cap instead of until memory runs out.
  expectError(loadInputsFile(manifest, "/dev/zero", inputs).message(),
              "inputs file: '/dev/zero' is larger than the limit of "
              "268435456 bytes");
}

TEST_F(InputsFileTest, ParsesInputsText) {
  EXPECT_EQ(
      parseInputsText(manifest,
                      "{\"inputs\": [" + std::string(kX) + "," + kIds + "]}",
                      dir + "/other.json", inputs)
          .message(),
      "");
  EXPECT_EQ(inputs.size(), 2u);
}

// A valid manifest whose input x is f32 [2^40] (4 TiB), with a reference
// graph that holds it.
Manifest hugeInputManifest() {
  Manifest manifest;
  int64_t bytes = int64_t(4) << 40;
  manifest.arenaBytes = bytes;
  manifest.buffers = {
      Buffer{"x", 0, bytes, DType::F32, {int64_t(1) << 40}, BufferRole::Input}};
  manifest.inputs = {Binding{"x", "x", "x"}};
  manifest.hasReference = true;
  manifest.reference.values = {{"x", DType::F32, {int64_t(1) << 40}}};
  EXPECT_EQ(validateManifest(manifest).message(), "");
  return manifest;
}

TEST(HostMemory, RefusesInputsLargerThanHostMemory) {
  Manifest manifest = hugeInputManifest();
  std::vector<HostInput> inputs;
  expectError(makeRandomInputs(manifest, 0, inputs).message(),
              "generating the inputs needs 8192.0 GiB of host memory; this "
              "machine has ");
  EXPECT_TRUE(inputs.empty());
}

TEST(HostMemory, RefusesReferenceLargerThanHostMemory) {
  Manifest manifest = hugeInputManifest();
  std::vector<HostInput> inputs;
  std::vector<Tensor> outputs;
  expectError(evaluateReference(manifest, inputs, outputs).message(),
              "evaluating the reference graph needs 8192.0 GiB of host "
              "memory; this machine has ");
}

TEST_F(InputsFileTest, RefusesInputFileLargerThanHostMemory) {
  manifest = hugeInputManifest();
  std::string error =
      load(R"({"name": "x", "dtype": "f32", "shape": [1099511627776],
              "file": "x.bin"})");
  expectError(error, "input 'x' needs 12288.0 GiB of host memory; this "
                     "machine has ");
}

TEST(HostMemory, CheckHostMemoryNamesBothSizes) {
  EXPECT_EQ(memwall::checkHostMemory(1 << 20, "a small thing"), "");
  std::string error = memwall::checkHostMemory(-1, "an overflowed size");
  expectError(error, "an overflowed size needs more than 8 EiB of host "
                     "memory; this machine has ");
  EXPECT_EQ(error.substr(error.size() - 4), " GiB");
}

TEST(HostMemory, ReferenceRefusesResultLargerThanDeclaredBeforeAllocating) {
  // x [2^20, 1] + y [1, 2^20] broadcasts to 2^40 elements (8 TiB of
  // doubles); the graph declares [1]: refused before the allocation.
  Manifest manifest;
  int64_t n = int64_t(1) << 20;
  manifest.arenaBytes = 8 * n + 256;
  manifest.buffers = {
      Buffer{"x", 0, 4 * n, DType::F32, {n, 1}, BufferRole::Input},
      Buffer{"y", 4 * n, 4 * n, DType::F32, {1, n}, BufferRole::Input},
      Buffer{"sum", 8 * n, 4, DType::F32, {1}, BufferRole::Output}};
  manifest.inputs = {Binding{"x", "x", "x"}, Binding{"y", "y", "y"}};
  manifest.outputs = {Binding{"sum", "sum", "sum"}};
  manifest.hasReference = true;
  manifest.reference.values = {{"x", DType::F32, {n, 1}},
                               {"y", DType::F32, {1, n}},
                               {"sum", DType::F32, {1}}};
  memwall::reference::Op add;
  add.op = "add";
  add.loc = "wide.add";
  add.operands = {"x", "y"};
  add.results = {"sum"};
  manifest.reference.ops = {add};
  ASSERT_EQ(validateManifest(manifest).message(), "");
  std::vector<HostInput> inputs;
  ASSERT_EQ(makeRandomInputs(manifest, 0, inputs).message(), "");
  std::vector<Tensor> outputs;
  EXPECT_EQ(evaluateReference(manifest, inputs, outputs).message(),
            "reference interpreter: wide.add: 'add' computes shape [1048576, "
            "1048576] for 'sum' but the graph declares [1]");
}

} // namespace
