#include "tokenizer/prepare_folder.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/h5.h"
#include "core/log.h"
#include "core/owned_temporary.h"
#include "core/sha256.h"
#include "tokenizer/prepare.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTool = "prepare";

// A single-file dataset (format version 1) as the first shard of a folder index.
DatasetIndex index_of_single_file(const std::string& path, const PrepareOptions& options) {
    const DatasetInfo info = read_dataset_info(path);
    const h5::File file = h5::File::open_read(path);
    DatasetIndex index;
    index.tokenizer = info.tokenizer;
    index.vocab_size = info.vocab_size;
    index.eot_id = info.eot_id;
    index.unk_id = info.unk_id;
    index.seed = static_cast<uint64_t>(file.attribute_int("/", "seed"));
    index.val_fraction = file.attribute_double("/", "val_fraction");
    index.shard_tokens = options.shard_tokens;
    index.commands = {info.command};
    ShardRecord shard;
    shard.file = fs::path(path).filename().string();
    shard.bytes = info.shards.front().bytes;
    shard.sha256 = sha256_file_hex(path);
    shard.train = info.train;
    shard.val = info.val;
    shard.invalid_utf8_bytes = info.invalid_utf8_bytes;
    shard.skipped_lines = file.attribute_int("/", "skipped_lines");
    index.shards.push_back(shard);
    return index;
}

// An append keeps the dataset's split and tokenizer: a --seed, --val-fraction or --vocab-size given
// otherwise would be ignored.
void require_settings_of(const DatasetIndex& dataset, const PrepareOptions& options,
                         const std::string& directory) {
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> settings = {
        {"--val-fraction", {format("%g", options.val_fraction), format("%g", dataset.val_fraction)}},
        {"--seed", {std::to_string(options.seed), std::to_string(dataset.seed)}},
        {"--vocab-size", {std::to_string(options.tokenizer.vocab_size), std::to_string(dataset.vocab_size)}},
    };
    for (const auto& [flag, values] : settings) {
        const std::vector<std::string>& given = options.given_dataset_options;
        if (std::find(given.begin(), given.end(), flag) == given.end()) continue;
        MIXGPT_REQUIRE(values.first == values.second,
                       directory + ": " + flag + " " + values.first + " is not the dataset's (" +
                           values.second + "); an append keeps the dataset's split and tokenizer: leave " +
                           flag + " out");
    }
}

// The unfinished work folder of a --force run into `directory` that was killed, now this
// process's; "" when there is none.
std::string adopt_killed_replacement(const std::string& directory) {
    const fs::path final(directory);
    const fs::path parent = final.has_parent_path() ? final.parent_path() : fs::path(".");
    const std::string prefix = final.filename().string() + ".tmp-";
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(parent, error))
        if (entry.path().filename().string().rfind(prefix, 0) == 0 &&
            fs::exists(entry.path() / kJournalFileName) &&
            adopt_stale_owned_folder(entry.path().string(), kTool))
            return entry.path().string();
    return "";
}

}  // namespace

std::string PrepareFolder::index_path() const { return (fs::path(work) / kIndexFileName).string(); }
std::string PrepareFolder::journal_path() const { return (fs::path(work) / kJournalFileName).string(); }

PrepareFolder open_prepare_folder(const PrepareOptions& options, const std::string& directory,
                                  const std::vector<std::string>& inputs) {
    PrepareFolder folder;
    folder.directory = folder.work = directory;
    const std::string killed_replacement = options.resume ? adopt_killed_replacement(directory) : "";
    folder.removed = remove_stale_owned_folders(directory, inputs);
    for (const std::string& path : remove_stale_owned_files(directory, inputs))
        folder.removed.push_back(path);
    const bool has_index = fs::exists(folder.index_path()), has_journal = fs::exists(folder.journal_path());
    const std::string single_file = (fs::path(directory) / kDatasetFileName).string();
    const bool has_single_file = !has_index && fs::exists(single_file);
    const bool has_dataset = has_index || has_single_file;

    if (options.resume) {
        if (!killed_replacement.empty()) {
            folder.start = PrepareStart::resume;
            folder.work = killed_replacement;
            folder.replaces = true;
            folder.journal = read_journal(folder.journal_path());
            log_info(directory + ": continuing the --force run that was stopped in " + folder.work);
            return folder;
        }
        if (has_journal) {
            folder.start = PrepareStart::resume;
            folder.journal = read_journal(folder.journal_path());
            return folder;
        }
        if (has_dataset) {
            folder.start = PrepareStart::complete;
            return folder;
        }
        log_info(directory +
                 ": no unfinished prepare to resume (no progress.json): starting from the beginning");
    }
    if (options.append) {
        MIXGPT_REQUIRE(!has_journal, directory +
                                         ": holds an unfinished prepare or append (progress.json); "
                                         "finish it first with --resume");
        MIXGPT_REQUIRE(has_dataset, directory + ": no dataset to append to (no index.json nor dataset.h5)");
        folder.start = PrepareStart::append;
        folder.base =
            has_index ? read_index(folder.index_path()) : index_of_single_file(single_file, options);
        require_settings_of(*folder.base, options, directory);
        return folder;
    }
    MIXGPT_REQUIRE(!has_journal || options.force,
                   directory +
                       ": holds an unfinished prepare (progress.json); --resume continues it, --force "
                       "starts over");
    MIXGPT_REQUIRE(!has_dataset || options.force,
                   directory +
                       ": already exists and holds a dataset (--force replaces it once the new one is "
                       "complete, --append adds documents to it)");
    if (has_dataset || has_journal) {
        folder.start = PrepareStart::replace;
        folder.replaces = true;
        folder.work = directory + ".tmp-" + std::to_string(::getpid());
        create_owned_folder(folder.work, kTool);
        return folder;
    }
    folder.start = PrepareStart::fresh;
    return folder;
}

void finish_prepare_folder(const PrepareFolder& folder) {
    if (!folder.replaces) return;
    const std::string old = folder.directory + ".old-" + std::to_string(::getpid());
    create_owned_folder(old, kTool);
    const fs::path aside = fs::path(old) / fs::path(folder.directory).filename();
    std::error_code error;
    fs::rename(folder.directory, aside, error);
    if (error) {
        std::error_code ignored;
        fs::remove_all(old, ignored);
        throw Error(folder.directory + ": cannot move the old dataset aside (" + error.message() + ")");
    }
    release_owned_folder(folder.work);
    fs::rename(folder.work, folder.directory, error);
    if (error) {
        std::error_code ignored;
        fs::rename(aside, folder.directory, ignored);
        throw Error(folder.directory + ": cannot move the new dataset into place (" + error.message() + ")");
    }
    fs::remove_all(old, error);
    if (error) log_warning(old + ": the replaced dataset could not be removed (" + error.message() + ")");
}

void undo_prepare_folder(const PrepareFolder& folder,
                         const std::vector<std::string>& tokenizer_files_written) {
    std::error_code ignored;
    switch (folder.start) {
        case PrepareStart::replace:
            fs::remove_all(folder.work, ignored);
            return;
        case PrepareStart::fresh:
            fs::remove(folder.journal_path(), ignored);
            for (const std::string& name : tokenizer_files_written)
                fs::remove(fs::path(folder.work) / name, ignored);
            return;
        case PrepareStart::append:
            fs::remove(folder.journal_path(), ignored);
            return;
        case PrepareStart::resume:
        case PrepareStart::complete:
            return;
    }
}

}  // namespace mixgpt
