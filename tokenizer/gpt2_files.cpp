#include "tokenizer/gpt2_files.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/utf8.h"

namespace mixgpt {
namespace {

namespace fs = std::filesystem;

// The pairs of file names, main file first.
constexpr std::array<std::array<const char*, 2>, 2> kFilePairs = {
    {{"encoder.json", "vocab.bpe"}, {"vocab.json", "merges.txt"}}};
constexpr const char* kTiktokenExtension = ".tiktoken";
constexpr char32_t kAlphabetEnd = 0x144;  // the byte alphabet uses code points below U+0144

bool is_tiktoken(const fs::path& path) { return path.extension() == kTiktokenExtension; }

std::string read_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    MIXGPT_REQUIRE(file.good(), path + ": cannot open (missing or unreadable)");
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    MIXGPT_REQUIRE(!file.bad(), path + ": cannot read");
    return bytes;
}

// bytes_to_unicode of GPT-2's encoder.py: printable Latin-1 bytes stand for themselves, the
// others (controls, space, DEL, NBSP, soft hyphen) for U+0100 onwards in byte order.
std::array<char32_t, 256> byte_characters() {
    std::array<char32_t, 256> characters{};
    char32_t next_extra = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
        const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
        characters[static_cast<size_t>(byte)] = printable ? static_cast<char32_t>(byte) : next_extra++;
    }
    return characters;
}

const std::array<char32_t, 256>& byte_character_table() {
    static const std::array<char32_t, 256> table = byte_characters();
    return table;
}

// The byte each alphabet character stands for, -1 for other characters.
const std::array<int, kAlphabetEnd>& character_byte_table() {
    static const std::array<int, kAlphabetEnd> table = [] {
        std::array<int, kAlphabetEnd> bytes;
        bytes.fill(-1);
        for (int byte = 0; byte < 256; ++byte)
            bytes[byte_character_table()[static_cast<size_t>(byte)]] = byte;
        return bytes;
    }();
    return table;
}

void append_utf8(char32_t c, std::string& out) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else {  // the alphabet ends below U+0800: two bytes
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

// The bytes a token written in the byte alphabet stands for.
std::string alphabet_text_bytes(const std::string& text, const std::string& where) {
    std::string bytes;
    for (size_t i = 0; i < text.size();) {
        char32_t c = 0;
        const size_t length = utf8::decode_character(text.data() + i, text.size() - i, c);
        MIXGPT_REQUIRE(length > 0, where + ": token '" + text + "' is not valid UTF-8");
        const int byte = c < kAlphabetEnd ? character_byte_table()[c] : -1;
        MIXGPT_REQUIRE(byte >= 0,
                       where + ": token '" + text +
                           "' has a character outside GPT-2's byte alphabet (not a byte-level BPE)");
        bytes += static_cast<char>(byte);
        i += length;
    }
    return bytes;
}

using TokenIds = std::unordered_map<std::string, int32_t>;

TokenIds ids_of_tokens(const Gpt2Vocabulary& vocabulary, const std::string& path) {
    TokenIds ids;
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id) {
        MIXGPT_REQUIRE(ids.emplace(vocabulary.tokens[id], static_cast<int32_t>(id)).second,
                       format("%s: token %zu repeats the bytes of token %d", path.c_str(), id,
                              ids.at(vocabulary.tokens[id])));
    }
    return ids;
}

void read_json_vocabulary(const std::string& path, Gpt2Vocabulary& vocabulary) {
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(read_file(path));
    } catch (const nlohmann::json::parse_error& error) {
        throw Error(path + ": not JSON (" + error.what() + ")");
    }
    MIXGPT_REQUIRE(json.is_object() && !json.empty(), path + ": not a JSON object of token -> id");
    vocabulary.tokens.assign(json.size(), std::string());
    std::vector<bool> seen(json.size(), false);
    for (const auto& [token, id] : json.items()) {
        MIXGPT_REQUIRE(
            id.is_number_integer() && id.get<int64_t>() >= 0 &&
                id.get<int64_t>() < static_cast<int64_t>(json.size()) && !seen[id.get<size_t>()],
            path + ": token '" + token + "' has id " + id.dump() + " (ids must be 0 .. size - 1, each once)");
        seen[id.get<size_t>()] = true;
        vocabulary.tokens[id.get<size_t>()] = alphabet_text_bytes(token, path);
        if (token == kGpt2EndOfText) vocabulary.eot_id = id.get<int32_t>();
    }
}

void read_merges(const std::string& path, Gpt2Vocabulary& vocabulary, const TokenIds& ids) {
    const std::string text = read_file(path);
    size_t line_number = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
        const size_t space = line.find(' ');
        const std::string where = format("%s:%zu", path.c_str(), line_number);
        MIXGPT_REQUIRE(space != std::string::npos && space > 0 &&
                           line.find(' ', space + 1) == std::string::npos && space + 1 < line.size(),
                       where + ": expected two tokens separated by one space, got '" + line + "'");
        const std::string left = alphabet_text_bytes(line.substr(0, space), where);
        const std::string right = alphabet_text_bytes(line.substr(space + 1), where);
        const auto left_id = ids.find(left), right_id = ids.find(right);
        MIXGPT_REQUIRE(left_id != ids.end() && right_id != ids.end(),
                       where + ": merge '" + line + "' joins a token that is not in the vocabulary");
        vocabulary.merges.emplace_back(left_id->second, right_id->second);
    }
}

std::string base64_decode(std::string_view text, const std::string& where) {
    static const std::array<int, 256> values = [] {
        std::array<int, 256> table;
        table.fill(-1);
        const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(alphabet[i])] = i;
        return table;
    }();
    MIXGPT_REQUIRE(!text.empty() && text.size() % 4 == 0,
                   where + ": '" + std::string(text) + "' is not base64");
    std::string bytes;
    uint32_t bits = 0;
    int bit_count = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '=' && i + 2 >= text.size()) continue;
        const int value = values[static_cast<unsigned char>(c)];
        MIXGPT_REQUIRE(value >= 0, where + ": '" + std::string(text) + "' is not base64");
        bits = (bits << 6) | static_cast<uint32_t>(value);
        bit_count += 6;
        if (bit_count >= 8) {
            bit_count -= 8;
            bytes += static_cast<char>((bits >> bit_count) & 0xFF);
        }
    }
    return bytes;
}

void read_tiktoken(const std::string& path, Gpt2Vocabulary& vocabulary) {
    const std::string text = read_file(path);
    // Ranks run 0..N-1 over the file's N lines: a larger one is refused before anything is sized by it.
    const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    std::vector<bool> seen;
    size_t line_number = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        ++line_number;
        if (line.empty()) continue;
        const std::string where = format("%s:%zu", path.c_str(), line_number);
        const size_t space = line.find(' ');
        MIXGPT_REQUIRE(space != std::string::npos, where + ": expected 'base64 rank'");
        size_t rank = 0;
        try {
            size_t used = 0;
            rank = std::stoul(std::string(line.substr(space + 1)), &used);
            MIXGPT_REQUIRE(used == line.size() - space - 1, where + ": rank is not a number");
        } catch (const std::logic_error&) {
            throw Error(where + ": rank is not a number");
        }
        MIXGPT_REQUIRE(rank < lines, where + format(": rank %zu is not below the file's %zu lines (ranks run from "
                                                    "0, one per line)",
                                                    rank, lines));
        if (rank >= vocabulary.tokens.size()) {
            vocabulary.tokens.resize(rank + 1);
            seen.resize(rank + 1, false);
        }
        MIXGPT_REQUIRE(!seen[rank], where + format(": rank %zu appears twice", rank));
        seen[rank] = true;
        vocabulary.tokens[rank] = base64_decode(line.substr(0, space), where);
    }
    for (size_t rank = 0; rank < seen.size(); ++rank)
        MIXGPT_REQUIRE(seen[rank],
                       path + format(": rank %zu is missing (ranks must be 0 .. count - 1)", rank));
    MIXGPT_REQUIRE(!vocabulary.tokens.empty(), path + ": no ranks");
    vocabulary.eot_id = static_cast<int32_t>(vocabulary.tokens.size());
    vocabulary.tokens.push_back(kGpt2EndOfText);
}

// The merge that makes each token of two or more bytes, in rank order: BPE on the token's
// bytes with the tokens ranked before it ends in exactly two parts.
void rebuild_merges(const std::string& path, Gpt2Vocabulary& vocabulary, const TokenIds& ids) {
    std::vector<std::string> parts;
    for (int32_t rank = 0; rank < vocabulary.eot_id; ++rank) {
        const std::string& token = vocabulary.tokens[static_cast<size_t>(rank)];
        if (token.size() < 2) continue;
        parts.clear();
        for (char byte : token) parts.emplace_back(1, byte);
        while (parts.size() > 2) {
            size_t best = parts.size();
            int32_t best_rank = rank;
            for (size_t i = 0; i + 1 < parts.size(); ++i) {
                const auto found = ids.find(parts[i] + parts[i + 1]);
                if (found != ids.end() && found->second < best_rank) {
                    best_rank = found->second;
                    best = i;
                }
            }
            if (best == parts.size()) break;
            parts[best] += parts[best + 1];
            parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
        }
        const auto left = ids.find(parts[0]);
        const auto right = parts.size() == 2 ? ids.find(parts[1]) : ids.end();
        MIXGPT_REQUIRE(
            parts.size() == 2 && left != ids.end() && right != ids.end() && left->second < rank &&
                right->second < rank,
            path + format(": the token of rank %d is not made by merging two tokens ranked before it", rank));
        vocabulary.merges.emplace_back(left->second, right->second);
    }
}

// `vocabulary_path` is named for the tokens, `path` for the merges.
void validate(const Gpt2Vocabulary& vocabulary, const TokenIds& ids, const std::string& vocabulary_path,
              const std::string& path) {
    for (int byte = 0; byte < 256; ++byte)
        MIXGPT_REQUIRE(
            ids.count(std::string(1, static_cast<char>(byte))) == 1,
            vocabulary_path + format(": no token for the byte 0x%02X (not a byte-level BPE)", byte));
    MIXGPT_REQUIRE(vocabulary.eot_id >= 0, vocabulary_path + ": no " + kGpt2EndOfText + " token");
    // made[id]: the rank of the merge that makes token id (-1: a single byte or never made).
    std::vector<int64_t> made(vocabulary.tokens.size(), -1);
    for (size_t rank = 0; rank < vocabulary.merges.size(); ++rank) {
        const auto [left, right] = vocabulary.merges[rank];
        const auto result = ids.find(vocabulary.tokens[static_cast<size_t>(left)] +
                                     vocabulary.tokens[static_cast<size_t>(right)]);
        MIXGPT_REQUIRE(result != ids.end(),
                       path + format(": merge %zu makes a token that is not in the vocabulary", rank));
        MIXGPT_REQUIRE(
            made[static_cast<size_t>(result->second)] < 0,
            path + format(": merges %lld and %zu make the same token",
                          static_cast<long long>(made[static_cast<size_t>(result->second)]), rank));
        for (int32_t part : {left, right}) {
            const bool byte = vocabulary.tokens[static_cast<size_t>(part)].size() == 1;
            MIXGPT_REQUIRE(byte || (made[static_cast<size_t>(part)] >= 0),
                           path + format(": merge %zu uses a token that no earlier merge makes", rank));
        }
        made[static_cast<size_t>(result->second)] = static_cast<int64_t>(rank);
    }
    // Every token but the bytes and <|endoftext|> is made by a merge: a merge file cut short
    // (to half its merges, to its version line) leaves tokens BPE never produces.
    for (size_t id = 0; id < vocabulary.tokens.size(); ++id) {
        const std::string& token = vocabulary.tokens[id];
        MIXGPT_REQUIRE(made[id] >= 0 || token.size() == 1 || static_cast<int32_t>(id) == vocabulary.eot_id,
                       path + format(": %zu merges, but %s holds %zu tokens (256 bytes, %s and one per merge; "
                                     "cut short?): no merge makes token %zu '%s'",
                                     vocabulary.merges.size(), vocabulary_path.c_str(), vocabulary.tokens.size(),
                                     kGpt2EndOfText, id, byte_alphabet_text(token).c_str()));
    }
}

}  // namespace

bool is_gpt2_tokenizer_path(const std::string& path) {
    const fs::path file(path);
    if (fs::is_directory(file) || is_tiktoken(file)) return true;
    const std::string name = file.filename().string();
    for (const auto& pair : kFilePairs)
        if (name == pair[0] || name == pair[1]) return true;
    return false;
}

std::vector<std::string> find_gpt2_files(const std::string& path) {
    const fs::path given(path);
    if (fs::is_directory(given)) {
        for (const auto& pair : kFilePairs)
            if (fs::exists(given / pair[0]) && fs::exists(given / pair[1]))
                return {(given / pair[0]).string(), (given / pair[1]).string()};
        std::vector<std::string> rank_files;
        for (const auto& entry : fs::directory_iterator(given))
            if (entry.is_regular_file() && is_tiktoken(entry.path()))
                rank_files.push_back(entry.path().string());
        MIXGPT_REQUIRE(rank_files.size() <= 1, path + ": holds several .tiktoken files; name one");
        MIXGPT_REQUIRE(
            rank_files.size() == 1,
            path +
                ": no GPT-2 tokenizer files (encoder.json + vocab.bpe, vocab.json + merges.txt, or "
                "a .tiktoken rank file)");
        return rank_files;
    }
    MIXGPT_REQUIRE(fs::exists(given), path + ": no such file or directory");
    if (is_tiktoken(given)) return {path};
    const std::string name = given.filename().string();
    for (const auto& pair : kFilePairs) {
        if (name != pair[0] && name != pair[1]) continue;
        const fs::path main = given.parent_path() / pair[0], other = given.parent_path() / pair[1];
        MIXGPT_REQUIRE(fs::exists(main) && fs::exists(other),
                       path + ": GPT-2's " + pair[0] + " and " + pair[1] + " must lie side by side");
        return {main.string(), other.string()};
    }
    throw Error(path +
                ": not a GPT-2 tokenizer file (encoder.json, vocab.bpe, vocab.json, merges.txt, *.tiktoken)");
}

Gpt2Vocabulary read_gpt2_vocabulary(const std::vector<std::string>& files) {
    MIXGPT_REQUIRE(!files.empty(), "no GPT-2 tokenizer files given");
    Gpt2Vocabulary vocabulary;
    const std::string& path = files.front();
    if (files.size() == 1) {
        read_tiktoken(path, vocabulary);
        const TokenIds ids = ids_of_tokens(vocabulary, path);
        rebuild_merges(path, vocabulary, ids);
        validate(vocabulary, ids, path, path);
    } else {
        read_json_vocabulary(path, vocabulary);
        const TokenIds ids = ids_of_tokens(vocabulary, path);
        read_merges(files.at(1), vocabulary, ids);
        validate(vocabulary, ids, path, files.at(1));
    }
    return vocabulary;
}

std::string byte_alphabet_text(std::string_view bytes) {
    std::string text;
    for (char byte : bytes) append_utf8(byte_character_table()[static_cast<unsigned char>(byte)], text);
    return text;
}

}  // namespace mixgpt
