#include "emit/svg_writer.h"

#include <cmath>

#include <fmt/format.h>

namespace avf::emit {

auto TextWidth(std::string_view text, double size) -> double {
  size_t characters = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++characters;  // not a UTF-8 continuation byte
  }
  return 0.62 * size * static_cast<double>(characters);
}

auto SvgNumber(double v) -> std::string {
  if (!std::isfinite(v)) return "0";
  std::string text = fmt::format("{:.2f}", v);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

auto XmlEscape(std::string_view text) -> std::string {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

auto StrokeAttributes(const Stroke& s) -> std::string {
  if (s.color == "none") return "";
  std::string out = fmt::format(" stroke=\"{}\" stroke-width=\"{}\"", s.color, SvgNumber(s.width));
  if (s.dashed) out += " stroke-dasharray=\"4 3\"";
  return out;
}

}  // namespace

void SvgWriter::Rect(double x, double y, double w, double h, std::string_view fill, Stroke stroke) {
  body_ +=
      fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n", SvgNumber(x), SvgNumber(y),
                  SvgNumber(std::max(w, 0.0)), SvgNumber(std::max(h, 0.0)), fill, StrokeAttributes(stroke));
}

void SvgWriter::Line(double x1, double y1, double x2, double y2, Stroke stroke) {
  body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}/>\n", SvgNumber(x1), SvgNumber(y1),
                       SvgNumber(x2), SvgNumber(y2), StrokeAttributes(stroke));
}

void SvgWriter::Text(double x, double y, std::string_view text, TextStyle style) {
  std::string_view anchor = style.anchor == Anchor::Middle ? " text-anchor=\"middle\""
                            : style.anchor == Anchor::End  ? " text-anchor=\"end\""
                                                           : "";
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\"{}{} fill=\"{}\">{}</text>\n", SvgNumber(x),
                       SvgNumber(y), SvgNumber(style.size), anchor, style.bold ? " font-weight=\"bold\"" : "",
                       style.fill, XmlEscape(text));
}

void SvgWriter::Desc(std::string_view text) { body_ += fmt::format("<desc>{}</desc>\n", XmlEscape(text)); }

void SvgWriter::OpenGroup(std::string_view tooltip) {
  body_ += "<g>";
  if (!tooltip.empty()) body_ += fmt::format("<title>{}</title>", XmlEscape(tooltip));
  body_ += "\n";
}

void SvgWriter::CloseGroup() { body_ += "</g>\n"; }

auto SvgWriter::Finish(double width, double height, std::string_view title) const -> std::string {
  std::string w = SvgNumber(std::ceil(width)), h = SvgNumber(std::ceil(height));
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n"
      "<title>{2}</title>\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n{3}</svg>\n",
      w, h, XmlEscape(title), body_);
}

}  // namespace avf::emit
