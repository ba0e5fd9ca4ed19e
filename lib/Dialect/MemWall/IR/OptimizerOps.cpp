//===- OptimizerOps.cpp - Optimizer ops -----------------------------------===//
//
// Part of memwall, under the Apache License v2.0 with LLVM Exceptions.
// See the LICENSE file for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// AdamW: one update of a parameter and its two moments, in place.
// Per op: type inference, verifier, VJP, payload, aliasing, reference
// attributes and FLOP/byte counts (formulas in docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "MemWallOpUtils.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace memwall;
using namespace memwall::detail;

//===----------------------------------------------------------------------===//
// AdamWOp
//===----------------------------------------------------------------------===//

void AdamWOp::build(OpBuilder &builder, OperationState &state, Value param,
                    Value grad, Value expAvg, Value expAvgSq, Value master,
                    double lr) {
  build(builder, state, param.getType(), expAvg.getType(), expAvgSq.getType(),
        master ? master.getType() : Type(), param, grad, expAvg, expAvgSq,
        master, builder.getF64FloatAttr(lr), nullptr, nullptr, nullptr, nullptr,
        nullptr);
}

LogicalResult AdamWOp::verify() {
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  for (auto [value, name] : {std::pair<Value, StringRef>{getGrad(), "grad"},
                             {getExpAvg(), "exp_avg"},
                             {getExpAvgSq(), "exp_avg_sq"},
                             {getMaster(), "master"}})
    if (value && shapeOf(value) != shapeOf(getParam()))
      return emitOpError() << name << " must have the param's shape "
                           << shapeString(shapeOf(getParam())) << ", got "
                           << shapeString(shapeOf(value));
  if (failed(expectType(*this, getNewParam().getType(), getParam().getType(),
                        "new param")) ||
      failed(expectType(*this, getNewExpAvg().getType(), getExpAvg().getType(),
                        "new exp_avg")) ||
      failed(expectType(*this, getNewExpAvgSq().getType(),
                        getExpAvgSq().getType(), "new exp_avg_sq")))
    return failure();
  if (static_cast<bool>(getMaster()) != static_cast<bool>(getNewMaster()))
    return emitOpError("has a new master result exactly when master is given");
  if (getMaster() && failed(expectType(*this, getNewMaster().getType(),
                                       getMaster().getType(), "new master")))
    return failure();
  double lr = getLr().convertToDouble(), eps = getEpsilon().convertToDouble();
  double beta1 = getBeta1().convertToDouble();
  double beta2 = getBeta2().convertToDouble();
  if (!(lr >= 0) || !std::isfinite(lr))
    return emitOpError("lr must be a finite number >= 0, got ") << lr;
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return emitOpError("betas must be in [0, 1), got ")
           << beta1 << " and " << beta2;
  if (!(eps > 0) || !std::isfinite(eps))
    return emitOpError("eps must be a positive finite number, got ") << eps;
  double weightDecay = getWeightDecay().convertToDouble();
  if (!std::isfinite(weightDecay))
    return emitOpError("weight_decay must be a finite number, got ")
           << weightDecay;
  if (getStep() < 1)
    return emitOpError("step must be >= 1, got ") << getStep();
  return success();
}

/// The update is in place: each result reuses its operand's buffer.
Value AdamWOp::getAliasedOperand(unsigned resultNumber) {
  switch (resultNumber) {
  case 0:
    return getParam();
  case 1:
    return getExpAvg();
  case 2:
    return getExpAvgSq();
  default:
    return getMaster();
  }
}

int64_t AdamWOp::getFlops() {
  // Decay (2), m (3), v (4), bias corrections (2), sqrt, add eps, divide,
  // multiply by lr, subtract (5): 16 per parameter, as fused optimizers do.
  return (CheckedInt(16) * countElements(getParam().getType())).saturated();
}
