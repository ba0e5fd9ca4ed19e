//===- PassTarget.cpp - target selection shared by memwall passes ---------===//

#include "memwall/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/Mutex.h"

using namespace mlir;
using namespace memwall;

namespace {
struct DefaultTargetSelection {
  llvm::sys::SmartMutex<true> mutex;
  std::string name;
  std::string file;
  std::optional<LaunchMode> launchMode;
};
} // namespace

static llvm::ManagedStatic<DefaultTargetSelection> defaultSelection;

void memwall::setDefaultPassTarget(StringRef targetName, StringRef targetFile,
                                   std::optional<LaunchMode> launchMode) {
  llvm::sys::SmartScopedLock<true> lock(defaultSelection->mutex);
  defaultSelection->name = targetName.str();
  defaultSelection->file = targetFile.str();
  defaultSelection->launchMode = launchMode;
}

llvm::Expected<GPUTarget>
memwall::resolveTargetOrDefault(StringRef targetName, StringRef targetFile) {
  std::string name = targetName.str(), file = targetFile.str();
  if (name.empty() && file.empty()) {
    llvm::sys::SmartScopedLock<true> lock(defaultSelection->mutex);
    name = defaultSelection->name;
    file = defaultSelection->file;
  }
  if (name.empty() && file.empty())
    name = kDefaultGPUTargetName;
  llvm::Expected<GPUTarget> target = resolveGPUTarget(name, file);
  std::optional<LaunchMode> launchMode;
  {
    llvm::sys::SmartScopedLock<true> lock(defaultSelection->mutex);
    launchMode = defaultSelection->launchMode;
  }
  if (target && launchMode)
    target->launchMode = *launchMode;
  return target;
}

FailureOr<GPUTarget> memwall::resolvePassTarget(MLIRContext *ctx,
                                                StringRef targetName,
                                                StringRef targetFile) {
  llvm::Expected<GPUTarget> target =
      resolveTargetOrDefault(targetName, targetFile);
  if (!target) {
    emitError(UnknownLoc::get(ctx)) << llvm::toString(target.takeError());
    return failure();
  }
  return std::move(*target);
}
