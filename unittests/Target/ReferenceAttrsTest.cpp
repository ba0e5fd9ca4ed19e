//===- ReferenceAttrsTest.cpp - attributes in the bundle's reference graph ===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The reference graph exports each op's inherent attributes generically and
// lets the op amend them (ReferenceAttrsOpInterface); the CPU reference reads
// them by name, so what it needs must be there: absent flags as false, enums
// by keyword, axes normalized, defaults spelled out, derived values.
//
//===----------------------------------------------------------------------===//

#include "memwall/Registration.h"
#include "memwall/Target/Bundle.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace memwall;

namespace {
class ReferenceAttrsTest : public ::testing::Test {
protected:
  ReferenceAttrsTest() {
    DialectRegistry registry;
    registerMemWallDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The exported attributes of the single op in `func.func @f(<args>)`.
  llvm::json::Object attrsOf(StringRef args, StringRef op, StringRef result) {
    std::string source =
        ("func.func @f(" + args + ") -> " + result + " {\n  %0 = " + op +
         "\n  return %0 : " + result + "\n}")
            .str();
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    if (!module)
      return {};
    FailureOr<llvm::json::Value> graph =
        exportReferenceGraph(*module->getOps<func::FuncOp>().begin());
    EXPECT_TRUE(succeeded(graph));
    if (failed(graph))
      return {};
    const llvm::json::Object *attrs =
        graph->getAsObject()->getArray("ops")->front().getAsObject()->getObject(
            "attrs");
    return attrs ? *attrs : llvm::json::Object();
  }

  MLIRContext context;
};

std::string text(const llvm::json::Object &object) {
  return llvm::formatv("{0}", llvm::json::Value(llvm::json::Object(object)))
      .str();
}
} // namespace

TEST_F(ReferenceAttrsTest, AbsentFlagsAreFalseAndPresentOnesTrue) {
  EXPECT_EQ(
      text(attrsOf("%a: tensor<4x8xf32>, %b: tensor<16x8xf32>",
                   "memwall.matmul %a, %b {transpose_rhs} : "
                   "tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>",
                   "tensor<4x16xf32>")),
      R"({"transpose_lhs":false,"transpose_rhs":true})");
}

TEST_F(ReferenceAttrsTest, EnumsByKeywordDefaultsIncluded) {
  EXPECT_EQ(text(attrsOf("%a: tensor<4x8xf32>",
                         "memwall.gelu %a tanh : tensor<4x8xf32>",
                         "tensor<4x8xf32>")),
            R"({"approximation":"tanh"})");
  // The default approximation is exported although the IR does not spell it.
  EXPECT_EQ(
      text(attrsOf("%a: tensor<4x8xf32>", "memwall.gelu %a : tensor<4x8xf32>",
                   "tensor<4x8xf32>")),
      R"({"approximation":"erf"})");
}

TEST_F(ReferenceAttrsTest, AxesAreNormalized) {
  EXPECT_EQ(text(attrsOf("%a: tensor<2x4x8xf32>",
                         "memwall.softmax %a axis -1 : tensor<2x4x8xf32>",
                         "tensor<2x4x8xf32>")),
            R"({"axis":2})");
  EXPECT_EQ(text(attrsOf("%a: tensor<2x4x8xf32>",
                         "memwall.reduce mean %a axes [-1, 0] : "
                         "tensor<2x4x8xf32> -> tensor<4xf32>",
                         "tensor<4xf32>")),
            R"({"axes":[2,0],"keep_dims":false,"kind":"mean"})");
}

TEST_F(ReferenceAttrsTest, OptionalAttributesOmittedOrDefaulted) {
  // A slice without strides gets unit strides; a loss without ignore_index
  // exports none.
  EXPECT_EQ(text(attrsOf("%a: tensor<4x8xf32>",
                         "memwall.slice %a offsets [1, 2] sizes [2, 4] : "
                         "tensor<4x8xf32> -> tensor<2x4xf32>",
                         "tensor<2x4xf32>")),
            R"({"offsets":[1,2],"sizes":[2,4],"strides":[1,1]})");
  EXPECT_EQ(text(attrsOf("%a: tensor<4x8xf32>, %l: tensor<4xi64>",
                         "memwall.cross_entropy %a, %l sum : "
                         "tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>",
                         "tensor<f32>")),
            R"({"reduction":"sum"})");
}

TEST_F(ReferenceAttrsTest, AttentionExportsItsEffectiveScale) {
  llvm::json::Object attrs =
      attrsOf("%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, "
              "%v: tensor<1x2x4x16xf32>",
              "memwall.attention %q, %k, %v : tensor<1x2x4x16xf32>, "
              "tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32> -> "
              "tensor<1x2x4x16xf32>",
              "tensor<1x2x4x16xf32>");
  EXPECT_EQ(attrs.getBoolean("causal"), false);
  EXPECT_EQ(attrs.getNumber("scale"), 0.25); // 1/sqrt(16)
}

TEST_F(ReferenceAttrsTest, ElementTypesByName) {
  EXPECT_EQ(text(attrsOf("%a: tensor<4xf32>",
                         "memwall.cast %a to bf16 : tensor<4xf32> -> "
                         "tensor<4xbf16>",
                         "tensor<4xbf16>")),
            R"({"element_type":"bf16"})");
}
