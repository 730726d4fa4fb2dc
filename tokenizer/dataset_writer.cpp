#include "tokenizer/dataset_writer.h"

#include "core/error.h"
#include "core/log.h"

namespace mixgpt {
namespace {

constexpr size_t kOffsetChunkElements = size_t{1} << 13;

}  // namespace

const char* split_name(Split split) { return split == Split::train ? "train" : "val"; }

DatasetWriter::DatasetWriter(const std::string& path, DatasetMetadata metadata)
    : file_(h5::File::create(path)),
      metadata_(std::move(metadata)),
      token_type_(token_storage_type(metadata_.vocab_size)) {
    MIXGPT_REQUIRE(metadata_.vocab_size > 0, path + ": vocabulary size must be positive");
    for (Split split : {Split::train, Split::val}) {
        SplitState& state = splits_[static_cast<int>(split)];
        state.group = std::string("/") + split_name(split);
        file_.create_group(state.group);
        file_.create_extendible(state.group + "/tokens", token_type_, kTokenChunkElements);
        file_.create_extendible(state.group + "/doc_offsets", h5::Type::i64, kOffsetChunkElements);
        state.pending_offsets.push_back(0);
    }
}

void DatasetWriter::begin_document(Split split) {
    MIXGPT_REQUIRE(current_ == nullptr, file_.path() + ": begin_document while a document is open");
    current_ = &splits_[static_cast<int>(split)];
}

void DatasetWriter::append_tokens(const int32_t* tokens, size_t count) {
    MIXGPT_REQUIRE(current_ != nullptr, file_.path() + ": append_tokens outside a document");
    auto& pending = current_->pending_tokens;
    for (size_t i = 0; i < count; ++i) {
        MIXGPT_REQUIRE(tokens[i] >= 0 && tokens[i] < metadata_.vocab_size,
                       format("%s: token id %d is outside the vocabulary [0, %d)", file_.path().c_str(),
                              tokens[i], metadata_.vocab_size));
        pending.push_back(static_cast<uint32_t>(tokens[i]));
        if (pending.size() == static_cast<size_t>(kTokenChunkElements)) flush_tokens(*current_, false);
    }
    current_->info.tokens += static_cast<int64_t>(count);
}

void DatasetWriter::end_document(int64_t bytes) {
    MIXGPT_REQUIRE(current_ != nullptr, file_.path() + ": end_document outside a document");
    const int32_t eot = metadata_.eot_id;
    SplitState& state = *current_;
    append_tokens(&eot, 1);
    state.info.bytes += bytes;
    state.info.documents += 1;
    state.pending_offsets.push_back(state.info.tokens);
    if (state.pending_offsets.size() == kOffsetChunkElements) flush_offsets(state);
    current_ = nullptr;
}

void DatasetWriter::add_document(Split split, const std::vector<int32_t>& tokens, int64_t bytes) {
    begin_document(split);
    append_tokens(tokens.data(), tokens.size());
    end_document(bytes);
}

void DatasetWriter::flush_tokens(SplitState& state, bool everything) {
    auto& pending = state.pending_tokens;
    if (pending.empty() || (!everything && pending.size() < static_cast<size_t>(kTokenChunkElements))) return;
    const std::string name = state.group + "/tokens";
    if (token_type_ == h5::Type::u16) {
        const std::vector<uint16_t> narrow(pending.begin(), pending.end());
        file_.append(name, h5::Type::u16, narrow.data(), static_cast<int64_t>(narrow.size()));
    } else {
        file_.append(name, h5::Type::u32, pending.data(), static_cast<int64_t>(pending.size()));
    }
    pending.clear();
}

void DatasetWriter::flush_offsets(SplitState& state) {
    const std::string name = state.group + "/doc_offsets";
    file_.append(name, h5::Type::i64, state.pending_offsets.data(),
                 static_cast<int64_t>(state.pending_offsets.size()));
    state.pending_offsets.clear();
}

void DatasetWriter::finish(int64_t invalid_utf8_bytes, int64_t skipped_lines) {
    MIXGPT_REQUIRE(current_ == nullptr, file_.path() + ": finish while a document is open");
    for (Split split : {Split::train, Split::val}) {
        SplitState& state = splits_[static_cast<int>(split)];
        flush_tokens(state, true);
        flush_offsets(state);
        file_.set_attribute(state.group, "tokens", state.info.tokens);
        file_.set_attribute(state.group, "bytes", state.info.bytes);
        file_.set_attribute(state.group, "documents", state.info.documents);
    }
    file_.set_attribute("/", "format", std::string(kDatasetFormat));
    file_.set_attribute("/", "format_version", kDatasetFormatVersion);
    file_.set_attribute("/", "vocab_size", static_cast<int64_t>(metadata_.vocab_size));
    file_.set_attribute("/", "eot_id", static_cast<int64_t>(metadata_.eot_id));
    file_.set_attribute("/", "unk_id", static_cast<int64_t>(metadata_.unk_id));
    const TokenizerIdentity& tokenizer = metadata_.tokenizer;
    file_.set_attribute("/", "tokenizer_sha256", tokenizer.sha256);
    file_.set_attribute("/", "tokenizer_kind", tokenizer.kind);
    std::string tokenizer_files;
    for (const std::string& name : tokenizer.files)
        tokenizer_files += (tokenizer_files.empty() ? "" : "\n") + name;
    file_.set_attribute("/", "tokenizer_files", tokenizer_files);
    file_.set_attribute("/", "tokenizer_file", tokenizer.files.at(0));
    file_.set_attribute("/", "command", metadata_.command);
    file_.set_attribute("/", "seed", static_cast<int64_t>(metadata_.seed));
    file_.set_attribute("/", "val_fraction", metadata_.val_fraction);
    file_.set_attribute("/", "invalid_utf8_bytes", invalid_utf8_bytes);
    file_.set_attribute("/", "skipped_lines", skipped_lines);
    file_.close();
}

}  // namespace mixgpt
