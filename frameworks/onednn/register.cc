#include "frameworks/onednn/register.h"

#include "deep/text.h"
#include "frameworks/onednn/common.h"

namespace deep500::onednn {

void register_kernels(ops::Registry& r) {
  register_conv(r);
  register_matmul(r);
  register_pool(r);
  register_batchnorm(r);
  register_eltwise(r);
  register_softmax(r);
  register_lrn(r);
  register_deconv(r);
  register_concat(r);
  register_transpose(r);
  register_resize(r);
  register_windows(r);
  register_binary(r);
  r.set_capabilities("onednn",
                     {.channels_last = true, .post_op_fusion = true, .gradients_in_place = true});
  declare_settings(r);
  const dnnl_version_t* v = dnnl_version();
  r.add_library("onednn", cat(v->major, ".", v->minor, ".", v->patch));
}

void declare_settings(ops::Registry& r) {
  r.add_setting({"onednn.direct_loops",
                 "plain loops instead of primitives where measured faster (BatchNormalization "
                 "training, max pooling without pads, 1-D/2-D linear Resize): true | false",
                 [] { return std::string(settings().direct_loops ? "true" : "false"); },
                 [](const std::string& v) {
                   DEEP500_CHECK(parse_bool(v, settings().direct_loops),
                                 "setting onednn.direct_loops: expected true or false, got '", v,
                                 "'");
                 }});
  r.add_setting({"onednn.bn_backward_layout",
                 "BatchNormalization training backward: direct | nchw | nhwc | nChw16c",
                 [] { return settings().bn_backward_layout; },
                 [](const std::string& v) {
                   DEEP500_CHECK(v == "direct" || v == "nchw" || v == "nhwc" || v == "nChw16c",
                                 "setting onednn.bn_backward_layout: expected direct, nchw, nhwc "
                                 "or nChw16c, got '",
                                 v, "'");
                   settings().bn_backward_layout = v;
                 }});
}

}  // namespace deep500::onednn
