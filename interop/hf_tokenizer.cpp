#include "interop/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

}  // namespace

void write_hf_tokenizer(const Tokenizer& tokenizer, int model_max_length, const std::string& directory) {
    const fs::path folder(directory);
    std::error_code error;
    fs::copy_file(tokenizer.path(), folder / kTokenizerModelFile, fs::copy_options::overwrite_existing,
                  error);
    MIXGPT_REQUIRE(!error,
                   tokenizer.path() + ": cannot copy into " + directory + " (" + error.message() + ")");
    const std::string eot(tokenizer.surface(tokenizer.eot_id()));
    const std::string unk = "<unk>";
    const Json config = {{"tokenizer_class", "LlamaTokenizer"},
                         {"legacy", true},
                         {"add_bos_token", false},
                         {"add_eos_token", false},
                         {"add_prefix_space", false},
                         {"bos_token", eot},
                         {"eos_token", eot},
                         {"unk_token", unk},
                         {"pad_token", nullptr},
                         {"clean_up_tokenization_spaces", false},
                         {"spaces_between_special_tokens", false},
                         {"use_default_system_prompt", false},
                         {"sp_model_kwargs", Json::object()},
                         {"model_max_length", model_max_length}};
    write_whole_file((folder / "tokenizer_config.json").string(), config.dump(2) + "\n");
    const Json special = {{"bos_token", eot}, {"eos_token", eot}, {"unk_token", unk}};
    write_whole_file((folder / "special_tokens_map.json").string(), special.dump(2) + "\n");
}

Tokenizer load_hf_tokenizer(const std::string& directory) {
    const fs::path folder(directory);
    if (fs::exists(folder / kTokenizerModelFile))
        return Tokenizer::load((folder / kTokenizerModelFile).string());
    MIXGPT_REQUIRE(!fs::exists(folder / "vocab.json") && !fs::exists(folder / "merges.txt"),
                   directory +
                       ": unsupported tokenizer: GPT-2 byte-level BPE (vocab.json/merges.txt); mixgpt "
                       "needs a SentencePiece tokenizer.model with byte fallback");
    MIXGPT_REQUIRE(!fs::exists(folder / "tokenizer.json"),
                   directory +
                       ": unsupported tokenizer: tokenizer.json without tokenizer.model; mixgpt needs a "
                       "SentencePiece tokenizer.model with byte fallback");
    throw Error(directory + ": no tokenizer.model (mixgpt needs a SentencePiece tokenizer)");
}

}  // namespace mixgpt::interop
