// YAML for the emitters, over yaml-cpp's emitter with the rules that keep
// Kubernetes and Argo manifests valid (../shared/notes/toolchain.md): every
// string double-quoted (yaml-cpp leaves "true", "8080", "1e3" bare, which
// readers take for bools and numbers), numbers formatted by us (no 17-digit
// doubles), scripts as literal blocks only when yaml-cpp can emit them
// faithfully, and a header comment naming the source.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace avf::emit {

class YamlWriter {
 public:
  // `header`: comment lines written before the first document (no '#').
  explicit YamlWriter(std::string_view header);

  void Map(const std::function<void()>& body);
  void Seq(const std::function<void()>& body);
  void Key(std::string_view key);
  void String(std::string_view v);  // always double-quoted
  void Int(int64_t v);
  void Bool(bool v);
  // A shell script or config text: a `|` block when its text survives the
  // round trip (one trailing newline, no leading space), else quoted.
  void Text(std::string_view v);
  void NewDocument();  // `---` between documents
  // ` # text` after the value just written (or on its own line in a sequence).
  void Comment(std::string_view text);
  void StringSeq(const std::vector<std::string>& items);  // a flow-free block list of strings

  void Field(std::string_view key, std::string_view v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, const char* v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, int64_t v) {
    Key(key);
    Int(v);
  }
  void Field(std::string_view key, int v) {
    Key(key);
    Int(v);
  }
  void Field(std::string_view key, bool v) {
    Key(key);
    Bool(v);
  }
  void MapField(std::string_view key, const std::function<void()>& body) {
    Key(key);
    Map(body);
  }
  void SeqField(std::string_view key, const std::function<void()>& body) {
    Key(key);
    Seq(body);
  }

  // The document text, ending in one newline; empty-string if the emitter
  // failed (an unbalanced Map/Seq is a programming error).
  auto Output() const -> std::string;
  auto ok() const -> bool { return emitter_.good(); }

 private:
  YAML::Emitter emitter_;
  std::string header_;
};

}  // namespace avf::emit
