// The document mask (--attention-mask document) and the sliding window (--window), issue 39, on
// the CPU: the bounds ops against document numbers counted in the test; attention forward, backward
// and the KV-cached forward under each mask and both against the float64 reference that masks by
// document number and by distance (tests/reference_f64.h), fp32 within 1e-5; the whole model
// against F64Gpt in both families, windowed layers per pattern included (fp32: mean loss within
// 1e-6, gradients within 1e-5; bf16 and fp16: at most twice the causal model's own error, GUIDE.md
// 2.7); and what the document mask means: a document's losses do not depend on the documents
// before it. --positions document: the positions op against places counted in the test, the whole
// model against F64Gpt (which restarts learned positions and RoPE's angles alike), cached decoding
// against the full forward, and a document's losses independent of where it sits in its row for
// GPT-2 only with the option, for the Llama family (RoPE) with or without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/gpt.h"
#include "tests/reference_f64_gpt.h"
#include "tests/test_cpu_support.h"
#include "tests/test_model_support.h"

namespace mixgpt {
namespace {

constexpr int32_t kSeparator = 7;
constexpr int kBatch = 2, kLength = 16;

// Rows of kLength tokens: row 0 holds documents of 1, 1, 1, 5, 7 and 1 tokens (separators at 0, 1,
// 2, 7, 14 and 15: the last document is the separator alone); row 1 is one document without a
// separator. No other token is the separator.
std::vector<int32_t> document_tokens(int vocabulary, uint32_t seed) {
    std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, vocabulary, seed);
    for (int32_t& token : tokens)
        if (token == kSeparator) token = kSeparator + 1;
    for (int t : {0, 1, 2, 7, 14, 15}) tokens[static_cast<size_t>(t)] = kSeparator;
    return tokens;
}

// Each position's first and one-past-last position of its document, from document numbers.
void expected_bounds(const std::vector<int32_t>& tokens, int B, int T, std::vector<int32_t>& starts,
                     std::vector<int32_t>& ends) {
    const std::vector<int> numbers = f64_document_numbers(tokens, B, T, kSeparator);
    starts.assign(tokens.size(), 0);
    ends.assign(tokens.size(), 0);
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const auto same = [&](int u) {
                return numbers[static_cast<size_t>(b * T + u)] == numbers[static_cast<size_t>(b * T + t)];
            };
            int first = t, last = t;
            while (first > 0 && same(first - 1)) --first;
            while (last + 1 < T && same(last + 1)) ++last;
            starts[static_cast<size_t>(b * T + t)] = first;
            ends[static_cast<size_t>(b * T + t)] = last + 1;
        }
}

std::vector<int32_t> int_values(const TensorView& view) {
    const auto* values = view.as<const int32_t>();
    return std::vector<int32_t>(values, values + view.numel());
}

TEST(DocumentMask, BoundsOpsFollowTheDocuments) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
    const std::vector<int32_t> tokens = document_tokens(50, 3);
    const test::IntTensor token_view(tokens, {kBatch, kLength});
    test::IntTensor starts(std::vector<int32_t>(tokens.size()), {kBatch, kLength});
    test::IntTensor ends(std::vector<int32_t>(tokens.size()), {kBatch, kLength});
    backend->document_bounds(starts.view(), ends.view(), token_view.view(), kSeparator);
    std::vector<int32_t> want_starts, want_ends;
    expected_bounds(tokens, kBatch, kLength, want_starts, want_ends);
    EXPECT_EQ(int_values(starts.view()), want_starts);
    EXPECT_EQ(int_values(ends.view()), want_ends);
    const std::vector<int> places = f64_document_positions(tokens, kBatch, kLength, kSeparator);
    test::IntTensor positions(std::vector<int32_t>(tokens.size(), -1), {kBatch, kLength});
    backend->document_positions(positions.view(), starts.view(), 0);
    EXPECT_EQ(int_values(positions.view()), std::vector<int32_t>(places.begin(), places.end()));

    // Decoding in chunks of 5, 1, 3 and 7 positions continues each row's document.
    test::IntTensor open(std::vector<int32_t>(kBatch, -99), {kBatch});
    int position = 0;
    for (int count : {5, 1, 3, 7}) {
        std::vector<int32_t> chunk;
        for (int b = 0; b < kBatch; ++b)
            for (int t = position; t < position + count; ++t)
                chunk.push_back(tokens[static_cast<size_t>(b * kLength + t)]);
        const test::IntTensor chunk_view(chunk, {kBatch, count});
        test::IntTensor chunk_starts(std::vector<int32_t>(chunk.size()), {kBatch, count});
        backend->document_starts_decoding(chunk_starts.view(), open.view(), chunk_view.view(), position,
                                          kSeparator);
        const std::vector<int32_t> got = int_values(chunk_starts.view());
        test::IntTensor chunk_positions(std::vector<int32_t>(chunk.size(), -1), {kBatch, count});
        backend->document_positions(chunk_positions.view(), chunk_starts.view(), position);
        const std::vector<int32_t> got_positions = int_values(chunk_positions.view());
        for (int b = 0; b < kBatch; ++b)
            for (int t = 0; t < count; ++t) {
                const auto at = static_cast<size_t>(b * kLength + position + t);
                EXPECT_EQ(got[static_cast<size_t>(b * count + t)], want_starts[at])
                    << "row " << b << ", position " << position + t;
                EXPECT_EQ(got_positions[static_cast<size_t>(b * count + t)], places[at])
                    << "row " << b << ", position " << position + t;
            }
        position += count;
    }
}

struct AttentionCase {
    AttentionParams params;
    int head_dim;
};

// The masks the attention tests take: the document mask, a sliding window of 5, and both.
struct MaskVariant {
    const char* name;
    bool documents;
    int window;
};
constexpr MaskVariant kMasks[] = {{"documents", true, 0}, {"window 5", false, 5}, {"documents, window 5", true, 5}};

TEST(DocumentMask, AttentionMatchesTheFloat64Reference) {
    auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
    const std::vector<int32_t> tokens = document_tokens(50, 5);
    const test::IntTensor token_view(tokens, {kBatch, kLength});
    test::IntTensor starts(std::vector<int32_t>(tokens.size()), {kBatch, kLength});
    test::IntTensor ends(std::vector<int32_t>(tokens.size()), {kBatch, kLength});
    backend->document_bounds(starts.view(), ends.view(), token_view.view(), kSeparator);
    for (const MaskVariant& mask : kMasks)
        for (const AttentionCase& c : {AttentionCase{{2, 2, 0.f}, 8}, AttentionCase{{4, 2, 1000.f}, 8}}) {
            SCOPED_TRACE(std::string(mask.name) + ", H " + std::to_string(c.params.n_head) + ", Hkv " +
                         std::to_string(c.params.n_kv_head));
            const std::vector<int> documents =
                mask.documents ? f64_document_numbers(tokens, kBatch, kLength, kSeparator) : std::vector<int>();
            AttentionParams reference_params = c.params, params = c.params;
            reference_params.window = params.window = mask.window;
            if (mask.documents) {
                params.document_starts = starts.view();
                params.document_ends = ends.view();
            }
            const int H = params.n_head, hd = c.head_dim, width = (H + 2 * params.n_kv_head) * hd;
            const test::HostTensor qkv(test::random_normal(kBatch * kLength * width, 11, 1.5), DType::f32,
                                       {kBatch, kLength, width});
            test::HostTensor out(DType::f32, {kBatch, kLength, H * hd}), lse(DType::f32, {kBatch, H, kLength});
            backend->attention_forward(out.view(), lse.view(), qkv.view(), params);
            const F64AttentionForward ref = test::stored_rope_attention_forward(
                qkv.values(), kBatch, kLength, hd, reference_params, DType::f32, 0, documents);
            EXPECT_LE(relative_norm_error(out.values(), ref.out), test::kFp32Tolerance);
            EXPECT_LE(relative_norm_error(lse.values(), ref.lse), test::kFp32Tolerance);
            // Masking changes the result: the causal reference is far from it.
            const F64AttentionForward causal =
                test::stored_rope_attention_forward(qkv.values(), kBatch, kLength, hd, c.params, DType::f32);
            EXPECT_GT(relative_norm_error(out.values(), causal.out), 1e-2);

            const test::HostTensor dout(test::random_normal(kBatch * kLength * H * hd, 12), DType::f32,
                                        {kBatch, kLength, H * hd});
            test::HostTensor dqkv(DType::f32, {kBatch, kLength, width});
            backend->attention_backward(dqkv.view(), dout.view(), qkv.view(), lse.view(), params);
            const std::vector<double> ref_dqkv = test::stored_rope_attention_backward(
                dout.values(), qkv.values(), kBatch, kLength, hd, reference_params, DType::f32, documents);
            EXPECT_LE(relative_norm_error(dqkv.values(), ref_dqkv), test::kFp32Tolerance);

            // The KV-cached forward, in chunks, with the decoding starts: the full forward's rows.
            const int kv_width = params.n_kv_head * hd;
            test::HostTensor k_cache(DType::f32, {kBatch, kLength, kv_width}),
                v_cache(DType::f32, {kBatch, kLength, kv_width});
            test::IntTensor open(std::vector<int32_t>(kBatch), {kBatch});
            const std::vector<double> all = qkv.values();
            int position = 0;
            for (int count : {6, 1, 9}) {
                std::vector<double> rows, want;
                std::vector<int32_t> chunk_tokens;
                for (int b = 0; b < kBatch; ++b)
                    for (int t = position; t < position + count; ++t) {
                        const auto row = all.begin() + (int64_t{b} * kLength + t) * width;
                        rows.insert(rows.end(), row, row + width);
                        const auto ref_row = ref.out.begin() + (int64_t{b} * kLength + t) * H * hd;
                        want.insert(want.end(), ref_row, ref_row + H * hd);
                        chunk_tokens.push_back(tokens[static_cast<size_t>(b * kLength + t)]);
                    }
                const test::IntTensor chunk_view(chunk_tokens, {kBatch, count});
                test::IntTensor chunk_starts(std::vector<int32_t>(chunk_tokens.size()), {kBatch, count});
                backend->document_starts_decoding(chunk_starts.view(), open.view(), chunk_view.view(), position,
                                                  kSeparator);
                AttentionParams cached = c.params;
                cached.window = mask.window;
                if (mask.documents) cached.document_starts = chunk_starts.view();
                const test::HostTensor chunk_qkv(rows, DType::f32, {kBatch, count, width});
                test::HostTensor chunk_out(DType::f32, {kBatch, count, H * hd});
                backend->attention_forward_cached(chunk_out.view(), chunk_qkv.view(), k_cache.view(),
                                                  v_cache.view(), position, cached);
                EXPECT_LE(relative_norm_error(chunk_out.values(), want), test::kFp32Tolerance) << "at " << position;
                position += count;
            }
        }
}

GPTConfig masked(GPTConfig config) {
    config.document_separator = kSeparator;
    config.validate();
    return config;
}

// --attention-mask document --positions document.
GPTConfig document_positioned(GPTConfig config) {
    config.document_positions = true;
    return masked(config);
}

// A sliding window of 3 on the first layer, the second seeing the whole context (--window 3
// --window-pattern SL), with the document mask or not.
GPTConfig windowed(GPTConfig config, bool documents) {
    config.attention_window = 3;
    config.set_window_pattern("SL");
    return documents ? masked(config) : config;
}

test::ReferenceErrors measure(const GPTConfig& config, Precision precision, uint32_t seed) {
    auto backend = make_backend({"cpu", 0, precision, 1});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const std::vector<float> values = test::spread_parameters(model.layout(), seed);
    model.load_master_parameters(values.data(), model.layout().total());
    const std::vector<int32_t> tokens = document_tokens(config.vocab_size, seed + 4);
    const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, seed + 5);
    const test::PassResult result = test::training_pass(model, tokens, targets, kBatch, kLength);
    return test::errors_against(
        result, F64Gpt(config, values).forward_backward(tokens, targets, kBatch, kLength), model.layout());
}

class DocumentMaskModel : public ::testing::TestWithParam<Arch> {
protected:
    GPTConfig family() const {
        return GetParam() == Arch::llama ? test::tiny_llama_config() : test::tiny_config();
    }
};

TEST_P(DocumentMaskModel, Fp32MatchesFloat64) {
    const test::ReferenceErrors e = measure(masked(family()), Precision::fp32, 3);
    EXPECT_LE(e.mean_loss, 1e-6);
    EXPECT_LE(e.losses, test::kFp32Tolerance);
    EXPECT_LE(e.worst_tensor, test::kFp32Tolerance);
}

TEST_P(DocumentMaskModel, WindowedLayersMatchFloat64) {
    for (const bool documents : {false, true}) {
        SCOPED_TRACE(documents ? "window and document mask" : "window");
        const test::ReferenceErrors e = measure(windowed(family(), documents), Precision::fp32, 3);
        EXPECT_LE(e.mean_loss, 1e-6);
        EXPECT_LE(e.losses, test::kFp32Tolerance);
        EXPECT_LE(e.worst_tensor, test::kFp32Tolerance);
    }
}

TEST_P(DocumentMaskModel, DocumentPositionsMatchFloat64) {
    const test::ReferenceErrors e = measure(document_positioned(family()), Precision::fp32, 3);
    EXPECT_LE(e.mean_loss, 1e-6);
    EXPECT_LE(e.losses, test::kFp32Tolerance);
    EXPECT_LE(e.worst_tensor, test::kFp32Tolerance);
}

TEST_P(DocumentMaskModel, LowPrecisionWithinTwiceTheCausalModelsError) {
    constexpr uint32_t kSeeds = 5;  // root mean square over draws, as test_recipe_reference.cpp's
    for (const bool window : {false, true})
        for (Precision precision : {Precision::bf16, Precision::fp16}) {
            SCOPED_TRACE(std::string(precision_name(precision)) + (window ? ", window" : ""));
            const GPTConfig config = window ? windowed(family(), true) : masked(family());
            double causal_losses = 0, causal_gradients = 0, losses = 0, gradients = 0;
            for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
                const test::ReferenceErrors plain = measure(family(), precision, seed),
                                            mask = measure(config, precision, seed);
                causal_losses += plain.losses * plain.losses;
                causal_gradients += plain.gradients * plain.gradients;
                losses += mask.losses * mask.losses;
                gradients += mask.gradients * mask.gradients;
            }
            EXPECT_LE(std::sqrt(losses), 2 * std::sqrt(causal_losses));
            EXPECT_LE(std::sqrt(gradients), 2 * std::sqrt(causal_gradients));
        }
}

// Row 0's document at positions 8 .. 14 keeps its losses when tokens of the document before it
// (positions 3 .. 7) change, under the document mask only.
TEST_P(DocumentMaskModel, ADocumentsLossesIgnoreTheDocumentsBeforeIt) {
    for (const bool document_mask : {false, true}) {
        SCOPED_TRACE(document_mask ? "document mask" : "causal mask");
        const GPTConfig config = document_mask ? masked(family()) : family();
        auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
        GPT model(*backend, config, kBatch, kLength, Recompute::none);
        const std::vector<float> values = test::spread_parameters(model.layout(), 9);
        model.load_master_parameters(values.data(), model.layout().total());
        std::vector<int32_t> tokens = document_tokens(config.vocab_size, 13);
        const std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 14);
        const std::vector<float> before = test::training_pass(model, tokens, targets, kBatch, kLength).losses;
        for (int t : {3, 4, 5, 6}) tokens[static_cast<size_t>(t)] = 20 + t;  // not the separator
        const std::vector<float> after = test::training_pass(model, tokens, targets, kBatch, kLength).losses;
        double moved = 0;
        for (int t = 8; t <= 14; ++t)
            moved = std::max(moved, static_cast<double>(std::abs(after[static_cast<size_t>(t)] -
                                                                 before[static_cast<size_t>(t)])));
        if (document_mask)
            EXPECT_LE(moved, 1e-6 * std::abs(before[8]));
        else
            EXPECT_GT(moved, 1e-3);
    }
}

// The same 7-token document (its last the separator, its targets the same) at positions 3 .. 9 of
// row 0 and 6 .. 12 of row 1: its losses are the same in both places when its positions restart
// (GPT-2's learned ones by --positions document, RoPE's because only distances count), and differ
// with GPT-2's absolute positions.
TEST_P(DocumentMaskModel, DocumentPositionsMakeADocumentsLossesIndependentOfItsPlace) {
    for (const bool restart : {false, true}) {
        SCOPED_TRACE(restart ? "positions document" : "positions absolute");
        const GPTConfig config = restart ? document_positioned(family()) : masked(family());
        auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
        GPT model(*backend, config, kBatch, kLength, Recompute::none);
        const std::vector<float> values = test::spread_parameters(model.layout(), 21);
        model.load_master_parameters(values.data(), model.layout().total());
        std::vector<int32_t> tokens = test::random_tokens(kBatch * kLength, config.vocab_size, 22);
        std::vector<int32_t> targets = test::random_tokens(kBatch * kLength, config.vocab_size, 23);
        for (int32_t& token : tokens)
            if (token == kSeparator) token = kSeparator + 1;
        const int first[kBatch] = {3, 6}, length = 7;
        for (int b = 0; b < kBatch; ++b) {
            const auto row = static_cast<size_t>(b * kLength);
            tokens[row + static_cast<size_t>(first[b]) - 1] = kSeparator;  // the document before ends
            for (int i = 0; i < length; ++i) {
                const auto at = row + static_cast<size_t>(first[b] + i);
                tokens[at] = i + 1 == length ? kSeparator : tokens[static_cast<size_t>(first[0] + i)];
                targets[at] = targets[static_cast<size_t>(first[0] + i)];
            }
        }
        const std::vector<float> losses = test::training_pass(model, tokens, targets, kBatch, kLength).losses;
        double moved = 0;
        for (int i = 0; i < length; ++i)
            moved = std::max(moved, static_cast<double>(std::abs(losses[static_cast<size_t>(first[0] + i)] -
                                                                 losses[static_cast<size_t>(kLength + first[1] + i)])));
        if (restart || GetParam() == Arch::llama)
            EXPECT_LE(moved, 1e-5 * std::abs(losses[static_cast<size_t>(first[0])]));
        else
            EXPECT_GT(moved, 1e-3);
    }
}

// Under --positions document, KV-cached decoding (a prefill, then one token at a time, documents
// ending inside and across the calls) gives the full forward's logits at every step.
TEST(DocumentPositions, CachedDecodingGivesTheFullForwardLogits) {
    const GPTConfig config = document_positioned(test::tiny_config());
    auto backend = make_backend({"cpu", 0, Precision::fp32, 1});
    GPT model(*backend, config, kBatch, kLength, Recompute::none);
    const std::vector<float> values = test::spread_parameters(model.layout(), 31);
    model.load_master_parameters(values.data(), model.layout().total());
    const std::vector<int32_t> all = document_tokens(config.vocab_size, 32);
    const test::IntTensor tokens(all, {kBatch, kLength});
    model.forward(tokens.view(), tokens.view());
    const int64_t Vp = config.padded_vocab_size();
    std::vector<float> full(static_cast<size_t>(model.logits().numel()));  // (B, T, Vp)
    convert_to_float(model.logits().data, model.logits().dtype, full.data(), full.size());
    int position = 0;
    for (int count : {5, 1, 1, 1, 2, 1, 1, 4}) {
        std::vector<int32_t> chunk;
        for (int b = 0; b < kBatch; ++b)
            chunk.insert(chunk.end(), all.begin() + b * kLength + position,
                         all.begin() + b * kLength + position + count);
        const test::IntTensor chunk_tensor(chunk, {kBatch, count});
        const TensorView logits = model.forward_cached(chunk_tensor.view(), position);  // (B, Vp)
        position += count;
        std::vector<float> cached(static_cast<size_t>(logits.numel()));
        convert_to_float(logits.data, logits.dtype, cached.data(), cached.size());
        std::vector<double> want, got(cached.begin(), cached.end());
        for (int b = 0; b < kBatch; ++b)
            want.insert(want.end(), full.begin() + (b * kLength + position - 1) * Vp,
                        full.begin() + (b * kLength + position) * Vp);
        EXPECT_LE(relative_norm_error(got, want), test::kFp32Tolerance) << "position " << position - 1;
    }
}

INSTANTIATE_TEST_SUITE_P(Families, DocumentMaskModel, ::testing::Values(Arch::gpt2, Arch::llama),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                             return std::string(arch_name(info.param));
                         });

}  // namespace
}  // namespace mixgpt
