#include "lsp/json_convert.h"

namespace avf::lsp {

namespace json = llvm::json;

auto JsonText(std::string text) -> json::Value {
  if (!json::isUTF8(text)) text = json::fixUTF8(text);
  return json::Value(std::move(text));
}

namespace {

auto ToJson(const Position& p) -> json::Value { return json::Object{{"line", p.line}, {"character", p.character}}; }

auto Markdown(std::string text) -> json::Value {
  return json::Object{{"kind", "markdown"}, {"value", JsonText(std::move(text))}};
}

auto NonNegative(const json::Object& o, llvm::StringRef key) -> std::optional<int64_t> {
  llvm::Optional<int64_t> v = o.getInteger(key);
  if (!v || *v < 0) return std::nullopt;
  return *v;
}

}  // namespace

auto ToJson(const Range& r) -> json::Value { return json::Object{{"start", ToJson(r.start)}, {"end", ToJson(r.end)}}; }

auto ToJson(const Location& l) -> json::Value {
  return json::Object{{"uri", JsonText(l.uri)}, {"range", ToJson(l.range)}};
}

auto ToJson(const TextEdit& e) -> json::Value {
  return json::Object{{"range", ToJson(e.range)}, {"newText", JsonText(e.new_text)}};
}

auto ToJson(const Diagnostic& d) -> json::Value {
  json::Array related;
  for (const RelatedInformation& r : d.related) {
    related.push_back(json::Object{{"location", ToJson(r.location)}, {"message", JsonText(r.message)}});
  }
  json::Object out{{"range", ToJson(d.range)},
                   {"severity", d.severity},
                   {"code", d.code},
                   {"source", "aviflowc"},
                   {"message", JsonText(d.message)}};
  if (!related.empty()) out["relatedInformation"] = std::move(related);
  return out;
}

auto ToJson(const Symbol& s) -> json::Value {
  json::Array children;
  for (const Symbol& c : s.children) children.push_back(ToJson(c));
  return json::Object{
      {"name", JsonText(s.name)}, {"detail", JsonText(s.detail)},          {"kind", static_cast<int>(s.kind)},
      {"range", ToJson(s.range)}, {"selectionRange", ToJson(s.selection)}, {"children", std::move(children)}};
}

auto ToJson(const HoverText& h) -> json::Value {
  return json::Object{{"contents", Markdown(h.markdown)}, {"range", ToJson(h.range)}};
}

auto ToJson(const CompletionItem& c) -> json::Value {
  json::Object out{{"label", JsonText(c.label)},
                   {"kind", static_cast<int>(c.kind)},
                   {"insertText", JsonText(c.insert_text.empty() ? c.label : c.insert_text)}};
  if (!c.detail.empty()) out["detail"] = JsonText(c.detail);
  if (!c.documentation.empty()) out["documentation"] = Markdown(c.documentation);
  return out;
}

auto CodeAction(const Diagnostic& d) -> json::Value {
  json::Object changes;
  for (const auto& [uri, edit] : d.fix->edits) {
    json::Value& list = changes[uri];
    if (list.kind() != json::Value::Array) list = json::Array{};
    list.getAsArray()->push_back(ToJson(edit));
  }
  return json::Object{{"title", JsonText(d.fix->title)},
                      {"kind", "quickfix"},
                      {"isPreferred", true},
                      {"diagnostics", json::Array{ToJson(d)}},
                      {"edit", json::Object{{"changes", std::move(changes)}}}};
}

auto PositionFrom(const json::Value* v) -> std::optional<Position> {
  const json::Object* o = v ? v->getAsObject() : nullptr;
  if (!o) return std::nullopt;
  std::optional<int64_t> line = NonNegative(*o, "line");
  std::optional<int64_t> character = NonNegative(*o, "character");
  if (!line || !character) return std::nullopt;
  return Position{*line, *character};
}

auto RangeFrom(const json::Value* v) -> std::optional<Range> {
  const json::Object* o = v ? v->getAsObject() : nullptr;
  if (!o) return std::nullopt;
  std::optional<Position> start = PositionFrom(o->get("start"));
  std::optional<Position> end = PositionFrom(o->get("end"));
  if (!start || !end) return std::nullopt;
  return Range{*start, *end};
}

auto ChangesFrom(const json::Value* v) -> std::optional<std::vector<Change>> {
  const json::Array* changes = v ? v->getAsArray() : nullptr;
  if (!changes) return std::nullopt;
  std::vector<Change> out;
  for (const json::Value& c : *changes) {
    const json::Object* o = c.getAsObject();
    llvm::Optional<llvm::StringRef> text = o ? o->getString("text") : llvm::None;
    if (!text) return std::nullopt;
    Change change;
    change.text = text->str();
    if (o->get("range")) {
      change.range = RangeFrom(o->get("range"));
      if (!change.range) return std::nullopt;
    }
    out.push_back(std::move(change));
  }
  return out;
}

auto DocumentUri(const json::Object& params) -> std::string {
  const json::Object* document = params.getObject("textDocument");
  llvm::Optional<llvm::StringRef> uri = document ? document->getString("uri") : llvm::None;
  return uri ? uri->str() : "";
}

}  // namespace avf::lsp
