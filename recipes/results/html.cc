#include "recipes/results/html.h"

#include <fstream>
#include <sstream>

namespace deep500::recipes::html {

namespace {

// Matches the results' status words and the verdicts' PASS/FAIL.
const char* status_class(const std::string& status) {
  if (status == "passed" || status == "PASS") return "pass";
  if (status == "failed" || status == "FAIL") return "fail";
  return "other";
}

constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:75em;
color:#1d2330;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #d8dce3;
padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #d8dce3;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f1f3f7}td{font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:.05em .55em;border-radius:.8em;font-weight:600;font-size:.85em}
.pass{background:#d7f2dc;color:#145a23}.fail{background:#fbd9d6;color:#8a1b12}
.other{background:#fdf0c8;color:#6b4e00}
.card{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;font-size:.9em}
.card dt{font-weight:600}.card dd{margin:0;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}
figcaption{font-size:.85em;color:#555}.warn{color:#8a1b12}
.changed{background:#fbd9d6}
)";

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, const std::string& css_class) {
  std::string out = css_class.empty() ? "<table>" : "<table class=\"" + css_class + "\">";
  out += "<thead><tr>";
  for (const auto& h : header) out += "<th>" + h + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td>" + cell + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return "<section id=\"" + escape(id) + "\"><h2>" + escape(title) + "</h2>\n" + body +
         "</section>\n";
}

std::string link(const std::string& href, const std::string& text) {
  return "<a href=\"" + escape(href) + "\">" + escape(text) + "</a>";
}

std::string pre(const std::string& text) {
  return "<pre>" + escape(text) + "</pre>\n";
}

std::string status_badge(const std::string& status) {
  return std::string("<span class=\"badge ") + status_class(status) + "\">" + escape(status) +
         "</span>";
}

std::string inline_svg(const std::string& path, const std::string& caption) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  const std::string svg = s.str();
  const size_t start = svg.find("<svg");
  const size_t end = svg.rfind("</svg>");
  if (start == std::string::npos || end == std::string::npos || end < start) return "";
  return "<figure>" + svg.substr(start, end + 6 - start) + "<figcaption>" + escape(caption) +
         "</figcaption></figure>\n";
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'; img-src data:\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         escape(title) + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n" + body +
         "</body></html>\n";
}

}  // namespace deep500::recipes::html
