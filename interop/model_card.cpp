#include "interop/model_card.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/log.h"
#include "interop/hf_config.h"
#include "model/checkpoint_model.h"
#include "kernels/precision.h"

namespace mixgpt::interop {
namespace {

namespace fs = std::filesystem;

// "mean loss ..., perplexity ..., bits per byte ..." for this step from the run directory, or "".
std::string evaluation_line(const std::string& run_directory, int64_t step) {
    if (run_directory.empty()) return "";
    std::ifstream eval_file(fs::path(run_directory) / "eval.json");
    if (eval_file) {
        const nlohmann::json report = nlohmann::json::parse(eval_file, nullptr, false);
        if (!report.is_discarded() && report.value("step", int64_t{-1}) == step &&
            report.contains("mean_loss"))
            return format("%.6f nats/token, perplexity %.4f, %.6f bits per byte (`mixgpt eval`, %s)",
                          report.value("mean_loss", 0.0), report.value("perplexity", 0.0),
                          report.value("bits_per_byte", 0.0), report.value("source", std::string()).c_str());
    }
    std::ifstream metrics(fs::path(run_directory) / "metrics.jsonl");
    std::string found;
    for (std::string line; std::getline(metrics, line);) {
        const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        if (!record.is_discarded() && record.value("type", std::string()) == "eval" &&
            record.value("step", int64_t{-1}) == step)
            found = format(
                "%.6f nats/token, perplexity %.4f (training's evaluation on %lld validation tokens; "
                "bits per byte not evaluated)",
                record.value("val_loss", 0.0), record.value("val_perplexity", 0.0),
                static_cast<long long>(record.value("val_tokens", int64_t{0})));
    }
    return found;
}

// The `mixgpt train` command line equivalent to the recorded options.
std::string training_command(const Checkpoint& checkpoint) {
    std::string command = "mixgpt train";
    // The recorded switches: present as "true" when given (options without a value).
    static const std::set<std::string> kSwitches = {"stochastic_rounding", "embedding_norm", "qk_norm",
                                                    "zero_optimizer", "align_documents"};
    for (const auto& [name, value] : checkpoint.options) {
        if (value.empty()) continue;
        std::string flag = name;
        for (char& c : flag)
            if (c == '_') c = '-';
        if (name == "zero_optimizer") flag = "zero";
        if (kSwitches.count(name) != 0) {
            if (value == "true") command += " --" + flag;
        } else if (name == "overlap_comm") {
            if (value == "false") command += " --no-overlap-comm";
        } else {
            command += " --" + flag + " " + value;
        }
    }
    return command;
}

}  // namespace

std::string model_card(const ModelCardFacts& facts) {
    const Checkpoint& checkpoint = *facts.checkpoint;
    const GPTConfig& model = checkpoint.config;
    const std::string dataset = checkpoint_option(checkpoint, "dataset");
    const std::string evaluation = evaluation_line(facts.run_directory, checkpoint.step);
    const bool llama = model.arch == Arch::llama;
    const std::string heads =
        llama ? format("%d heads (%d key/value)%s, SwiGLU %d", model.n_head, model.kv_heads(),
                       model.qk_norm ? " with QK-norm" : "", model.mlp_hidden())
              : format("%d heads", model.n_head);
    std::ostringstream card;
    card << "---\nlibrary_name: transformers\npipeline_tag: text-generation\n---\n\n"
         << "# " << (llama ? "Llama" : "GPT-2") << "-architecture model trained with mixgpt\n\n"
         << "| | |\n| --- | --- |\n"
         << "| architecture | " << hf_architecture(model) << ": " << model.n_layer
         << " layers, " << heads << ", width " << model.n_embd << ", context " << model.max_seq_len << ", vocabulary "
         << model.vocab_size << " (" << format("%.2f", static_cast<double>(model.num_parameters()) / 1e6)
         << " M parameters) |\n"
         << "| corpus | " << (dataset.empty() ? "not recorded" : "`" + dataset + "`") << " |\n"
         << "| tokens seen | " << checkpoint.tokens_seen << " |\n"
         << "| steps | " << checkpoint.step << " |\n"
         << "| training precision | " << precision_name(checkpoint.precision) << " (FP32 master weights) |\n"
         << "| exported weights | " << facts.dtype << " |\n"
         << "| validation | " << (evaluation.empty() ? "not evaluated" : evaluation) << " |\n"
         << "| checkpoint | `" << facts.checkpoint_path << "` |\n"
         << "| exported by | mixgpt " << facts.commit << " |\n\n"
         << "Training command, rebuilt from the options the checkpoint records:\n\n```sh\n"
         << training_command(checkpoint) << "\n```\n\n"
         << facts.tokenizer << "\n\n"
         << "```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n"
            "model, tokenizer = AutoModelForCausalLM.from_pretrained(\".\"), "
            "AutoTokenizer.from_pretrained(\".\")\n"
            "print(tokenizer.decode(model.generate(**tokenizer(\"And God said\", return_tensors=\"pt\"), "
            "max_new_tokens=50)[0]))\n```\n";
    return card.str();
}

}  // namespace mixgpt::interop
