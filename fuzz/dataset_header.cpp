// libFuzzer target: the validation of a token dataset's header (tokenizer/dataset.cpp:
// format, version, vocabulary, special ids, per-split attributes against the stored arrays) and
// the token reader behind the training loader (tokenizer/token_store.cpp: chunk layout, pread
// reads, ids checked against the vocabulary). The input does not become HDF5 bytes (that would
// fuzz HDF5, not our code): it decides a well-formed HDF5 file's attributes, array types and
// lengths, which are then read back. Bad values may only throw mixgpt::Error.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/h5.h"
#include "tokenizer/dataset.h"
#include "tokenizer/token_store.h"

namespace {

using mixgpt::h5::Type;

const std::string& scratch_path() {
    static const std::string path = "/dev/shm/mixgpt_fuzz_dataset_" + std::to_string(::getpid()) + ".h5";
    return path;
}

int64_t small_or_any(FuzzedDataProvider& input, int64_t sensible) {
    return input.ConsumeBool() ? sensible : input.ConsumeIntegral<int64_t>();
}

// One split: its group, attributes, /tokens (chunked or contiguous) and /doc_offsets.
void write_split(FuzzedDataProvider& input, mixgpt::h5::File& file, const std::string& group, int vocab) {
    if (input.ConsumeBool() && input.ConsumeBool()) return;  // a missing split, now and then
    file.create_group(group);
    const int64_t length = input.ConsumeIntegralInRange<int64_t>(0, 600);
    const Type types[] = {Type::u16, Type::u32, Type::i32};
    const Type type = types[input.ConsumeIntegralInRange<int>(0, 2)];
    std::vector<uint32_t> tokens(static_cast<size_t>(length));
    for (uint32_t& token : tokens)
        token = input.ConsumeBool() ? input.ConsumeIntegralInRange<uint32_t>(0, vocab > 0 ? vocab - 1 : 0)
                                    : input.ConsumeIntegral<uint16_t>();
    if (input.ConsumeBool()) {
        file.create_extendible(group + "/tokens", type, input.ConsumeIntegralInRange<int64_t>(1, 300));
        if (type == Type::u16) {
            std::vector<uint16_t> narrow(tokens.begin(), tokens.end());
            file.append(group + "/tokens", Type::u16, narrow.data(), length);
        } else {
            file.append(group + "/tokens", Type::u32, tokens.data(), length);
        }
    } else {
        const std::vector<uint16_t> narrow(tokens.begin(), tokens.end());
        file.write(group + "/tokens", type,
                   type == Type::u16 ? static_cast<const void*>(narrow.data()) : tokens.data(), {length});
    }
    const int64_t documents = input.ConsumeIntegralInRange<int64_t>(0, 8);
    std::vector<int64_t> offsets(static_cast<size_t>(input.ConsumeIntegralInRange<int64_t>(0, 10)));
    for (int64_t& offset : offsets) offset = small_or_any(input, documents);
    file.write(group + "/doc_offsets", Type::i64, offsets.data(), {static_cast<int64_t>(offsets.size())});
    if (input.ConsumeBool()) file.set_attribute(group, "tokens", small_or_any(input, length));
    if (input.ConsumeBool()) file.set_attribute(group, "bytes", input.ConsumeIntegral<int64_t>());
    if (input.ConsumeBool()) file.set_attribute(group, "documents", small_or_any(input, documents));
}

void write_dataset(FuzzedDataProvider& input) {
    mixgpt::h5::File file = mixgpt::h5::File::create(scratch_path());
    const int vocab =
        input.ConsumeBool() ? input.ConsumeIntegralInRange<int>(1, 70000) : input.ConsumeIntegral<int>();
    if (input.ConsumeBool())
        file.set_attribute(
            "/", "format",
            input.ConsumeBool() ? std::string(mixgpt::kDatasetFormat) : input.ConsumeRandomLengthString(32));
    if (input.ConsumeBool())
        file.set_attribute("/", "format_version", small_or_any(input, mixgpt::kDatasetFormatVersion));
    if (input.ConsumeBool()) file.set_attribute("/", "vocab_size", static_cast<int64_t>(vocab));
    for (const char* id : {"eot_id", "unk_id"})
        if (input.ConsumeBool())
            file.set_attribute("/", id, small_or_any(input, static_cast<int64_t>(vocab) - 1));
    for (const char* text : {"tokenizer_sha256", "tokenizer_file", "command"})
        if (input.ConsumeBool()) file.set_attribute("/", text, input.ConsumeRandomLengthString(80));
    if (input.ConsumeBool()) file.set_attribute("/", "invalid_utf8_bytes", input.ConsumeIntegral<int64_t>());
    write_split(input, file, "/train", vocab);
    write_split(input, file, "/val", vocab);
    file.close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider input(data, size);
    write_dataset(input);
    try {
        const mixgpt::DatasetInfo info = mixgpt::read_dataset_info(scratch_path());
        mixgpt::TokenStore store(scratch_path(), "train", info.vocab_size);
        if (store.size() != info.train.tokens) __builtin_trap();
        std::vector<int32_t> tokens(static_cast<size_t>(store.size()));
        if (store.size() > 0) store.read(0, store.size(), tokens.data());
        for (int32_t token : tokens)
            if (token < 0 || token >= info.vocab_size) __builtin_trap();  // checked by the reader
    } catch (const mixgpt::Error&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
