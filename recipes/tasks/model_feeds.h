// Shared by the model commands (infer, grad, compare): graph inputs from
// --input NAME=FILE.npy (checked against the model's declared inputs) or
// seeded random values from the declared shapes, and writing tensors as
// DIR/<name>.npy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "deep/tensor.h"
#include "network/model.h"

namespace deep500::recipes {

// The model's graph inputs that are not initializers, with their declared
// element type and shape (-1 for a symbolic or missing dimension).
std::vector<std::pair<std::string, TensorDesc>> declared_inputs(const network::Model& model);
// The graph outputs, likewise.
std::vector<std::pair<std::string, TensorDesc>> declared_outputs(const network::Model& model);

// Reads every "NAME=FILE.npy". Throws Error (one line, naming the input and
// file, and both shapes/types) for an unknown name, an unreadable file or a
// tensor that does not match the declaration. With `random_missing` the
// inputs not given are seeded random values in [-1, 1) (Error when a
// dimension is symbolic); otherwise a missing input is an Error.
std::map<std::string, Tensor> load_feeds(const network::Model& model,
                                         const std::vector<std::string>& specs,
                                         bool random_missing = false, uint64_t seed = 42);

// "a/b:0" -> "a_b:0": a value name as one file name.
std::string file_name_for(const std::string& value_name);
// Creates DIR and checks that files can be written in it: called before the
// work, so that a bad folder fails first, not after the work is done.
void prepare_output_dir(const std::string& dir, const std::string& option);
// Writes DIR/<file_name_for(name)>.npy for every tensor, all or none: they
// are written into a staging folder inside DIR first and moved into place
// once every one is written, so a failure (a full disk, a tensor .npy cannot
// hold) leaves DIR as it was. Prints "wrote PATH TYPE" for each.
void write_outputs(const std::string& dir, const std::map<std::string, Tensor>& tensors);

}  // namespace deep500::recipes
