#include "model/finite_check.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "model/parameters.h"

namespace mixgpt {
namespace {

// An IEEE value is not finite when its exponent bits are all ones. (Bits, not std::isfinite, so
// that the loop vectorizes.)
template <typename Bits, typename Value>
int64_t count_all_ones_exponent(const Value* values, int64_t n, Bits exponent_mask) {
    static_assert(sizeof(Bits) == sizeof(Value), "one Bits per Value");
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
        Bits bits;
        std::memcpy(&bits, values + i, sizeof(bits));
        count += (bits & exponent_mask) == exponent_mask;
    }
    return count;
}

// Throws for the first tensor of `layout` whose elements of `values` (one per parameter) hold
// non-finite values; `count_in(offset, numel)` counts them in one tensor.
template <typename CountIn>
void require_finite_part(const ParameterLayout& layout, const std::string& path, const char* part,
                         const CountIn& count_in) {
    int64_t total = 0;
    const ParameterView* first = nullptr;
    int64_t first_count = 0;
    for (const ParameterView& view : layout.views()) {
        const int64_t count = count_in(view.offset, view.numel);
        if (count > 0 && first == nullptr) {
            first = &view;
            first_count = count;
        }
        total += count;
    }
    if (first == nullptr) return;
    throw Error(
        format("%s: tensor '%s' of the %s has %lld non-finite value%s (NaN or Inf), %lld in all; "
               "refusing the checkpoint (%s accepts it)",
               path.c_str(), first->name.c_str(), part, static_cast<long long>(first_count),
               first_count == 1 ? "" : "s", static_cast<long long>(total), kAllowNonfiniteOption));
}

}  // namespace

int64_t count_nonfinite(const float* values, int64_t n) {
    return count_all_ones_exponent<uint32_t>(values, n, 0x7f800000u);
}

void require_finite_checkpoint(const Checkpoint& checkpoint, const std::string& path) {
    const ParameterLayout layout(checkpoint.config);
    const auto floats = [&](const std::vector<float>& values) {
        return [&values](int64_t offset, int64_t numel) {
            return count_nonfinite(values.data() + offset, numel);
        };
    };
    require_finite_part(layout, path, "FP32 weights", floats(checkpoint.parameters));
    if (!checkpoint.working_bits.empty()) {
        const uint16_t mask = checkpoint.precision == Precision::fp16 ? 0x7c00 : 0x7f80;
        require_finite_part(layout, path, "16-bit working copy", [&](int64_t offset, int64_t numel) {
            return count_all_ones_exponent(checkpoint.working_bits.data() + offset, numel, mask);
        });
    }
    if (!checkpoint.adam_m.empty())
        require_finite_part(layout, path, "AdamW first moments", floats(checkpoint.adam_m));
    if (!checkpoint.adam_v.empty())
        require_finite_part(layout, path, "AdamW second moments", floats(checkpoint.adam_v));
    const float scale = checkpoint.status.loss_scale;
    MIXGPT_REQUIRE(std::isfinite(scale) && scale > 0,
                   format("%s: the loss scale is %g, not a finite positive number; refusing the checkpoint "
                          "(%s accepts it)",
                          path.c_str(), static_cast<double>(scale), kAllowNonfiniteOption));
}

}  // namespace mixgpt
