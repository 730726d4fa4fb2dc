#include "tests/test_tokenizer_support.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <stdexcept>

#include "core/h5.h"
#include "core/sha256.h"
#include "tests/test_support.h"
#include "tokenizer/dataset.h"
#include "tokenizer/dataset_index.h"
#include "tokenizer/tokenizer_trainer.h"

namespace mixgpt::testing {

std::vector<std::string> multilingual_documents(int count, uint32_t seed) {
    static const std::vector<std::string> words = {
        "the",      "of",     "and",       "to",       "in",    "a",      "is",      "that",  "for",
        "it",       "as",     "was",       "with",     "be",    "by",     "on",      "not",   "he",
        "this",     "are",    "or",        "his",      "from",  "at",     "which",   "but",   "have",
        "an",       "had",    "they",      "you",      "were",  "their",  "one",     "all",   "we",
        "can",      "her",    "has",       "there",    "been",  "if",     "more",    "when",  "will",
        "would",    "who",    "so",        "no",       "model", "token",  "data",    "train", "learning",
        "language", "mixed",  "precision", "gradient", "batch", "window", "Genesis", "light", "darkness",
        "earth",    "heaven", "waters"};
    static const std::vector<std::string> foreign = {
        "Über die Brücke gehen wir schnell, süß und schön.",
        "Le cœur a ses raisons que la raison ne connaît point.",
        "Ελληνικά: γνῶθι σεαυτόν.",
        "Русский язык: съешь же ещё этих мягких французских булок.",
        "机器学习模型在大规模数据上训练。",
        "日本語のテキストも含まれています。",
        "한국어 문장도 있습니다.",
        "emoji 😀 👍🏽 👩‍💻 🇫🇷 ❤️ end",
        "combining: e\xCC\x81 a\xCC\x8A n\xCC\x83 (decomposed) vs é å ñ",
        "عربي: مرحبا بالعالم",
    };
    static const std::vector<std::string> separators = {" ", " ", " ", " ", "  ", ", ", "; ", "\t", " - "};
    std::mt19937 random(seed);
    auto pick = [&](const std::vector<std::string>& list) { return list[random() % list.size()]; };
    std::vector<std::string> documents;
    for (int d = 0; d < count; ++d) {
        std::string text;
        const int lines = 3 + static_cast<int>(random() % 8);
        for (int line = 0; line < lines; ++line) {
            if (random() % 4 == 0) {
                text += pick(foreign);
            } else {
                const int length = 5 + static_cast<int>(random() % 15);
                for (int w = 0; w < length; ++w) {
                    if (w > 0) text += pick(separators);
                    text += random() % 10 == 0 ? std::to_string(random() % 10000) : pick(words);
                }
                text += random() % 3 == 0 ? "." : "!";
            }
            text += random() % 5 == 0 ? "\n\n" : "\n";
        }
        documents.push_back(text);
    }
    return documents;
}

namespace {

struct TinyTokenizer {
    test::TempDirectory directory{"mixgpt_tokenizer_test"};
    std::string path = directory.file("tiny.model");
    Tokenizer tokenizer = train();

    Tokenizer train() const {
        TrainingSample sample;
        for (const std::string& document : multilingual_documents(60, 1)) sample.add_text(document);
        TokenizerTrainingOptions options;
        options.vocab_size = 500;
        std::ofstream(path, std::ios::binary) << train_tokenizer(sample, options);
        return Tokenizer::load(path);
    }
};

const TinyTokenizer& tiny() {
    static const TinyTokenizer instance;
    return instance;
}

}  // namespace

const Tokenizer& tiny_tokenizer() { return tiny().tokenizer; }
const std::string& tiny_tokenizer_path() { return tiny().path; }

std::string read_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error(path + ": cannot open");
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

void write_gzip(const std::string& path, const std::string& content) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (file == nullptr) throw std::runtime_error(path + ": cannot create");
    gzwrite(file, content.data(), static_cast<unsigned>(content.size()));
    gzclose(file);
}

std::string zstd_compressed(const std::string& content) {
    std::string out(ZSTD_compressBound(content.size()), '\0');
    const size_t size = ZSTD_compress(out.data(), out.size(), content.data(), content.size(), 3);
    if (ZSTD_isError(size)) throw std::runtime_error("zstd: cannot compress");
    out.resize(size);
    return out;
}

std::string xz_compressed(const std::string& content) {
    std::string out(lzma_stream_buffer_bound(content.size()), '\0');
    size_t size = 0;
    if (lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr,
                                reinterpret_cast<const uint8_t*>(content.data()), content.size(),
                                reinterpret_cast<uint8_t*>(out.data()), &size, out.size()) != LZMA_OK)
        throw std::runtime_error("xz: cannot compress");
    out.resize(size);
    return out;
}

std::vector<int32_t> read_tokens(const std::string& dataset, const std::string& split) {
    std::vector<int32_t> tokens;
    for (const ShardInfo& shard : read_dataset_info(dataset).shards) {
        const h5::File file = h5::File::open_read(shard.path);
        const std::string name = "/" + split + "/tokens";
        const size_t before = tokens.size();
        tokens.resize(before + static_cast<size_t>(file.shape(name).at(0)));
        file.read(name, h5::Type::i32, tokens.data() + before, static_cast<int64_t>(tokens.size() - before));
    }
    return tokens;
}

std::vector<int64_t> read_offsets(const std::string& dataset, const std::string& split) {
    std::vector<int64_t> offsets = {0};
    for (const ShardInfo& shard : read_dataset_info(dataset).shards) {
        const h5::File file = h5::File::open_read(shard.path);
        const std::string name = "/" + split + "/doc_offsets";
        std::vector<int64_t> part(static_cast<size_t>(file.shape(name).at(0)));
        file.read(name, h5::Type::i64, part.data(), static_cast<int64_t>(part.size()));
        const int64_t base = offsets.back();
        for (size_t d = 1; d < part.size(); ++d) offsets.push_back(base + part[d]);
    }
    return offsets;
}

void write_counting_dataset(const std::string& path, int64_t tokens, int vocab_size,
                            const std::string& tokenizer_sha256) {
    DatasetMetadata metadata;
    metadata.vocab_size = vocab_size;
    metadata.eot_id = static_cast<int32_t>(tokens - 1);
    metadata.tokenizer.sha256 = tokenizer_sha256;
    metadata.command = "write_counting_dataset";
    std::vector<int32_t> counting(static_cast<size_t>(tokens - 1));
    std::iota(counting.begin(), counting.end(), 0);
    DatasetWriter writer(path, metadata);
    writer.add_document(Split::train, counting, tokens);
    writer.add_document(Split::val, counting, tokens);
    writer.finish(0, 0);
}

void write_counting_folder(const std::string& folder, const std::vector<int64_t>& shard_tokens,
                           int vocab_size, int32_t start_step, int32_t first_token) {
    std::filesystem::create_directories(folder);
    DatasetIndex index;
    index.tokenizer = {"sentencepiece", {"tokenizer.model"}, "counting"};
    index.vocab_size = vocab_size;
    index.eot_id = vocab_size - 1;
    index.shard_tokens = 1;
    index.commands = {"write_counting_folder"};
    int64_t document = 0;
    for (size_t s = 0; s < shard_tokens.size(); ++s) {
        DatasetMetadata metadata;
        metadata.vocab_size = vocab_size;
        metadata.eot_id = vocab_size - 1;
        metadata.tokenizer.sha256 = "counting";
        metadata.command = "write_counting_folder";
        std::vector<int32_t> counting(static_cast<size_t>(shard_tokens[s] - 1));
        std::iota(counting.begin(), counting.end(), first_token + static_cast<int32_t>(s) * start_step);
        ShardRecord record;
        record.file = shard_file_name(static_cast<int64_t>(s));
        const std::string path = folder + "/" + record.file;
        {
            DatasetWriter writer(path, metadata);
            writer.add_document(Split::train, counting, shard_tokens[s]);
            writer.add_document(Split::val, counting, shard_tokens[s]);
            writer.finish(0, 0);
            record.train = record.val = writer.info(Split::train);
        }
        record.bytes = std::filesystem::file_size(path);
        record.sha256 = sha256_file_hex(path);
        record.first_document = document;
        document += 2;
        index.shards.push_back(record);
    }
    write_index(folder + "/" + kIndexFileName, index);
}

}  // namespace mixgpt::testing
