// Self-attention read by its meaning around a Softmax (attention.cc says what is read and what is
// emitted): the scale, the masks, the heads of Q, K and V and where they come from. Everything read
// is recorded, so the pass knows which nodes the fused operator replaces.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../pass.h"

namespace refeval::optimize::attention {

struct Heads {
  std::string x;      // the 3-D (B, S, N*h) value split into heads
  int64_t N = 0, h = 0;
  bool transposed_k = false;  // heads reached through perm 0 2 3 1 (K already transposed)
  bool seq_first = false;     // x is (S, B, N*h), split by torch's nn.MultiheadAttention into (B*N, S, h)
  bool given = false;         // x is already (B, N, T, h): a graph input (a decoder's cross-attention
                              // keys and values computed once and fed back as past, as Optimum splits it)
};

struct Source {   // where Q, K or V of the attention comes from
  Heads heads;
  std::string rotary;             // a com.microsoft RotaryEmbedding node's name on the 4-D heads, if any
  const Node* rotary_node = nullptr;
  std::string past, present;      // separate per-layer past (B, N, P, h) and the Concat's output
  const Node* concat = nullptr;
  std::string stacked_past;       // ORT's (2, B, N, P, h) past, and which half (0 = K, 1 = V)
  int64_t stacked_index = -1;
  std::string repeated;           // grouped-query: the repeated (B, N, T, h) value fed to attention
  bool repeated_bsnh = false;     // ... repeated as (B, T, N, h) instead (Meta's llama repeat_kv)
};

struct Mask {
  bool causal = false;
  std::string padding_input;     // a 2-D (B, T) graph input: key padding
  bool padding_keeps_nonzero = true;  // its nonzero elements keep a key (else they hide it: torch's key_padding_mask)
  std::string bias;              // an additive (S, T), (B|1, S, T) or (B|1, N|1, S, T) value
  // Further additive terms after the first (CLIP adds its causal and its padding mask one after
  // the other), each of those shapes or a key padding value, nearest the scores first; the
  // attention pass sums them with `bias` and any padding value into one attention_bias.
  std::vector<std::string> more_biases;
  int64_t bias_heads = 1;        // its head axis (4-D), the largest over every term
  bool bias_one_row = false;     // (.., 1, T): one row for every query, which the operators want expanded
  double filler = 0;             // the value masked scores get (the most negative seen)
  std::string causal_buffer;     // the lower-triangular constant the causal condition slices
  bool causal_buffer_sliced = false;  // (false: a folded S x T block, fixed shapes)
  std::string causal_cond;       // the causal Where's condition, its polarity and filler
  bool causal_keeps = true;
  double causal_filler = 0;
  std::string padding_value;     // the additive padding mask (B, 1, 1, T) the graph computes
  std::string where_cond;        // a Where mask that is not provably causal: its condition,
  bool where_keeps = true;       // whether true keeps the score,
  double where_filler = 0;       // and what hidden scores get
};

struct Found {
  int softmax = -1, output = -1;  // the Softmax and the final Reshape
  int scores_rank = 4;            // 3: (B*N, S, T) scores of 3-D heads
  int64_t view_heads = 0;         // the N of views between (B*N, ...) and (B, N, ...), 0 if none
  bool output_seq_first = false;  // the output is torch's (S*B, N*h) or (S, B, N*h) merge
  int64_t merged_width = 0;       // ... and its last size
  Source q, k, v;
  Mask mask;
  double scale = 1;
  std::set<int> used;      // every node read
  std::set<int> kv_nodes;  // the nodes computing K and V from their projections
};

// The three equal parts of one projection x W + b split on the last axis (a Split, or torch's
// chunk as three Slices): x, W, b and the nodes computing the parts.
struct Packed {
  std::string x, w, b;
  std::vector<int> nodes;
};

// Q, K and V projected separately from one x (BERT's query, key and value Linear layers): each
// x W + b (or x W) with constant weights of equal widths.
struct SeparateQKV {
  std::string x;
  std::string w[3], b[3];  // b empty: no bias
  std::set<int> nodes;     // the MatMuls and Adds
};

// ORT's stacked present: Concat(Unsqueeze(K with past, 0), Unsqueeze(V with past, 0), axis 0),
// K and V taken from halves 0 and 1 of the same stacked past.
struct StackedPresent {
  std::string value;
  int unsqueeze_k = -1, unsqueeze_v = -1, stack = -1;
};

// Reads the attention around Softmax node `softmax`; nullopt with `why` (for --explain) when it
// is not one.
std::optional<Found> read(const GraphIndex& g, int softmax, std::string& why);
std::optional<Packed> packed_qkv(const GraphIndex& g, const Found& f);
std::optional<SeparateQKV> separate_qkv(const GraphIndex& g, const Found& f);
std::optional<StackedPresent> stacked_present(const GraphIndex& g, const Found& f);

}  // namespace refeval::optimize::attention
