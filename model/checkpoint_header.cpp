#include "model/checkpoint_header.h"

#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr const char* kMagic = "mixgpt checkpoint";

}  // namespace

std::string checkpoint_header_block(const CheckpointHeader& header) {
    std::string block = format("%s\nversion %lld\npayload_bytes %llu\npayload_crc32 %08x\n", kMagic,
                               static_cast<long long>(header.version),
                               static_cast<unsigned long long>(header.payload_bytes), header.payload_crc32);
    if (!header.run_id.empty()) block += "run_id " + header.run_id + "\n";
    block.resize(kCheckpointHeaderBytes, '\0');
    return block;
}

bool is_valid_run_id(const std::string& run_id) {
    return !run_id.empty() && run_id.size() <= 64 &&
           run_id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz") == std::string::npos;
}

CheckpointHeader parse_checkpoint_header(const char* block, size_t size, const std::string& path) {
    MIXGPT_REQUIRE(size >= kCheckpointHeaderBytes, path + ": truncated checkpoint (shorter than its header)");
    // The text ends at the first NUL of the block, or at its end.
    const std::string bytes(block, kCheckpointHeaderBytes);
    std::istringstream text(bytes.substr(0, bytes.find('\0')));
    std::string magic, key;
    CheckpointHeader header;
    std::getline(text, magic);
    MIXGPT_REQUIRE(magic == kMagic, path + ": not a mixgpt checkpoint (header missing)");
    text >> key >> header.version;
    MIXGPT_REQUIRE(text && key == "version", path + ": corrupt checkpoint header (version)");
    MIXGPT_REQUIRE(header.version == kCheckpointFormatVersion,
                   path + ": checkpoint format version " + std::to_string(header.version) +
                       ", this build reads " + std::to_string(kCheckpointFormatVersion));
    text >> key >> header.payload_bytes;
    MIXGPT_REQUIRE(text && key == "payload_bytes", path + ": corrupt checkpoint header (payload_bytes)");
    text >> key >> std::hex >> header.payload_crc32;
    MIXGPT_REQUIRE(text && key == "payload_crc32", path + ": corrupt checkpoint header (payload_crc32)");
    std::string rest;
    std::getline(text, rest);  // the end of the payload_crc32 line
    MIXGPT_REQUIRE(rest.empty(), path + ": corrupt checkpoint header (payload_crc32)");
    if (std::getline(text, rest)) {
        MIXGPT_REQUIRE(rest.compare(0, 7, "run_id ") == 0 && is_valid_run_id(rest.substr(7)),
                       path + ": corrupt checkpoint header (run_id)");
        header.run_id = rest.substr(7);
        MIXGPT_REQUIRE(!std::getline(text, rest), path + ": corrupt checkpoint header (text after run_id)");
    }
    return header;
}

}  // namespace mixgpt
