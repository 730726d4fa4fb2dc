// ZeRO-1 under --optimizer muon (train/README.md, "Optimizers"): what each of W ranks keeps, and
// how the collectives stage it (train/muon_zero_exchange.h).
// - The Muon matrices (train/parameter_groups.h) are kept whole, round-robin within each shape as
//   nanochat's DistMuon does: the k-th matrix of a shape (arena order) by rank k % W. A shape's
//   matrices travel in chunks of W, slot s of a chunk holding rank s's matrix (the last chunk's
//   missing slots carry nothing anyone reads).
// - The AdamW elements, taken in arena order and followed by zero padding up to a multiple of
//   shard_granule(W) (the arena's own padding, from n on), form one packed vector cut into W equal
//   blocks; rank r keeps the r-th (today's ZeRO-1 sharding of them).
// A rank's pieces (dist/rank_pieces.h) are its block's ranges and its matrices, in arena order.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/rank_pieces.h"
#include "model/config.h"
#include "train/parameter_groups.h"

namespace mixgpt {

struct MuonShape {
    int64_t rows = 0, cols = 0;
    std::vector<MuonMatrix> matrices;  // arena order; matrices[k] kept by rank k % W
    int64_t chunks(int world_size) const {
        return (static_cast<int64_t>(matrices.size()) + world_size - 1) / world_size;
    }
};

class MuonZeroLayout {
public:
    MuonZeroLayout(const GPTConfig& config, int world_size);

    int world_size() const { return world_size_; }
    int64_t arena_elements() const { return pieces_.arena_elements(); }  // n and the packed vector's padding
    const RankPieces& pieces() const { return pieces_; }
    // The packed order: the arena ranges of the AdamW elements, ascending, then the padding.
    const std::vector<ElementRange>& packed_ranges() const { return packed_ranges_; }
    int64_t packed_elements() const { return packed_elements_; }  // a multiple of shard_granule(W)
    // The arena ranges of rank's block of the packed vector, ascending.
    std::vector<ElementRange> block(int rank) const;
    const std::vector<MuonShape>& shapes() const { return shapes_; }  // in order of first appearance
    // Rank's groups in the coordinates of its shard: the parts of the AdamW groups in its block
    // (the padding in none), and the matrices it keeps.
    ParameterGroups shard_groups(int rank) const;
    // Elements (f32) of the staging buffers: the packed vector, and W slots per chunk of each shape.
    int64_t staging_elements() const;

private:
    // Every rank's block ranges and matrices, each rank's in arena order (from the members above).
    std::vector<std::vector<ElementRange>> kept_pieces() const;

    int world_size_;
    ParameterGroups groups_;  // in arena coordinates
    int64_t packed_elements_;
    std::vector<ElementRange> packed_ranges_;
    std::vector<MuonShape> shapes_;
    RankPieces pieces_;
};

}  // namespace mixgpt
