#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exposition/metrics_server.h"
#include "exposition/text_format.h"

namespace avf::exposition {
namespace {

TEST(TextFormat, FamiliesWithHelpTypeAndEscapedLabels) {
  std::vector<Family> families{
      {"avf_loss", "Loss \\ of\nthe step.", MetricType::Gauge, {{{{"job", "a\"b"}, {"rank", "0"}}, 2.5}}},
      {"avf_restarts_total", "Restarts.", MetricType::Counter, {{{}, 3}}},
      {"avf_empty", "Not served.", MetricType::Gauge, {}},
      {"avf_odd",
       "Odd values.",
       MetricType::Gauge,
       {{{{"v", "nan"}}, std::nan("")},
        {{{"v", "inf"}}, INFINITY},
        {{{"v", "-inf"}}, -INFINITY},
        {{{"v", "x"}}, 1e-7}}}};
  EXPECT_EQ(RenderText(families),
            "# HELP avf_loss Loss \\\\ of\\nthe step.\n"
            "# TYPE avf_loss gauge\n"
            "avf_loss{job=\"a\\\"b\",rank=\"0\"} 2.5\n"
            "# HELP avf_restarts_total Restarts.\n"
            "# TYPE avf_restarts_total counter\n"
            "avf_restarts_total 3\n"
            "# HELP avf_odd Odd values.\n"
            "# TYPE avf_odd gauge\n"
            "avf_odd{v=\"nan\"} NaN\n"
            "avf_odd{v=\"inf\"} +Inf\n"
            "avf_odd{v=\"-inf\"} -Inf\n"
            "avf_odd{v=\"x\"} 1e-07\n");
}

// A port that was free a moment ago.
auto FreePort() -> int {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

auto Connect(int port) -> int {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the reply until the server closes (10 s at most).
auto Exchange(int port, const std::string& request) -> std::string {
  int fd = Connect(port);
  if (fd < 0) return "";
  (void)!write(fd, request.data(), request.size());
  std::string reply;
  char buffer[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 10000) > 0) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

TEST(MetricsServer, ServesThePublishedTextAtMetricsOnly) {
  int port = FreePort();
  auto server = MetricsServer::Start("127.0.0.1", port);
  ASSERT_TRUE(static_cast<bool>(server)) << llvm::toString(server.takeError());
  EXPECT_EQ((*server)->endpoint(), "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  (*server)->Publish("avf_step 7\n");
  std::string reply = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos) << reply;
  EXPECT_EQ(reply.substr(reply.size() - 11), "avf_step 7\n");
  (*server)->Publish("avf_step 8\n");
  reply = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(reply.substr(reply.size() - 11), "avf_step 8\n");
  EXPECT_NE(Exchange(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").find("HTTP/1.1 404"),
            std::string::npos);
  EXPECT_NE(Exchange(port, "GET /etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").find("HTTP/1.1 404"),
            std::string::npos);
  EXPECT_NE(Exchange(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .find("HTTP/1.1 405"),
            std::string::npos);
}

TEST(MetricsServer, ATakenPortOrABadAddressIsNamed) {
  int port = FreePort();
  auto first = MetricsServer::Start("127.0.0.1", port);
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  auto second = MetricsServer::Start("127.0.0.1", port);
  ASSERT_FALSE(static_cast<bool>(second));
  std::string message = llvm::toString(second.takeError());
  EXPECT_NE(message.find("cannot serve metrics on 127.0.0.1:" + std::to_string(port)), std::string::npos) << message;
  EXPECT_NE(message.find("the port is taken"), std::string::npos) << message;
  auto bad = MetricsServer::Start("10.0.0.999", port);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("not an IPv4 address"), std::string::npos);
  auto elsewhere = MetricsServer::Start("192.0.2.1", port);  // TEST-NET-1: no host's
  ASSERT_FALSE(static_cast<bool>(elsewhere));
  EXPECT_NE(llvm::toString(elsewhere.takeError()).find("the address is not this host's"), std::string::npos);
  auto zero = MetricsServer::Start("127.0.0.1", 70000);
  ASSERT_FALSE(static_cast<bool>(zero));
  EXPECT_NE(llvm::toString(zero.takeError()).find("not a port"), std::string::npos);
}

// Scrapers that connect and send nothing take the serving threads, but
// never the publisher; once the server drops them, others are served.
TEST(MetricsServer, SilentScrapersNeverHoldThePublisher) {
  int port = FreePort();
  auto server = MetricsServer::Start("127.0.0.1", port);
  ASSERT_TRUE(static_cast<bool>(server)) << llvm::toString(server.takeError());
  std::vector<int> silent;
  for (int i = 0; i < 2; ++i) silent.push_back(Connect(port));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) (*server)->Publish("avf_step " + std::to_string(i) + "\n");
  double published = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(published, 1.0);
  std::string reply = Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(reply.find("avf_step 999"), std::string::npos) << reply;
  for (int fd : silent) close(fd);
}

TEST(MetricsServer, AnOversizedRequestIsRefused) {
  int port = FreePort();
  auto server = MetricsServer::Start("127.0.0.1", port);
  ASSERT_TRUE(static_cast<bool>(server)) << llvm::toString(server.takeError());
  (*server)->Publish("avf_step 1\n");
  std::string huge = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Fill: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
  std::string reply = Exchange(port, huge);
  EXPECT_EQ(reply.find("avf_step 1"), std::string::npos) << reply.substr(0, 200);
  EXPECT_NE(Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").find("avf_step 1"),
            std::string::npos);
}

}  // namespace
}  // namespace avf::exposition
