// libFuzzer target: the corpus readers of `mixgpt prepare` (tokenizer/corpus.cpp,
// document_readers.cpp, input_stream.cpp, byte_source.cpp, decompressor.cpp, input_sniff.cpp,
// segment_builder.cpp, utf8.cpp): plain text with one document per file, with separator lines or
// blank-line paragraphs, and JSONL (strict or with --skip-bad-lines), each plain or gzip-, zstd-
// or xz-compressed (detected from the content; the raw input itself may be any of them too). The
// first input byte picks the reader; the rest is the file. The file is sniffed as resolve_inputs
// does, every document is read to its end, a tokenizer sample is drawn, and reading starts again
// from the end of the first document; bad input may only throw mixgpt::Error. Checked: segments
// begin and end documents in order, and the resumed reading gives the same documents.
#include <lzma.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/corpus.h"
#include "tokenizer/input_sniff.h"

namespace {

// One in-memory file for the whole run, reached through /proc/self/fd: no disk writes.
struct MemoryFile {
    int descriptor = ::memfd_create("corpus", 0);
    std::string path = "/proc/self/fd/" + std::to_string(descriptor);

    void fill(const std::string& bytes) const {
        if (::ftruncate(descriptor, 0) != 0 ||
            ::pwrite(descriptor, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
            __builtin_trap();
    }
};

std::string gzip(const std::string& bytes) {
    uLongf size = compressBound(static_cast<uLong>(bytes.size())) + 32;
    std::string out(size, '\0');
    z_stream stream{};
    if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        __builtin_trap();
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    stream.avail_in = static_cast<uInt>(bytes.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(size);
    if (deflate(&stream, Z_FINISH) != Z_STREAM_END) __builtin_trap();
    out.resize(stream.total_out);
    deflateEnd(&stream);
    return out;
}

std::string zstd(const std::string& bytes) {
    std::string out(ZSTD_compressBound(bytes.size()), '\0');
    const size_t size = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 1);
    if (ZSTD_isError(size)) __builtin_trap();
    out.resize(size);
    return out;
}

std::string xz(const std::string& bytes) {
    std::string out(lzma_stream_buffer_bound(bytes.size()), '\0');
    size_t size = 0;
    if (lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, nullptr, reinterpret_cast<const uint8_t*>(bytes.data()),
                                bytes.size(), reinterpret_cast<uint8_t*>(out.data()), &size, out.size()) != LZMA_OK)
        __builtin_trap();
    out.resize(size);
    return out;
}

// The documents of the corpus from `position` on, checking that segments begin and end them in order.
std::vector<std::string> read_documents(mixgpt::Corpus& corpus, std::vector<mixgpt::CorpusPosition>& ends) {
    std::vector<std::string> documents;
    mixgpt::TextSegment segment;
    int64_t document = -1;
    bool open = false;
    std::string text;
    while (corpus.next(segment)) {
        if (segment.first == open) __builtin_trap();  // a document begins only after one ended
        if (segment.first) document = segment.document;
        if (segment.document != document) __builtin_trap();
        open = !segment.last;
        text += segment.text;
        if (segment.last) {
            documents.push_back(text);
            ends.push_back(segment.end);
            text.clear();
        }
    }
    if (open) __builtin_trap();  // the last document was ended
    return documents;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const MemoryFile file;
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    std::string content(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode & 0x08) content = gzip(content);  // the same input, compressed
    else if (mode & 0x04) content = zstd(content);
    else if (mode & 0x40) content = xz(content);
    file.fill(content);

    mixgpt::CorpusOptions options;
    const bool jsonl = mode & 0x01;
    options.skip_bad_lines = mode & 0x02;
    const char* const separators[] = {"", "blank-line", "---", "<|endoftext|>"};
    options.doc_separator = separators[(mode >> 4) & 0x03];
    mixgpt::InputFile input{file.path, jsonl ? mixgpt::InputFormat::jsonl : mixgpt::InputFormat::text,
                            static_cast<uint64_t>(content.size())};
    try {
        mixgpt::sniff_input(file.path);
        mixgpt::Corpus corpus = mixgpt::Corpus::from_files({input}, options);
        std::vector<mixgpt::CorpusPosition> ends;
        const std::vector<std::string> documents = read_documents(corpus, ends);
        corpus.sample(1 << 12);
        if (!ends.empty()) {
            mixgpt::Corpus resumed = mixgpt::Corpus::from_files({input}, options);
            resumed.seek(ends.front());
            std::vector<mixgpt::CorpusPosition> resumed_ends;
            const std::vector<std::string> rest = read_documents(resumed, resumed_ends);
            if (rest.size() + 1 != documents.size() || !std::equal(rest.begin(), rest.end(), documents.begin() + 1))
                __builtin_trap();
        }
    } catch (const mixgpt::Error&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
