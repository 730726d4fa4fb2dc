#include "kernels/cpu/scratch_pool.h"

#include <utility>

namespace mixgpt::cpu {

ScratchLease& ScratchLease::operator=(ScratchLease&& other) noexcept {
    if (this != &other) {
        give_back();
        pool_ = std::exchange(other.pool_, nullptr);
        block_ = std::move(other.block_);
    }
    return *this;
}

ScratchLease::~ScratchLease() { give_back(); }

void ScratchLease::give_back() {
    if (pool_ != nullptr && !block_.empty()) pool_->give_back(std::move(block_));
    pool_ = nullptr;
}

ScratchLease ScratchPool::borrow(size_t count) {
    const size_t bytes = count * sizeof(float);
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        auto best = free_blocks_.end();
        for (auto block = free_blocks_.begin(); block != free_blocks_.end(); ++block) {
            const size_t size = block->bytes();
            if (size >= bytes && size / 2 <= bytes && (best == free_blocks_.end() || size < best->bytes()))
                best = block;
        }
        if (best != free_blocks_.end()) {
            Buffer block = std::move(*best);
            free_blocks_.erase(best);
            return ScratchLease(this, std::move(block));
        }
    }
    return ScratchLease(this, memory_.allocate(bytes == 0 ? sizeof(float) : bytes));
}

void ScratchPool::give_back(Buffer block) {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_blocks_.push_back(std::move(block));
}

}  // namespace mixgpt::cpu
