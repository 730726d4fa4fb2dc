#include "tokenizer/dataset.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

void require(bool condition, const std::string& path, const std::string& reason) {
    if (!condition) throw Error(path + ": " + reason);
}

SplitInfo read_split(const h5::File& file, const std::string& split, int vocab_size) {
    const std::string group = "/" + split;
    require(file.exists(group), file.path(),
            "missing split '" + split + "' (not a mixgpt dataset or truncated)");
    SplitInfo info;
    info.tokens = file.attribute_int(group, "tokens");
    info.bytes = file.attribute_int(group, "bytes");
    info.documents = file.attribute_int(group, "documents");

    const std::string tokens = group + "/tokens", offsets = group + "/doc_offsets";
    const auto token_shape = file.shape(tokens);
    require(token_shape.size() == 1 && token_shape[0] == info.tokens, file.path(),
            format("%s holds %lld tokens but its attribute says %lld", tokens.c_str(),
                   static_cast<long long>(token_shape.empty() ? -1 : token_shape[0]),
                   static_cast<long long>(info.tokens)));
    require(file.stored_type(tokens) == token_storage_type(vocab_size), file.path(),
            tokens + " has the wrong element type for vocabulary size " + std::to_string(vocab_size));
    const auto offset_shape = file.shape(offsets);
    require(offset_shape.size() == 1 && offset_shape[0] == info.documents + 1, file.path(),
            format("%s has %lld entries, expected documents + 1 = %lld", offsets.c_str(),
                   static_cast<long long>(offset_shape.empty() ? -1 : offset_shape[0]),
                   static_cast<long long>(info.documents + 1)));
    return info;
}

}  // namespace

const SplitInfo& DatasetInfo::split(const std::string& name) const {
    if (name == "train") return train;
    if (name == "val") return val;
    throw Error(path + ": unknown split '" + name + "' (expected train or val)");
}

h5::Type token_storage_type(int vocab_size) { return vocab_size <= 65536 ? h5::Type::u16 : h5::Type::u32; }

DatasetInfo read_dataset_info(const std::string& dataset_path) {
    const h5::File file = h5::File::open_read(dataset_path);
    require(file.has_attribute("/", "format") && file.attribute_string("/", "format") == kDatasetFormat,
            dataset_path,
            std::string("not a mixgpt token dataset (no format attribute '") + kDatasetFormat + "')");
    const int64_t version = file.attribute_int("/", "format_version");
    require(version == kDatasetFormatVersion, dataset_path,
            format("dataset format version %lld is not supported (this build reads version %lld)",
                   static_cast<long long>(version), static_cast<long long>(kDatasetFormatVersion)));

    DatasetInfo info;
    info.path = dataset_path;
    info.vocab_size = static_cast<int>(file.attribute_int("/", "vocab_size"));
    require(info.vocab_size > 0, dataset_path, "vocab_size must be positive");
    info.eot_id = static_cast<int32_t>(file.attribute_int("/", "eot_id"));
    info.unk_id = static_cast<int32_t>(file.attribute_int("/", "unk_id"));
    require(info.eot_id >= 0 && info.eot_id < info.vocab_size, dataset_path,
            "eot_id is outside the vocabulary");
    info.tokenizer_sha256 = file.attribute_string("/", "tokenizer_sha256");
    const std::filesystem::path folder = std::filesystem::path(dataset_path).parent_path();
    info.tokenizer_path = (folder / file.attribute_string("/", "tokenizer_file")).string();
    info.tokenizer_kind = file.has_attribute("/", "tokenizer_kind")
                              ? file.attribute_string("/", "tokenizer_kind")
                              : std::string("sentencepiece");
    if (file.has_attribute("/", "tokenizer_files")) {
        std::istringstream names(file.attribute_string("/", "tokenizer_files"));
        for (std::string name; std::getline(names, name);)
            info.tokenizer_files.push_back((folder / name).string());
    }
    if (info.tokenizer_files.empty()) info.tokenizer_files.push_back(info.tokenizer_path);
    info.command = file.attribute_string("/", "command");
    info.invalid_utf8_bytes = file.attribute_int("/", "invalid_utf8_bytes");
    info.train = read_split(file, "train", info.vocab_size);
    info.val = read_split(file, "val", info.vocab_size);
    return info;
}

}  // namespace mixgpt
