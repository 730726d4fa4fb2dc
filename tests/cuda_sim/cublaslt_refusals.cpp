#include "tests/cuda_sim/cublaslt_refusals.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace mixgpt::cuda_sim {
namespace {

struct Installed {
    uint64_t id;
    RefusalText refuses;
};

struct Refusals {
    std::mutex mutex;
    std::vector<Installed> installed;  // oldest first
    uint64_t next_id = 0;
};

Refusals& refusals() {
    static Refusals state;
    return state;
}

bool is_fp8(cudaDataType type) { return type == CUDA_R_8F_E4M3 || type == CUDA_R_8F_E5M2; }

// Whether `type` is what the name T of parse_refusal_rules's syntax means.
std::function<bool(cudaDataType)> type_matcher(const std::string& name) {
    static const std::map<std::string, cudaDataType> kTypes = {{"f32", CUDA_R_32F},
                                                               {"f16", CUDA_R_16F},
                                                               {"bf16", CUDA_R_16BF},
                                                               {"e4m3", CUDA_R_8F_E4M3},
                                                               {"e5m2", CUDA_R_8F_E5M2}};
    if (name == "fp8") return is_fp8;
    const auto found = kTypes.find(name);
    if (found == kTypes.end()) throw std::invalid_argument("unknown type '" + name + "'");
    const cudaDataType type = found->second;
    return [type](cudaDataType other) { return other == type; };
}

uint64_t number(const std::string& text, const std::string& condition) {
    size_t used = 0;
    unsigned long long value = 0;
    try {
        value = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || value == 0)
        throw std::invalid_argument("'" + condition + "' needs a positive number");
    return value;
}

bool transposes_match(const std::string& letters, const HeuristicQuery& q) {
    return (letters[0] == 'T') == q.transpose_a && (letters[1] == 'T') == q.transpose_b;
}

RefusalForm form_named(const std::string& name) {
    if (name == "not_supported") return RefusalForm::not_supported;
    if (name == "none_found") return RefusalForm::none_found;
    if (name == "failed_result") return RefusalForm::failed_result;
    throw std::invalid_argument("unknown form '" + name + "'");
}

// One condition of a rule ("a=bf16", "m<64", ...).
RefusalRule condition_of(const std::string& condition) {
    const auto value_after = [&](size_t prefix) { return condition.substr(prefix); };
    if (condition == "all") return [](const HeuristicQuery&) { return true; };
    if (condition == "fp8")
        return [](const HeuristicQuery& q) { return is_fp8(q.a_type) || is_fp8(q.b_type); };
    if (condition == "bias") return [](const HeuristicQuery& q) { return q.bias; };
    if (condition == "nobias") return [](const HeuristicQuery& q) { return !q.bias; };
    if (condition == "tf32")
        return [](const HeuristicQuery& q) { return q.compute == CUBLAS_COMPUTE_32F_FAST_TF32; };
    if (condition.size() > 2 && condition[1] == '=') {
        const auto matches = type_matcher(value_after(2));
        switch (condition[0]) {
            case 'a':
                return [matches](const HeuristicQuery& q) { return matches(q.a_type); };
            case 'b':
                return [matches](const HeuristicQuery& q) { return matches(q.b_type); };
            case 'd':
                return [matches](const HeuristicQuery& q) { return matches(q.d_type); };
            default:
                break;
        }
    }
    if (condition.rfind("op=", 0) == 0) {
        const std::string letters = value_after(3);
        if (letters.size() != 2 || letters.find_first_not_of("NT") != std::string::npos)
            throw std::invalid_argument("'" + condition + "': op= takes two letters, N or T");
        return [letters](const HeuristicQuery& q) { return transposes_match(letters, q); };
    }
    if (condition.size() > 2 && condition[1] == '<') {
        const uint64_t limit = number(value_after(2), condition);
        switch (condition[0]) {
            case 'm':
                return [limit](const HeuristicQuery& q) { return q.m < limit; };
            case 'n':
                return [limit](const HeuristicQuery& q) { return q.n < limit; };
            case 'k':
                return [limit](const HeuristicQuery& q) { return q.k < limit; };
            default:
                break;
        }
    }
    if (condition.rfind("ld%", 0) == 0) {
        const auto multiple = static_cast<int64_t>(number(value_after(3), condition));
        return [multiple](const HeuristicQuery& q) {
            return q.lda % multiple != 0 || q.ldb % multiple != 0 || q.ldd % multiple != 0;
        };
    }
    throw std::invalid_argument("unknown condition '" + condition + "'");
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t end = text.find(separator, start);
        parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

// MIXGPT_CUDA_SIM_CUBLASLT_REFUSE, read once; a text it cannot parse ends the process, as a
// misconfigured run should not pass for one without refusals.
const RefusalText& environment_refusals() {
    static const RefusalText rules = []() -> RefusalText {
        const char* text = std::getenv("MIXGPT_CUDA_SIM_CUBLASLT_REFUSE");
        if (text == nullptr || *text == '\0') return [](const HeuristicQuery&) { return std::nullopt; };
        try {
            return parse_refusal_rules(text);
        } catch (const std::invalid_argument& error) {
            std::fprintf(stderr, "cuda_sim: MIXGPT_CUDA_SIM_CUBLASLT_REFUSE='%s': %s\n", text, error.what());
            std::exit(2);
        }
    }();
    return rules;
}

uint64_t install(RefusalText refuses) {
    Refusals& state = refusals();
    const std::lock_guard<std::mutex> lock(state.mutex);
    state.installed.push_back({state.next_id, std::move(refuses)});
    return state.next_id++;
}

}  // namespace

CublasLtRefusal::CublasLtRefusal(RefusalRule rule, RefusalForm form)
    : id_(install([rule = std::move(rule), form](const HeuristicQuery& query) -> std::optional<RefusalForm> {
          if (rule(query)) return form;
          return std::nullopt;
      })) {}

CublasLtRefusal::CublasLtRefusal(const std::string& text) : id_(install(parse_refusal_rules(text))) {}

CublasLtRefusal::~CublasLtRefusal() {
    Refusals& state = refusals();
    const std::lock_guard<std::mutex> lock(state.mutex);
    for (auto it = state.installed.begin(); it != state.installed.end(); ++it)
        if (it->id == id_) {
            state.installed.erase(it);
            return;
        }
}

RefusalText parse_refusal_rules(const std::string& text) {
    struct Rule {
        std::vector<RefusalRule> conditions;
        RefusalForm form = RefusalForm::not_supported;
    };
    std::vector<Rule> rules;
    for (const std::string& rule_text : split(text, ';')) {
        Rule rule;
        for (const std::string& condition : split(rule_text, ',')) {
            if (condition.empty()) throw std::invalid_argument("an empty condition in '" + rule_text + "'");
            if (condition.rfind("form=", 0) == 0)
                rule.form = form_named(condition.substr(5));
            else
                rule.conditions.push_back(condition_of(condition));
        }
        if (rule.conditions.empty()) throw std::invalid_argument("'" + rule_text + "' has no condition");
        rules.push_back(std::move(rule));
    }
    return [rules](const HeuristicQuery& query) -> std::optional<RefusalForm> {
        for (const Rule& rule : rules) {
            bool all_hold = true;
            for (const RefusalRule& condition : rule.conditions) all_hold = all_hold && condition(query);
            if (all_hold) return rule.form;
        }
        return std::nullopt;
    };
}

std::optional<RefusalForm> refusal_for(const HeuristicQuery& query) {
    {
        Refusals& state = refusals();
        const std::lock_guard<std::mutex> lock(state.mutex);
        for (auto it = state.installed.rbegin(); it != state.installed.rend(); ++it)
            if (const std::optional<RefusalForm> form = it->refuses(query)) return form;
    }
    return environment_refusals()(query);
}

}  // namespace mixgpt::cuda_sim
