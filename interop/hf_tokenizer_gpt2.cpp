#include "interop/hf_tokenizer_gpt2.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/output_file.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

Json byte_level(bool add_prefix_space, bool trim_offsets) {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", add_prefix_space},
            {"trim_offsets", trim_offsets},
            {"use_regex", true}};
}

// `object` (a JSON object) with the fields `name: raw_json` added at its end. The vocabulary is
// written as text: an ordered_json object of 50,257 keys would take quadratic time to build.
std::string with_raw_fields(const Json& object,
                            const std::vector<std::pair<std::string, std::string>>& fields) {
    std::string text = object.dump();
    text.pop_back();  // the closing brace
    for (const auto& [name, raw] : fields)
        text += (text.size() > 1 ? "," : "") + Json(name).dump() + ":" + raw;
    return text + "}";
}

// {"token": id, ...} in id order, tokens in GPT-2's byte alphabet.
std::string vocab_json_text(const Gpt2Vocabulary& vocabulary) {
    std::string text = "{";
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id)
        text += (id ? "," : "") + Json(byte_alphabet_text(vocabulary.tokens[id])).dump() + ":" +
                std::to_string(id);
    return text + "}";
}

}  // namespace

void write_hf_gpt2_tokenizer(const Gpt2Tokenizer& tokenizer, int model_max_length,
                             const std::string& directory) {
    const fs::path folder(directory);
    const Gpt2Vocabulary& vocabulary = tokenizer.vocabulary();
    const std::string vocab = vocab_json_text(vocabulary);
    Json merges = Json::array();
    std::string merges_text = "#version: 0.2\n";
    for (const auto& [left, right] : vocabulary.merges) {
        const std::string merge = byte_alphabet_text(vocabulary.tokens[static_cast<size_t>(left)]) + " " +
                                  byte_alphabet_text(vocabulary.tokens[static_cast<size_t>(right)]);
        merges.push_back(merge);
        merges_text += merge + "\n";
    }
    const std::string eot(tokenizer.surface(tokenizer.eot_id()));
    const Json added_token = {{"id", tokenizer.eot_id()}, {"content", eot},  {"single_word", false},
                              {"lstrip", false},          {"rstrip", false}, {"normalized", true},
                              {"special", true}};
    const Json head = {{"version", "1.0"},
                       {"truncation", nullptr},
                       {"padding", nullptr},
                       {"added_tokens", Json::array({added_token})},
                       {"normalizer", nullptr},
                       {"pre_tokenizer", byte_level(false, true)},
                       {"post_processor", byte_level(true, false)},
                       {"decoder", byte_level(true, true)}};
    const Json model = {{"type", "BPE"},
                        {"dropout", nullptr},
                        {"unk_token", nullptr},
                        {"continuing_subword_prefix", ""},
                        {"end_of_word_suffix", ""},
                        {"fuse_unk", false},
                        {"byte_fallback", false}};
    const std::string model_text = with_raw_fields(model, {{"vocab", vocab}, {"merges", merges.dump()}});
    const Json config = {{"tokenizer_class", "GPT2Tokenizer"},
                         {"add_bos_token", false},
                         {"add_prefix_space", false},
                         {"bos_token", eot},
                         {"eos_token", eot},
                         {"unk_token", eot},
                         {"pad_token", nullptr},
                         {"clean_up_tokenization_spaces", false},
                         {"errors", "replace"},
                         {"model_max_length", model_max_length}};
    const Json special = {{"bos_token", eot}, {"eos_token", eot}, {"unk_token", eot}};
    write_whole_file((folder / "vocab.json").string(), vocab + "\n");
    write_whole_file((folder / "merges.txt").string(), merges_text);
    write_whole_file((folder / "tokenizer.json").string(),
                     with_raw_fields(head, {{"model", model_text}}) + "\n");
    write_whole_file((folder / "tokenizer_config.json").string(), config.dump(2) + "\n");
    write_whole_file((folder / "special_tokens_map.json").string(), special.dump(2) + "\n");
}

}  // namespace mixgpt::interop
