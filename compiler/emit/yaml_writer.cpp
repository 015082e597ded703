#include "emit/yaml_writer.h"

namespace avf::emit {

YamlWriter::YamlWriter(std::string_view header) {
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find('\n', start);
    if (end == std::string_view::npos) end = header.size();
    std::string_view line = header.substr(start, end - start);
    header_ += line.empty() ? "#\n" : "# " + std::string(line) + "\n";
    start = end + 1;
  }
  emitter_.SetIndent(2);
}

void YamlWriter::Map(const std::function<void()>& body) {
  emitter_ << YAML::BeginMap;
  body();
  emitter_ << YAML::EndMap;
}

void YamlWriter::Seq(const std::function<void()>& body) {
  emitter_ << YAML::BeginSeq;
  body();
  emitter_ << YAML::EndSeq;
}

void YamlWriter::Key(std::string_view key) { emitter_ << YAML::Key << std::string(key) << YAML::Value; }

void YamlWriter::String(std::string_view v) { emitter_ << YAML::DoubleQuoted << std::string(v); }

void YamlWriter::Int(int64_t v) { emitter_ << v; }

void YamlWriter::Bool(bool v) { emitter_ << YAML::TrueFalseBool << v; }

void YamlWriter::Text(std::string_view v) {
  // yaml-cpp's literal block always clips to one trailing newline and has no
  // indentation indicator, so only such text round-trips through it.
  bool literal = !v.empty() && v.back() == '\n' && (v.size() < 2 || v[v.size() - 2] != '\n') && v.front() != ' ' &&
                 v.front() != '\n' && v.find('\t') == std::string_view::npos && v.find('\r') == std::string_view::npos;
  if (literal) emitter_ << YAML::Literal << std::string(v);
  else String(v);
}

void YamlWriter::Comment(std::string_view text) { emitter_ << YAML::Comment(std::string(text)); }

void YamlWriter::StringSeq(const std::vector<std::string>& items) {
  Seq([&] {
    for (const std::string& item : items) String(item);
  });
}

void YamlWriter::NewDocument() { emitter_ << YAML::EndDoc << YAML::BeginDoc; }

auto YamlWriter::Output() const -> std::string {
  if (!emitter_.good()) return "";
  std::string body = emitter_.c_str();
  if (body.empty() || body.back() != '\n') body += '\n';
  return header_ + body;
}

}  // namespace avf::emit
