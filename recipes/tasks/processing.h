// Pre- and post-processing steps of a model manifest, named built-in steps
// after DLSpec, each run as ONNX operators on the reference backend:
//   layout     {from: NHWC, to: NCHW}   Transpose between two layouts
//   resize     {size: [H, W]}           bilinear (Resize, mode linear) of the last two axes
//   crop       {size: [H, W]}           the centre H x W of the last two axes (Slice)
//   normalize  {mean: [...], std: [...]} float32, then (x - mean) / std per channel (axis 1)
//   softmax                             Softmax over the last axis
//   argmax                              index of the largest value of the last axis (int64)
//   top_k      {k: K}                   indices of the K largest values of the last axis
// Preprocessing applies to every query input, postprocessing to every
// output before it is compared with the reference outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace deep500::recipes {

struct ProcessingStep {
  std::string step;                 // one of processing_steps()
  std::string from, to;             // layout
  std::vector<int64_t> size;        // resize, crop: [H, W]
  std::vector<double> mean, stdev;  // normalize
  int64_t k = 0;                    // top_k
};

std::vector<std::string> processing_steps();

// Error naming the step and what it needs ("layout: from and to must name
// the same axes, got NHWC and NCH").
void check_step(const ProcessingStep& s);

// Applies the steps in order; Error naming the step when the tensor does not
// fit it (rank, channels).
Tensor apply_steps(const std::vector<ProcessingStep>& steps, Tensor x);

}  // namespace deep500::recipes
