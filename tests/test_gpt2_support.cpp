#include "tests/test_gpt2_support.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tests/test_support.h"

namespace mixgpt::testing {
namespace {

std::string fixture_path(const std::string& file) {
    const char* directory = std::getenv("MIXGPT_FIXTURES");
    return std::string(directory != nullptr ? directory : "tests/fixtures") + "/gpt2/" + file;
}

std::string read_gzip(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr)
        throw std::runtime_error(path + ": cannot open (run the tests from the repository root)");
    std::string content;
    char buffer[1 << 16];
    int read = 0;
    while ((read = gzread(file, buffer, sizeof buffer)) > 0)
        content.append(buffer, static_cast<size_t>(read));
    const bool failed = read < 0;
    gzclose(file);
    if (failed) throw std::runtime_error(path + ": corrupt gzip data");
    return content;
}

}  // namespace

const std::string& gpt2_files_directory() {
    static const test::TempDirectory directory("mixgpt_gpt2_files");
    static const std::string path = [] {
        for (const char* name : {"encoder.json", "vocab.bpe"})
            directory.write(name, read_gzip(fixture_path(std::string(name) + ".gz")));
        return directory.path();
    }();
    return path;
}

const Tokenizer& gpt2_tokenizer() {
    static const Tokenizer tokenizer = Tokenizer::load(gpt2_files_directory());
    return tokenizer;
}

const Gpt2Reference& gpt2_reference() {
    static const Gpt2Reference reference = [] {
        std::ifstream file(fixture_path("reference.json"));
        if (!file) throw std::runtime_error(fixture_path("reference.json") + ": cannot open");
        const nlohmann::json json = nlohmann::json::parse(file);
        Gpt2Reference made;
        for (const auto& document : json.at("documents"))
            made.documents.emplace_back(document.at("text").get<std::string>(),
                                        document.at("ids").get<std::vector<int32_t>>());
        made.kjv_text_sha256 = json.at("kjv").at("text_sha256").get<std::string>();
        for (const auto& chapter : json.at("kjv").at("chapters"))
            made.kjv_chapters.emplace_back(chapter.at(0).get<int64_t>(), chapter.at(1).get<std::string>());
        made.r50k_base_sha256 = json.at("r50k_base_tiktoken_sha256").get<std::string>();
        return made;
    }();
    return reference;
}

std::string ids_text(const std::vector<int32_t>& ids) {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) text += (i ? " " : "") + std::to_string(ids[i]);
    return text;
}

}  // namespace mixgpt::testing
