//===- JSONDiagnostics.cpp - compiler-style JSON errors -------------------===//

#include "memwall/Support/JSONDiagnostics.h"

using namespace memwall;

llvm::Expected<llvm::json::Value>
memwall::parseJSONWithLocation(llvm::StringRef text,
                               llvm::StringRef bufferName) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (parsed)
    return parsed;
  std::string message = llvm::toString(parsed.takeError());
  llvm::StringRef rest = message;
  std::string formatted = (bufferName + ": " + message).str();
  if (rest.consume_front("[")) {
    auto [position, detail] = rest.split("]: ");
    llvm::StringRef lineCol = position.split(", ").first;
    if (!detail.empty() && lineCol.contains(':'))
      formatted = (bufferName + ":" + lineCol + ": " + detail).str();
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(), formatted);
}
