#include "eval/dataset_path.h"

#include <filesystem>

#include "tokenizer/prepare.h"

namespace mixgpt {

std::string resolve_dataset_path(const std::string& file_or_directory) {
    if (!std::filesystem::is_directory(file_or_directory)) return file_or_directory;
    return (std::filesystem::path(file_or_directory) / kDatasetFileName).string();
}

}  // namespace mixgpt
