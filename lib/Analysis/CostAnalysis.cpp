//===- CostAnalysis.cpp - Roofline costs of memwall IR --------------------===//

#include "memwall/Analysis/CostAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Location.h"

using namespace mlir;
using namespace memwall;

RooflineEstimate memwall::estimateOpRoofline(CostOpInterface op,
                                             const GPUTarget &target) {
  double bytes = static_cast<double>(op.getBytesRead()) +
                 static_cast<double>(op.getBytesWritten());
  return estimateRoofline(static_cast<double>(op.getFlops()), bytes,
                          op.getMathPrecision(), target, op.launchesKernel());
}

ParameterSummary memwall::summarizeParameters(ModuleOp module) {
  ParameterSummary summary;
  module.walk([&](FunctionOpInterface function) {
    for (unsigned index = 0, e = function.getNumArguments(); index < e;
         ++index) {
      auto kind = function.getArgAttrOfType<ArgKindAttr>(
          index, MemWallDialect::kArgKindAttrName);
      if (!kind || kind.getValue() != ArgKind::Weight)
        continue;
      Type type = function.getArgument(index).getType();
      summary.params += getNumElements(type);
      summary.bytes += getTensorByteSize(type);
    }
  });
  return summary;
}

std::string memwall::formatLocationForReport(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return nameLoc.getName().getValue().str();
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return formatLocationForReport(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location part : fused.getLocations()) {
      if (!joined.empty())
        joined += "+";
      joined += formatLocationForReport(part);
    }
    return joined.empty() ? "?" : joined;
  }
  return "?";
}

RooflineReport memwall::buildRooflineReport(ModuleOp module,
                                            const GPUTarget &target) {
  RooflineReport report;
  report.target = target;
  if (std::optional<StringRef> name = module.getSymName())
    report.modelName = name->str();
  ParameterSummary parameters = summarizeParameters(module);
  report.params = parameters.params;
  report.paramBytes = parameters.bytes;
  module.walk([&](CostOpInterface op) {
    OpRecord record;
    record.id = report.ops.size();
    record.op = op->getName().getStringRef().str();
    record.loc = formatLocationForReport(op->getLoc());
    record.flops = op.getFlops();
    record.bytesRead = op.getBytesRead();
    record.bytesWritten = op.getBytesWritten();
    record.precision = op.getMathPrecision();
    record.estimate = estimateOpRoofline(op, target);
    report.ops.push_back(std::move(record));
  });
  return report;
}
