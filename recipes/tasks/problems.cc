#include "recipes/tasks/problems.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/sizes.h"
#include "deep/text.h"

namespace deep500::recipes {
namespace {

using onnx::AttributeProto;

AttributeProto ints_attr(const std::string& name, std::vector<int64_t> v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
  return a;
}

// benchdnn descriptors: letters followed by a number, e.g. mb1ic64ih56oc64oh56kh3ph1.
// A hand-written scanner: linear in the line, whatever its length.
std::map<std::string, int64_t> parse_descriptor(const std::string& line, const std::string& where,
                                                const std::set<std::string>& keys) {
  auto is_lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::map<std::string, int64_t> v;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t key_end = pos, num_end;
    while (key_end < line.size() && is_lower(line[key_end])) ++key_end;
    for (num_end = key_end; num_end < line.size() && is_digit(line[num_end]);) ++num_end;
    DEEP500_CHECK(key_end > pos && num_end > key_end, where, ": unexpected text at '",
                  line.substr(pos, 40), "' (expected key/number pairs such as mb1ic64ih56)");
    const std::string key = line.substr(pos, key_end - pos);
    DEEP500_CHECK(keys.count(key), where, ": unknown key '", key, "' (expected one of: ",
                  join(std::vector<std::string>(keys.begin(), keys.end()), " "), ")");
    int64_t number;
    DEEP500_CHECK(parse_int(line.substr(key_end, num_end - key_end), number), where, ": '", key,
                  "' is followed by a number too large for 64 bits");
    v[key] = number;
    pos = num_end;
  }
  DEEP500_CHECK(!v.empty(), where, ": expected key/number pairs such as mb1ic64ih56");
  return v;
}

Problem conv_problem(const std::string& line, const std::string& where, DataType dt,
                     int64_t batch) {
  auto v = parse_descriptor(line, where,
                            {"g", "mb", "ic", "ih", "iw", "oc", "oh", "ow", "kh", "kw", "sh", "sw",
                             "ph", "pw", "dh", "dw"});
  auto get = [&](const std::string& k, int64_t fallback) { return v.count(k) ? v[k] : fallback; };
  for (const char* k : {"ic", "oc", "ih", "kh"})
    DEEP500_CHECK(v.count(k), where, ": Conv descriptor needs '", k, "'");
  const int64_t g = get("g", 1), mb = batch != kNoBatch ? batch : get("mb", 2);
  const int64_t ic = v["ic"], oc = v["oc"];
  const int64_t ih = v["ih"], iw = get("iw", ih), kh = v["kh"], kw = get("kw", kh);
  const int64_t sh = get("sh", 1), sw = get("sw", sh), ph = get("ph", 0), pw = get("pw", ph);
  const int64_t dh = get("dh", 0), dw = get("dw", dh);
  DEEP500_CHECK(g >= 1 && ic % g == 0 && oc % g == 0, where, ": ic (", ic, ") and oc (", oc,
                ") must be multiples of g (", g, ")");
  DEEP500_CHECK(sh >= 1 && sw >= 1, where, ": strides sh/sw must be >= 1");
  // benchdnn dilation 0 means none; ONNX counts it from 1.
  const int64_t oh = (ih + 2 * ph - ((kh - 1) * (dh + 1) + 1)) / sh + 1;
  const int64_t ow = (iw + 2 * pw - ((kw - 1) * (dw + 1) + 1)) / sw + 1;
  DEEP500_CHECK(oh >= 1 && ow >= 1, where, ": the kernel does not fit the padded input");
  DEEP500_CHECK(get("oh", oh) == oh && get("ow", ow) == ow, where, ": oh/ow given as ",
                get("oh", oh), "/", get("ow", ow), " but the other sizes give ", oh, "/", ow);
  Problem p;
  p.label = line;
  p.inputs = {{"X", {dt, {mb, ic, ih, iw}}}, {"W", {dt, {oc, ic / g, kh, kw}}}, {"B", {dt, {oc}}}};
  p.attrs = {ints_attr("kernel_shape", {kh, kw}), ints_attr("strides", {sh, sw}),
             ints_attr("pads", {ph, pw, ph, pw}), ints_attr("dilations", {dh + 1, dw + 1})};
  AttributeProto group;
  group.set_name("group");
  group.set_type(AttributeProto::INT);
  group.set_i(g);
  p.attrs.push_back(group);
  return p;
}

// --batch sets Gemm's m and MatMul's mb.
Problem matmul_problem(const std::string& line, const std::string& where, DataType dt, bool gemm,
                       int64_t batch) {
  auto v = parse_descriptor(
      line, where,
      gemm ? std::set<std::string>{"m", "n", "k"} : std::set<std::string>{"mb", "m", "n", "k"});
  if (batch != kNoBatch) v[gemm ? "m" : "mb"] = batch;
  for (const char* k : {"m", "n", "k"})
    DEEP500_CHECK(v.count(k), where, ": descriptor needs '", k, "', e.g. m128n256k512");
  Shape a = {v["m"], v["k"]}, b = {v["k"], v["n"]};
  if (v.count("mb")) {
    a.insert(a.begin(), v["mb"]);
    b.insert(b.begin(), v["mb"]);
  }
  return {line, {{"A", {dt, a}}, {"B", {dt, b}}}, {}};
}

// Generic line: one shape per input separated by ':' (benchdnn binary style).
Problem shapes_problem(const std::string& line, const std::string& where, DataType dt,
                       const std::vector<std::string>& names, int64_t batch) {
  Problem p;
  p.label = line;
  auto shapes = split(line, ':');
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string name = shapes.size() == names.size() ? names[i] : cat("x", i);
    p.inputs.push_back({name, {dt, parse_shape(shapes[i], where, batch)}});
  }
  return p;
}

std::string with_batch(const std::string& label, int64_t batch) {
  return batch == kNoBatch ? label : cat(label, " batch ", batch);
}

}  // namespace

Shape parse_shape(const std::string& text, const std::string& where, int64_t batch) {
  if (text.empty() || text == "scalar") return {};
  Shape shape;
  for (const auto& d : split(text, 'x')) {
    int64_t v;
    if (d == "N") {
      DEEP500_CHECK(batch != kNoBatch, where, ": shape '", text,
                    "' has the batch dimension N but no --batch was given");
      v = batch;
    } else {
      DEEP500_CHECK(parse_int(d, v) && v >= 0, where, ": shape '", text,
                    "' must be non-negative integers (or N, the --batch) separated by 'x', e.g. "
                    "1x3x224x224");
    }
    shape.push_back(v);
  }
  return shape;
}

bool has_batch_dimension(const std::string& shape_text) {
  auto dims = split(shape_text, 'x');
  return std::find(dims.begin(), dims.end(), "N") != dims.end();
}

Input parse_input(const std::string& spec, int64_t batch) {
  const std::string where = "--input '" + spec + "'";
  auto parts = split(spec, ':');
  DEEP500_CHECK(parts.size() == 3 && !parts[0].empty(), where,
                ": expected NAME:dtype:shape, e.g. x:float32:1x3x224x224");
  Input in{parts[0],
           {parse_dtype(parts[1], where + " dtype"), parse_shape(parts[2], where, batch)}};
  checked_mul(checked_numel(in.desc.shape, where), static_cast<int64_t>(size_of(in.desc.dtype)),
              where);  // a size that overflows is an error here, naming the option
  return in;
}

std::vector<int64_t> batch_values(const std::vector<int64_t>& batch) {
  for (auto b : batch) DEEP500_CHECK(b >= 1, "--batch: expected sizes >= 1, got ", b);
  return batch.empty() ? std::vector<int64_t>{kNoBatch} : batch;
}

std::vector<Problem> parse_shape_file(const std::string& text, const std::string& path,
                                      const std::string& op_type, DataType dt,
                                      const std::vector<int64_t>& batch,
                                      const std::vector<std::string>& names) {
  std::istringstream in(text);
  std::vector<Problem> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(),
                              [](unsigned char c) { return std::isspace(c) != 0; }),
               line.end());
    if (line.empty()) continue;
    const std::string where = cat(path, ":", n);
    const bool descriptor = std::islower(static_cast<unsigned char>(line[0]));
    DEEP500_CHECK(descriptor || batch.empty() || has_batch_dimension(line), where, ": '", line,
                  "' has no batch dimension N for --batch (e.g. Nx64x56x56:Nx64x56x56)");
    for (int64_t b : batch_values(batch)) {
      Problem p;
      if (!descriptor)
        p = shapes_problem(line, where, dt, names, b);
      else if (op_type == "Conv")
        p = conv_problem(line, where, dt, b);
      else if (op_type == "Gemm" || op_type == "MatMul")
        p = matmul_problem(line, where, dt, op_type == "Gemm", b);
      else
        throw Error(cat(where, ": '", line, "': descriptors are for Conv, Gemm and MatMul; for ",
                        op_type, " give one shape per input, e.g. 1x64x56x56:1x64x56x56"));
      p.label = with_batch(p.label, b);
      out.push_back(std::move(p));
    }
  }
  DEEP500_CHECK(!out.empty(), path, ": no problems in the file");
  return out;
}

std::vector<Problem> make_problems(const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   const std::string& shapes_path, const std::string& dtype,
                                   const std::vector<int64_t>& batch) {
  std::vector<std::string> names;
  for (const auto& spec : inputs) names.push_back(parse_input(spec, 1).name);
  if (!shapes_path.empty()) {
    std::string text;
    try {
      text = read_file(shapes_path);  // a regular file of known size
    } catch (const Error& e) {
      throw Error(cat("--shapes '", shapes_path, "': ", e.what()));
    }
    return parse_shape_file(text, shapes_path, op_type, parse_dtype(dtype, "--dtype"), batch,
                            names);
  }
  DEEP500_CHECK(!inputs.empty(), "--input: ", op_type,
                " needs inputs, e.g. --input x:float32:1x3x224x224 (or --shapes FILE)");
  DEEP500_CHECK(batch.empty() || std::any_of(inputs.begin(), inputs.end(),
                                             [](const std::string& spec) {
                                               return has_batch_dimension(split(spec, ':').back());
                                             }),
                "--batch: mark the batch dimension of an --input shape with N, e.g. "
                "x:float32:Nx3x224x224");
  std::vector<Problem> problems;
  for (int64_t b : batch_values(batch)) {
    Problem p;
    for (const auto& spec : inputs) {
      p.inputs.push_back(parse_input(spec, b));
      p.label += (p.label.empty() ? "" : " ") + p.inputs.back().name + ":" +
                 to_string(p.inputs.back().desc);
    }
    problems.push_back(std::move(p));
  }
  return problems;
}

}  // namespace deep500::recipes
