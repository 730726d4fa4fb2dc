// libFuzzer target: the index of a dataset folder (tokenizer/dataset_index.cpp, parse_index):
// index.json as written by prepare, or anything else. Bad input may only throw mixgpt::Error.
// Checked: an index that parses is written back (index_json_text) and parses to the same text
// again, and its shards' documents follow each other.
#include "tokenizer/dataset_index.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const mixgpt::DatasetIndex index = mixgpt::parse_index(text, "index.json");
        const std::string written = mixgpt::index_json_text(index);
        if (mixgpt::index_json_text(mixgpt::parse_index(written, "again")) != written) __builtin_trap();
        int64_t next = 0;
        for (const mixgpt::ShardRecord& shard : index.shards) {
            if (shard.first_document != next) __builtin_trap();
            next += shard.documents();
        }
    } catch (const mixgpt::Error&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
