// Report() checks a diagnostic's arguments against its format when it is
// compiled. Built as is, this file must compile (the right arguments); with
// AVIFLOW_WRONG_COUNT or AVIFLOW_WRONG_TYPE it must not (ctest
// unit/diag_format_wrong_count and unit/diag_format_wrong_type build it so and
// expect fmt's format-check error).
#include "diag/diagnostic.h"

void ReportFileNotFound(avf::diag::DiagnosticEngine& diags) {
#if defined(AVIFLOW_WRONG_COUNT)
  diags.Report(avf::diag::DiagId::FileNotFound, {}, "plan.avf");  // "cannot open `{}`: {}" has two
#elif defined(AVIFLOW_WRONG_TYPE)
  diags.Report(avf::diag::DiagId::InvalidUtf8, {}, "plan.avf");  // "0x{:02X}" is not a string's format
#else
  diags.Report(avf::diag::DiagId::FileNotFound, {}, "plan.avf", "no such file");
  diags.Report(avf::diag::DiagId::InvalidUtf8, {}, 0xffu);
#endif
}
