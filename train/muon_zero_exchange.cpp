#include "train/muon_zero_exchange.h"

#include <algorithm>

#include "core/error.h"

namespace mixgpt {
namespace {

constexpr int kEveryRank = -1;

void copy_range(Backend& backend, const TensorView& arena, ElementRange in_arena, const TensorView& staged,
                int64_t at, bool into_arena) {
    const TensorView a = slice_elements(arena, in_arena);
    const TensorView s = slice_elements(staged, {at, at + in_arena.count()});
    if (into_arena)
        backend.copy_within(a.data, s.data, a.bytes());
    else
        backend.copy_within(s.data, a.data, a.bytes());
}

}  // namespace

MuonZeroExchange::MuonZeroExchange(Backend& backend, Communicator& communicator, MuonZeroLayout layout)
    : backend_(backend), communicator_(communicator), layout_(std::move(layout)) {
    MIXGPT_REQUIRE(layout_.world_size() == communicator.world_size(),
                   "muon zero: the layout is for another number of ranks");
    staging_ = backend_.allocate(static_cast<size_t>(std::max<int64_t>(layout_.staging_elements(), 1)) *
                                 sizeof(float));
    backend_.fill_zero(staging_.data(), staging_.bytes());
}

TensorView MuonZeroExchange::packed(DType dtype) const {
    return TensorView(staging_.data(), dtype, {layout_.packed_elements()});
}

TensorView MuonZeroExchange::slots(size_t shape, DType dtype) const {
    int64_t offset = layout_.packed_elements();  // f32 elements before the shape's slots
    for (size_t s = 0; s < shape; ++s) {
        const MuonShape& before = layout_.shapes()[s];
        offset += before.chunks(layout_.world_size()) * layout_.world_size() * before.rows * before.cols;
    }
    const MuonShape& own = layout_.shapes()[shape];
    return TensorView(static_cast<char*>(staging_.data()) + static_cast<size_t>(offset) * sizeof(float),
                      dtype, {own.chunks(layout_.world_size()) * layout_.world_size(), own.rows * own.cols});
}

void MuonZeroExchange::copy_packed(const TensorView& arena, const TensorView& staged, int rank,
                                   bool into_arena) {
    const int64_t block = layout_.packed_elements() / layout_.world_size();
    int64_t at = rank == kEveryRank ? 0 : rank * block;
    for (const ElementRange& range : rank == kEveryRank ? layout_.packed_ranges() : layout_.block(rank)) {
        copy_range(backend_, arena, range, staged, at, into_arena);
        at += range.count();
    }
}

void MuonZeroExchange::copy_matrices(const TensorView& arena, const TensorView& staged, size_t shape,
                                     int rank, bool into_arena) {
    const MuonShape& own = layout_.shapes()[shape];
    const int64_t size = own.rows * own.cols;
    const TensorView flat(staged.data, staged.dtype, {staged.numel()});  // (slots * size)
    for (size_t k = 0; k < own.matrices.size(); ++k) {
        if (rank != kEveryRank && k % static_cast<size_t>(layout_.world_size()) != static_cast<size_t>(rank))
            continue;
        const int64_t offset = own.matrices[k].offset;
        copy_range(backend_, arena, {offset, offset + size}, flat, static_cast<int64_t>(k) * size,
                   into_arena);
    }
}

void MuonZeroExchange::reduce_gradients(const TensorView& gradients) {
    const int rank = communicator_.rank(), world = layout_.world_size();
    const TensorView packed_gradients = packed(DType::f32);
    copy_packed(gradients, packed_gradients, kEveryRank, false);
    communicator_.reduce_scatter_mean(packed_gradients);
    for (size_t shape = 0; shape < layout_.shapes().size(); ++shape) {
        const TensorView staged = slots(shape, DType::f32);  // (chunks * W, rows * cols)
        copy_matrices(gradients, staged, shape, kEveryRank, false);
        const TensorView flat(staged.data, DType::f32, {staged.numel()});
        const int64_t chunk = world * staged.shape[1];  // W slots
        for (int64_t c = 0; c < staged.shape[0] / world; ++c)
            communicator_.reduce_scatter_mean(slice_elements(flat, {c * chunk, (c + 1) * chunk}));
    }
    communicator_.join();
    copy_packed(gradients, packed_gradients, rank, true);
    for (size_t shape = 0; shape < layout_.shapes().size(); ++shape)
        copy_matrices(gradients, slots(shape, DType::f32), shape, rank, true);
}

void MuonZeroExchange::gather_working(const TensorView& working) {
    const int rank = communicator_.rank(), world = layout_.world_size();
    const TensorView packed_working = packed(working.dtype);
    copy_packed(working, packed_working, rank, false);
    communicator_.all_gather(packed_working);
    for (size_t shape = 0; shape < layout_.shapes().size(); ++shape) {
        const TensorView staged = slots(shape, working.dtype);  // (chunks * W, rows * cols)
        copy_matrices(working, staged, shape, rank, false);
        const TensorView flat(staged.data, working.dtype, {staged.numel()});
        const int64_t chunk = world * staged.shape[1];  // W slots
        for (int64_t c = 0; c < staged.shape[0] / world; ++c)
            communicator_.all_gather(slice_elements(flat, {c * chunk, (c + 1) * chunk}));
    }
    communicator_.join();
    copy_packed(working, packed_working, kEveryRank, true);
    for (size_t shape = 0; shape < layout_.shapes().size(); ++shape)
        copy_matrices(working, slots(shape, working.dtype), shape, kEveryRank, true);
}

}  // namespace mixgpt
