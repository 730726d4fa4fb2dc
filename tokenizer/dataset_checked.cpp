// read_checked_dataset_info (tokenizer/dataset.h): apart from the readers, so that what reads a
// dataset's header or index alone (the fuzz targets among them) needs no tokenizer.
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_index.h"
#include "tokenizer/tokenizer.h"

namespace mixgpt {
namespace {

void require(bool condition, const std::string& path, const std::string& reason) {
    if (!condition) throw Error(path + ": " + reason);
}

// The index of a dataset folder agrees with the tokenizer beside it: the files are those it
// names (SHA-256) and vocab_size, eot_id, unk_id are the tokenizer's own.
void check_index_against_tokenizer(const std::string& index_path, const DatasetInfo& info) {
    const Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::load(info.tokenizer_path(), parse_tokenizer_kind(info.tokenizer.kind));
        } catch (const Error& error) {
            throw Error(index_path + ": tokenizer: " + error.what());
        }
    }();
    require(tokenizer.sha256() == info.tokenizer.sha256, index_path,
            "tokenizer.sha256 is " + info.tokenizer.sha256.substr(0, 12) + "..., but " + info.tokenizer_path() +
                " has " + tokenizer.sha256().substr(0, 12) + "... (the tokenizer changed since prepare)");
    const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
        {"vocab_size", {info.vocab_size, tokenizer.vocab_size()}},
        {"eot_id", {info.eot_id, tokenizer.eot_id()}},
        {"unk_id", {info.unk_id, tokenizer.unk_id()}}};
    for (const auto& [field, values] : fields)
        require(values.first == values.second, index_path,
                format("%s is %lld, but the tokenizer %s has %lld", field, static_cast<long long>(values.first),
                       info.tokenizer_path().c_str(), static_cast<long long>(values.second)));
}

}  // namespace

DatasetInfo read_checked_dataset_info(const std::string& dataset_path) {
    DatasetInfo info = read_dataset_info(dataset_path);
    if (std::filesystem::is_directory(dataset_path))
        check_index_against_tokenizer((std::filesystem::path(dataset_path) / kIndexFileName).string(), info);
    return info;
}

}  // namespace mixgpt
