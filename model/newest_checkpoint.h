// The newest checkpoint of a run directory, read, for the commands that read a run while a
// training run may be writing it (eval, sample, export, study): training writes a new checkpoint,
// then removes the oldest, so the newest one listed may be gone by the time it is opened. A
// checkpoint once opened is read whole from that open file (model/checkpoint.h); one that vanished
// before it was opened, or that cannot be read, is passed over for the next-newest, and the
// directory is listed again when one vanished (a newer one may have come meanwhile).
#pragma once

#include <optional>
#include <string>

#include "model/checkpoint.h"

namespace mixgpt {

struct FoundCheckpoint {
    std::string path;
    Checkpoint checkpoint;
};

// The newest checkpoint of `directory` that can be read; nullopt when none can (none listed, or
// every one invalid: one warning line says why the newest could not be read). Taking another than
// the newest listed is said in one log line naming both and why. Throws Error when checkpoints
// keep vanishing through every listing (a run rotating faster than they can be opened).
std::optional<FoundCheckpoint> read_newest_checkpoint(const std::string& directory,
                                                      CheckpointContent content);

}  // namespace mixgpt
