// Resuming with several ranks: one rank reads the checkpoint and every rank receives its
// content, so only that rank needs to see the file (no shared file system is assumed), and
// every rank either resumes from the same state or fails with the same error.
#pragma once

#include <functional>
#include <string>

#include "model/checkpoint.h"
#include "dist/communicator.h"

namespace mixgpt {

// Runs `read` on root and sends what it returns to every rank. When it throws Error on root,
// every rank throws an Error with the same message.
Checkpoint broadcast_checkpoint(Communicator& communicator, const std::function<Checkpoint()>& read,
                                int root);

// root's text on every rank.
std::string broadcast_text(Communicator& communicator, const std::string& text, int root);

}  // namespace mixgpt
