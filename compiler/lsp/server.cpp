#include "lsp/server.h"

#include <csignal>
#include <exception>
#include <optional>

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "lsp/json_convert.h"
#include "lsp/transport.h"

namespace avf::lsp {

namespace {

namespace json = llvm::json;

// JSON-RPC and LSP error codes.
enum ErrorCode {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
};

// A request's answer: its result, or an error.
struct Reply {
  json::Value result = nullptr;
  int error_code = 0;
  std::string error_message;
};

auto Failure(int code, std::string message) -> Reply { return {nullptr, code, std::move(message)}; }

auto Success(json::Value result) -> Reply {
  Reply reply;
  reply.result = std::move(result);
  return reply;
}

auto Serialize(const json::Value& v) -> std::string {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << v;
  return os.str();
}

// utf-8 when the client offers it (general.positionEncodings), else utf-16.
auto NegotiatedEncoding(const json::Object& params) -> Encoding {
  const json::Object* capabilities = params.getObject("capabilities");
  const json::Object* general = capabilities ? capabilities->getObject("general") : nullptr;
  const json::Array* offered = general ? general->getArray("positionEncodings") : nullptr;
  if (!offered) return Encoding::Utf16;
  for (const json::Value& e : *offered) {
    if (e.getAsString() && *e.getAsString() == "utf-8") return Encoding::Utf8;
  }
  return Encoding::Utf16;
}

auto Capabilities(Encoding encoding) -> json::Object {
  return json::Object{
      {"positionEncoding", encoding == Encoding::Utf8 ? "utf-8" : "utf-16"},
      {"textDocumentSync", json::Object{{"openClose", true}, {"change", 2}}},
      {"hoverProvider", true},
      {"definitionProvider", true},
      {"documentSymbolProvider", true},
      {"documentFormattingProvider", true},
      {"codeActionProvider", json::Object{{"codeActionKinds", json::Array{"quickfix"}}}},
      {"completionProvider", json::Object{{"triggerCharacters", json::Array{"="}}}},
  };
}

auto DocumentVersion(const json::Object& params) -> std::optional<int64_t> {
  const json::Object* document = params.getObject("textDocument");
  llvm::Optional<int64_t> version = document ? document->getInteger("version") : llvm::None;
  return version ? std::optional<int64_t>(*version) : std::nullopt;
}

class Server {
 public:
  Server(int out, const ServerOptions& options) : out_(out), options_(options), workspace_(options.dirs) {}

  void HandleFrame(const std::string& body);
  void ReplyError(const json::Value& id, int code, const std::string& message);
  void PublishDiagnostics();
  auto exited() const -> bool { return exited_; }
  auto exit_status() const -> int { return shutdown_ ? 0 : 1; }

 private:
  void Send(const json::Value& message) { WriteFrame(out_, Serialize(message)); }
  void Notify(llvm::StringRef method, json::Value params);
  void Publish(const std::string& uri, json::Array diagnostics);
  void HandleMessage(const json::Object& message);
  void HandleNotification(llvm::StringRef method, const json::Object& params);
  auto HandleRequest(llvm::StringRef method, const json::Object& params) -> Reply;
  auto Initialize(const json::Object& params) -> Reply;
  auto DocumentRequest(llvm::StringRef method, const std::string& uri, const json::Object& params) -> Reply;
  auto PositionRequest(llvm::StringRef method, const std::string& uri, const json::Object& params) -> Reply;
  auto CodeActions(const std::string& uri, const json::Object& params) -> Reply;
  void DidOpen(const json::Object& params);
  void DidChange(const json::Object& params);

  int out_;
  const ServerOptions& options_;
  Workspace workspace_;
  bool initialized_ = false, shutdown_ = false, exited_ = false;
};

void Server::ReplyError(const json::Value& id, int code, const std::string& message) {
  Send(json::Object{
      {"jsonrpc", "2.0"}, {"id", id}, {"error", json::Object{{"code", code}, {"message", JsonText(message)}}}});
}

void Server::Notify(llvm::StringRef method, json::Value params) {
  Send(json::Object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::Publish(const std::string& uri, json::Array diagnostics) {
  json::Object params{{"uri", JsonText(uri)}, {"diagnostics", std::move(diagnostics)}};
  if (std::optional<int64_t> version = workspace_.Version(uri)) params["version"] = *version;
  Notify("textDocument/publishDiagnostics", std::move(params));
}

void Server::PublishDiagnostics() {
  for (const std::string& uri : workspace_.Unpublished()) {
    json::Array diagnostics;
    for (const Diagnostic& d : workspace_.Diagnostics(uri)) diagnostics.push_back(ToJson(d));
    Publish(uri, std::move(diagnostics));
  }
}

void Server::HandleFrame(const std::string& body) {
  llvm::Expected<json::Value> parsed = json::parse(body);
  if (!parsed) {
    ReplyError(nullptr, kParseError, "the message is not JSON: " + llvm::toString(parsed.takeError()));
    return;
  }
  const json::Object* message = parsed->getAsObject();
  if (!message) {
    ReplyError(nullptr, kInvalidRequest, "a message must be a JSON object");
    return;
  }
  try {
    HandleMessage(*message);
  } catch (const std::exception& e) {
    const json::Value* id = message->get("id");
    if (id) ReplyError(*id, kInternalError, std::string("the server failed: ") + e.what());
  }
}

void Server::HandleMessage(const json::Object& message) {
  const json::Value* id = message.get("id");
  llvm::Optional<llvm::StringRef> method = message.getString("method");
  if (!method) {
    // A response to a request of ours (the server sends none) or garbage.
    if (!message.get("result") && !message.get("error")) ReplyError(id ? *id : nullptr, kInvalidRequest, "no method");
    return;
  }
  static const json::Object kNoParams;
  const json::Object* params = message.getObject("params");
  if (!params) params = &kNoParams;
  if (!id) {
    HandleNotification(*method, *params);
    return;
  }
  if (id->kind() != json::Value::Number && id->kind() != json::Value::String) {
    ReplyError(nullptr, kInvalidRequest, "a request id must be a number or a string");
    return;
  }
  Reply reply = HandleRequest(*method, *params);
  if (reply.error_code != 0) {
    ReplyError(*id, reply.error_code, reply.error_message);
    return;
  }
  Send(json::Object{{"jsonrpc", "2.0"}, {"id", *id}, {"result", std::move(reply.result)}});
}

void Server::HandleNotification(llvm::StringRef method, const json::Object& params) {
  if (method == "exit") {
    exited_ = true;
    return;
  }
  if (!initialized_ || shutdown_) return;
  if (method == "textDocument/didOpen") DidOpen(params);
  if (method == "textDocument/didChange") DidChange(params);
  if (method == "textDocument/didClose") {
    std::string uri = DocumentUri(params);
    if (!workspace_.IsOpen(uri)) return;
    workspace_.Close(uri);
    Publish(uri, {});  // no version: the document is gone
  }
}

void Server::DidOpen(const json::Object& params) {
  const json::Object* document = params.getObject("textDocument");
  llvm::Optional<llvm::StringRef> text = document ? document->getString("text") : llvm::None;
  std::string uri = DocumentUri(params);
  if (!text || uri.empty()) return;
  workspace_.Open(uri, text->str(), DocumentVersion(params));
}

void Server::DidChange(const json::Object& params) {
  std::string uri = DocumentUri(params);
  std::optional<std::vector<Change>> changes = ChangesFrom(params.get("contentChanges"));
  if (!workspace_.IsOpen(uri) || !changes) return;
  if (!workspace_.Change(uri, *changes, DocumentVersion(params))) {
    Notify("window/logMessage",
           json::Object{{"type", 1},
                        {"message", JsonText("aviflowc lsp: an edit of " + uri +
                                             " has a range outside the document; it was left out, so the server's "
                                             "text may differ from the editor's until the file is reopened")}});
  }
}

auto Server::HandleRequest(llvm::StringRef method, const json::Object& params) -> Reply {
  if (method == "initialize") return Initialize(params);
  if (!initialized_) return Failure(kServerNotInitialized, "the first request must be `initialize`");
  if (shutdown_) return Failure(kInvalidRequest, "the server is shutting down");
  if (method == "shutdown") {
    shutdown_ = true;
    return {};
  }
  if (!method.startswith("textDocument/")) return Failure(kMethodNotFound, "unknown method " + method.str());
  std::string uri = DocumentUri(params);
  if (uri.empty()) return Failure(kInvalidParams, "params.textDocument.uri is missing");
  return DocumentRequest(method, uri, params);
}

auto Server::Initialize(const json::Object& params) -> Reply {
  if (initialized_) return Failure(kInvalidRequest, "the server is already initialized");
  initialized_ = true;
  workspace_.set_encoding(NegotiatedEncoding(params));
  return Success(json::Object{{"capabilities", Capabilities(workspace_.encoding())},
                              {"serverInfo", json::Object{{"name", "aviflowc"}, {"version", options_.version}}}});
}

auto Server::DocumentRequest(llvm::StringRef method, const std::string& uri, const json::Object& params) -> Reply {
  bool open = workspace_.IsOpen(uri);
  if (method == "textDocument/documentSymbol") {
    json::Array symbols;
    for (const Symbol& s : workspace_.Symbols(uri)) symbols.push_back(ToJson(s));
    return Success(open ? json::Value(std::move(symbols)) : json::Value(nullptr));
  }
  if (method == "textDocument/formatting") {
    std::optional<std::vector<TextEdit>> edits = workspace_.Format(uri);
    if (!edits) return {};
    json::Array out;
    for (const TextEdit& e : *edits) out.push_back(ToJson(e));
    return Success(std::move(out));
  }
  if (method == "textDocument/codeAction") return CodeActions(uri, params);
  return PositionRequest(method, uri, params);
}

auto Server::PositionRequest(llvm::StringRef method, const std::string& uri, const json::Object& params) -> Reply {
  bool known =
      method == "textDocument/hover" || method == "textDocument/definition" || method == "textDocument/completion";
  if (!known) return Failure(kMethodNotFound, "unknown method " + method.str());
  std::optional<Position> p = PositionFrom(params.get("position"));
  if (!p) return Failure(kInvalidParams, "params.position must hold a non-negative `line` and `character`");
  if (method == "textDocument/hover") {
    std::optional<HoverText> hover = workspace_.Hover(uri, *p);
    return Success(hover ? ToJson(*hover) : json::Value(nullptr));
  }
  if (method == "textDocument/definition") {
    std::optional<Location> target = workspace_.Definition(uri, *p);
    return Success(target ? ToJson(*target) : json::Value(nullptr));
  }
  json::Array items;
  for (const CompletionItem& c : workspace_.Completion(uri, *p)) items.push_back(ToJson(c));
  return Success(json::Object{{"isIncomplete", false}, {"items", std::move(items)}});
}

auto Server::CodeActions(const std::string& uri, const json::Object& params) -> Reply {
  std::optional<Range> range = RangeFrom(params.get("range"));
  if (!range) return Failure(kInvalidParams, "params.range must be a range");
  json::Array actions;
  for (const Diagnostic& d : workspace_.Fixes(uri, *range)) actions.push_back(CodeAction(d));
  return Success(std::move(actions));
}

}  // namespace

auto Serve(int in, int out, const ServerOptions& options) -> int {
  std::signal(SIGPIPE, SIG_IGN);  // a client gone: the next read ends the loop
  FrameReader reader(in);
  Server server(out, options);
  while (!server.exited()) {
    // Diagnostics wait until the input is drained: a burst of edits costs one analysis.
    if (!reader.HasPendingInput()) server.PublishDiagnostics();
    Frame frame = reader.Next();
    if (frame.kind == Frame::Kind::End) break;
    if (frame.kind == Frame::Kind::Malformed) {
      server.ReplyError(nullptr, kInvalidRequest, "malformed frame: " + frame.problem);
      continue;
    }
    server.HandleFrame(frame.body);
  }
  return server.exit_status();
}

}  // namespace avf::lsp
