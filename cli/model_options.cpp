#include "cli/model_options.h"

#include "cli/number_checks.h"

namespace mixgpt::cli {

void add_model_options(CLI::App& command, ModelOptions& options) {
    const char* group = "Model";
    command.add_option("--model", options.preset, "model preset d2, d6, d12, d24, d36, d48 (width 64*depth)")
        ->capture_default_str()
        ->group(group);
    command.add_option("--arch", options.arch,
                     "model family: gpt2 (LayerNorm, learned positions, GELU MLP, biases) or llama (RMSNorm, "
                     "RoPE, SwiGLU MLP, grouped-query attention, no biases)")
        ->check(CLI::IsMember({"gpt2", "llama"}))
        ->capture_default_str()
        ->group(group);
    command.add_option("--n-layer", options.n_layer, "override the preset's layer count")->group(group);
    command.add_option("--n-head", options.n_head, "override the preset's head count")->group(group);
    command.add_option("--n-embd", options.n_embd, "override the preset's width")->group(group);
    command.add_option("--n-kv-head", options.n_kv_head,
                     "llama: key/value heads, dividing the head count (default: the head count)")
        ->check(positive())
        ->group(group);
    command.add_option("--ffn-hidden", options.ffn_hidden,
                     "llama: the MLP's hidden width F (default: 2/3 * 4 * width, rounded up to a multiple of 256; of 64 for widths under 512)")
        ->check(positive())
        ->group(group);
    command.add_option("--ffn-multiplier", options.ffn_multiplier,
                     "llama: multiply the default hidden width by this before rounding (Llama 3: 1.3)")
        ->check(positive())
        ->group(group);
    command.add_option("--rms-norm-eps", options.rms_norm_eps, "llama: RMSNorm's epsilon (default 1e-5)")
        ->check(positive())
        ->group(group);
    command.add_option("--rope-theta", options.rope_theta, "llama: RoPE's base, above 1 (default 10000)")
        ->check(greater_than(1))
        ->group(group);
    command.add_option("--tie-embeddings", options.tie_embeddings,
                     "llama: true (default) computes the logits with the token embedding, false with an output "
                     "head of its own")
        ->check(CLI::IsMember({"true", "false"}))
        ->group(group);
    command
        .add_option("--logit-softcap", options.logit_softcap,
                    "cap the logits z at C*tanh(z/C) in training, evaluation and sampling (nanochat 15, "
                    "Gemma 2 30; default: off); recorded in checkpoints")
        ->check(positive())
        ->group(group);
    command
        .add_option("--mlp", options.mlp,
                    "the MLP: the family's own (gpt2: gelu, llama: swiglu) or relu2, relu(x)^2 of one product "
                    "(GPT-2 speedrun, nanochat; 4 * width, or --ffn-hidden under llama); recorded in "
                    "checkpoints")
        ->check(CLI::IsMember({"gelu", "swiglu", "relu2"}))
        ->group(group);
    command
        .add_option("--norm-weights", options.norm_weights,
                    "true (default): every norm has its weight (and LayerNorm its bias); false: parameter-free "
                    "norms everywhere, no such tensors (nanochat's RMSNorm); recorded in checkpoints")
        ->check(CLI::IsMember({"true", "false"}))
        ->group(group);
    command
        .add_option("--zero-init", options.zero_init,
                    "start these at zero (nanochat): proj (the attention and MLP output projections), head (the "
                    "output head; needs --tie-embeddings false), proj,head, or none (default); recorded in "
                    "checkpoints")
        ->group(group);
    command
        .add_flag("--embedding-norm", options.embedding_norm,
                  "a norm of the family's kind right after the embeddings (nanochat); recorded in checkpoints")
        ->group(group);
    command
        .add_option(
            "--attention-mask", options.attention_mask,
            "causal (default) or document: each position attends only to the positions before it in "
            "its own document (documents end at the dataset's end-of-text token, which belongs to the "
            "document it ends), in training, evaluation and sampling; the flash kernels skip the tiles "
            "it masks; recorded in checkpoints, left out of exports (a training choice, not part of "
            "the model)")
        ->check(CLI::IsMember({"causal", "document"}))
        ->group(group);
    command
        .add_option("--positions", options.positions,
                    "absolute (default) or document: each token's position is its place in its document, so "
                    "GPT-2's learned positions restart at every document (needs --attention-mask document; "
                    "rotary families are unchanged by it: RoPE under the document mask sees distances within a "
                    "document only); recorded in checkpoints, left out of exports")
        ->check(CLI::IsMember({"absolute", "document"}))
        ->group(group);
    command
        .add_option("--window", options.window,
                    "sliding-window attention: each position sees itself and the W - 1 positions before it "
                    "(within its document under --attention-mask document); the flash kernels skip the tiles "
                    "outside; 0 (default): the whole context; recorded in checkpoints")
        ->check(CLI::NonNegativeNumber)
        ->group(group);
    command
        .add_option("--window-pattern", options.window_pattern,
                    "which layers --window holds for: one letter per layer, cycled over the layers, S windowed "
                    "and L the whole context (LSSS: every fourth layer sees everything; default: every layer "
                    "windowed)")
        ->group(group);
    command
        .add_flag("--qk-norm", options.qk_norm,
                  "RMS-normalise each query and key head before attention and RoPE (parameter-free; epsilon "
                  "--rms-norm-eps, 1e-5 under gpt2; the speedrun's, nanochat's, Qwen3's); recorded in checkpoints")
        ->group(group);
    command
        .add_option("--init", options.init,
                    "how the weights start: gpt2 (default; N(0, 0.02), residual projections 0.02/sqrt(2L)) or fan-in "
                    "(nanochat's: each matrix N(0, 1/in * min(1, out/in)), embeddings N(0, 1); needs "
                    "--tie-embeddings false); recorded in checkpoints")
        ->check(CLI::IsMember({"gpt2", "fan-in"}))
        ->group(group);
    command
        .add_option("--recipe", options.recipe,
                    "nanochat: --arch llama --tie-embeddings false --mlp relu2 --norm-weights false "
                    "--embedding-norm --qk-norm --logit-softcap 15 --zero-init proj,head --init fan-in; an option "
                    "given beside it with a value wins")
        ->check(CLI::IsMember({"nanochat"}))
        ->excludes("--arch")
        ->group(group);
}

}  // namespace mixgpt::cli
