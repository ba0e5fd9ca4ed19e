//===- BundleManifest.cpp - A bundle's manifest.json writer ---------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every key comes from the schema memwall-run reads with (BundleSchema.def),
// so the two cannot drift apart; unittests/Target/BundleManifestTest.cpp
// checks that what is written is read back and has every required key.
//
//===----------------------------------------------------------------------===//

#include "BundleManifest.h"

#include "memwall/Support/FiniteJSON.h"

#include "memwall-runtime/BundleSchema.h"

#include <cassert>

using namespace memwall;
namespace schema = memwall::runtime::schema;

/// `name` as the value of an Enum field: one of the names it accepts.
static llvm::StringRef enumValue(const schema::Field &field,
                                 llvm::StringRef name) {
  assert(field.enumSpec && field.enumSpec->find(name.str().c_str()) >= 0 &&
         "not a name the schema accepts");
  return name;
}

void memwall::writeManifest(const Bundle &bundle, llvm::raw_ostream &os) {
  FiniteJSONStream json(os, 2);
  auto bufferName = [&](int index) -> llvm::json::Value {
    if (index < 0)
      return nullptr;
    return bundle.buffers[index].name;
  };
  auto dim3 = [](const std::array<int64_t, 3> &dims) {
    return llvm::json::Array{dims[0], dims[1], dims[2]};
  };
  json.object([&] {
    json.attribute(schema::header::format.key, schema::kFormat);
    json.attribute(schema::header::version.key, schema::kVersion);
    json.attribute(schema::manifest::model.key, bundle.model);
    json.attribute(schema::manifest::target.key, bundle.target);
    json.attribute(schema::manifest::arch.key, bundle.arch);
    json.attributeArray(schema::manifest::modules.key, [&] {
      if (!bundle.ptx.empty())
        json.value(
            llvm::json::Object{{schema::module::name.key, "kernels"},
                               {schema::module::file.key, "kernels.ptx"}});
    });
    json.attribute(schema::manifest::arenaBytes.key, bundle.arenaBytes);
    json.attributeArray(schema::manifest::buffers.key, [&] {
      for (const BundleBuffer &buffer : bundle.buffers) {
        llvm::json::Object object{
            {schema::buffer::name.key, buffer.name},
            {schema::buffer::offset.key, buffer.offset},
            {schema::buffer::bytes.key, buffer.bytes},
            {schema::buffer::dtype.key,
             enumValue(schema::buffer::dtype, buffer.dtype)},
            {schema::buffer::shape.key, llvm::json::Array(buffer.shape)},
            {schema::buffer::role.key,
             enumValue(schema::buffer::role, buffer.role)}};
        if (!buffer.strides.empty())
          object[schema::buffer::strides.key] =
              llvm::json::Array(buffer.strides);
        json.value(std::move(object));
      }
    });
    auto bindings = [&](const schema::Field &field,
                        llvm::ArrayRef<Bundle::Binding> list) {
      json.attributeArray(field.key, [&] {
        for (const Bundle::Binding &binding : list)
          json.value(llvm::json::Object{
              {schema::binding::name.key, binding.name},
              {schema::binding::buffer.key, bufferName(binding.buffer)},
              {schema::binding::value.key, binding.value}});
      });
    };
    bindings(schema::manifest::inputs, bundle.inputs);
    bindings(schema::manifest::outputs, bundle.outputs);
    json.attributeArray(schema::manifest::steps.key, [&] {
      for (const BundleStep &step : bundle.steps) {
        llvm::json::Object object{
            {schema::step::kind.key, enumValue(schema::step::kind, step.kind)},
            {schema::step::name.key, step.name},
            {schema::step::ops.key, llvm::json::Array(step.ops)},
            {schema::step::predictedTimeS.key,
             finiteJSONNumber(step.predictedSeconds)}};
        if (step.kind == "kernel") {
          namespace kernel = schema::kernelStep;
          llvm::json::Array args;
          for (int arg : step.args)
            args.push_back(bufferName(arg));
          object[kernel::module.key] = "kernels";
          object[kernel::function.key] = step.function;
          object[kernel::grid.key] = dim3(step.grid);
          object[kernel::block.key] = dim3(step.block);
          object[kernel::sharedBytes.key] = step.sharedBytes;
          object[kernel::args.key] = std::move(args);
          if (!step.tensorMaps.empty()) {
            namespace map = schema::tensorMap;
            llvm::json::Array maps;
            for (const BundleTensorMap &tensorMap : step.tensorMaps)
              maps.push_back(llvm::json::Object{
                  {map::arg.key, tensorMap.arg},
                  {map::shape.key, llvm::json::Array(tensorMap.shape)},
                  {map::strides.key, llvm::json::Array(tensorMap.strides)},
                  {map::box.key, llvm::json::Array(tensorMap.box)},
                  {map::swizzle.key,
                   enumValue(map::swizzle, tensorMap.swizzle)},
                  {map::l2Promotion.key,
                   enumValue(map::l2Promotion, tensorMap.l2Promotion)},
                  {map::oobFill.key,
                   enumValue(map::oobFill, tensorMap.oobFill)},
                  {map::interleave.key,
                   enumValue(map::interleave, tensorMap.interleave)}});
            object[kernel::tensorMaps.key] = std::move(maps);
          }
        } else if (step.kind == "all_reduce") {
          namespace allReduce = schema::allReduceStep;
          object[allReduce::input.key] = bufferName(step.input);
          object[allReduce::output.key] = bufferName(step.output);
          object[allReduce::count.key] = step.count;
          object[allReduce::dtype.key] =
              enumValue(allReduce::dtype, step.dtype);
          object[allReduce::groupSize.key] = step.groupSize;
        } else {
          namespace gemm = schema::gemmStep;
          object[gemm::a.key] = bufferName(step.a);
          object[gemm::b.key] = bufferName(step.b);
          object[gemm::c.key] = bufferName(step.c);
          object[gemm::bias.key] = bufferName(step.bias);
          object[gemm::d.key] = bufferName(step.d);
          object[gemm::m.key] = step.m;
          object[gemm::n.key] = step.n;
          object[gemm::k.key] = step.k;
          object[gemm::batch.key] = step.batch;
          object[gemm::strideA.key] = step.strideA;
          object[gemm::strideB.key] = step.strideB;
          object[gemm::strideC.key] = step.strideC;
          object[gemm::strideD.key] = step.strideD;
          object[gemm::transA.key] = step.transA;
          object[gemm::transB.key] = step.transB;
          object[gemm::dtype.key] = enumValue(gemm::dtype, step.dtype);
          if (!step.outDtype.empty())
            object[gemm::outDtype.key] =
                enumValue(gemm::outDtype, step.outDtype);
          object[gemm::epilogue.key] = enumValue(gemm::epilogue, step.epilogue);
        }
        json.value(std::move(object));
      }
    });
    json.attributeObject(schema::manifest::predicted.key, [&] {
      json.attribute(schema::predicted::timeS.key, bundle.predictedSeconds);
      json.attribute(schema::predicted::peakBytes.key, bundle.arenaBytes);
    });
    json.attribute(schema::manifest::reference.key, bundle.reference);
  });
  os << "\n";
}
