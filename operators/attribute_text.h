// Attributes written as text ("pads=1,1,1,1", "alpha=0.5", "mode=constant"),
// typed by the op's ONNX schema: used by the command line and the op spec
// table alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>

#include "deep/text.h"
#include "operators/node.h"

namespace deep500::ops {

// Parses one key=value entry: INT 3, FLOAT 0.5, STRING text, INTS 1,2,3,
// FLOATS 0.5,1, STRINGS a,b. Throws Error starting with `where` when the key
// is not an attribute of the schema or the value does not fit its type.
onnx::AttributeProto parse_attribute(const std::string& spec, const onnx::OpSchema& schema,
                                     const std::string& where);

// The value as that text ("3", "0.5", "1,2,3", "abc"); "" for tensors and
// graphs, which have no text form.
std::string attribute_value_text(const Attribute& a);
// Every attribute of the node as key=value entries in name order, separated
// by spaces ("pads=1,1,1,1 strides=2,2"): how results name a configuration.
std::string attributes_text(const NodeSpec& node);

}  // namespace deep500::ops
