// Shared by the multi-rank tests: data every rank agrees on (a dataset and run directories made
// by rank 0 on the one machine the test runs on), and the collective timeout they use so that a
// failing test ends instead of leaving the other rank waiting.
#pragma once

#include <mpi.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "tests/test_support.h"
#include "model/checkpoint.h"
#include "tests/test_train_support.h"
#include "train/trainer.h"

namespace mixgpt::testing_support {

constexpr double kTestCollectiveTimeout = 60;  // seconds
constexpr int kRanks = 2;                      // scripts/run_tests.sh runs them under mpirun -np 2
constexpr int kBatch = 2, kSeqLen = 16;        // B and T of the step-level tests, per rank
constexpr int kSteps = 4, kSaveStep = 2;       // the resume tests' runs and the step they resume from

inline int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

inline std::string broadcast_from_rank0(std::string text) {
    int length = static_cast<int>(text.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    text.resize(static_cast<size_t>(length));
    MPI_Bcast(text.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    return text;
}

// tiny_dataset(), made once by rank 0; every rank gets its path. Collective on first use.
inline const std::string& shared_tiny_dataset_path() {
    static const std::string path =
        broadcast_from_rank0(world_rank() == 0 ? tiny_dataset().dataset_path : std::string());
    return path;
}

// tiny_dataset()'s tokenizer model, made with it by rank 0. Collective on first use.
inline const std::string& shared_tiny_tokenizer_path() {
    static const std::string path =
        broadcast_from_rank0(world_rank() == 0 ? tiny_dataset().tokenizer_path : std::string());
    return path;
}

// Runs on rank 0 alone; the other ranks wait for it.
inline void on_rank0_alone(const std::function<void()>& run) {
    if (world_rank() == 0) run();
    MPI_Barrier(MPI_COMM_WORLD);
}

// A run directory holding only `source`'s checkpoint of step kSaveStep (on rank 0's side).
inline void seed_run_directory(const std::string& source_dir, const std::string& run_dir) {
    if (world_rank() == 0) {
        const std::string directory = checkpoint_directory(run_dir);
        std::filesystem::create_directories(directory);
        std::filesystem::copy_file(checkpoint_path(checkpoint_directory(source_dir), kSaveStep),
                                   checkpoint_path(directory, kSaveStep));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

// A directory every rank knows, made by rank 0 and removed by it once every rank is done.
// Construction and destruction are collective.
class SharedTempDirectory {
public:
    explicit SharedTempDirectory(const std::string& name) {
        if (world_rank() == 0) owned_ = std::make_unique<test::TempDirectory>(name);
        path_ = broadcast_from_rank0(owned_ ? owned_->path() : std::string());
    }
    ~SharedTempDirectory() { MPI_Barrier(MPI_COMM_WORLD); }
    SharedTempDirectory(const SharedTempDirectory&) = delete;
    SharedTempDirectory& operator=(const SharedTempDirectory&) = delete;

    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::unique_ptr<test::TempDirectory> owned_;
    std::string path_;
};

}  // namespace mixgpt::testing_support
