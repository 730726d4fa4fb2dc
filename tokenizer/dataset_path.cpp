#include "tokenizer/dataset_path.h"

#include <filesystem>
#include <string>

#include "tokenizer/dataset_index.h"
#include "tokenizer/prepare.h"

namespace mixgpt {

std::string resolve_dataset_path(const std::string& file_or_directory) {
    const std::filesystem::path path(file_or_directory);
    if (!std::filesystem::is_directory(path) || std::filesystem::exists(path / kIndexFileName) ||
        !std::filesystem::exists(path / kDatasetFileName))
        return file_or_directory;
    return (path / kDatasetFileName).string();
}

std::string dataset_identity(const std::string& path) {
    const std::filesystem::path index = std::filesystem::path(path) / kIndexFileName;
    if (std::filesystem::is_directory(path)) {
        const DatasetIndex read = read_index(index.string());
        return read.shards.empty() ? "" : read.shards.front().sha256;
    }
    const DatasetInfo info = read_dataset_info(path);
    return info.tokenizer.sha256 + ":" + std::to_string(info.train.tokens) + "/" +
           std::to_string(info.val.tokens);
}

}  // namespace mixgpt
