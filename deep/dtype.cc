#include "deep/dtype.h"

#include <algorithm>
#include <cctype>

namespace deep500 {

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::Float: return 4;
    case DataType::Double: return 8;
    case DataType::Float16:
    case DataType::BFloat16:
    case DataType::Int16:
    case DataType::UInt16: return 2;
    case DataType::Int8:
    case DataType::UInt8:
    case DataType::Bool: return 1;
    case DataType::Int32:
    case DataType::UInt32: return 4;
    case DataType::Int64:
    case DataType::UInt64: return 8;
    case DataType::String: return sizeof(std::string);
    case DataType::Undefined: return 0;
  }
  throw Error(cat("unknown element type code ", static_cast<int>(t)));
}

std::string_view name_of(DataType t) {
  switch (t) {
    case DataType::Float: return "float32";
    case DataType::Double: return "float64";
    case DataType::Float16: return "float16";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Int8: return "int8";
    case DataType::Int16: return "int16";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::UInt8: return "uint8";
    case DataType::UInt16: return "uint16";
    case DataType::UInt32: return "uint32";
    case DataType::UInt64: return "uint64";
    case DataType::Bool: return "bool";
    case DataType::String: return "string";
    case DataType::Undefined: return "undefined";
  }
  return "unknown";
}

DataType parse_dtype(std::string_view text, std::string_view what) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  struct Alias {
    const char* name;
    DataType t;
  };
  static const Alias aliases[] = {
      {"float", DataType::Float},       {"float32", DataType::Float},  {"f32", DataType::Float},
      {"double", DataType::Double},     {"float64", DataType::Double}, {"f64", DataType::Double},
      {"float16", DataType::Float16},   {"half", DataType::Float16},   {"f16", DataType::Float16},
      {"bfloat16", DataType::BFloat16}, {"bf16", DataType::BFloat16},  {"int8", DataType::Int8},
      {"int16", DataType::Int16},       {"int32", DataType::Int32},    {"int64", DataType::Int64},
      {"uint8", DataType::UInt8},       {"uint16", DataType::UInt16},  {"uint32", DataType::UInt32},
      {"uint64", DataType::UInt64},     {"bool", DataType::Bool},      {"string", DataType::String},
  };
  for (const auto& a : aliases)
    if (s == a.name) return a.t;
  throw Error(cat(what, ": unknown element type '", text,
                  "' (expected one of float32, float64, float16, bfloat16, int8..int64, "
                  "uint8..uint64, bool, string)"));
}

bool is_floating(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Float16 ||
         t == DataType::BFloat16;
}

bool is_integer(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32:
    case DataType::Int64:
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: return true;
    default: return false;
  }
}

bool is_signed(DataType t) {
  return is_floating(t) || t == DataType::Int8 || t == DataType::Int16 || t == DataType::Int32 ||
         t == DataType::Int64;
}

}  // namespace deep500
