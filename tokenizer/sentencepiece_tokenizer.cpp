#include "tokenizer/sentencepiece_tokenizer.h"

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

}  // namespace

std::shared_ptr<const SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& model_path) {
    std::shared_ptr<SentencePieceTokenizer> model(new SentencePieceTokenizer());
    model->files_ = {model_path};
    const std::string bytes = read_model_file(model_path);
    // SentencePiece 0.1.95 (Debian 11) logs "precompiled_charsmap is empty" at INFO on stderr each
    // time it loads a model with identity normalization, as ours are; 1: warnings and errors only.
    sentencepiece::logging::SetMinLogLevel(1);
    const auto status = model->processor_.LoadFromSerializedProto(bytes);
    MIXGPT_REQUIRE(status.ok(), model_path + ": not a SentencePiece model (" + status.ToString() + ")");
    model->sha256_ = sha256_hex(bytes.data(), bytes.size());
    model->find_special_tokens();
    model->build_surfaces();
    model->check_lossless();
    return model;
}

void SentencePieceTokenizer::find_special_tokens() {
    const std::string& path = files_.front();
    unk_id_ = processor_.unk_id();
    for (int byte = 0; byte < 256; ++byte) {
        const int id = processor_.PieceToId(format("<0x%02X>", byte));
        MIXGPT_REQUIRE(id != unk_id_ && processor_.IsByte(id),
                       path + ": tokenizer has no byte-fallback tokens (train it with byte_fallback=true)");
        byte_ids_[static_cast<size_t>(byte)] = id;
    }
    eot_id_ = processor_.PieceToId(kEndOfText);
    MIXGPT_REQUIRE(eot_id_ != unk_id_, path + ": tokenizer has no end-of-text token '" + kEndOfText + "'");
}

void SentencePieceTokenizer::build_surfaces() {
    const int vocab = processor_.GetPieceSize();
    surfaces_.resize(static_cast<size_t>(vocab));
    for (int id = 0; id < vocab; ++id) {
        const std::string& piece = processor_.IdToPiece(id);
        std::string& surface = surfaces_[static_cast<size_t>(id)];
        if (processor_.IsByte(id)) {
            surface.assign(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
        } else if (id == eot_id_) {
            surface = piece;
        } else if (processor_.IsUnknown(id)) {
            surface = kUnknownSurface;
        } else if (processor_.IsControl(id) || processor_.IsUnused(id)) {
            surface.clear();
        } else {
            surface = replace_space_symbols(piece);
            MIXGPT_REQUIRE(
                !spans_unit_boundary(surface),
                files_.front() + ": piece '" + piece +
                    "' spans a word boundary (train with split_by_whitespace and one line per sentence)");
        }
    }
}

void SentencePieceTokenizer::check_lossless() const {
    std::vector<int> ids;
    for (const char* probe : kLosslessProbes) {
        const auto status = processor_.Encode(probe, &ids);
        std::string decoded;
        for (int id : ids) decoded += surfaces_[static_cast<size_t>(id)];
        MIXGPT_REQUIRE(status.ok() && decoded == probe,
                       files_.front() +
                           ": tokenizer normalization is lossy (mixgpt needs identity normalization, "
                           "add_dummy_prefix=false, remove_extra_whitespaces=false)");
    }
}

std::unique_ptr<TextEncoder> SentencePieceTokenizer::make_encoder() const {
    return std::make_unique<Encoder>(shared_from_this());
}

void SentencePieceTokenizer::encode_unit(std::string_view unit, std::vector<int32_t>& ids) const {
    std::vector<int> pieces;
    // Braces: SentencePiece 0.1.95 (Debian 11) takes its own string_view, which has no
    // conversion from std::string_view; later versions take std::string_view.
    const auto status = processor_.Encode({unit.data(), unit.size()}, &pieces);
    MIXGPT_REQUIRE(status.ok(),
                   files_.front() + ": SentencePiece encoding failed (" + status.ToString() + ")");
    ids.insert(ids.end(), pieces.begin(), pieces.end());
}

std::shared_ptr<const SentencePieceTokenizer> sentencepiece_model(const Tokenizer& tokenizer) {
    MIXGPT_REQUIRE(tokenizer.kind() == TokenizerKind::sentencepiece,
                   tokenizer.path() + ": a " + tokenizer_kind_name(tokenizer.kind()) +
                       " tokenizer, not a SentencePiece model");
    return std::static_pointer_cast<const SentencePieceTokenizer>(tokenizer.model());
}

}  // namespace mixgpt
