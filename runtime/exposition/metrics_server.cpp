#include "exposition/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <microhttpd.h>

#include "exposition/text_format.h"

namespace avf::exposition {

namespace {

auto Fail(std::string message) -> llvm::Error {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// Binds ADDRESS:PORT once to tell why it cannot be listened on: the server
// library only says that it failed.
auto ProbeBind(const in_addr& address, int port, const std::string& where) -> llvm::Error {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Fail(fmt::format("cannot serve metrics on {}: socket: {}", where, std::strerror(errno)));
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr = address;
  int status = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int error = errno;
  close(fd);
  if (status == 0) return llvm::Error::success();
  if (error == EADDRINUSE) {
    return Fail(fmt::format(
        "cannot serve metrics on {}: the port is taken (another avf-run, or another program on this host); give "
        "another with --metrics-port",
        where));
  }
  if (error == EADDRNOTAVAIL) {
    return Fail(fmt::format(
        "cannot serve metrics on {}: the address is not this host's; give the pod's with --metrics-address", where));
  }
  return Fail(fmt::format("cannot serve metrics on {}: {}", where, std::strerror(error)));
}

auto Reply(MHD_Connection* connection, unsigned status, const std::string& body, const char* type) -> MHD_Result {
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

// libmicrohttpd's handler: `server` is the MetricsServer.
auto Serve(void* server, MHD_Connection* connection, const char* url, const char* method, const char* /*version*/,
           const char* /*upload_data*/, size_t* upload_data_size, void** request) -> MHD_Result {
  // The first call of a request only announces it; a body is never read.
  if (*request == nullptr) {
    *request = server;
    return MHD_YES;
  }
  *upload_data_size = 0;
  if (std::strcmp(url, "/metrics") != 0) {
    return Reply(connection, MHD_HTTP_NOT_FOUND, "only /metrics is served here\n", "text/plain");
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n", "text/plain");
  }
  std::shared_ptr<const std::string> text = static_cast<MetricsServer*>(server)->Current();
  return Reply(connection, MHD_HTTP_OK, *text, kContentType);
}

}  // namespace

auto MetricsServer::Start(const std::string& address, int port) -> llvm::Expected<std::unique_ptr<MetricsServer>> {
  in_addr parsed{};
  if (inet_pton(AF_INET, address.c_str(), &parsed) != 1) {
    return Fail(fmt::format("--metrics-address {}: not an IPv4 address (the pod's, e.g. 10.0.3.7)", address));
  }
  if (port < 1 || port > 65535) return Fail(fmt::format("--metrics-port {}: not a port (1-65535)", port));
  std::string listen = fmt::format("{}:{}", address, port);
  if (llvm::Error e = ProbeBind(parsed, port, listen)) return e;
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->endpoint_ = fmt::format("http://{}/metrics", listen);
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  bind_to.sin_port = htons(static_cast<uint16_t>(port));
  bind_to.sin_addr = parsed;
  server->daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG,
                                     static_cast<uint16_t>(port), nullptr, nullptr, &Serve, server.get(),
                                     MHD_OPTION_SOCK_ADDR, &bind_to, MHD_OPTION_CONNECTION_LIMIT, 8u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                     size_t{16384}, MHD_OPTION_LISTEN_BACKLOG_SIZE, 8u, MHD_OPTION_END);
  if (server->daemon_ == nullptr)
    return Fail(fmt::format("cannot serve metrics on {}: the server did not start", listen));
  return server;
}

MetricsServer::~MetricsServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

void MetricsServer::Publish(std::string text) {
  auto next = std::make_shared<const std::string>(std::move(text));
  std::lock_guard<std::mutex> lock(mutex_);
  text_ = std::move(next);
}

auto MetricsServer::Current() -> std::shared_ptr<const std::string> {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_;
}

}  // namespace avf::exposition
