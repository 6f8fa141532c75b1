#!/usr/bin/env bash
# Diagnostics as a user sees them (README, "Diagnostics"): results on stdout, warnings and notes
# on stderr as "refeval: LEVEL: ...", --log-level and -q, and progress lines only at a terminal.
# Usage: diagnostics_test.sh REFEVAL SHARED_DIR
set -u
refeval=$1
shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
golden=$shared/docs/verbose-golden
linreg=$golden/linreg.onnx
nodes=$shared/onnx-backend-tests/node
source "$(dirname "$0")/expect.sh"

# A warning is one line on stderr; the results on stdout are unchanged by it.
expect 0 "^ \+ variable: float32:\(1, 1\)" "^refeval: warning: --dim foo=3: no model input has a dimension named 'foo'$" -- "$linreg" --dim foo=3 --no-timing
mkdir -p "$work/empty_inputs"
expect 0 "" "^refeval: warning: --inputs .*: no input_0.pb for input 'X'; it is generated$" -- run "$linreg" --inputs "$work/empty_inputs" -v 0
# -q (before or after the verb, before an implicit run) and --log-level error hide it.
expect 0 "variable" "" -- -q "$linreg" --dim foo=3 --no-timing
check "-q leaves stderr empty" test ! -s "$work/err"
expect 0 "variable" "" -- run "$linreg" --dim foo=3 --no-timing --log-level error
check "--log-level error leaves stderr empty" test ! -s "$work/err"
# debug shows the generated feeds; errors stay one line at every level.
expect 0 "" "" -- --log-level debug run "$linreg" -v 0
check "debug names the generated input" grep -q "^refeval: debug: input 'X' generated (float32:(1, 10)" "$work/err"
expect 2 "" "^refeval: error: --log-level loud: expected trace, debug, info, warning, error or off$" -- --log-level loud ops
expect 2 "" "^refeval: error: .*missing.onnx" -- -q run "$work/missing.onnx"

# Progress: drawn on stderr at a terminal (util-linux `script` gives a pseudo-terminal), erased
# before the summary; never when stderr is a file or a pipe.
suite=(test "$nodes" --filter '^test_(abs|add)')
script -qec "$(printf '%q ' "$refeval" "${suite[@]}")" /dev/null >"$work/tty" 2>&1
check "a terminal shows the test progress line" grep -qa $'test [0-9]*/[0-9]*: test_a' "$work/tty"
check "the line is erased before the summary" grep -qa $'\r\e\[Kunexpected failures: 0' "$work/tty"
expect 0 "passed, 0 failed" "" -- "${suite[@]}"
check "no progress without a terminal" test ! -s "$work/err"
script -qec "$(printf '%q ' "$refeval" -q "${suite[@]}")" /dev/null >"$work/tty_quiet" 2>&1
check "-q hides progress at a terminal" bash -c "! grep -qa 'test [0-9]*/' '$work/tty_quiet'"


# Bad input: each broken file (tests/evaluator/malformed_inputs.py writes them, one defect each)
# gives one line naming the file and what is wrong with it: exit 2 for a model or input the
# user must fix, 1 for a node that fails while running.
m=$work/malformed
/usr/bin/python3 "$(dirname "$0")/../evaluator/malformed_inputs.py" "$m"
# fails CODE MESSAGE -- ARGS...: refeval ARGS exits with CODE and prints exactly "refeval: error: MESSAGE".
fails() {
  local code=$1 message
  message=$(printf '%s' "$2" | sed 's/[][\.*^$(){}+?|]/\\&/g')
  shift 2
  expect "$code" "" "^refeval: error: $message\$" "$@"
}
# Files that are not models, and models refeval cannot read.
fails 2 "$m/empty.onnx: not an ONNX model (no ir_version and no graph)" -- run "$m/empty.onnx"
fails 2 "$m: is a folder, not a model file" -- run "$m"
ln -s nowhere "$m/dangling.onnx"
fails 2 "$m/dangling.onnx: cannot open the model file" -- run "$m/dangling.onnx"
fails 2 "$m/ir_version_99.onnx: IR version 99 is not supported (refeval reads IR 3 to 13)" -- run "$m/ir_version_99.onnx"
fails 2 "$m/opset_imported_twice.onnx: the model imports domain '' twice, at versions 17 and 13" -- run "$m/opset_imported_twice.onnx"
fails 2 "$m/input_element_type_99.onnx: type: unknown element type 99" -- run "$m/input_element_type_99.onnx"
fails 2 "$m/function_attribute_default_garbage.onnx: cannot parse function attribute default" -- run "$m/function_attribute_default_garbage.onnx"
# Initializers: names, element types, shapes, typed fields, raw bytes, sparse indices.
fails 2 "$m/initializer_without_name.onnx: graph 'g' has an initializer without a name" -- run "$m/initializer_without_name.onnx"
fails 2 "$m/initializer_element_type_99.onnx: tensor 'W': unknown element type 99" -- run "$m/initializer_element_type_99.onnx"
fails 2 "$m/segmented_initializer.onnx: tensor 'W': segmented tensors are not supported (is this file really a TensorProto?)" -- run "$m/segmented_initializer.onnx"
fails 2 "$m/negative_dimension.onnx: tensor 'W': negative dimension -1 in (-1,)" -- run "$m/negative_dimension.onnx"
fails 2 "$m/too_many_elements.onnx: tensor 'W': shape (1099511627776, 1099511627776) has more elements than fit in 64 bits" -- run "$m/too_many_elements.onnx"
fails 2 "$m/float_data_3_for_2.onnx: tensor 'W': float_data holds 3 values but its shape needs 2" -- run "$m/float_data_3_for_2.onnx"
fails 2 "$m/strings_in_raw_data.onnx: tensor 'W': strings cannot be stored in raw_data" -- run "$m/strings_in_raw_data.onnx"
fails 2 "$m/sparse_int32_indices.onnx: sparse tensor 'W': indices must be int64" -- run "$m/sparse_int32_indices.onnx"
fails 2 "$m/sparse_two_indices_one_value.onnx: sparse tensor 'W': indices of shape (2,) do not fit 1 values" -- run "$m/sparse_two_indices_one_value.onnx"
fails 2 "$m/sparse_index_out_of_range.onnx: sparse tensor 'W': index 0 is out of range" -- run "$m/sparse_index_out_of_range.onnx"
# External data: the file must be inside the model's folder and hold the bytes the shape needs.
fails 2 "$m/external_absolute.onnx: tensor 'W': external data location '/etc/hostname' must be a relative path" -- run "$m/external_absolute.onnx"
fails 2 "$m/external_offset_word.onnx: tensor 'W': external data offset 'ten' is not a non-negative integer" -- run "$m/external_offset_word.onnx"
fails 2 "$m/external_missing_file.onnx: tensor 'W': cannot open external data file '$m/no_such.bin'" -- run "$m/external_missing_file.onnx"
fails 2 "$m/external_length_3.onnx: tensor 'W': external data length 3 does not match the 8 bytes its shape needs" -- run "$m/external_length_3.onnx"
fails 2 "$m/external_beyond_end.onnx: tensor 'W': external data [0, 8) is beyond the end of '$m/four_bytes.bin' (4 bytes)" -- run "$m/external_beyond_end.onnx"
# Graphs, operators, attributes and model-local functions, refused when the model is planned.
fails 2 "$m/cycle.onnx: graph 'g' has a cycle through node 'first' (Neg)" -- run "$m/cycle.onnx"
fails 2 "$m/domain_not_imported.onnx: node 'thing' (com.example:Thing): domain 'com.example' is not imported by the model (opset_import)" -- run "$m/domain_not_imported.onnx"
fails 2 "$m/gelu_at_opset_17.onnx: node 'gelu' (Gelu): no implementation for opset 17 (refeval implements since-versions 20)" -- run "$m/gelu_at_opset_17.onnx"
fails 2 "$m/unknown_attribute.onnx: node 'relu' (Relu): unknown attribute colour for Relu at opset 17" -- run "$m/unknown_attribute.onnx"
fails 2 "$m/output_not_produced.onnx: graph 'g': output 'Z' is not produced by any node, input or initializer" -- run "$m/output_not_produced.onnx"
fails 2 "$m/then_branch_an_int.onnx: node 'if' (If): attribute 'then_branch' must be a graph" -- run "$m/then_branch_an_int.onnx"
fails 2 "$m/axis_a_float.onnx: node 'softmax' (Softmax): attribute 'axis' is FLOAT but INT was expected" -- run "$m/axis_a_float.onnx"
fails 2 "$m/cast_without_to.onnx: node 'cast' (Cast): required attribute 'to' is missing" -- run "$m/cast_without_to.onnx"
fails 2 "$m/function_calls_itself.onnx: node '' (local:f): functions nest deeper than 64 (a function that calls itself?)" -- run "$m/function_calls_itself.onnx"
fails 2 "$m/function_given_3_inputs.onnx: node 'call' (local:f): 3 inputs and 1 outputs, but function 'f' has 1 and 1" -- run "$m/function_given_3_inputs.onnx"
# Nodes that fail while running: exit 1.
fails 1 "node 'add' (Add): shapes (2, 3), (4,) cannot be broadcast together" -- run "$m/add_2x3_and_4.onnx"
fails 1 "node 'add' (Add): input 1 is required but missing" -- run "$m/add_missing_input.onnx"
fails 1 "node 'add' (Add): input 0 must be a tensor but is a sequence" -- run "$m/add_of_a_sequence.onnx"
fails 1 "node 'add' (Add): element type string is not supported (supported: float, double, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64)" -- \
  run "$m/add_of_strings.onnx"
fails 1 "node 'neg' (Neg): input 'Z' was not produced by the node that should compute it" -- run "$m/reads_relu_second_output.onnx"
fails 1 "value 'Z' was not produced" -- run "$m/relu_with_two_outputs.onnx" --outputs Z
# Feeds (--input NAME=FILE): the file must hold the kind of value the input declares, and match it.
fails 2 "cannot open '$m/no_such.npy'" -- run "$m/identity.onnx" --input "X=$m/no_such.npy"
fails 2 "$m/junk.pb: not a valid TensorProto" -- run "$m/identity.onnx" --input "X=$m/junk.pb"
fails 2 "$m/junk.pb: not a valid SequenceProto" -- run "$m/sequence_input.onnx" --input "X=$m/junk.pb"
fails 2 "$m/junk.pb: not a valid OptionalProto" -- run "$m/optional_input.onnx" --input "X=$m/junk.pb"
fails 2 "$m/junk.pb: not a valid MapProto" -- run "$m/map_input.onnx" --input "X=$m/junk.pb"
fails 2 "$m/sequence_kind_99.pb: sequence '$m/sequence_kind_99.pb': unsupported element kind 99" -- run "$m/sequence_input.onnx" --input "X=$m/sequence_kind_99.pb"
fails 2 "$m/optional_kind_99.pb: optional '$m/optional_kind_99.pb': unsupported element kind 99" -- run "$m/optional_input.onnx" --input "X=$m/optional_kind_99.pb"
fails 2 "$m/map_2_keys_1_value.pb: map '$m/map_2_keys_1_value.pb': 2 keys but 1 values" -- run "$m/map_input.onnx" --input "X=$m/map_2_keys_1_value.pb"
fails 2 "$m/map_value_not_scalar.pb: map '$m/map_value_not_scalar.pb': values must be scalars of one type" -- run "$m/map_input.onnx" --input "X=$m/map_value_not_scalar.pb"
fails 2 "input 'X': expected tensor(float)[2] but got tensor(int64)(2,) (element type differs)" -- run "$m/identity.onnx" --input "X=$m/int64.npy"
fails 2 "input 'X': expected tensor(float)[2] but got tensor(float)(2, 2) (rank differs)" -- run "$m/identity.onnx" --input "X=$m/two_by_two.npy"
fails 2 "input 'X': expected seq(tensor(float)[2]) but got tensor(float)(2,) (not a sequence)" -- run "$m/sequence_input.onnx" --input "X=$m/two.npy"
fails 2 "input 'X': expected optional(tensor(float)[2]) but got tensor(float)(2,) (not an optional)" -- run "$m/optional_input.onnx" --input "X=$m/two.npy"
fails 2 "input 'X': expected map(int64, tensor(float)[]) but got tensor(float)(2,) (not a map)" -- run "$m/map_input.onnx" --input "X=$m/two.npy"
fails 2 "no value named 'Q' in the model" -- run "$m/identity.onnx" --outputs Q
fails 2 "cannot write '/proc/self/output_0.pb'" -- run "$m/identity.onnx" --save-outputs /proc/self
# .npy feeds.
for case in "not_npy: not a .npy file" "version_2_cut: truncated .npy header" "version_9: unsupported .npy format version 9" \
            "header_cut: truncated .npy header" "header_without_descr: malformed .npy header" \
            "shape_of_words: malformed .npy shape" "shape_negative: negative dimension in .npy shape" \
            "shape_too_many_elements: shape (1099511627776, 1099511627776) has more elements than fit in 64 bits" \
            "data_cut: data is shorter than shape (2,) needs" "dtype_f: unsupported .npy dtype '<f'" \
            "dtype_fx: unsupported .npy dtype '<fx'" "dtype_f3: unsupported .npy dtype '<f3'" \
            "dtype_object: unsupported .npy dtype '|O8' (object arrays cannot be read; save strings as '<U')"; do
  file=$m/${case%%:*}.npy
  fails 2 "$file:${case#*:}" -- run "$m/identity.onnx" --input "X=$file"
done
# Dump folders read by compare.
mkdir -p "$m/dump"
printf '[{"name": "Y", "file": "../Y.npy"}]' >"$m/dump/index.json"
fails 2 "$m/dump/index.json: entry 'Y': file '../Y.npy' must be a plain path inside the folder" -- compare "$m/identity.onnx" "$m/dump"
printf '[{"name": "Y"}]' >"$m/dump/index.json"
fails 2 "$m/dump/index.json: entry 0 needs string fields \"name\" and \"file\"" -- compare "$m/identity.onnx" "$m/dump"
printf '[{"name": ' >"$m/dump/index.json"
expect 2 "" "^refeval: error: $m/dump/index.json: not valid JSON \(\[json.exception.parse_error.101\] parse error" -- compare "$m/identity.onnx" "$m/dump"
# tokenizer.json files: the line names the file and the component at fault.
while IFS='|' read -r file message; do
  fails 2 "$m/$file: $message" -- tokenize "$m/$file" --text "hi there"
done <<'CASES'
top_level_array.json|not a tokenizer.json: the top level is array, not an object
no_model.json|not a tokenizer.json: no "model"
model_null.json|model: a tokenizer needs a model
model_a_string.json|model: expected an object, got string
model_without_type.json|model: no "type"
model_type_unigram_number.json|model: "type" must be a string, got number
added_tokens_object.json|added_tokens: must be an array, got object
added_token_a_number.json|added_tokens[0]: must be an object, got number
added_token_id_negative.json|added_tokens[0]: id -1 is not in [0, 2^31)
unk_token_a_number.json|model (WordLevel): "unk_token" must be a string, got number
vocab_an_array.json|model (WordLevel): "vocab" must be an object, got array
vocab_id_text.json|model (WordLevel): vocab: token 'hi' has id "one", not an integer in [0, 2^31)
lowercase_a_string.json|normalizer (BertNormalizer): "lowercase" must be true or false, got string
strip_accents_a_string.json|normalizer (BertNormalizer): "strip_accents" must be true, false or null
replace_without_content.json|normalizer (Replace): no "content"
pattern_a_number.json|pre_tokenizer (Split): "pattern" must be an object, got number
pattern_a_glob.json|pre_tokenizer (Split): "pattern" must be {"String": ...} or {"Regex": ...}, got {"Glob":"*"}
behavior_unknown.json|pre_tokenizer (Split): behavior 'Shout' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous
delimiter_two_characters.json|pre_tokenizer (CharDelimiterSplit): "delimiter" must be one character
metaspace_scheme_sometimes.json|pre_tokenizer (Metaspace): prepend_scheme 'sometimes' is not one of always, first, never
decoder_scheme_sometimes.json|decoder (Metaspace): prepend_scheme 'sometimes' is not one of always, first, never
strip_content_two_characters.json|decoder (Strip): "content" must be one character
metaspace_replacement_empty.json|decoder (Metaspace): "replacement" must be one character
strip_start_a_string.json|decoder (Strip): "start" must be an integer, got "one"
truncation_a_number.json|truncation: must be an object or null
truncation_direction_up.json|truncation: direction 'Up' is not Right or Left
truncation_negative.json|truncation: max_length must be >= 0
truncation_shorter_than_specials.json|truncation max_length 1 is shorter than the special tokens
bert_sep_a_string.json|post_processor (BertProcessing): "sep" must be an array, got string
bert_sep_without_id.json|post_processor (BertProcessing): "sep" must be [token, id], got ["hi"]
post_processor_unknown.json|post_processor: post_processor type 'Shuffle' is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)
template_sequence_b.json|post_processor (TemplateProcessing): the single template refers to sequence 'B'; only A exists
template_special_not_listed.json|post_processor (TemplateProcessing): special token '[SEP]' of the template is not in "special_tokens"
template_special_id_negative.json|post_processor (TemplateProcessing): special token '[SEP]' has id -1
template_item_unknown.json|post_processor (TemplateProcessing): template item {"Word":{}} is neither a Sequence nor a SpecialToken
template_a_twice.json|post_processor (TemplateProcessing): the single template holds sequence A 2 times, not once
bpe_dropout.json|model (BPE): dropout 0.1 is not supported (random merges are for training)
bpe_merge_three_tokens.json|model (BPE): merge "a b c" (rank 0) is not two tokens separated by one space
bpe_merge_a_number.json|model (BPE): merge 7 (rank 0) is neither "a b" nor ["a", "b"]
bpe_unk_not_in_vocab.json|model (BPE): unk_token '[UNK]' is not in the vocabulary
bpe_merge_unknown_token.json|model (BPE): merge "a x" (rank 0): 'x' is not in the vocabulary
normalizer_precompiled.json|normalizer: normalizer type 'Precompiled' is not supported (supported: BertNormalizer, Sequence, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Replace, Prepend, ByteLevel)
model_unigram.json|model: model type 'Unigram' is not supported (supported: BPE, WordPiece, WordLevel)
pre_tokenizer_unicode_scripts.json|pre_tokenizer: pre_tokenizer type 'UnicodeScripts' is not supported (supported: ByteLevel, Split, Sequence, Metaspace, BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit)
decoder_ctc.json|decoder: decoder type 'CTC' is not supported (supported: ByteLevel, ByteFallback, Fuse, Replace, Strip, Metaspace, WordPiece, BPEDecoder, Sequence)
CASES
deep="normalizer$(printf '.normalizers[0]%.0s' {1..64})"
fails 2 "$m/normalizers_65_deep.json: $deep: Sequence steps nested more than 64 deep" -- tokenize "$m/normalizers_65_deep.json" --text hi
expect 2 "" "^refeval: error: $m/cut_short.json: not a tokenizer.json: \[json.exception.parse_error" -- tokenize "$m/cut_short.json" --text hi
expect 2 "" "^refeval: error: $m/regex_unclosed.json: pre_tokenizer \(Split\): pattern \"\(a\": missing closing parenthesis" -- tokenize "$m/regex_unclosed.json" --text hi
fails 2 "$m/no_such.json: cannot open the tokenizer file" -- tokenize "$m/no_such.json" --text hi
fails 2 "$m/wordpiece_unk_missing.json: token id 7 is not in the vocabulary (1 ids)" -- tokenize "$m/wordpiece_unk_missing.json" --decode --text "0 7"
printf 'a\xffb' >"$m/not_utf8.txt"
fails 2 "the text is not valid UTF-8 (byte 1 of 3)" -- tokenize "$m/wordpiece_unk_missing.json" --file "$m/not_utf8.txt"
fails 2 "'there' is not in the vocabulary and the unknown token '[UNK]' is not either" -- tokenize "$m/wordpiece_unk_missing.json" --text "hi there"
# Profiles read by report.
profile=$(dirname "$0")/../data/profiles/ort-1.30-linreg-disabled.json
fails 2 "$m/profile_an_object.json: not a profile: expected a JSON array of events" -- report "$m/profile_an_object.json"
expect 2 "" "^refeval: error: $m/profile_no_event.json: not a profile: no event could be read \(\[json.exception" -- report "$m/profile_no_event.json"
fails 2 "$m/profile_no_node_events.json: no node events: nothing to report" -- report "$m/profile_no_node_events.json"
fails 2 "--runs: 'abc' is not a range like 1:5, 3: or :-1" -- report "$profile" --runs abc
fails 2 "--phase: no run of phase 'prefill' (phases are tagged by refeval generate)" -- report "$profile" --phase prefill
fails 2 "$profile: no memory figures in the runs read: record the profile with \`refeval profile --memory\` (or \`refeval generate --profile F --memory\`)" -- \
  report "$profile" --by memory
fails 2 "'bogus' is not an instruction set: avx512, avx2 or generic" -- --isa bogus ops
# A shared library that is not a refeval plugin (the C math library, present wherever glibc is).
fails 2 "custom-op library 'libm.so.6' does not export refeval_register_ops" -- --custom-ops libm.so.6 ops

finish
