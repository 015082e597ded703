// The HTTP endpoint a Prometheus server scrapes: GET /metrics on one address
// and port, nothing else served. It runs on its own thread (libmicrohttpd's
// polling thread, with the default stack: a civetweb worker's fixed 100 KB
// stack cannot hold the thread-local storage of the BLAS and CUDA libraries
// avf-run loads), keeps at most 8 connections, drops one that is silent for
// 5 s, and gives each 16 KiB for its request; the training thread only swaps
// in the newest text, so no scraper can hold a step.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <llvm/Support/Error.h>

struct MHD_Daemon;

namespace avf::exposition {

class MetricsServer {
 public:
  // Listens on `address`:`port` (an IPv4 address; port 1-65535). A port
  // that is taken or an address that is not this host's is an error that
  // names them.
  static auto Start(const std::string& address, int port) -> llvm::Expected<std::unique_ptr<MetricsServer>>;
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  auto operator=(const MetricsServer&) -> MetricsServer& = delete;

  // What the next scrapes get: text in the exposition format (text_format.h).
  void Publish(std::string text);
  auto endpoint() const -> const std::string& { return endpoint_; }
  // The text the scrapes get now.
  auto Current() -> std::shared_ptr<const std::string>;

 private:
  MetricsServer() = default;

  MHD_Daemon* daemon_ = nullptr;
  std::string endpoint_;  // "http://ADDRESS:PORT/metrics"
  std::mutex mutex_;
  std::shared_ptr<const std::string> text_ = std::make_shared<const std::string>();
};

}  // namespace avf::exposition
