// libFuzzer target: the safetensors header parser (interop/safetensors_header.h) on arbitrary
// bytes taken as a whole file. A mixgpt::Error is the expected outcome for bad input; any other
// exception, a crash or a sanitizer report is a bug. Seeds: fuzz/corpus/safetensors_header/
// (scripts/make_safetensors_seeds.py), tokens: fuzz/safetensors_header.dict.
#include "interop/safetensors_header.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const uint64_t length = mixgpt::interop::read_header_length(data, size, size, "fuzz");
        const std::string_view json(reinterpret_cast<const char*>(data) + 8, static_cast<size_t>(length));
        const mixgpt::interop::SafetensorsHeader header =
            mixgpt::interop::parse_safetensors_header(json, size, "fuzz");
        for (const mixgpt::interop::SafetensorsTensor& tensor : header.tensors)
            if (tensor.end > size - header.data_start() || tensor.begin > tensor.end) __builtin_trap();
    } catch (const mixgpt::Error&) {
    }
    return 0;
}
