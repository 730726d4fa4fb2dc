#include "tokenizer/dataset.h"

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/dataset_index.h"

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

std::string DatasetInfo::tokenizer_path() const {
    return (std::filesystem::path(tokenizer_directory) / tokenizer.files.at(0)).string();
}

std::vector<std::string> DatasetInfo::tokenizer_paths() const {
    std::vector<std::string> paths;
    for (const std::string& name : tokenizer.files)
        paths.push_back((std::filesystem::path(tokenizer_directory) / name).string());
    return paths;
}

h5::Type token_storage_type(int vocab_size) { return vocab_size <= 65536 ? h5::Type::u16 : h5::Type::u32; }

std::string TokenizerIdentity::describe() const {
    std::string names;
    for (const std::string& file : files) names += (names.empty() ? "" : "+") + file;
    return kind + " " + names + " (sha256 " + sha256.substr(0, 12) + "...)";
}

DatasetInfo read_dataset_info(const std::string& dataset_path) {
    if (std::filesystem::is_directory(dataset_path)) {
        const std::string index = (std::filesystem::path(dataset_path) / kIndexFileName).string();
        return dataset_info_of_index(dataset_path, read_index(index));
    }
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
    info.tokenizer_directory = std::filesystem::path(dataset_path).parent_path().string();
    info.tokenizer.sha256 = file.attribute_string("/", "tokenizer_sha256");
    if (file.has_attribute("/", "tokenizer_kind"))
        info.tokenizer.kind = file.attribute_string("/", "tokenizer_kind");
    if (file.has_attribute("/", "tokenizer_files")) {
        std::istringstream names(file.attribute_string("/", "tokenizer_files"));
        for (std::string name; std::getline(names, name);) info.tokenizer.files.push_back(name);
    }
    if (info.tokenizer.files.empty())
        info.tokenizer.files.push_back(file.attribute_string("/", "tokenizer_file"));
    info.command = file.attribute_string("/", "command");
    info.invalid_utf8_bytes = file.attribute_int("/", "invalid_utf8_bytes");
    info.train = read_split(file, "train", info.vocab_size);
    info.val = read_split(file, "val", info.vocab_size);
    std::error_code error;
    const auto bytes = std::filesystem::file_size(dataset_path, error);
    info.shards.push_back({dataset_path, error ? 0 : static_cast<uint64_t>(bytes), "", info.train, info.val});
    return info;
}

}  // namespace mixgpt
