// Data loader throughput (tokenizer/loader.h): B = 16, T = 1024 windows in
// shuffled train order from a 16M-token uint16 dataset (random ids below
// GPT-2's vocabulary) in the system's temporary directory. Reports tokens/s
// (the "items_per_second" counter, B*T per batch): synchronous reading on
// the calling core, and with the prefetch thread.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "tokenizer/dataset_writer.h"
#include "tokenizer/loader.h"

namespace mixgpt {
namespace {

constexpr int kVocab = 50257;
constexpr int64_t kTokens = int64_t{16} << 20;

class BenchDataset {
public:
    BenchDataset()
        : path_((std::filesystem::temp_directory_path() /
                 ("mixgpt_loader_bench_" + std::to_string(::getpid()) + ".h5"))
                    .string()) {
        DatasetMetadata metadata;
        metadata.vocab_size = kVocab;
        metadata.eot_id = kVocab - 1;
        metadata.tokenizer.sha256 = "bench";
        DatasetWriter writer(path_, metadata);
        std::mt19937 generator(1);
        std::uniform_int_distribution<int32_t> token(0, kVocab - 2);
        std::vector<int32_t> document(1 << 16);
        for (int64_t written = 0; written < kTokens; written += static_cast<int64_t>(document.size()) + 1) {
            for (int32_t& t : document) t = token(generator);
            writer.add_document(Split::train, document, static_cast<int64_t>(document.size()) * 4);
        }
        writer.add_document(Split::val, document, static_cast<int64_t>(document.size()) * 4);
        writer.finish(0, 0);
    }
    ~BenchDataset() { std::filesystem::remove(path_); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

const std::string& dataset_path() {
    static const BenchDataset dataset;
    return dataset.path();
}

void BM_LoaderTrain(benchmark::State& state) {
    LoaderOptions options;
    options.dataset_path = dataset_path();
    options.batch_size = 16;
    options.seq_len = 1024;
    options.prefetch = state.range(0) != 0;
    DataLoader loader(options);
    Batch batch;
    for (auto _ : state) {
        loader.next(batch);
        benchmark::DoNotOptimize(batch.tokens[0]);
    }
    state.SetItemsProcessed(state.iterations() * options.batch_size * options.seq_len);
    state.SetLabel(options.prefetch ? "prefetch thread" : "synchronous, one core");
}

BENCHMARK(BM_LoaderTrain)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->MinTime(2.0)->UseRealTime();

}  // namespace
}  // namespace mixgpt
