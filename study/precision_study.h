// `mixgpt study`: what each precision, or each optimizer (`--optimizers`), does to speed and to
// accuracy, on one dataset and model.
//
// The same training (same seed, data order and token budget: every TrainOptions field but the
// precision's, or the optimizer's) runs once per variant, each as an ordinary run directory under
// the study's:
//
//   <study>/<variant>/metrics.jsonl, checkpoints/   the run (train/trainer.h)
//   <study>/<variant>/study_run.json                written when the run is complete, with the
//                                                   bench figure of its precision
//   <study>/report.json, report.md                   study/study_report.h
//
// With several seeds (`seeds` > 1) every variant runs once per initialization seed, in
// <study>/<variant>/seed-<seed>/, and every run keeps the first seed's data order: the spread
// over seeds is the scatter a gap between precisions has to exceed.
//
// A study that is started again skips the complete runs and resumes the others from their
// newest checkpoint, so an interrupted study continues where it stopped; a run whose checkpoints
// record other settings than those asked for now is refused (study/study_run_settings.h). The
// dataset is recorded as an absolute path, the same wherever the study is started from.
#pragma once

#include <string>
#include <vector>

#include "kernels/precision.h"
#include "train/train_options.h"

namespace mixgpt {

struct StudyVariant {
    std::string name;  // the run directory's name, e.g. "fp16-noscale"
    Precision precision = Precision::fp32;
    std::string loss_scale = "none";  // TrainOptions::loss_scale
    bool stochastic_rounding = false;
    std::string description;  // for the report
    // fp8 runs: the scaling and whether the output head is FP8 too (the rest as Fp8Options' defaults)
    Fp8Scaling fp8_scaling = Fp8Scaling::delayed;
    bool fp8_head = false;
    // An optimizer study's: the run's optimizer, and Muon's Newton-Schulz precision
    OptimizerKind optimizer = OptimizerKind::adamw;
    DType muon_ns_dtype = DType::bf16;
};

// The variants a study knows, in report order: fp32 (the reference), tf32, bf16, fp16 (dynamic
// loss scaling), fp16-noscale, bf16-sr (stochastic rounding of the bf16 working weights), fp8
// (delayed scaling), fp8-current (current scaling), fp8-head (delayed, the output head in FP8 too).
const std::vector<StudyVariant>& study_variants();
// A comma-separated list of their names; throws Error naming an unknown one.
std::vector<StudyVariant> parse_study_variants(const std::string& list);
// `--optimizers`: a comma-separated list of adamw (every parameter at --lr), muon (bf16 Newton-Schulz;
// the matrices at --muon-lr, the AdamW groups at --embedding-lr, --head-lr and --lr) and muon-fp32
// (fp32 Newton-Schulz), each run at `precision` (one variant of study_variants()), in the order
// listed: the first is the one the others are measured against. Throws Error naming an unknown or
// repeated one.
std::vector<StudyVariant> parse_optimizer_variants(const std::string& list, const StudyVariant& precision);

struct StudyOptions {
    TrainOptions train;                  // output_dir, precision, loss_scale, resume: set per run
    std::vector<StudyVariant> variants;  // fp32 first when present
    std::string output_dir = "runs/study";
    int bench_steps = 3;      // timed steps of `mixgpt bench` per precision; 0: no bench figure
    int seeds = 1;            // runs per variant, initialized from train.seed, train.seed + 1, ...
    bool optimizers = false;  // the variants are parse_optimizer_variants'
};

// The initialization seeds of the study's runs, train.seed first.
std::vector<uint64_t> study_seeds(const StudyOptions& options);

// Runs what is missing, then writes the report. Returns false when a signal stopped a run (the
// study can be continued); throws Error on bad options or a failed run.
bool run_study(const StudyOptions& options);

// A run's directory relative to the study's: "<variant>", or "<variant>/seed-<seed>" in a study
// of several seeds.
std::string study_run_name(const StudyOptions& options, const StudyVariant& variant, uint64_t seed);
std::string study_run_directory(const StudyOptions& options, const StudyVariant& variant, uint64_t seed);

}  // namespace mixgpt
