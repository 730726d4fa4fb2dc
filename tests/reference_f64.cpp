#include "tests/reference_f64.h"

#include <algorithm>
#include <cmath>

namespace mixgpt {
namespace {

constexpr double kLayerNormEpsilon = 1e-5;
constexpr double kGeluCoefficient = 0.044715;

size_t index(int64_t value) { return static_cast<size_t>(value); }

}  // namespace

double relative_norm_error(const std::vector<double>& out, const std::vector<double>& ref) {
    MIXGPT_REQUIRE(out.size() == ref.size(), "relative_norm_error: sizes differ");
    double difference = 0.0;
    double reference = 0.0;
    for (size_t i = 0; i < out.size(); ++i) {
        difference += (out[i] - ref[i]) * (out[i] - ref[i]);
        reference += ref[i] * ref[i];
    }
    return reference == 0.0 ? std::sqrt(difference) : std::sqrt(difference / reference);
}

F64Vector f64_embedding_forward(const std::vector<int32_t>& tokens, const F64Vector& wte,
                                const F64Vector& wpe, int B, int T, int C, const std::vector<int>& positions) {
    F64Vector out(index(int64_t{B} * T * C));
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const int64_t row = int64_t{b} * T + t;
            const int64_t token = tokens[index(row)];
            const int64_t position = positions.empty() ? t : positions[index(row)];
            for (int c = 0; c < C; ++c)
                out[index(row * C + c)] = wte[index(token * C + c)] + wpe[index(position * C + c)];
        }
    return out;
}

void f64_embedding_backward(F64Vector& dwte, F64Vector& dwpe, const F64Vector& dout,
                            const std::vector<int32_t>& tokens, int B, int T, int C,
                            const std::vector<int>& positions) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const int64_t row = int64_t{b} * T + t;
            const int64_t token = tokens[index(row)];
            const int64_t position = positions.empty() ? t : positions[index(row)];
            for (int c = 0; c < C; ++c) {
                dwte[index(token * C + c)] += dout[index(row * C + c)];
                dwpe[index(position * C + c)] += dout[index(row * C + c)];
            }
        }
}

F64LayerNormForward f64_layernorm_forward(const F64Vector& inp, const F64Vector& weight,
                                          const F64Vector& bias, int N, int C) {
    F64LayerNormForward result{F64Vector(inp.size()), F64Vector(index(N)), F64Vector(index(N))};
    for (int64_t n = 0; n < N; ++n) {
        const double* x = inp.data() + n * C;
        double mean = 0.0;
        for (int c = 0; c < C; ++c) mean += x[c];
        mean /= C;
        double variance = 0.0;
        for (int c = 0; c < C; ++c) variance += (x[c] - mean) * (x[c] - mean);
        variance /= C;
        const double rstd = 1.0 / std::sqrt(variance + kLayerNormEpsilon);
        for (int c = 0; c < C; ++c)
            result.out[index(n * C + c)] = (x[c] - mean) * rstd * weight[index(c)] + bias[index(c)];
        result.mean[index(n)] = mean;
        result.rstd[index(n)] = rstd;
    }
    return result;
}

F64ResidualLayerNormForward f64_residual_layernorm_forward(const F64Vector& residual_in,
                                                           const F64Vector& branch, const F64Vector& weight,
                                                           const F64Vector& bias, int N, int C) {
    F64Vector residual_out(residual_in.size());
    for (size_t i = 0; i < residual_in.size(); ++i) residual_out[i] = residual_in[i] + branch[i];
    F64LayerNormForward norm = f64_layernorm_forward(residual_out, weight, bias, N, C);
    return {std::move(residual_out), std::move(norm)};
}

F64LayerNormBackward f64_layernorm_backward(const F64Vector& dout, const F64Vector& inp,
                                            const F64Vector& weight, int N, int C) {
    const F64Vector ones(index(C), 1.0);
    const F64Vector zeros(index(C), 0.0);
    const F64LayerNormForward stats = f64_layernorm_forward(inp, ones, zeros, N, C);
    F64LayerNormBackward result{F64Vector(inp.size()), F64Vector(index(C)), F64Vector(index(C))};
    for (int64_t n = 0; n < N; ++n) {
        const double* xhat = stats.out.data() + n * C;  // normalized input
        const double* dy = dout.data() + n * C;
        double mean_dxhat = 0.0;
        double mean_dxhat_xhat = 0.0;
        for (int c = 0; c < C; ++c) {
            const double dxhat = dy[c] * weight[index(c)];
            mean_dxhat += dxhat;
            mean_dxhat_xhat += dxhat * xhat[c];
            result.dweight[index(c)] += dy[c] * xhat[c];
            result.dbias[index(c)] += dy[c];
        }
        mean_dxhat /= C;
        mean_dxhat_xhat /= C;
        const double rstd = stats.rstd[index(n)];
        for (int c = 0; c < C; ++c) {
            const double dxhat = dy[c] * weight[index(c)];
            result.dinp[index(n * C + c)] = rstd * (dxhat - mean_dxhat - xhat[c] * mean_dxhat_xhat);
        }
    }
    return result;
}

F64RmsNormForward f64_rmsnorm_forward(const F64Vector& inp, const F64Vector& weight, int N, int C,
                                      double epsilon) {
    F64RmsNormForward result{F64Vector(inp.size()), F64Vector(index(N))};
    for (int64_t n = 0; n < N; ++n) {
        const double* x = inp.data() + n * C;
        double squares = 0.0;
        for (int c = 0; c < C; ++c) squares += x[c] * x[c];
        const double rstd = 1.0 / std::sqrt(squares / C + epsilon);
        for (int c = 0; c < C; ++c) result.out[index(n * C + c)] = x[c] * rstd * weight[index(c)];
        result.rstd[index(n)] = rstd;
    }
    return result;
}

F64ResidualRmsNormForward f64_residual_rmsnorm_forward(const F64Vector& residual_in, const F64Vector& branch,
                                                       const F64Vector& weight, int N, int C,
                                                       double epsilon) {
    F64Vector residual_out(residual_in.size());
    for (size_t i = 0; i < residual_in.size(); ++i) residual_out[i] = residual_in[i] + branch[i];
    F64RmsNormForward norm = f64_rmsnorm_forward(residual_out, weight, N, C, epsilon);
    return {std::move(residual_out), std::move(norm)};
}

F64RmsNormBackward f64_rmsnorm_backward(const F64Vector& dout, const F64Vector& inp, const F64Vector& weight,
                                        int N, int C, double epsilon) {
    const F64RmsNormForward stats = f64_rmsnorm_forward(inp, F64Vector(index(C), 1.0), N, C, epsilon);
    F64RmsNormBackward result{F64Vector(inp.size()), F64Vector(index(C))};
    for (int64_t n = 0; n < N; ++n) {
        const double* xhat = stats.out.data() + n * C;  // inp * rstd
        const double* dy = dout.data() + n * C;
        double mean_dxhat_xhat = 0.0;
        for (int c = 0; c < C; ++c) {
            mean_dxhat_xhat += dy[c] * weight[index(c)] * xhat[c];
            result.dweight[index(c)] += dy[c] * xhat[c];
        }
        mean_dxhat_xhat /= C;
        const double rstd = stats.rstd[index(n)];
        for (int c = 0; c < C; ++c)
            result.dinp[index(n * C + c)] = rstd * (dy[c] * weight[index(c)] - xhat[c] * mean_dxhat_xhat);
    }
    return result;
}

F64MatmulForward f64_matmul_forward(const F64Vector& inp, const F64Vector& weight, const F64Vector& bias,
                                    int M, int K, int N, bool gelu) {
    F64Vector product(index(int64_t{M} * N));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double sum = bias.empty() ? 0.0 : bias[index(n)];
            for (int64_t k = 0; k < K; ++k) sum += inp[index(m * K + k)] * weight[index(n * K + k)];
            product[index(m * N + n)] = sum;
        }
    if (!gelu) return {std::move(product), {}};
    F64Vector out = f64_gelu_forward(product);
    return {std::move(out), std::move(product)};
}

F64Vector f64_matmul_backward_input(const F64Vector& dout, const F64Vector& weight, int M, int K, int N) {
    F64Vector dinp(index(int64_t{M} * K));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
            double sum = 0.0;
            for (int64_t n = 0; n < N; ++n) sum += dout[index(m * N + n)] * weight[index(n * K + k)];
            dinp[index(m * K + k)] = sum;
        }
    return dinp;
}

F64MatmulWeightGradient f64_matmul_backward_weight(const F64Vector& dout, const F64Vector& inp, int M, int K,
                                                   int N) {
    F64MatmulWeightGradient result{F64Vector(index(int64_t{N} * K)), F64Vector(index(N))};
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t k = 0; k < K; ++k) {
            double sum = 0.0;
            for (int64_t m = 0; m < M; ++m) sum += dout[index(m * N + n)] * inp[index(m * K + k)];
            result.dweight[index(n * K + k)] = sum;
        }
        double column = 0.0;
        for (int64_t m = 0; m < M; ++m) column += dout[index(m * N + n)];
        result.dbias[index(n)] = column;
    }
    return result;
}

double f64_gelu(double x) {
    const double s = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(s * (x + kGeluCoefficient * x * x * x)));
}

double f64_gelu_derivative(double x) {
    const double s = std::sqrt(2.0 / M_PI);
    const double inner = s * (x + kGeluCoefficient * x * x * x);
    const double tanh_inner = std::tanh(inner);
    const double sech_squared = 1.0 - tanh_inner * tanh_inner;
    return 0.5 * (1.0 + tanh_inner) + 0.5 * x * sech_squared * s * (1.0 + 3.0 * kGeluCoefficient * x * x);
}

F64Vector f64_gelu_forward(const F64Vector& inp) {
    F64Vector out(inp.size());
    for (size_t i = 0; i < inp.size(); ++i) out[i] = f64_gelu(inp[i]);
    return out;
}

F64Vector f64_gelu_backward(const F64Vector& dout, const F64Vector& pre_gelu) {
    F64Vector dinp(dout.size());
    for (size_t i = 0; i < dout.size(); ++i) dinp[i] = dout[i] * f64_gelu_derivative(pre_gelu[i]);
    return dinp;
}

F64Vector f64_relu2_forward(const F64Vector& inp) {
    F64Vector out(inp.size());
    for (size_t i = 0; i < inp.size(); ++i) out[i] = inp[i] > 0 ? inp[i] * inp[i] : 0.0;
    return out;
}

F64Vector f64_relu2_backward(const F64Vector& dout, const F64Vector& inp) {
    F64Vector dinp(dout.size());
    for (size_t i = 0; i < dout.size(); ++i) dinp[i] = inp[i] > 0 ? dout[i] * 2.0 * inp[i] : 0.0;
    return dinp;
}

F64QkNormForward f64_qk_norm_forward(const F64Vector& qkv, int N, int H, int Hkv, int hd, double epsilon) {
    const int64_t width = int64_t{H + 2 * Hkv} * hd, heads = H + Hkv;
    F64QkNormForward result{qkv, F64Vector(index(N * heads))};
    for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < heads; ++h) {
            double* x = result.qkv.data() + n * width + h * hd;
            double squares = 0.0;
            for (int i = 0; i < hd; ++i) squares += x[i] * x[i];
            const double rstd = 1.0 / std::sqrt(squares / hd + epsilon);
            for (int i = 0; i < hd; ++i) x[i] *= rstd;
            result.rstd[index(n * heads + h)] = rstd;
        }
    return result;
}

F64Vector f64_qk_norm_backward(const F64Vector& dqkv, const F64Vector& qkv, int N, int H, int Hkv, int hd,
                               double epsilon) {
    const int64_t width = int64_t{H + 2 * Hkv} * hd, heads = H + Hkv;
    const F64QkNormForward forward = f64_qk_norm_forward(qkv, N, H, Hkv, hd, epsilon);
    F64Vector dinp = dqkv;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t offset = n * width + h * hd;
            const double* y = forward.qkv.data() + offset;
            const double* dy = dqkv.data() + offset;
            double mean_dy_y = 0.0;
            for (int i = 0; i < hd; ++i) mean_dy_y += dy[i] * y[i];
            mean_dy_y /= hd;
            const double rstd = forward.rstd[index(n * heads + h)];
            for (int i = 0; i < hd; ++i) dinp[index(offset + i)] = rstd * (dy[i] - y[i] * mean_dy_y);
        }
    return dinp;
}

F64Vector f64_swiglu_forward(const F64Vector& gate_up, int M, int F) {
    F64Vector out(index(int64_t{M} * F));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t f = 0; f < F; ++f) {
            const double g = gate_up[index(m * 2 * F + f)], u = gate_up[index(m * 2 * F + F + f)];
            out[index(m * F + f)] = g / (1.0 + std::exp(-g)) * u;
        }
    return out;
}

F64Vector f64_swiglu_backward(const F64Vector& dout, const F64Vector& gate_up, int M, int F) {
    F64Vector dgate_up(gate_up.size());
    for (int64_t m = 0; m < M; ++m)
        for (int64_t f = 0; f < F; ++f) {
            const double g = gate_up[index(m * 2 * F + f)], u = gate_up[index(m * 2 * F + F + f)];
            const double s = 1.0 / (1.0 + std::exp(-g)), dy = dout[index(m * F + f)];
            dgate_up[index(m * 2 * F + f)] = dy * u * s * (1.0 + g * (1.0 - s));
            dgate_up[index(m * 2 * F + F + f)] = dy * g * s;
        }
    return dgate_up;
}

namespace {

// Where the heads of a packed qkv row sit (kernels/ops.def).
struct Heads {
    int H, Hkv, hd;
    int64_t row() const { return int64_t{H + 2 * Hkv} * hd; }
    int64_t q(int h) const { return int64_t{h} * hd; }
    int64_t k(int g) const { return int64_t{H + g} * hd; }
    int64_t v(int g) const { return int64_t{H + Hkv + g} * hd; }
};

// The q and k heads of every row rotated by RoPE (inverse: rotated back, for gradients), the
// values left; row (b, t) at position first_position + t, or positions[r] when given.
F64Vector rotate_queries_keys(F64Vector qkv, int B, int T, const Heads& heads, double theta,
                              int first_position, bool inverse, const std::vector<int>& positions = {}) {
    const int half = heads.hd / 2;
    for (int64_t r = 0; r < int64_t{B} * T; ++r) {
        const double position =
            positions.empty() ? first_position + static_cast<double>(r % T) : positions[index(r)];
        for (int head = 0; head < heads.H + heads.Hkv; ++head) {
            double* x = qkv.data() + r * heads.row() + int64_t{head} * heads.hd;
            for (int i = 0; i < half; ++i) {
                const double angle = position * std::pow(theta, -2.0 * i / heads.hd);
                const double c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
                const double low = x[i], high = x[i + half];
                x[i] = low * c - high * s;
                x[i + half] = high * c + low * s;
            }
        }
    }
    return qkv;
}

// Causal softmax probabilities P (T,T) of one (b, h), with their log-sum-exp.
struct HeadProbabilities {
    F64Vector p;    // (T,T), zero above the diagonal
    F64Vector lse;  // (T)
};

// Query head h against key head g of batch b (rows already rotated, where RoPE applies).
// documents: each position's document number (B*T), or empty: one document per sequence; query t
// sees the keys s <= t of its own document with t - s < window (0: no window), the others get
// probability 0.
HeadProbabilities head_probabilities(const F64Vector& qkv, int b, int h, int g, int T, const Heads& heads,
                                     const std::vector<int>& documents, int window) {
    const auto visible = [&](int t, int s) {
        const bool same_document =
            documents.empty() || documents[index(int64_t{b} * T + s)] == documents[index(int64_t{b} * T + t)];
        return same_document && (window == 0 || t - s < window);
    };
    const double scale = 1.0 / std::sqrt(static_cast<double>(heads.hd));
    HeadProbabilities result{F64Vector(index(int64_t{T} * T)), F64Vector(index(T))};
    for (int t = 0; t < T; ++t) {
        const double* q = qkv.data() + (int64_t{b} * T + t) * heads.row() + heads.q(h);
        double* row = result.p.data() + int64_t{t} * T;
        double max_score = -INFINITY;
        for (int s = 0; s <= t; ++s) {
            if (!visible(t, s)) continue;
            const double* k = qkv.data() + (int64_t{b} * T + s) * heads.row() + heads.k(g);
            double dot = 0.0;
            for (int d = 0; d < heads.hd; ++d) dot += q[d] * k[d];
            row[s] = dot * scale;
            max_score = std::max(max_score, row[s]);
        }
        double sum = 0.0;
        for (int s = 0; s <= t; ++s)
            if (visible(t, s)) sum += std::exp(row[s] - max_score);
        const double lse = max_score + std::log(sum);
        for (int s = 0; s <= t; ++s) row[s] = visible(t, s) ? std::exp(row[s] - lse) : 0.0;
        result.lse[index(t)] = lse;
    }
    return result;
}

Heads heads_of(const AttentionParams& params, int head_dim) {
    MIXGPT_REQUIRE(params.n_head > 0 && params.n_kv_head > 0 && params.n_head % params.n_kv_head == 0,
                   "f64 attention: n_kv_head must divide n_head");
    return {params.n_head, params.n_kv_head, head_dim};
}

}  // namespace

F64Vector f64_rope(const F64Vector& qkv, int B, int T, int head_dim, const AttentionParams& params,
                   int first_position, bool inverse) {
    MIXGPT_REQUIRE(params.rope_theta > 0.f && head_dim % 2 == 0,
                   "f64_rope: rope_theta > 0 and an even head_dim");
    return rotate_queries_keys(qkv, B, T, heads_of(params, head_dim), params.rope_theta, first_position,
                               inverse);
}

F64AttentionForward f64_attention_forward(const F64Vector& qkv, int B, int T, int C, int n_head) {
    return f64_attention_forward(qkv, B, T, C / n_head, multi_head_attention(n_head));
}

F64Vector f64_attention_backward(const F64Vector& dout, const F64Vector& qkv, int B, int T, int C,
                                 int n_head) {
    return f64_attention_backward(dout, qkv, B, T, C / n_head, multi_head_attention(n_head));
}

std::vector<int> f64_document_positions(const std::vector<int32_t>& tokens, int B, int T, int32_t separator) {
    std::vector<int> positions(tokens.size());
    for (int b = 0; b < B; ++b) {
        int place = 0;
        for (int t = 0; t < T; ++t) {
            positions[index(int64_t{b} * T + t)] = place++;
            if (tokens[index(int64_t{b} * T + t)] == separator) place = 0;
        }
    }
    return positions;
}

std::vector<int> f64_document_numbers(const std::vector<int32_t>& tokens, int B, int T, int32_t separator) {
    std::vector<int> numbers(tokens.size());
    for (int b = 0; b < B; ++b) {
        int number = 0;
        for (int t = 0; t < T; ++t) {
            numbers[index(int64_t{b} * T + t)] = number;
            if (tokens[index(int64_t{b} * T + t)] == separator) ++number;
        }
    }
    return numbers;
}

F64AttentionForward f64_attention_forward(const F64Vector& qkv, int B, int T, int head_dim,
                                          const AttentionParams& params, int first_position,
                                          const std::vector<int>& documents, const std::vector<int>& positions) {
    const Heads heads = heads_of(params, head_dim);
    const F64Vector rows = params.rope_theta > 0.f ? rotate_queries_keys(qkv, B, T, heads, params.rope_theta,
                                                                         first_position, false, positions)
                                                   : qkv;
    const int H = heads.H, group = heads.H / heads.Hkv, hd = head_dim;
    const int64_t out_row = int64_t{H} * hd;
    F64AttentionForward result{F64Vector(index(int64_t{B} * T * out_row)),
                               F64Vector(index(int64_t{B} * H * T))};
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const int g = h / group;
            const HeadProbabilities probabilities =
                head_probabilities(rows, b, h, g, T, heads, documents, params.window);
            for (int t = 0; t < T; ++t) {
                result.lse[index((int64_t{b} * H + h) * T + t)] = probabilities.lse[index(t)];
                double* out = result.out.data() + (int64_t{b} * T + t) * out_row + heads.q(h);
                for (int s = 0; s <= t; ++s) {
                    const double p = probabilities.p[index(int64_t{t} * T + s)];
                    const double* v = rows.data() + (int64_t{b} * T + s) * heads.row() + heads.v(g);
                    for (int d = 0; d < hd; ++d) out[d] += p * v[d];
                }
            }
        }
    return result;
}

F64Vector f64_attention_backward(const F64Vector& dout, const F64Vector& qkv, int B, int T, int head_dim,
                                 const AttentionParams& params, const std::vector<int>& documents,
                                 const std::vector<int>& positions) {
    const Heads heads = heads_of(params, head_dim);
    const bool rope = params.rope_theta > 0.f;
    const F64Vector rows =
        rope ? rotate_queries_keys(qkv, B, T, heads, params.rope_theta, 0, false, positions) : qkv;
    const int H = heads.H, group = heads.H / heads.Hkv, hd = head_dim;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    const int64_t out_row = int64_t{H} * hd;
    F64Vector dqkv(qkv.size());  // gradients of the rotated q and k, then rotated back
    auto at = [&](int b, int t, int64_t column) { return (int64_t{b} * T + t) * heads.row() + column; };
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const int g = h / group;
            const HeadProbabilities probabilities =
                head_probabilities(rows, b, h, g, T, heads, documents, params.window);
            for (int t = 0; t < T; ++t) {
                const double* dy = dout.data() + (int64_t{b} * T + t) * out_row + heads.q(h);
                const double* p = probabilities.p.data() + int64_t{t} * T;
                // dP[s] = dy · v_s;  dS[s] = P[s] (dP[s] - sum_r P[r] dP[r])
                F64Vector dp(index(t + 1));
                double weighted = 0.0;
                for (int s = 0; s <= t; ++s) {
                    const double* v = rows.data() + at(b, s, heads.v(g));
                    double dot = 0.0;
                    for (int d = 0; d < hd; ++d) dot += dy[d] * v[d];
                    dp[index(s)] = dot;
                    weighted += p[s] * dot;
                }
                const double* q = rows.data() + at(b, t, heads.q(h));
                double* dq = dqkv.data() + at(b, t, heads.q(h));
                for (int s = 0; s <= t; ++s) {
                    const double ds = p[s] * (dp[index(s)] - weighted) * scale;
                    const double* k = rows.data() + at(b, s, heads.k(g));
                    double* dk = dqkv.data() + at(b, s, heads.k(g));
                    double* dv = dqkv.data() + at(b, s, heads.v(g));
                    for (int d = 0; d < hd; ++d) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                        dv[d] += p[s] * dy[d];
                    }
                }
            }
        }
    return rope ? rotate_queries_keys(dqkv, B, T, heads, params.rope_theta, 0, true, positions) : dqkv;
}

F64Statistics f64_tensor_statistics(const F64Vector& values, const F64Vector& reference, double small) {
    F64Statistics result;
    for (size_t i = 0; i < values.size(); ++i) {
        const double value = reference.empty() ? values[i] : values[i] - reference[i];
        if (!std::isfinite(value)) {
            result.non_finite += 1;
            continue;
        }
        result.sum_squares += value * value;
        result.amax = std::max(result.amax, std::fabs(value));
        if (std::fabs(value) < small) result.small += 1;
    }
    return result;
}

std::vector<uint64_t> f64_exponent_histogram(const F64Vector& values) {
    std::vector<uint64_t> bins(kExponentBins, 0);
    for (const double value : values) {
        if (!std::isfinite(value)) {
            ++bins[kExponentBins - 1];
        } else if (value == 0) {
            ++bins[0];
        } else {
            int power = 0;
            std::frexp(value, &power);
            ++bins[static_cast<size_t>(1 + (power - 1) - kHistogramExponentMin)];
        }
    }
    return bins;
}

F64Classifier f64_classifier(const F64Vector& logits, const std::vector<int32_t>& targets, int N, int Vp,
                             int V, double gradient_scale, double loss_scale, double softcap, double z_loss) {
    F64Classifier result{F64Vector(index(N)), F64Vector(index(N)), F64Vector(index(int64_t{N} * Vp)), logits};
    for (int64_t n = 0; n < N; ++n) {
        double* row = result.capped.data() + n * Vp;
        if (softcap > 0)
            for (int j = 0; j < V; ++j) row[j] = softcap * std::tanh(row[j] / softcap);
        const int target = targets[index(n)];
        MIXGPT_REQUIRE(target >= 0 && target < V, "f64_classifier: target outside the vocabulary");
        const double max_logit = *std::max_element(row, row + V);
        double sum = 0.0;
        for (int j = 0; j < V; ++j) sum += std::exp(row[j] - max_logit);
        const double lse = max_logit + std::log(sum);
        result.losses[index(n)] = lse - row[target];
        result.z_losses[index(n)] = z_loss * lse * lse;
        for (int j = 0; j < V; ++j) {
            const double softmax = std::exp(row[j] - lse);
            const double dcapped = (1.0 + 2.0 * z_loss * lse) * softmax - (j == target ? 1.0 : 0.0);
            const double dcap_dz = softcap > 0 ? 1.0 - (row[j] / softcap) * (row[j] / softcap) : 1.0;
            result.dlogits[index(n * Vp + j)] = gradient_scale * loss_scale * dcapped * dcap_dz;
        }
    }
    return result;
}

F64GradNorm f64_grad_norm_squared(const F64Vector& grads) {
    F64GradNorm result;
    for (double g : grads) result.norm_squared += g * g;
    result.non_finite = !std::isfinite(result.norm_squared);
    return result;
}

void f64_adamw_step(F64Vector& params, const F64Vector& grads, F64Vector& m, F64Vector& v,
                    int64_t decay_count, const AdamWHyper& hyper, StepStatus& status) {
    if (status.skip != 0) return;
    const int t = status.optimizer_steps + 1;
    if (hyper.count_step) status.optimizer_steps = t;
    const double loss_scale = status.loss_scale;
    const double norm = std::sqrt(static_cast<double>(status.grad_norm_squared)) / loss_scale;
    double gradient_factor = 1.0 / loss_scale;
    if (hyper.max_grad_norm > 0.f && norm > hyper.max_grad_norm)
        gradient_factor *= hyper.max_grad_norm / norm;
    const double beta1 = hyper.beta1;
    const double beta2 = hyper.beta2;
    const double correction1 = 1.0 - std::pow(beta1, t);
    const double correction2 = 1.0 - std::pow(beta2, t);
    for (size_t i = 0; i < params.size(); ++i) {
        const double g = grads[i] * gradient_factor;
        m[i] = beta1 * m[i] + (1.0 - beta1) * g;
        v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
        const double update = (m[i] / correction1) / (std::sqrt(v[i] / correction2) + hyper.epsilon);
        const double decay = static_cast<int64_t>(i) < decay_count ? double{hyper.weight_decay} : 0.0;
        params[i] -= hyper.learning_rate * (update + decay * params[i]);
    }
}

void f64_update_loss_scale(StepStatus& status, const LossScaleConfig& config) {
    if (status.skip != 0) {
        status.skipped_steps += 1;
        status.clean_steps = 0;
        if (config.dynamic)
            status.loss_scale = std::max(status.loss_scale * config.backoff_factor, config.min_scale);
        return;
    }
    status.clean_steps += 1;
    if (config.dynamic && status.clean_steps >= config.growth_interval) {
        status.loss_scale = std::min(status.loss_scale * config.growth_factor, config.max_scale);
        status.clean_steps = 0;
    }
}

}  // namespace mixgpt
