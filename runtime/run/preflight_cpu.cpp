// The host as a preflight device: no check, a host buffer, the TCP mesh.
#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "run/preflight_device.h"
#include "run/preflight_report.h"

namespace avf::run::preflight {

namespace {

class CpuDevice final : public Device {
 public:
  auto Describe() const -> std::string override { return "cpu"; }

  auto Allocate(size_t count) -> llvm::Error override {
    buffer_.reset(new (std::nothrow) float[count]);
    count_ = buffer_ ? count : 0;
    if (!buffer_) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot allocate %s of host memory for the "
                                     "all-reduce (--bytes)",
                                     FormatBytes(count * sizeof(float)).c_str());
    }
    return llvm::Error::success();
  }

  auto data() -> float* override { return buffer_.get(); }

  auto Fill(float value) -> llvm::Error override {
    std::fill(buffer_.get(), buffer_.get() + count_, value);
    return llvm::Error::success();
  }

  auto FirstMismatch(float value) -> llvm::Expected<std::optional<Mismatch>> override {
    const float* begin = buffer_.get();
    const float* end = begin + count_;
    const float* at = std::find_if(begin, end, [value](float x) { return x != value; });
    if (at == end) return std::nullopt;
    return Mismatch{.index = static_cast<size_t>(at - begin), .value = *at};
  }

  auto CreateWorld(const comm::TcpOptions& mesh) -> llvm::Expected<std::unique_ptr<comm::Communicator>> override {
    auto world = comm::TcpCommunicator::Create(mesh);
    if (!world) return world.takeError();
    return std::unique_ptr<comm::Communicator>(std::move(*world));
  }

 private:
  std::unique_ptr<float[]> buffer_;
  size_t count_ = 0;
};

}  // namespace

auto OpenCpu() -> std::unique_ptr<Device> { return std::make_unique<CpuDevice>(); }

}  // namespace avf::run::preflight
