#include "tokenizer/prepare_journal.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/output_file.h"

namespace mixgpt {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kJournalFormat = "mixgpt-prepare-progress";

std::string shortened(const Json& value) {
    std::string text = value.dump();
    if (text.size() > 200) text = text.substr(0, 200) + "...";
    return text;
}

}  // namespace

void write_journal(const std::string& path, const PrepareJournal& journal) {
    const CorpusPosition& position = journal.position;
    const Json json = {{"format", kJournalFormat},
                       {"format_version", 1},
                       {"settings", Json::parse(journal.settings)},
                       {"position",
                        {{"input", position.input},
                         {"offset", position.offset},
                         {"line", position.line},
                         {"next_document", position.next_document},
                         {"skipped_lines", position.skipped_lines}}},
                       {"index", Json::parse(index_json_text(journal.index))}};
    write_whole_file(path, json.dump(1) + "\n");
}

PrepareJournal read_journal(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    MIXGPT_REQUIRE(file.good(), path + ": cannot read");
    std::stringstream text;
    text << file.rdbuf();
    const Json json = Json::parse(text.str(), nullptr, false);
    const bool valid = !json.is_discarded() && json.is_object() &&
                       json.value("format", "") == kJournalFormat && json.value("format_version", 0) == 1 &&
                       json.contains("settings") && json.contains("position") && json.contains("index") &&
                       json["position"].is_object();
    MIXGPT_REQUIRE(valid,
                   path + ": not a mixgpt prepare journal (delete the folder, or --force to start over)");
    PrepareJournal journal;
    journal.settings = json["settings"].dump();
    const Json& position = json["position"];
    for (const char* field : {"input", "offset", "line", "next_document", "skipped_lines"})
        MIXGPT_REQUIRE(position.contains(field) && position[field].is_number_integer() &&
                           position[field].get<int64_t>() >= 0,
                       path + ": position." + field + " must be a non-negative integer");
    journal.position.input = position["input"].get<int64_t>();
    journal.position.offset = position["offset"].get<uint64_t>();
    journal.position.line = position["line"].get<int64_t>();
    journal.position.next_document = position["next_document"].get<int64_t>();
    journal.position.skipped_lines = position["skipped_lines"].get<int64_t>();
    journal.index = parse_index(json["index"].dump(), path + " (index)");
    return journal;
}

void require_same_settings(const std::string& recorded, const std::string& current,
                           const std::string& journal_path) {
    const Json before = Json::parse(recorded), now = Json::parse(current);
    if (before == now) return;
    const Json none = Json::array();
    const Json& inputs_before = before.contains("inputs") ? before.at("inputs") : none;
    const Json& inputs_now = now.contains("inputs") ? now.at("inputs") : none;
    for (size_t i = 0; i < inputs_now.size() && i < inputs_before.size(); ++i) {
        const Json &was = inputs_before.at(i), &is = inputs_now.at(i);
        if (was.is_object() && is.is_object() && was.value("path", "") == is.value("path", "") && was != is)
            throw Error(is.value("path", "") +
                        ": its content changed since the unfinished prepare read it (size or SHA-256 "
                        "differs); --resume needs the same inputs (or --force to start over)");
    }
    for (const auto& [key, value] : now.items()) {
        const Json old = before.contains(key) ? before[key] : Json();
        if (old != value)
            throw Error(journal_path + ": the unfinished prepare had " + key + " = " + shortened(old) +
                        ", this one " + shortened(value) +
                        "; --resume needs the same inputs and options (or --force to start over)");
    }
    throw Error(journal_path + ": the unfinished prepare was made with other settings; --force starts over");
}

}  // namespace mixgpt
