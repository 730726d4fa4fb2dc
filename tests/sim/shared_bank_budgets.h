// The shared-memory bank-conflict budget of every kernel the GPU tests run on the CUDA simulator,
// and the check that holds each test to it (shared_bank_budgets.cpp installs it as a GoogleTest
// listener in build/mixgpt_sim_tests: a test whose kernels exceed a budget, or touch shared memory
// under an owner with no budget, fails).
#pragma once

#include <string>
#include <vector>

#include "tests/cuda_sim/bank_conflicts.h"

namespace mixgpt::test {

// The most wavefronts one phase of `owner`'s shared-memory accesses may take (1: no conflict).
struct SharedBankBudget {
    const char* owner;  // as cuda_sim::Counters names it: the function that took the SharedPointer
    int worst_phase;
    const char* why;
};

const std::vector<SharedBankBudget>& shared_bank_budgets();

// One line per owner over its budget or without one, and for ldmatrix conflicts; empty if none.
std::vector<std::string> shared_bank_violations(const cuda_sim::Counters& counters,
                                                const std::vector<SharedBankBudget>& budgets);

}  // namespace mixgpt::test
