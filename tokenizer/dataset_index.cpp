#include "tokenizer/dataset_index.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/sha256.h"

namespace mixgpt {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr uintmax_t kMaxIndexBytes = uintmax_t{64} << 20;

Json split_json(const SplitInfo& split) {
    return {{"tokens", split.tokens}, {"bytes", split.bytes}, {"documents", split.documents}};
}

// Reads fields of one JSON object, each error naming the file and the field.
class Fields {
public:
    Fields(const Json& object, std::string where, const std::string& path)
        : object_(object), where_(std::move(where)), path_(path) {
        if (!object.is_object()) fail("", "must be a JSON object");
    }

    [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
        throw Error(path_ + ": " + where_ + (field.empty() ? "" : (where_.empty() ? "" : ".") + field) +
                    ": " + reason);
    }
    const Json& get(const std::string& field) const {
        const auto found = object_.find(field);
        if (found == object_.end()) fail(field, "missing");
        return *found;
    }
    int64_t integer(const std::string& field, int64_t minimum = 0) const {
        const Json& value = get(field);
        if (!value.is_number_integer()) fail(field, "must be an integer");
        const int64_t number = value.get<int64_t>();
        if (number < minimum) fail(field, "must be at least " + std::to_string(minimum));
        return number;
    }
    double number(const std::string& field) const {
        const Json& value = get(field);
        if (!value.is_number()) fail(field, "must be a number");
        return value.get<double>();
    }
    std::string text(const std::string& field) const {
        const Json& value = get(field);
        if (!value.is_string()) fail(field, "must be a string");
        return value.get<std::string>();
    }
    // A file name inside the folder: no directory part.
    std::string file_name(const std::string& field) const {
        const std::string name = text(field);
        if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
            fail(field, "'" + name + "' is not a file name inside the folder");
        return name;
    }
    SplitInfo split(const std::string& field) const {
        const Fields inner(get(field), where_ + (where_.empty() ? "" : ".") + field, path_);
        return {inner.integer("tokens"), inner.integer("bytes"), inner.integer("documents")};
    }

private:
    const Json& object_;
    std::string where_;
    const std::string& path_;
};

void add(SplitInfo& total, const SplitInfo& part) {
    total.tokens += part.tokens;
    total.bytes += part.bytes;
    total.documents += part.documents;
}

}  // namespace

int64_t DatasetIndex::documents() const {
    int64_t total = 0;
    for (const ShardRecord& shard : shards) total += shard.documents();
    return total;
}

std::string shard_file_name(int64_t number) {
    return format("shard-%06lld.h5", static_cast<long long>(number));
}

std::string index_json_text(const DatasetIndex& index) {
    Json shards = Json::array();
    for (const ShardRecord& shard : index.shards) {
        shards.push_back({{"file", shard.file},
                          {"bytes", shard.bytes},
                          {"sha256", shard.sha256},
                          {"first_document", shard.first_document},
                          {"train", split_json(shard.train)},
                          {"val", split_json(shard.val)},
                          {"invalid_utf8_bytes", shard.invalid_utf8_bytes},
                          {"skipped_lines", shard.skipped_lines}});
    }
    Json inputs = Json::array();
    for (const InputRecord& input : index.inputs)
        inputs.push_back({{"path", input.path}, {"bytes", input.bytes}, {"sha256", input.sha256}});
    const Json json = {{"format", kIndexFormat},
                       {"format_version", kIndexFormatVersion},
                       {"tokenizer",
                        {{"kind", index.tokenizer.kind},
                         {"files", index.tokenizer.files},
                         {"sha256", index.tokenizer.sha256}}},
                       {"vocab_size", index.vocab_size},
                       {"eot_id", index.eot_id},
                       {"unk_id", index.unk_id},
                       {"seed", index.seed},
                       {"val_fraction", index.val_fraction},
                       {"shard_tokens", index.shard_tokens},
                       {"shards", shards},
                       {"commands", index.commands},
                       {"inputs", inputs}};
    return json.dump(1) + "\n";
}

void write_index(const std::string& path, const DatasetIndex& index) {
    write_whole_file(path, index_json_text(index));
}

DatasetIndex read_index(const std::string& path) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    if (error) {
        const fs::path folder = fs::path(path).parent_path();
        if (fs::exists(folder / "progress.json"))
            throw Error(folder.string() + ": prepare has not finished (no " + kIndexFileName +
                        ", but progress.json); `mixgpt prepare --resume` with the same inputs completes it");
        throw Error(folder.string() + ": not a dataset (no " + kIndexFileName + " nor dataset.h5)");
    }
    MIXGPT_REQUIRE(size <= kMaxIndexBytes, path + ": too large for a dataset index");
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return parse_index(text.str(), path);
}

DatasetIndex parse_index(const std::string& text, const std::string& path) {
    const Json json = Json::parse(text, nullptr, false);
    MIXGPT_REQUIRE(!json.is_discarded(), path + ": not valid JSON");
    const Fields root(json, "", path);
    if (root.text("format") != kIndexFormat)
        root.fail("format", std::string("must be '") + kIndexFormat + "'");
    if (root.integer("format_version") != kIndexFormatVersion)
        root.fail("format_version", format("%lld is not supported (this build reads version %lld)",
                                           static_cast<long long>(root.integer("format_version")),
                                           static_cast<long long>(kIndexFormatVersion)));
    DatasetIndex index;
    const Fields tokenizer(root.get("tokenizer"), "tokenizer", path);
    index.tokenizer.kind = tokenizer.text("kind");
    index.tokenizer.sha256 = tokenizer.text("sha256");
    const Json& files = tokenizer.get("files");
    if (!files.is_array() || files.empty()) tokenizer.fail("files", "must be a non-empty list of file names");
    for (size_t i = 0; i < files.size(); ++i) {
        const Json entry = {{"file", files[i]}};
        index.tokenizer.files.push_back(Fields(entry, "tokenizer.files", path).file_name("file"));
    }
    index.vocab_size = static_cast<int>(root.integer("vocab_size", 1));
    index.eot_id = static_cast<int32_t>(root.integer("eot_id"));
    index.unk_id = static_cast<int32_t>(root.integer("unk_id", -1));
    if (index.eot_id >= index.vocab_size) root.fail("eot_id", "is outside the vocabulary");
    if (!root.get("seed").is_number_unsigned()) root.fail("seed", "must be a non-negative integer");
    index.seed = root.get("seed").get<uint64_t>();
    index.val_fraction = root.number("val_fraction");
    index.shard_tokens = root.integer("shard_tokens", 1);
    const Json& shards = root.get("shards");
    if (!shards.is_array()) root.fail("shards", "must be a list");
    int64_t next_document = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
        const Fields shard(shards[i], format("shards[%zu]", i), path);
        ShardRecord record;
        record.file = shard.file_name("file");
        record.bytes = static_cast<uint64_t>(shard.integer("bytes"));
        record.sha256 = shard.text("sha256");
        record.first_document = shard.integer("first_document");
        if (record.first_document != next_document)
            shard.fail("first_document", format("is %lld, but the shards before end at document %lld",
                                                static_cast<long long>(record.first_document),
                                                static_cast<long long>(next_document)));
        record.train = shard.split("train");
        record.val = shard.split("val");
        record.invalid_utf8_bytes = shard.integer("invalid_utf8_bytes");
        record.skipped_lines = shard.integer("skipped_lines");
        next_document += record.documents();
        index.shards.push_back(std::move(record));
    }
    const Json& commands = root.get("commands");
    if (!commands.is_array()) root.fail("commands", "must be a list");
    for (const Json& command : commands)
        index.commands.push_back(command.is_string() ? command.get<std::string>() : "");
    const Json none = Json::array();
    const Json& inputs = json.contains("inputs") ? root.get("inputs") : none;
    if (!inputs.is_array()) root.fail("inputs", "must be a list");
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Fields input(inputs[i], format("inputs[%zu]", i), path);
        index.inputs.push_back(
            {input.text("path"), static_cast<uint64_t>(input.integer("bytes")), input.text("sha256")});
    }
    return index;
}

void check_shard_checksum(const std::string& path, const std::string& expected) {
    const std::string actual = sha256_file_hex(path);
    if (actual != expected)
        throw Error(path + ": SHA-256 " + actual.substr(0, 12) + "... is not the " + expected.substr(0, 12) +
                    "... " + kIndexFileName +
                    " records (the shard changed since prepare: a flipped bit, an edit; prepare it again)");
}

DatasetInfo dataset_info_of_index(const std::string& folder, const DatasetIndex& index) {
    DatasetInfo info;
    info.path = folder;
    info.tokenizer_directory = folder;
    info.tokenizer = index.tokenizer;
    info.vocab_size = index.vocab_size;
    info.eot_id = index.eot_id;
    info.unk_id = index.unk_id;
    info.command = index.commands.empty() ? "" : index.commands.front();
    for (const ShardRecord& shard : index.shards) {
        const std::string path = (fs::path(folder) / shard.file).string();
        std::error_code error;
        const auto bytes = fs::file_size(path, error);
        if (error) throw Error(path + ": missing (listed in " + kIndexFileName + ")");
        if (static_cast<uint64_t>(bytes) != shard.bytes)
            throw Error(path + format(": holds %llu bytes, %s says %llu (truncated or replaced)",
                                      static_cast<unsigned long long>(bytes), kIndexFileName,
                                      static_cast<unsigned long long>(shard.bytes)));
        info.shards.push_back({path, shard.bytes, shard.sha256, shard.train, shard.val});
        add(info.train, shard.train);
        add(info.val, shard.val);
        info.invalid_utf8_bytes += shard.invalid_utf8_bytes;
    }
    return info;
}

}  // namespace mixgpt
