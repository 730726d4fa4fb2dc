#include "interop/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"
#include "interop/hf_tokenizer_gpt2.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

}  // namespace

void write_hf_tokenizer(const Tokenizer& tokenizer, int model_max_length, const std::string& directory) {
    if (tokenizer.kind() == TokenizerKind::gpt2) {
        write_hf_gpt2_tokenizer(*gpt2_model(tokenizer), model_max_length, directory);
        return;
    }
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
    if (fs::exists(folder / "vocab.json") || fs::exists(folder / "merges.txt"))
        return Tokenizer::load((folder / "vocab.json").string());
    MIXGPT_REQUIRE(!fs::exists(folder / "tokenizer.json"),
                   directory +
                       ": unsupported tokenizer: tokenizer.json alone; mixgpt needs a SentencePiece "
                       "tokenizer.model with byte fallback, or GPT-2's vocab.json + merges.txt");
    throw Error(directory +
                ": no tokenizer.model, no vocab.json + merges.txt (mixgpt needs a SentencePiece or a "
                "GPT-2 tokenizer)");
}

std::string copy_tokenizer_files(const Tokenizer& tokenizer, const std::string& directory) {
    std::vector<std::string> names;
    for (const std::string& file : tokenizer.files())
        names.push_back(tokenizer.kind() == TokenizerKind::sentencepiece
                            ? std::string(kTokenizerModelFile)
                            : fs::path(file).filename().string());
    for (size_t i = 0; i < names.size(); ++i) {
        std::error_code error;
        fs::copy_file(tokenizer.files()[i], fs::path(directory) / names[i], error);
        MIXGPT_REQUIRE(!error, tokenizer.files()[i] + ": cannot copy (" + error.message() + ")");
    }
    return names.front();
}

std::string hf_tokenizer_description(const Tokenizer& tokenizer) {
    if (tokenizer.kind() == TokenizerKind::gpt2)
        return "The tokenizer is GPT-2's byte-level BPE (50,257 tokens, `<|endoftext|>` between documents): "
               "`vocab.json`, `merges.txt` and `tokenizer.json`, loaded by transformers as a "
               "GPT2TokenizerFast "
               "with no BOS/EOS added.";
    return "The tokenizer is mixgpt's SentencePiece model (`tokenizer.model`, byte fallback, "
           "`<|endoftext|>` between documents), loaded by transformers as a LlamaTokenizer in legacy mode "
           "with no BOS/EOS added.";
}

}  // namespace mixgpt::interop
