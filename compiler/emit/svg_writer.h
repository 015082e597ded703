// A small writer of SVG 1.1 elements for the plan's pictures: rectangles,
// lines, text and groups with a tooltip, coordinates printed with at most two
// decimals, so the same drawing gives the same bytes. Text is escaped.
#pragma once

#include <string>
#include <string_view>

namespace avf::emit {

enum class Anchor { Start, Middle, End };

struct TextStyle {
  double size = 12;
  Anchor anchor = Anchor::Start;
  bool bold = false;
  std::string_view fill = "#222";
};

struct Stroke {
  std::string_view color = "none";
  double width = 1;
  bool dashed = false;
};

// The width of `text` in the pictures' sans-serif font at `size` pixels, a
// conservative estimate (DejaVu Sans averages about 0.6 em per character).
auto TextWidth(std::string_view text, double size) -> double;

// "1.25", "3", "-0.5": at most two decimals, no trailing zeros.
auto SvgNumber(double v) -> std::string;

// "&lt;" for "<", and so on, for text and for attribute values in double quotes.
auto XmlEscape(std::string_view text) -> std::string;

class SvgWriter {
 public:
  void Rect(double x, double y, double w, double h, std::string_view fill, Stroke stroke = {});
  void Line(double x1, double y1, double x2, double y2, Stroke stroke);
  void Text(double x, double y, std::string_view text, TextStyle style = {});
  // A description for programs and screen readers (an SVG <desc>).
  void Desc(std::string_view text);
  // A group whose elements show `tooltip` on hover (an SVG <title>).
  void OpenGroup(std::string_view tooltip = "");
  void CloseGroup();
  // The whole document: an <svg> of the given size with a white background
  // and `title`, around everything drawn so far.
  auto Finish(double width, double height, std::string_view title) const -> std::string;

 private:
  std::string body_;
};

}  // namespace avf::emit
