#include "tokenizer/dataset_path.h"

#include <filesystem>

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

}  // namespace mixgpt
