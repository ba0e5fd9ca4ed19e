//===- Units.h - human-readable quantities for reports ----------*- C++ -*-===//

#ifndef MEMWALL_REPORT_UNITS_H
#define MEMWALL_REPORT_UNITS_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace memwall {

/// `value` with an SI prefix and three significant digits, e.g.
/// formatSI(2.5e12, "FLOP/s") == "2.50 TFLOP/s", formatSI(3e-6, "s") ==
/// "3.00 us".
std::string formatSI(double value, const char *unit);

/// `text` safe inside SVG/XML text and attribute values.
std::string escapeXML(llvm::StringRef text);

} // namespace memwall

#endif // MEMWALL_REPORT_UNITS_H
