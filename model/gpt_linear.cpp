// The linear layers' three products, each in FP8 (the fp8_matmul_* ops, with the layer's scaling
// slots) where the run's precision and options put it there, else in the run's activation dtype.
#include "model/gpt.h"

namespace mixgpt {

void GPT::linear_forward(int layer, LinearRole role, TensorView out, TensorView inp, TensorView weight,
                         TensorView bias) {
    if (linear_in_fp8(layer, role)) {
        backend_.fp8_matmul_forward(out, inp, weight, bias, fp8_->input(layer, role),
                                    fp8_->weight(layer, role));
        return;
    }
    backend_.matmul_forward(out, TensorView(), inp, weight, bias,
                            bias.valid() ? MatmulEpilogue::bias : MatmulEpilogue::none);
}

void GPT::linear_backward_input(int layer, LinearRole role, TensorView dinp, TensorView dout,
                                TensorView weight) {
    if (linear_in_fp8(layer, role)) {
        backend_.fp8_matmul_backward_input(dinp, dout, weight, fp8_->gradient(layer, role),
                                           fp8_->weight(layer, role));
        return;
    }
    backend_.matmul_backward_input(dinp, dout, weight, false);
}

void GPT::linear_backward_weight(int layer, LinearRole role, TensorView dweight, TensorView dbias,
                                 TensorView dout, TensorView inp) {
    if (linear_in_fp8(layer, role)) {
        backend_.fp8_matmul_backward_weight(dweight, dbias, dout, inp, fp8_->gradient(layer, role),
                                            fp8_->input(layer, role));
        return;
    }
    backend_.matmul_backward_weight(dweight, dbias, dout, inp);
}

}  // namespace mixgpt
