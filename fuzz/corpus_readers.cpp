// libFuzzer target: the corpus readers of `mixgpt prepare` (tokenizer/corpus.cpp,
// document_readers.cpp, input_stream.cpp, segment_builder.cpp, utf8.cpp): plain text with one
// document per file, with separator lines or blank-line paragraphs, and JSONL (strict or with
// --skip-bad-lines), each plain or gzip-compressed (detected from the content). The first input
// byte picks the reader; the rest is the file. Every document is read to its end and a
// tokenizer sample is drawn; bad input may only throw mixgpt::Error. Checked: segments are
// valid UTF-8-cut pieces that begin and end documents in order.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/corpus.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const MemoryFile file;
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    std::string content(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode & 0x08) content = gzip(content);  // the same input, compressed
    file.fill(content);

    mixgpt::CorpusOptions options;
    const bool jsonl = mode & 0x01;
    options.skip_bad_lines = mode & 0x02;
    const char* const separators[] = {"", "blank-line", "---", "<|endoftext|>"};
    options.doc_separator = separators[(mode >> 4) & 0x03];
    mixgpt::InputFile input{file.path, jsonl ? mixgpt::InputFormat::jsonl : mixgpt::InputFormat::text,
                            static_cast<uint64_t>(content.size())};
    try {
        mixgpt::Corpus corpus = mixgpt::Corpus::from_files({input}, options);
        mixgpt::TextSegment segment;
        int64_t document = -1;
        bool open = false;
        while (corpus.next(segment)) {
            if (segment.first == open) __builtin_trap();  // a document begins only after one ended
            if (segment.first) document = segment.document;
            if (segment.document != document) __builtin_trap();
            open = !segment.last;
        }
        if (open) __builtin_trap();  // the last document was ended
        corpus.sample(1 << 12);
    } catch (const mixgpt::Error&) {
        // a one-line error for the user: the expected outcome of bad input
    }
    return 0;
}
