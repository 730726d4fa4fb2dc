#include "tokenizer/input_sniff.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "tokenizer/input_stream.h"
#include "tokenizer/text_check.h"

namespace mixgpt {
namespace {

struct Signature {
    size_t offset;
    std::string_view bytes;
    const char* looks_like;
};

using namespace std::string_view_literals;

// clang-format off
const Signature kSignatures[] = {
    {0, "PAR1"sv, "a Parquet file (stream it as JSON lines: scripts/parquet_to_jsonl.py FILE | mixgpt prepare -)"},
    {0, "PK\x03\x04"sv, "a zip archive"},
    {0, "PK\x05\x06"sv, "a zip archive"},
    {0, "\x7f" "ELF"sv, "an ELF executable or library"},
    {0, "%PDF-"sv, "a PDF document"},
    {0, "\x89PNG\r\n\x1a\n"sv, "a PNG image"},
    {0, "\xff\xd8\xff"sv, "a JPEG image"},
    {0, "GIF87a"sv, "a GIF image"},
    {0, "GIF89a"sv, "a GIF image"},
    {0, "\x89HDF\r\n\x1a\n"sv, "an HDF5 file"},
    {0, "7z\xbc\xaf\x27\x1c"sv, "a 7-Zip archive"},
    {0, "ARROW1"sv, "an Arrow IPC file"},
    {0, "\x93NUMPY"sv, "a NumPy array file"},
    {0, "SQLite format 3\0"sv, "an SQLite database"},
    {0, "BZh"sv, "bzip2-compressed data (not read: decompress it, or recompress it with zstd, xz or gzip)"},
    {0, "\x04\x22\x4d\x18"sv, "lz4-compressed data (not read: decompress it, or recompress it with zstd, xz or gzip)"},
    {257, "ustar"sv, "a tar archive (unpack it and give the folder)"},
};
// clang-format on

std::string signature_kind(std::string_view head) {
    for (const Signature& signature : kSignatures) {
        if (head.size() >= signature.offset + signature.bytes.size() &&
            head.substr(signature.offset, signature.bytes.size()) == signature.bytes)
            return signature.looks_like;
    }
    return "";
}

// Why `head` is not text (tokenizer/text_check.h), or "". `whole`: the head is the whole input.
std::string not_text_reason(const std::string& path, const std::string& head, bool whole) {
    try {
        TextCheck check(path);
        check.add(head.data(), head.size());
        if (whole) check.finish();
    } catch (const NotTextError& error) {
        return error.reason();
    }
    return "";
}

bool starts_json_lines(std::string_view head) {
    const size_t begin = head.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos || head[begin] != '{') return false;
    const size_t newline = head.find('\n', begin);
    if (newline == std::string_view::npos) return head.size() >= kSniffBytes;  // one long line so far
    const std::string_view line = head.substr(begin, newline - begin);
    const auto record = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    return !record.is_discarded() && record.is_object();
}

}  // namespace

InputSniff sniff_input(const std::string& path) {
    InputStream stream(path, StreamUse::replayable, TextJudgement::none);
    std::string head(kSniffBytes, '\0');
    size_t filled = 0;
    while (filled < head.size()) {
        const size_t count = stream.read(head.data() + filled, head.size() - filled);
        if (count == 0) break;
        filled += count;
    }
    head.resize(filled);
    InputSniff sniff;
    sniff.compression = stream.compression();
    sniff.binary = signature_kind(head);
    if (sniff.binary.empty()) sniff.not_text = not_text_reason(path, head, filled < kSniffBytes);
    sniff.json_lines = sniff.binary.empty() && sniff.not_text.empty() && starts_json_lines(head);
    return sniff;
}

}  // namespace mixgpt
