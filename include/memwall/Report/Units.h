//===- Units.h - human-readable quantities for reports ----------*- C++ -*-===//

#ifndef MEMWALL_REPORT_UNITS_H
#define MEMWALL_REPORT_UNITS_H

#include "memwall/Support/Units.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace memwall {

/// `text` safe inside SVG/XML text and attribute values.
std::string escapeXML(llvm::StringRef text);

} // namespace memwall

#endif // MEMWALL_REPORT_UNITS_H
