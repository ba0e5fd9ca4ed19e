//===- InputsTest.cpp - Tests of random inputs and inputs files -----------===//

#include "memwall-runtime/Inputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
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
    return loadInputsFile(manifest, dir + "/inputs.json", inputs);
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
  expectError(loadInputsFile(manifest, dir + "/inputs.json", inputs),
              "inputs.json:1:15: unexpected '}', expected a value");
  writeFile("inputs.json", "[]");
  expectError(loadInputsFile(manifest, dir + "/inputs.json", inputs),
              "expected an object with an \"inputs\" array");
  expectError(load(R"({"dtype": "f32"})"),
              "every entry needs a string \"name\"");
}

TEST(RandomInputs, MakeRandomInputsCoversEveryInput) {
  Manifest manifest = twoInputManifest();
  std::vector<HostInput> inputs;
  makeRandomInputs(manifest, 42, inputs);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].tensor.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(inputs[1].tensor.data, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(inputs[0].buffer, &manifest.buffers[0]);
}

} // namespace
