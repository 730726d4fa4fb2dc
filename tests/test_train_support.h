// Shared by the trainer, eval, sample and CLI tests: a tiny prepared dataset (made once per test
// process through `mixgpt prepare`'s library call, from a generated corpus) and the options of a
// tiny model that trains on it in milliseconds per step.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/gpt.h"
#include "model/parameters.h"
#include "tests/test_support.h"
#include "tokenizer/prepare.h"
#include "train/train_options.h"
#include "train/train_step.h"

namespace mixgpt::testing_support {

// Documents of simple, repetitive sentences: learnable in a few steps by a tiny model.
inline std::vector<std::string> generated_documents(int count, uint64_t seed) {
    static const char* const kSubjects[] = {"the cat", "a dog", "the old man", "my sister", "the bird"};
    static const char* const kVerbs[] = {"sees", "likes", "finds", "follows", "keeps"};
    static const char* const kObjects[] = {"the red ball", "a small house", "the river", "an apple",
                                           "the moon"};
    std::mt19937_64 random(seed);
    std::vector<std::string> documents;
    for (int d = 0; d < count; ++d) {
        std::string text;
        const int sentences = 4 + static_cast<int>(random() % 6);
        for (int s = 0; s < sentences; ++s) {
            text += kSubjects[random() % 5];
            text += ' ';
            text += kVerbs[random() % 5];
            text += ' ';
            text += kObjects[random() % 5];
            text += ".\n";
        }
        documents.push_back(text);
    }
    return documents;
}

struct TinyDataset {
    std::string directory;  // the dataset folder: index.json, shards, tokenizer.model
    std::string dataset_path;
    std::string tokenizer_path;
    std::string corpus_directory;  // the text files it was made from
};

// Made on first use; lives until the test process ends.
// How the tiny dataset is prepared from a corpus folder, into output_directory.
inline PrepareOptions tiny_prepare_options(const std::string& corpus_directory,
                                           const std::string& output_directory, int vocab_size) {
    PrepareOptions options;
    options.corpus.inputs = {corpus_directory};
    options.output_directory = output_directory;
    options.tokenizer.vocab_size = vocab_size;
    options.tokenizer.threads = 1;
    options.val_fraction = 0.15;
    options.seed = 3;
    options.threads = 1;
    return options;
}

inline const TinyDataset& tiny_dataset() {
    static test::TempDirectory directory("mixgpt_tiny_dataset");
    static const TinyDataset dataset = [] {
        TinyDataset made;
        made.corpus_directory = directory.file("corpus");
        std::filesystem::create_directories(made.corpus_directory);
        const std::vector<std::string> documents = generated_documents(160, 7);
        for (size_t i = 0; i < documents.size(); ++i)
            std::ofstream(made.corpus_directory + "/doc" + std::to_string(1000 + i) + ".txt") << documents[i];
        const PrepareOptions options =
            tiny_prepare_options(made.corpus_directory, directory.file("data"), 300);
        const PrepareResult result = run_prepare(options);
        made.directory = options.output_directory;
        made.dataset_path = result.dataset_path;
        made.tokenizer_path = result.tokenizer_path;
        return made;
    }();
    return dataset;
}

// 2 layers, 2 heads, width 32, T = 16, B = 4: a few milliseconds per step.
inline TrainOptions tiny_train_options(const std::string& output_dir) {
    TrainOptions options;
    options.dataset = tiny_dataset().dataset_path;
    options.model.preset = "d2";
    options.model.n_embd = 32;
    options.batch_size = 4;
    options.seq_len = 16;
    options.steps = 8;
    options.learning_rate = 3e-3;
    options.warmup_steps = 2;
    options.threads = 1;
    options.output_dir = output_dir;
    options.seed = 11;
    return options;
}

// tiny_train_options in the Llama-style family: grouped-query attention (one key/value head for the
// two query heads), the default SwiGLU width (C = 32: 128), an untied output head.
inline TrainOptions tiny_llama_train_options(const std::string& output_dir) {
    TrainOptions options = tiny_train_options(output_dir);
    options.model.arch = "llama";
    options.model.n_kv_head = 1;
    options.model.tie_embeddings = "false";
    return options;
}

// (rows, T+1) token windows, uniform over [0, vocab).
inline std::vector<int32_t> random_windows(int rows, int seq_len, int vocab, uint64_t seed) {
    std::mt19937_64 random(seed);
    std::vector<int32_t> windows(static_cast<size_t>(rows) * (seq_len + 1));
    for (int32_t& token : windows) token = static_cast<int32_t>(random() % static_cast<uint64_t>(vocab));
    return windows;
}

// Optimizer step number `index` of `step`: `accumulation` micro-steps of random (batch, seq_len + 1)
// windows, seeded 10 index + micro, then the update with `hyper` seeded `index`; its loss.
inline double random_training_step(TrainStep& step, int accumulation, int batch, int seq_len, int vocab,
                                   int index, AdamWHyper hyper) {
    step.begin();
    for (int micro = 0; micro < accumulation; ++micro)
        step.micro_step(
            random_windows(batch, seq_len, vocab, static_cast<uint64_t>(10 * index + micro)).data());
    hyper.seed = static_cast<uint64_t>(index);
    step.finish(hyper);
    return step.result().loss;
}

// 2 layers, 2 heads, width 32, vocabulary 100, context 16.
inline GPTConfig tiny_config() {
    GPTConfig config;
    config.n_layer = 2;
    config.n_head = 2;
    config.n_embd = 32;
    config.vocab_size = 100;
    config.max_seq_len = 16;
    return config;
}

// tiny_config at width 20: its 13040 parameters are not a multiple of 2 ranks x 16 elements, so
// ZeRO-1 with 2 ranks pads its arena (by 16 elements).
inline GPTConfig unaligned_tiny_config() {
    GPTConfig config = tiny_config();
    config.n_embd = 20;
    return config;
}

// The Llama-style family at the unaligned width: RMSNorm, RoPE, SwiGLU (F = 40), one key/value head
// for the two query heads, an untied output head.
inline GPTConfig unaligned_tiny_llama_config() {
    GPTConfig config = unaligned_tiny_config();
    config.arch = Arch::llama;
    config.n_kv_head = 1;
    config.ffn_hidden = 40;
    config.tie_embeddings = false;
    return config;
}

inline std::unique_ptr<Backend> cpu_backend(Precision precision) {
    BackendOptions options;
    options.precision = precision;
    options.threads = 1;
    return make_backend(options);
}

inline void load_initial_parameters(GPT& model, uint64_t seed) {
    const std::vector<float> values = init_parameters(model.config(), model.layout(), seed);
    model.load_master_parameters(values.data(), static_cast<int64_t>(values.size()));
}

inline std::vector<float> read_floats(Backend& backend, const TensorView& view) {
    std::vector<float> values(static_cast<size_t>(view.numel()));
    backend.copy_to_host(values.data(), view.data, view.bytes());
    return values;
}

// ||out - ref|| / ||ref|| in double.
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
    double difference = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        difference += (static_cast<double>(out[i]) - ref[i]) * (static_cast<double>(out[i]) - ref[i]);
        norm += static_cast<double>(ref[i]) * ref[i];
    }
    return std::sqrt(difference / norm);
}

// step -> loss of every "train" line of a metrics file (a later line for the same step wins).
inline std::map<int64_t, double> train_losses(const std::string& metrics_path) {
    std::map<int64_t, double> losses;
    std::ifstream file(metrics_path);
    for (std::string line; std::getline(file, line);) {
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record["type"] == "train") losses[record["step"].get<int64_t>()] = record["loss"].get<double>();
    }
    return losses;
}

}  // namespace mixgpt::testing_support
