#include "tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <array>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "tokenizer/encoder.h"

// Exported by libsentencepiece in every version Debian ships (0.1.95, 0.1.97, 0.2.0), though
// declared only in its internal common.h (0.2.0 adds a public sentencepiece::SetMinLogLevel).
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace mixgpt {

struct Tokenizer::Model {
    sentencepiece::SentencePieceProcessor processor;
    std::vector<std::string> surfaces;  // (vocab_size) the text each id decodes to
    std::array<int32_t, 256> byte_ids{};
    int32_t eot_id = -1;
    int32_t unk_id = -1;
    std::string sha256;
    std::string path;
};

namespace {

constexpr const char* kEndOfText = "<|endoftext|>";
constexpr const char* kSpaceSymbol = "\xE2\x96\x81";       // U+2581, SentencePiece's escaped space
constexpr const char* kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ", SentencePiece's rendering of <unk>

// Strings that a lossy normalization would change: NFKC folds (ligature, full-width,
// circled digit, no-break space), a leading space (dummy prefix) and repeated spaces.
constexpr const char* kLosslessProbes[] = {
    " leading space,  two spaces, trailing space ",
    "\xEF\xAC\x81 \xEF\xBC\xA1 \xE2\x91\xA0 no\xC2\xA0"
    "break e\xCC\x81 tab\there",
    "line one\nline two\r\n\n",
};

std::string read_model_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    MIXGPT_REQUIRE(file.good(), path + ": cannot open tokenizer model (missing or unreadable)");
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    MIXGPT_REQUIRE(!file.bad(), path + ": cannot read tokenizer model");
    return bytes;
}

std::string replace_space_symbols(const std::string& piece) {
    std::string text;
    text.reserve(piece.size());
    for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, 3, kSpaceSymbol) == 0) {
            text += ' ';
            i += 3;
        } else {
            text += piece[i++];
        }
    }
    return text;
}

// True when the piece could span a unit boundary of the Encoder: it holds a
// newline, or a space after a character that is not a space.
bool spans_unit_boundary(const std::string& surface) {
    bool seen_non_space = false;
    for (char c : surface) {
        if (c == '\n') return true;
        if (c == ' ') {
            if (seen_non_space) return true;
        } else {
            seen_non_space = true;
        }
    }
    return false;
}

void find_special_tokens(Tokenizer::Model& model) {
    const auto& processor = model.processor;
    model.unk_id = processor.unk_id();
    for (int byte = 0; byte < 256; ++byte) {
        const int id = processor.PieceToId(format("<0x%02X>", byte));
        MIXGPT_REQUIRE(
            id != model.unk_id && processor.IsByte(id),
            model.path + ": tokenizer has no byte-fallback tokens (train it with byte_fallback=true)");
        model.byte_ids[static_cast<size_t>(byte)] = id;
    }
    model.eot_id = processor.PieceToId(kEndOfText);
    MIXGPT_REQUIRE(model.eot_id != model.unk_id,
                   model.path + ": tokenizer has no end-of-text token '" + kEndOfText + "'");
}

void build_surfaces(Tokenizer::Model& model) {
    const auto& processor = model.processor;
    const int vocab = processor.GetPieceSize();
    model.surfaces.resize(static_cast<size_t>(vocab));
    for (int id = 0; id < vocab; ++id) {
        const std::string& piece = processor.IdToPiece(id);
        std::string& surface = model.surfaces[static_cast<size_t>(id)];
        if (processor.IsByte(id)) {
            surface.assign(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
        } else if (id == model.eot_id) {
            surface = piece;
        } else if (processor.IsUnknown(id)) {
            surface = kUnknownSurface;
        } else if (processor.IsControl(id) || processor.IsUnused(id)) {
            surface.clear();
        } else {
            surface = replace_space_symbols(piece);
            MIXGPT_REQUIRE(
                !spans_unit_boundary(surface),
                model.path + ": piece '" + piece +
                    "' spans a word boundary (train with split_by_whitespace and one line per sentence)");
        }
    }
}

void check_lossless(const Tokenizer::Model& model) {
    std::vector<int> ids;
    for (const char* probe : kLosslessProbes) {
        const auto status = model.processor.Encode(probe, &ids);
        std::string decoded;
        for (int id : ids) decoded += model.surfaces[static_cast<size_t>(id)];
        MIXGPT_REQUIRE(status.ok() && decoded == probe,
                       model.path +
                           ": tokenizer normalization is lossy (mixgpt needs identity normalization, "
                           "add_dummy_prefix=false, remove_extra_whitespaces=false)");
    }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& model_path) {
    auto model = std::make_shared<Model>();
    model->path = model_path;
    const std::string bytes = read_model_file(model_path);
    // SentencePiece 0.1.95 (Debian 11) logs "precompiled_charsmap is empty" at INFO on stderr each
    // time it loads a model with identity normalization, as ours are; 1: warnings and errors only.
    sentencepiece::logging::SetMinLogLevel(1);
    const auto status = model->processor.LoadFromSerializedProto(bytes);
    MIXGPT_REQUIRE(status.ok(), model_path + ": not a SentencePiece model (" + status.ToString() + ")");
    model->sha256 = sha256_hex(bytes.data(), bytes.size());
    find_special_tokens(*model);
    build_surfaces(*model);
    check_lossless(*model);
    return Tokenizer(std::move(model));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids;
    Encoder(*this).encode(text, ids);
    return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    return decode(ids.data(), ids.size());
}

std::string Tokenizer::decode(const int32_t* ids, size_t count) const {
    std::string text;
    const auto vocab = static_cast<int32_t>(model_->surfaces.size());
    for (size_t i = 0; i < count; ++i) {
        MIXGPT_REQUIRE(ids[i] >= 0 && ids[i] < vocab,
                       format("token id %d is outside the vocabulary [0, %d) of %s", ids[i], vocab,
                              model_->path.c_str()));
        text += model_->surfaces[static_cast<size_t>(ids[i])];
    }
    return text;
}

int Tokenizer::vocab_size() const { return static_cast<int>(model_->surfaces.size()); }
int32_t Tokenizer::eot_id() const { return model_->eot_id; }
int32_t Tokenizer::unk_id() const { return model_->unk_id; }
int32_t Tokenizer::byte_id(unsigned char byte) const { return model_->byte_ids[byte]; }
std::string_view Tokenizer::surface(int32_t id) const { return model_->surfaces.at(static_cast<size_t>(id)); }
const std::string& Tokenizer::sha256() const { return model_->sha256; }
const std::string& Tokenizer::path() const { return model_->path; }

void Tokenizer::encode_unit(std::string_view unit, std::vector<int32_t>& ids) const {
    std::vector<int> pieces;
    // Braces: SentencePiece 0.1.95 (Debian 11) takes its own string_view, which has no
    // conversion from std::string_view; later versions take std::string_view.
    const auto status = model_->processor.Encode({unit.data(), unit.size()}, &pieces);
    MIXGPT_REQUIRE(status.ok(), model_->path + ": SentencePiece encoding failed (" + status.ToString() + ")");
    ids.insert(ids.end(), pieces.begin(), pieces.end());
}

}  // namespace mixgpt
