// libFuzzer target: the checkpoint header parser (model/checkpoint_header.cpp), which reads the
// first 512 bytes of every checkpoint before HDF5 sees the file. Any bytes either parse or throw
// mixgpt::Error; a header that parses must be written back identically by
// checkpoint_header_block (the one format both sides agree on).
#include "model/checkpoint_header.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* bytes = reinterpret_cast<const char*>(data);
    try {
        const mixgpt::CheckpointHeader header = mixgpt::parse_checkpoint_header(bytes, size, "fuzz.h5");
        const std::string written = mixgpt::checkpoint_header_block(header);
        const mixgpt::CheckpointHeader again =
            mixgpt::parse_checkpoint_header(written.data(), written.size(), "fuzz.h5");
        if (again.version != header.version || again.payload_bytes != header.payload_bytes ||
            again.payload_crc32 != header.payload_crc32 || again.run_id != header.run_id)
            __builtin_trap();
    } catch (const mixgpt::Error&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
