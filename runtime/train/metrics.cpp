#include "train/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "io/durable_file.h"

namespace avf::train {

namespace {

// Shortest text that reads back as the same double; JSON has no NaN or infinity.
auto Number(double v) -> std::string { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

auto Grouped(double v) -> std::string {
  std::string digits = fmt::format("{:.0f}", std::max(0.0, v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

auto Rate(double flops) -> std::string {
  const char* units[] = {"FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"};
  size_t u = 0;
  while (flops >= 1000 && u + 1 < std::size(units)) {
    flops /= 1000;
    ++u;
  }
  return fmt::format("{:.3g} {}", flops, units[u]);
}

}  // namespace

auto MetricsJson(const StepMetrics& m) -> std::string {
  return fmt::format(
      "{{\"step\":{},\"loss\":{},\"lr\":{},\"grad_norm\":{},\"step_time_s\":{},\"tokens_per_s\":{},\"flops_per_s\":{},"
      "\"tensor_comm_s\":{},\"pipeline_comm_s\":{},\"data_comm_s\":{},\"checkpoint_s\":{},\"val_loss\":{},"
      "\"step_time_predicted_s\":{},\"step_time_predicted_low_s\":{},\"step_time_predicted_high_s\":{},\"nodes\":{}}}",
      m.step, Number(m.loss), Number(m.lr), Number(m.grad_norm), Number(m.step_time_s), Number(m.tokens_per_s),
      Number(m.flops_per_s), Number(m.tensor_comm_s), Number(m.pipeline_comm_s), Number(m.data_comm_s),
      Number(m.checkpoint_s), Number(m.val_loss), Number(m.step_time_predicted_s), Number(m.step_time_predicted_low_s),
      Number(m.step_time_predicted_high_s), m.nodes);
}

auto DurationText(double seconds) -> std::string {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02d}h", s / 86400, s % 86400 / 3600);
}

auto ProgressText(const StepMetrics& m) -> std::string {
  double eta = m.step_time_s * static_cast<double>(std::max<int64_t>(0, m.total_steps - m.step));
  std::string val = std::isfinite(m.val_loss) ? fmt::format("  val {:.4f}", m.val_loss) : "";
  return fmt::format("step {}/{}  loss {:.4f}{}  lr {:.2e}  {} tok/s  {}  ETA {}", m.step, m.total_steps, m.loss, val,
                     m.lr, Grouped(m.tokens_per_s), Rate(m.flops_per_s), DurationText(eta));
}

namespace {

// The step of a metrics line, `{"step":N,...}`; nullopt for anything else.
auto StepOfLine(llvm::StringRef line) -> std::optional<int64_t> {
  int64_t step = 0;
  if (!line.consume_front("{\"step\":") || !line.endswith("}")) return std::nullopt;
  llvm::StringRef digits = line.take_while([](char c) { return c >= '0' && c <= '9'; });
  if (digits.empty() || digits.getAsInteger(10, step) || !line.drop_front(digits.size()).startswith(",")) {
    return std::nullopt;
  }
  return step;
}

// Rewrites `path` with its lines of steps up to `step` only. Anything but a
// regular file (a terminal, a pipe, /dev/null) is only appended to: reading
// one could block or never end.
auto KeepThrough(const std::string& path, int64_t step, int64_t& dropped) -> llvm::Error {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return llvm::Error::success();
  std::ifstream in(path);
  if (!in) return llvm::Error::success();
  std::string kept, line;
  while (std::getline(in, line)) {
    std::optional<int64_t> s = StepOfLine(line);
    if (s && *s <= step) kept += line + "\n";
    else ++dropped;
  }
  if (dropped == 0) return llvm::Error::success();
  return io::WriteDurably(path, llvm::StringRef(kept));
}

}  // namespace

auto MetricsFile::Open(const std::string& path, int64_t step, int64_t* dropped) -> llvm::Expected<MetricsFile> {
  int64_t removed = 0;
  if (llvm::Error e = KeepThrough(path, step, removed)) return e;
  if (dropped) *dropped = removed;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: cannot open the metrics file: %s", path.c_str(),
                                   std::strerror(errno));
  }
  return MetricsFile(f, path);
}

MetricsFile::~MetricsFile() {
  if (file_) std::fclose(file_);
}

auto MetricsFile::Append(const StepMetrics& m) -> llvm::Error {
  std::string line = MetricsJson(m) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: cannot write: %s", path_.c_str(),
                                   std::strerror(errno));
  }
  return llvm::Error::success();
}

}  // namespace avf::train
