#include "tokenizer/shard_writer.h"

#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"

namespace mixgpt {

ShardWriter::ShardWriter(std::string directory, DatasetMetadata metadata, int64_t shard_tokens,
                         int64_t first_number, int64_t first_document, int64_t skipped_lines_before,
                         std::function<void(const ShardCommit&)> committed)
    : directory_(std::move(directory)),
      metadata_(std::move(metadata)),
      shard_tokens_(shard_tokens),
      first_number_(first_number),
      next_number_(first_number),
      next_document_(first_document),
      skipped_lines_before_(skipped_lines_before),
      committed_(std::move(committed)) {
    MIXGPT_REQUIRE(shard_tokens > 0, "--shard-tokens must be positive");
}

void ShardWriter::open_shard() {
    record_ = ShardRecord{};
    record_.file = shard_file_name(next_number_);
    record_.first_document = next_document_;
    output_.emplace((std::filesystem::path(directory_) / record_.file).string());
    writer_ = std::make_unique<DatasetWriter>(output_->temporary_path(), metadata_);
}

void ShardWriter::begin_document(Split split) {
    if (!writer_) open_shard();
    writer_->begin_document(split);
}

void ShardWriter::append_tokens(const int32_t* tokens, size_t count) {
    writer_->append_tokens(tokens, count);
}

void ShardWriter::end_document(int64_t bytes, int64_t invalid_utf8_bytes, const CorpusPosition& after) {
    writer_->end_document(bytes);
    record_.invalid_utf8_bytes += invalid_utf8_bytes;
    last_position_ = after;
    ++next_document_;
    if (writer_->info(Split::train).tokens + writer_->info(Split::val).tokens >= shard_tokens_)
        commit_shard();
}

void ShardWriter::finish() {
    if (writer_) commit_shard();
}

void ShardWriter::commit_shard() {
    record_.skipped_lines = last_position_.skipped_lines - skipped_lines_before_;
    writer_->finish(record_.invalid_utf8_bytes, record_.skipped_lines);
    record_.train = writer_->info(Split::train);
    record_.val = writer_->info(Split::val);
    writer_.reset();
    record_.sha256 = sha256_file_hex(output_->temporary_path());
    output_->commit();
    output_.reset();
    std::error_code error;
    record_.bytes = static_cast<uint64_t>(
        std::filesystem::file_size((std::filesystem::path(directory_) / record_.file), error));
    if (error)
        throw Error(directory_ + "/" + record_.file + ": cannot read its size (" + error.message() + ")");
    for (Split split : {Split::train, Split::val}) {
        const SplitInfo& part = split == Split::train ? record_.train : record_.val;
        SplitInfo& total = totals_[static_cast<int>(split)];
        total.tokens += part.tokens;
        total.bytes += part.bytes;
        total.documents += part.documents;
    }
    skipped_lines_before_ = last_position_.skipped_lines;
    ++next_number_;
    committed_({record_, last_position_});
}

}  // namespace mixgpt
