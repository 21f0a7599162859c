// Pieces of the self-contained HTML pages deep500 writes
// (recipes/results/report.h): text escaped, tables, sections, SVG files
// inlined, and the page around them, whose style is inline and whose
// Content-Security-Policy forbids every request (no script, font, image or
// style is fetched; links still open on a click).
#pragma once

#include <string>
#include <vector>

namespace deep500::recipes::html {

// Text as HTML: & < > " ' escaped; bytes that are not UTF-8 stay as they are
// (the page says it is UTF-8, a browser shows them replaced).
std::string escape(const std::string& text);

// <table> with a header row; the cells are HTML already (escape text first).
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  const std::string& css_class = "");

// <section id=ID><h2>TITLE</h2>BODY</section> (the title escaped).
std::string section(const std::string& id, const std::string& title, const std::string& body);

// <a href=HREF>TEXT</a>, both escaped.
std::string link(const std::string& href, const std::string& text);

// <pre>TEXT</pre>, escaped.
std::string pre(const std::string& text);

// "passed", "failed", "interrupted" (or PASS/FAIL) as a coloured label.
std::string status_badge(const std::string& status);

// The <svg> element of an SVG file, its XML prolog and doctype dropped,
// inside a <figure> captioned `caption`; "" when the file cannot be read
// or holds no <svg> element.
std::string inline_svg(const std::string& path, const std::string& caption);

// The whole page: `title` in <head>, the style inline, the policy that
// forbids every request, then `body`.
std::string page(const std::string& title, const std::string& body);

}  // namespace deep500::recipes::html
