#include "operators/attribute_text.h"

#include <charconv>
#include <cstdlib>

#include "deep/error.h"

namespace deep500::ops {

// key=value, typed by the schema: INT 3, FLOAT 0.5, STRING text, INTS 1,2,3,
// FLOATS 0.5,1, STRINGS a,b.
onnx::AttributeProto parse_attribute(const std::string& spec, const onnx::OpSchema& schema,
                                     const std::string& where) {
  const auto eq = spec.find('=');
  DEEP500_CHECK(eq != std::string::npos && eq > 0, where, ": expected key=value, e.g. axis=1");
  const std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  const auto& attrs = schema.attributes();
  auto it = attrs.find(key);
  if (it == attrs.end()) {
    std::string names;
    for (const auto& [n, a] : attrs) names += (names.empty() ? "" : ", ") + n;
    throw Error(cat(where, ": ", schema.Name(), " has no attribute '", key, "' (expected ",
                    names.empty() ? "none" : "one of: " + names, ")"));
  }
  onnx::AttributeProto a;
  a.set_name(key);
  a.set_type(it->second.type);
  int64_t i;
  double f;
  switch (it->second.type) {
    case onnx::AttributeProto::INT:
      DEEP500_CHECK(parse_int(value, i), where, ": '", key, "' is an integer, e.g. ", key, "=1");
      a.set_i(i);
      break;
    case onnx::AttributeProto::FLOAT:
      DEEP500_CHECK(parse_float(value, f), where, ": '", key, "' is a float, e.g. ", key, "=0.5");
      a.set_f(static_cast<float>(f));
      break;
    case onnx::AttributeProto::STRING: a.set_s(value); break;
    case onnx::AttributeProto::INTS:
      for (const auto& v : value.empty() ? std::vector<std::string>{} : split(value, ',')) {
        DEEP500_CHECK(parse_int(v, i), where, ": '", key, "' is a list of integers, e.g. ", key,
                      "=1,2,3");
        a.add_ints(i);
      }
      break;
    case onnx::AttributeProto::FLOATS:
      for (const auto& v : value.empty() ? std::vector<std::string>{} : split(value, ',')) {
        DEEP500_CHECK(parse_float(v, f), where, ": '", key, "' is a list of floats, e.g. ", key,
                      "=0.5,1");
        a.add_floats(static_cast<float>(f));
      }
      break;
    case onnx::AttributeProto::STRINGS:
      for (const auto& v : split(value, ',')) a.add_strings(v);
      break;
    default:
      throw Error(cat(where, ": '", key,
                      "' is a tensor or graph attribute, which cannot be "
                      "given on the command line"));
  }
  return a;
}

std::string attribute_value_text(const Attribute& a) {
  auto join = [](const auto& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + cat(x);
    return s;
  };
  switch (a.kind) {
    case Attribute::Kind::Int: return std::to_string(a.i);
    case Attribute::Kind::Float: return cat(a.f);
    case Attribute::Kind::String: return a.s;
    case Attribute::Kind::Ints: return join(a.ints);
    case Attribute::Kind::Floats: return join(a.floats);
    case Attribute::Kind::Strings: return join(a.strings);
    default: return "";
  }
}

std::string attributes_text(const NodeSpec& node) {
  std::string out;
  for (const auto& [name, a] : node.attributes.all())
    out += cat(out.empty() ? "" : " ", name, "=", attribute_value_text(a));
  return out;
}

}  // namespace deep500::ops
