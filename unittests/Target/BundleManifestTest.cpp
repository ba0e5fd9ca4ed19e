//===- BundleManifestTest.cpp - The compiler writes what the runtime reads ===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// memwall-compile writes manifest.json and memwall-run reads it, both through
// memwall-runtime/BundleSchema.def: a bundle the compiler writes is read back
// and validated by the runtime, and every key it writes is one the schema
// lists, every required key present.
//
//===----------------------------------------------------------------------===//

#include "memwall/Pipelines.h"
#include "memwall/Registration.h"
#include "memwall/Target/Bundle.h"

#include "memwall-runtime/BundleSchema.h"
#include "memwall-runtime/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace mlir;
using namespace memwall;
namespace schema = memwall::runtime::schema;
namespace json = memwall::runtime::json;

namespace {

// Two GEMMs with bias epilogues (one with a null "c"), an elementwise kernel
// and a row-reduction kernel: both step kinds and every field of each.
constexpr const char *kSource = R"mlir(
func.func @main(%x: tensor<64x128xf32> {memwall.kind = #memwall.arg_kind<input>} loc("x"),
                %w1: tensor<128x128xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("w1"),
                %b1: tensor<128xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("b1"),
                %g: tensor<128xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_weight"),
                %be: tensor<128xf32> {memwall.kind = #memwall.arg_kind<weight>} loc("ln_bias")) -> tensor<64x128xf32> {
  %0 = memwall.matmul %x, %w1 bias %b1 {transpose_rhs} : tensor<64x128xf32>, tensor<128x128xf32>, tensor<128xf32> -> tensor<64x128xf32> loc("fc1")
  %1 = memwall.gelu %0 : tensor<64x128xf32> loc("gelu")
  %2 = memwall.layer_norm %1, %g, %be : tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32> loc("ln")
  return %2 : tensor<64x128xf32>
}
)mlir";

class BundleManifestTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("memwall-manifest", directory));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(directory); }

  /// Compiles kSource (without PTX: a stand-in module) and writes the
  /// bundle; returns its path.
  std::string writeSeedBundle() {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kSource, &context);
    EXPECT_TRUE(module);
    llvm::Expected<GPUTarget> target = resolveGPUTarget("h100-sxm", "");
    EXPECT_TRUE(static_cast<bool>(target));
    CompileOptions options;
    options.skipPTX = true;
    FailureOr<Bundle> bundle = compileBundle(*module, *target, options);
    EXPECT_TRUE(succeeded(bundle));
    bundle->ptx = "// PTX stand-in\n";
    std::string path = (directory + "/seed.bundle").str();
    llvm::Error error = writeBundle(*bundle, path);
    EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
    return path;
  }

  MLIRContext context;
  llvm::SmallString<128> directory;
};

/// Expects `object` to hold every required key of the schema objects
/// `specs` (one JSON object read by several, as a step is) and no key that
/// none of them lists; recurses into nested objects.
void expectMatchesSchema(const json::Value &object,
                         std::vector<const schema::ObjectSpec *> specs,
                         const std::string &where) {
  ASSERT_TRUE(object.isObject()) << where;
  std::set<std::string> known;
  for (const schema::ObjectSpec *spec : specs) {
    for (size_t i = 0; i < spec->size; ++i) {
      const schema::Field &field = *spec->fields[i];
      known.insert(field.key);
      const json::Value *value = object.get(field.key);
      if (field.presence == schema::Presence::Required) {
        EXPECT_TRUE(value) << where << " lacks required \"" << field.key
                           << "\"";
      }
      if (!value || value->isNull())
        continue;
      std::string at = where + "." + field.key;
      if (field.kind == schema::FieldKind::Object)
        expectMatchesSchema(*value, {schema::findObject(field.object)}, at);
      if (field.kind == schema::FieldKind::ObjectList)
        for (const json::Value &element : value->array) {
          std::vector<const schema::ObjectSpec *> elementSpecs = {
              schema::findObject(field.object)};
          // A step's "kind" selects the object for the rest of its keys.
          if (elementSpecs[0] == &schema::step::kSpec)
            elementSpecs.push_back(element.get("kind")->string == "gemm"
                                       ? &schema::gemmStep::kSpec
                                       : &schema::kernelStep::kSpec);
          expectMatchesSchema(element, elementSpecs, at);
        }
      if (field.kind == schema::FieldKind::Enum) {
        EXPECT_GE(field.enumSpec->find(value->string.c_str()), 0)
            << at << ": \"" << value->string << "\"";
      }
    }
  }
  for (const auto &member : object.object) {
    EXPECT_TRUE(known.count(member.first))
        << where << " has \"" << member.first << "\", which the schema "
        << "does not list";
  }
}

TEST_F(BundleManifestTest, RuntimeReadsAndValidatesWhatTheCompilerWrites) {
  std::string path = writeSeedBundle();
  runtime::Manifest manifest;
  runtime::Status status = runtime::loadManifest(path, manifest);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(manifest.target, "h100-sxm");
  ASSERT_EQ(manifest.modules.size(), 1u);
  EXPECT_EQ(manifest.modules[0].file, "kernels.ptx");
  EXPECT_EQ(manifest.inputs.size(), 5u);
  ASSERT_EQ(manifest.outputs.size(), 1u);
  EXPECT_GT(manifest.arenaBytes, 0);
  EXPECT_EQ(manifest.predicted.peakBytes, manifest.arenaBytes);
  EXPECT_TRUE(manifest.hasReference);
  bool sawGemm = false, sawKernel = false;
  for (const runtime::Step &step : manifest.steps) {
    if (step.kind == runtime::StepKind::Gemm) {
      sawGemm = true;
      EXPECT_EQ(step.gemm.epilogue, runtime::Epilogue::Bias);
      EXPECT_EQ(step.gemm.c, ""); // written as null
      EXPECT_EQ(step.gemm.bias, "b1");
      EXPECT_TRUE(step.gemm.transB);
    } else {
      sawKernel = true;
      EXPECT_EQ(step.kernel.module, "kernels");
      EXPECT_FALSE(step.kernel.args.empty());
    }
  }
  EXPECT_TRUE(sawGemm && sawKernel);
}

TEST_F(BundleManifestTest, WrittenKeysAreExactlyTheSchemas) {
  std::string path = writeSeedBundle();
  std::string text;
  ASSERT_TRUE(runtime::readFile(path + "/manifest.json", text).ok());
  json::Value root;
  runtime::Status status = json::parse(text, root);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(root.get(schema::header::format.key)->string, schema::kFormat);
  EXPECT_EQ(root.get(schema::header::version.key)->integer, schema::kVersion);
  expectMatchesSchema(root, {&schema::header::kSpec, &schema::manifest::kSpec},
                      "manifest");
  // Top-level keys in the order the schema lists them.
  std::vector<std::string> written, listed;
  for (const auto &member : root.object)
    written.push_back(member.first);
  for (const schema::ObjectSpec *spec :
       {&schema::header::kSpec, &schema::manifest::kSpec})
    for (size_t i = 0; i < spec->size; ++i)
      listed.push_back(spec->fields[i]->key);
  EXPECT_EQ(written, listed);
}

} // namespace
