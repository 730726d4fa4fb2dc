// Which runs a study may reuse. A study started again keeps its complete runs and resumes the
// others; a run directory is reused only when the options its newest checkpoint records (every
// checkpoint records all of them, model/checkpoint.h) are the ones the study asks for now, but for
// those that only say how it runs (the step budget, the device, threads, checkpointing). Otherwise
// the study is refused before anything runs, naming the run and the first option that differs:
// a re-run with another --lr, --arch or --dataset (or another dataset at the same path), or a
// plain bf16 run placed at <study>/fp32.
#pragma once

#include <string>

#include "train/train_options.h"

namespace mixgpt {

// Throws Error "<run_directory>: its run has <option> <recorded>, this study asks for <value>; ..."
// when the newest valid checkpoint under <run_directory>/checkpoints records other settings than
// `requested`, or another dataset identity than `dataset_identity` (tokenizer/dataset_path.h;
// checkpoints older than identities record none); nothing when there is no checkpoint (a run not
// yet started).
void require_study_run_settings(const std::string& run_directory, const TrainOptions& requested,
                                const std::string& dataset_identity);

}  // namespace mixgpt
