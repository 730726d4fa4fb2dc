#include "tests/cuda_sim/bank_conflicts.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "tests/cuda_sim/simulated_block.h"

namespace mixgpt::cuda_sim {
namespace {

Counters g_counters;                                        // guarded by launch_mutex() while a launch runs
std::map<const char*, SharedAccessCounts> g_shared_counts;  // by owner, as g_counters

constexpr int kBanks = 32;
constexpr size_t kBankBytes = 4;

// Wavefronts one phase takes: the most distinct words any bank holds among the lanes' accesses.
int phase_wavefronts(const SharedAccess* const* lanes, int count) {
    uintptr_t words[kWarpSize * 4];
    int n = 0;
    int on_bank[kBanks] = {};
    int worst = 0;
    for (int l = 0; l < count; ++l) {
        if (lanes[l] == nullptr) continue;
        const uintptr_t last = (lanes[l]->address + lanes[l]->bytes - 1) / kBankBytes;
        for (uintptr_t word = lanes[l]->address / kBankBytes; word <= last; ++word) {
            if (std::find(words, words + n, word) != words + n) continue;  // a word read once serves all
            words[n++] = word;
            worst = std::max(worst, ++on_bank[word % kBanks]);
        }
    }
    return worst;
}

// Counts one warp-wide instruction: lanes[l] is lane l's access, null for an inactive lane.
void count_shared_request(const SharedAccess* const (&lanes)[kWarpSize]) {
    const SharedAccess* first = nullptr;
    for (const SharedAccess* access : lanes)
        if (first == nullptr) first = access;
    const int phase_lanes = first->bytes <= 4 ? 32 : first->bytes <= 8 ? 16 : 8;
    SharedAccessCounts& counts = g_shared_counts[first->owner];
    ++counts.requests;
    for (int phase = 0; phase < kWarpSize; phase += phase_lanes) {
        const int wavefronts = phase_wavefronts(lanes + phase, phase_lanes);
        if (wavefronts == 0) continue;  // no active lane
        ++counts.phases;
        counts.extra_wavefronts += static_cast<uint64_t>(wavefronts - 1);
        counts.worst_phase = std::max(counts.worst_phase, wavefronts);
    }
}

// Whether every lane that accessed shared memory ran the same instructions in the same order (the
// common case, counted without sorting).
bool same_instructions(const Block& block, int first, int lanes, const std::vector<SharedAccess>*& sequence) {
    sequence = nullptr;
    for (int l = 0; l < lanes; ++l) {
        const std::vector<SharedAccess>& accesses = block.threads[first + l].shared_accesses;
        if (accesses.empty()) continue;
        if (sequence == nullptr) {
            sequence = &accesses;
        } else if (accesses.size() != sequence->size() ||
                   !std::equal(accesses.begin(), accesses.end(), sequence->begin(),
                               [](const SharedAccess& a, const SharedAccess& b) {
                                   return a.instruction == b.instruction;
                               })) {
            return false;
        }
    }
    return true;
}

}  // namespace

// Counts the shared-memory accesses warp w's lanes made since it last stopped: the k-th time
// each lane ran one instruction is one request (lanes that ran it fewer times are inactive).
void count_warp_shared_accesses(Block& block, int w) {
    const int first = w * kWarpSize;
    const int lanes = std::min(kWarpSize, static_cast<int>(block.threads.size()) - first);
    const std::vector<SharedAccess>* sequence = nullptr;
    if (same_instructions(block, first, lanes, sequence)) {
        for (size_t k = 0; sequence != nullptr && k < sequence->size(); ++k) {
            const SharedAccess* request[kWarpSize] = {};
            for (int l = 0; l < lanes; ++l) {
                const std::vector<SharedAccess>& accesses = block.threads[first + l].shared_accesses;
                if (!accesses.empty()) request[l] = &accesses[k];
            }
            count_shared_request(request);
        }
    } else {
        std::vector<std::tuple<const void*, int, int, const SharedAccess*>> ordered;  // instruction, k, lane
        for (int l = 0; l < lanes; ++l) {
            std::map<const void*, int> times;
            for (const SharedAccess& access : block.threads[first + l].shared_accesses)
                ordered.emplace_back(access.instruction, times[access.instruction]++, l, &access);
        }
        std::sort(ordered.begin(), ordered.end());
        for (size_t begin = 0; begin < ordered.size();) {
            const SharedAccess* request[kWarpSize] = {};
            size_t end = begin;
            for (; end < ordered.size() && std::get<0>(ordered[end]) == std::get<0>(ordered[begin]) &&
                   std::get<1>(ordered[end]) == std::get<1>(ordered[begin]);
                 ++end)
                request[std::get<2>(ordered[end])] = std::get<3>(ordered[end]);
            count_shared_request(request);
            begin = end;
        }
    }
    for (int l = 0; l < lanes; ++l) block.threads[first + l].shared_accesses.clear();
}

void record_access(const void* instruction, const char* owner, const void* address, size_t bytes) {
    current_block().running->shared_accesses.push_back(
        {instruction, owner, reinterpret_cast<uintptr_t>(address), bytes});
}

Counters counters() {
    std::lock_guard<std::mutex> lock(launch_mutex());
    Counters counters = g_counters;
    for (const auto& [owner, counts] : g_shared_counts) {  // one owner's name may sit at several addresses
        SharedAccessCounts& total = counters.shared_accesses[owner];
        total.requests += counts.requests;
        total.phases += counts.phases;
        total.extra_wavefronts += counts.extra_wavefronts;
        total.worst_phase = std::max(total.worst_phase, counts.worst_phase);
    }
    return counters;
}

void reset_counters() {
    std::lock_guard<std::mutex> lock(launch_mutex());
    g_counters = Counters{};
    g_shared_counts.clear();
}

void count_ldmatrix_phase(int extra_wavefronts) {
    ++g_counters.ldmatrix_phases;
    g_counters.ldmatrix_extra_wavefronts += static_cast<uint64_t>(extra_wavefronts);
}

void record_shared_access(const char* owner, const void* address, size_t bytes) {
    record_access(__builtin_return_address(0), owner, address, bytes);
}

}  // namespace mixgpt::cuda_sim
