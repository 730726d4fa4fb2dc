#include "tests/sim/shared_bank_budgets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace mixgpt::test {
namespace {

// The budget of `owner`, a function's name with its template arguments if any.
std::vector<SharedBankBudget>::const_iterator find_budget(const std::vector<SharedBankBudget>& budgets,
                                                          const std::string& owner) {
    return std::find_if(budgets.begin(), budgets.end(), [&](const SharedBankBudget& budget) {
        const std::string name = budget.owner;
        return owner == name || owner.rfind(name + "<", 0) == 0;
    });
}

}  // namespace

const std::vector<SharedBankBudget>& shared_bank_budgets() {
    static const std::vector<SharedBankBudget> budgets = {
        {"layernorm_backward_kernel", 1,
         "lane l owns columns l, l + 32, ...: a warp's accesses are 32 consecutive words"},
        {"rmsnorm_backward_kernel", 1, "as layernorm_backward_kernel, one accumulator row per warp"},
        {"column_sum_partials_kernel", 1, "a row of 32 floats per thread row, read down its columns"},
        {"block_sum", 1, "per-warp doubles: lane w reads word pair w (two half-warp phases)"},
        {"block_statistics", 1, "per-warp doubles and floats, read by lane (as block_sum)"},
        {"exponent_histogram_kernel", 32,
         "a histogram: each lane adds to its value's exponent bin, so lanes whose values lie 32 bins "
         "apart share a bank (data-dependent; a tensor's exponents cluster, so few phases reach 2)"},
        {"block_reduce", 1,
         "per-warp values (floats, (max, sum) pairs), read as by block_sum; the result broadcast"},
        {"attention_forward_kernel", 2,
         "rows hd + 1 floats apart; a warp filling a tile across a row end spans 33 words"},
        {"attention_backward_query_kernel", 2, "as attention_forward_kernel"},
        {"attention_backward_key_kernel", 2, "as attention_forward_kernel"},
        {"cp.async", 1, "flash tiles: rows padded by 16 bytes, 8 rows' 16-byte chunks on distinct banks"},
        {"store_rows", 1, "flash output staging: 4-byte pairs and 16-byte rows in the padded tile"},
        {"rotate_rows", 1, "flash RoPE: 4-byte pairs of a row, two rows 16 banks apart at head_dim 64"},
        // The reads are 8 consecutive words per instruction (no conflict on a GPU); the simulator
        // sees 2 where g++ gives one source read two copies across the lane-dependent mask, so
        // that lanes at different iterations of the unrolled loop share a copy (README.md).
        {"key_kernel", 2,
         "flash dK/dV: lse and delta of a tile, read by column; 2 is g++'s code, not the GPU's"},
        {"query_kernel", 1, "flash dQ and D: lse and delta of the warp's rows (broadcast)"},
        {"fp8_quantize_kernel", 1,
         "code tile rows 68 bytes apart: a warp's row stores share words, a column pair's reads span 16 "
         "banks"},
        {"fp8_amax_kernel", 1, "per-warp maxima, read by lane (as block_sum)"},
        {"fp8_delayed_update_kernel", 1, "the amax history read and written by consecutive threads"},
    };
    return budgets;
}

std::vector<std::string> shared_bank_violations(const cuda_sim::Counters& counters,
                                                const std::vector<SharedBankBudget>& budgets) {
    std::vector<std::string> violations;
    for (const auto& [owner, counts] : counters.shared_accesses) {
        const auto budget = find_budget(budgets, owner);
        const std::string measured = std::to_string(counts.requests) + " requests, " +
                                     std::to_string(counts.extra_wavefronts) + " extra wavefronts, up to " +
                                     std::to_string(counts.worst_phase) + " wavefronts a phase";
        if (budget == budgets.end())
            violations.push_back("shared memory of " + owner + " has no bank-conflict budget (" + measured +
                                 ")");
        else if (counts.worst_phase > budget->worst_phase)
            violations.push_back(owner + ": " + measured + "; its budget is " +
                                 std::to_string(budget->worst_phase) + " (" + budget->why + ")");
    }
    if (counters.ldmatrix_extra_wavefronts > 0)
        violations.push_back("ldmatrix: " + std::to_string(counters.ldmatrix_extra_wavefronts) +
                             " extra wavefronts in " + std::to_string(counters.ldmatrix_phases) +
                             " phases; its budget is 0");
    return violations;
}

namespace {

// Resets the simulator's counters before each test and fails the test, before its result is
// printed, if its kernels broke a budget. At the end, prints what every owner took in all.
class SharedBankBudgetListener : public ::testing::EmptyTestEventListener {
public:
    void OnTestStart(const ::testing::TestInfo&) override { cuda_sim::reset_counters(); }

    void OnTestEnd(const ::testing::TestInfo&) override {
        const cuda_sim::Counters counters = cuda_sim::counters();
        for (const std::string& violation : shared_bank_violations(counters, shared_bank_budgets()))
            ADD_FAILURE() << "shared-memory bank conflicts: " << violation;
        for (const auto& [owner, counts] : counters.shared_accesses) {
            cuda_sim::SharedAccessCounts& total = totals_[owner];
            total.requests += counts.requests;
            total.phases += counts.phases;
            total.extra_wavefronts += counts.extra_wavefronts;
            total.worst_phase = std::max(total.worst_phase, counts.worst_phase);
        }
    }

    void OnTestProgramEnd(const ::testing::UnitTest&) override {
        if (totals_.empty()) return;
        std::printf("shared-memory accesses of the tests' kernels (budget: wavefronts a phase at most)\n");
        std::printf("%-34s %12s %12s %16s %6s %6s\n", "owner", "requests", "phases", "extra wavefronts",
                    "worst", "budget");
        for (const auto& [owner, counts] : totals_) {
            const auto& budgets = shared_bank_budgets();
            const auto budget = find_budget(budgets, owner);
            std::printf("%-34s %12llu %12llu %16llu %6d %6d\n", owner.c_str(),
                        static_cast<unsigned long long>(counts.requests),
                        static_cast<unsigned long long>(counts.phases),
                        static_cast<unsigned long long>(counts.extra_wavefronts), counts.worst_phase,
                        budget == budgets.end() ? 0 : budget->worst_phase);
        }
    }

private:
    std::map<std::string, cuda_sim::SharedAccessCounts> totals_;
};

// Installs the listener before the result printer (once the flags chose it), so that a test it
// fails prints as failed.
class SharedBankBudgetEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
        ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
        listeners.Append(new SharedBankBudgetListener);
        if (printer != nullptr) listeners.Append(printer);
    }
};

::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new SharedBankBudgetEnvironment);

}  // namespace
}  // namespace mixgpt::test
