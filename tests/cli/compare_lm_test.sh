#!/usr/bin/env bash
# `refeval compare A B` over data, as a user checks a quantized model: a float Llama-style decoder
# (benchmarks/llm/make_decoder.py, 2 layers, hidden 256, vocab 4000) against its int4 twin
# (tests/data/quality/make_int4_twin.py: every weight MatMul as an asymmetric 4-bit MatMulNBits,
# as ONNX Runtime's MatMul4BitsQuantizer writes it).
# --tokens: 4 windows of 64 tokens from a seeded generator (2 rows of 130, the remainder dropped);
# every figure (perplexities and their ratio, KL mean / p99 / max and where, top-1 agreement, top-5
# overlap, --generate 8's first divergences) equals an independent oracle's: ONNX Runtime's logits
# (tests/data/quality/lm_figures.js) and numpy (lm_figures.py; tolerances there). Each gate exits 3
# when set just past the measured value and 0 just short of it, with `passed` saying the same; the
# float model against itself gives KL 0, top-1 1, ratio 1; bad use is one line, exit 2. The int4
# twin's KL is symmetric to 0.1%, so a lopsided pair checks the direction: a twin that suppresses
# one id in four (make_suppressed_twin.py; KL 2.2 one way, 0.3 the other), in both orders.
# --input-set: three folders of .npy inputs; max_abs, cosine_min, snr_db_min and top1_agreement of
# every output equal numpy's over ORT's outputs of both models (data_figures.py); --min-snr and
# --min-cosine exit 3 above what was measured.
# The twin itself is checked in ORT: its logits are close to the float model's but not equal, and
# equal (up to float32 rounding) to the float model's with the weights unpacked from the twin by the
# letter of ORT's MatMulNBits spec (dequantized_float.py): the packing is what ORT reads.
# Without onnxruntime-node (benchmarks/ort: npm install) the oracle and twin checks are skipped.
# Usage: compare_lm_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
cd "$src"
py=/usr/bin/python3
q=tests/data/quality

ort_modules=$src/benchmarks/ort/node_modules
if [[ -d $ort_modules/onnxruntime-node ]]; then
  ort=1
else
  ort=0
  echo "note: onnxruntime-node is not installed (benchmarks/ort: npm install); the ORT oracle and the twin's ORT checks are skipped"
fi
# ONNX Runtime writes scratch files into TMPDIR: keep them in $work
ortnode() { TMPDIR=$work NODE_PATH=$ort_modules node "$@"; }
# field FILE EXPR: a value of a JSON file (j), printed by Python; holds FILE EXPR: EXPR is true of it
field() { $py -c "import json; j = json.load(open('$1')); print($2)"; }
holds() { $py -c "import json; j = json.load(open('$1')); assert $2, j"; }

$py benchmarks/llm/make_decoder.py "$work/f" torch --layers 2 --hidden 256 --heads 8 --kv-heads 4 --intermediate 512 \
  --vocab 4000 --max-length 256 >/dev/null
F=$work/f/model.onnx
Q=$work/int4.onnx
check "make_int4_twin.py replaces the 15 weight MatMuls (7 per layer and lm_head)" \
  bash -c "$py $q/make_int4_twin.py '$F' '$Q' | grep -q ': 15 MatMul -> MatMulNBits'"
T=$work/tokens.npy
$py -c "import numpy as np; np.save('$T', np.random.default_rng(2024).integers(0, 4000, (2, 130)))"

# ---- the twin, in ONNX Runtime
if [[ $ort == 1 ]]; then
  $py $q/dequantized_float.py "$F" "$Q" "$work/deq.onnx" >/dev/null
  for m in f:"$F" q:"$Q" d:"$work/deq.onnx"; do
    ortnode $q/lm_figures.js "${m#*:}" "$T" "$work/ort_${m%%:*}.npy" --context 64 --generate 8 "$work/ids_${m%%:*}.npy" >/dev/null
  done
  check "ORT: the twin's logits are close to the float model's (max |diff| in (0, 2)) but not equal" $py -c "
import numpy as np; d = np.abs(np.load('$work/ort_f.npy') - np.load('$work/ort_q.npy')).max(); print('float vs int4 twin, max |logit diff|', d); assert 0 < d < 2"
  check "ORT: the twin's MatMulNBits compute the float model with the weights unpacked by the spec (within 1e-4)" $py -c "
import numpy as np; d = np.abs(np.load('$work/ort_d.npy') - np.load('$work/ort_q.npy')).max(); print('int4 twin vs its unpacked weights, max |logit diff|', d); assert d < 1e-4"
fi

# ---- --tokens: float vs int4 twin, every figure against the oracle
J=$work/lm.json
expect 0 "" "" -- compare "$F" "$Q" --tokens "$T" --context 64 --generate 8 --json "$J" --html "$work/lm.html"
check "--json: mode lm, 4 windows of 64, 252 predictions, passed without gates" \
  holds "$J" "j['mode'] == 'lm' and j['windows'] == 4 and j['context'] == 64 and j['tokens'] == 252 and j['passed'] is True"
check "--generate 8: steps 8, first_divergence a list of 4 (a step in 0..7 or null)" \
  holds "$J" "(g := j['generate'])['steps'] == 8 and len(g['first_divergence']) == 4 and all(d is None or 0 <= d < 8 for d in g['first_divergence'])"
check "--html writes a page" grep -qi "<html" "$work/lm.html"
if [[ $ort == 1 ]]; then
  check "float vs int4: refeval's figures are the oracle's (ORT logits + numpy)" \
    bash -c "$py $q/lm_figures.py '$T' '$work/ort_f.npy' '$work/ort_q.npy' --context 64 --ids '$work/ids_f.npy' '$work/ids_q.npy' --refeval '$J' >'$work/oracle.txt'"
  sed 's/^/  /' "$work/oracle.txt"
  # the oracle's own check is sharp: a figure 3% off, or one prediction more in agreement, fails it
  for bad in "j['kl_mean'] *= 1.03" "j['perplexity_b'] *= 1.003" "j['kl_p99'] *= 1.003" \
             "j['top1_agreement'] += 2 / j['tokens']" "j['generate']['first_divergence'][0] = 7"; do
    $py -c "import json; j = json.load(open('$J')); $bad; json.dump(j, open('$work/bad.json', 'w'))"
    check "the oracle check rejects refeval's JSON with $bad" bash -c "$py $q/lm_figures.py '$T' '$work/ort_f.npy' \
      '$work/ort_q.npy' --context 64 --ids '$work/ids_f.npy' '$work/ids_q.npy' --refeval '$work/bad.json' | grep -q '^differs from the oracle: '"
  done
fi

# ---- a lopsided pair: the float model and its twin that suppresses one id in four (KL about 2.2 one
# way, 0.3 the other): A and B in either order, each against the oracle
S=$work/suppressed.onnx
$py $q/make_suppressed_twin.py "$F" "$S" >/dev/null
expect 0 "" "" -- compare "$F" "$S" --tokens "$T" --context 64 --json "$work/fs.json"
expect 0 "" "" -- compare "$S" "$F" --tokens "$T" --context 64 --json "$work/sf.json"
check "KL(float || suppressed) is over 5 times KL(suppressed || float)" \
  $py -c "import json; a, b = (json.load(open(f'$work/{n}.json'))['kl_mean'] for n in ('fs', 'sf')); print('KL both ways', a, b); assert a > 5 * b"
if [[ $ort == 1 ]]; then
  ortnode $q/lm_figures.js "$S" "$T" "$work/ort_s.npy" --context 64 >/dev/null
  check "float vs suppressed: the oracle's figures" \
    bash -c "$py $q/lm_figures.py '$T' '$work/ort_f.npy' '$work/ort_s.npy' --context 64 --refeval '$work/fs.json' >'$work/oracle_fs.txt'"
  check "suppressed vs float: the oracle's figures" \
    bash -c "$py $q/lm_figures.py '$T' '$work/ort_s.npy' '$work/ort_f.npy' --context 64 --refeval '$work/sf.json' >'$work/oracle_sf.txt'"
  grep -E "^(FAIL|ok   (kl_mean|perplexity_ratio))" "$work/oracle_fs.txt" "$work/oracle_sf.txt" | sed "s|^$work/|  |"
fi

# ---- gates: just past the measured value exits 3 (passed false), just short of it 0
kl=$(field "$J" "repr(j['kl_mean'])")
top1=$(field "$J" "repr(j['top1_agreement'])")
ratio=$(field "$J" "repr(j['perplexity_ratio'])")
n=$(field "$J" "j['tokens']")
gate() {  # gate DESCRIPTION CODE OPTIONS...: compare with OPTIONS exits CODE, `passed` agrees
  local what=$1 code=$2
  shift 2
  expect "$code" "" "" -- compare "$F" "$Q" --tokens "$T" --context 64 "$@" --json "$work/gate.json"
  check "$what: passed is $([[ $code == 0 ]] && echo true || echo false)" \
    holds "$work/gate.json" "j['passed'] is $([[ $code == 0 ]] && echo True || echo False)"
}
gate "--max-kl 1% under kl_mean $kl" 3 --max-kl "$($py -c "print($kl * 0.99)")"
gate "--max-kl 1% over kl_mean" 0 --max-kl "$($py -c "print($kl * 1.01)")"
gate "--min-top1 half a prediction over top1 $top1" 3 --min-top1 "$($py -c "print($top1 + 0.5 / $n)")"
gate "--min-top1 half a prediction under top1" 0 --min-top1 "$($py -c "print($top1 - 0.5 / $n)")"
gate "--max-perplexity-ratio 0.1% under the ratio $ratio" 3 --max-perplexity-ratio "$($py -c "print($ratio * 0.999)")"
gate "--max-perplexity-ratio 0.1% over the ratio" 0 --max-perplexity-ratio "$($py -c "print($ratio * 1.001)")"
gate "three loose gates" 0 --max-kl 10 --min-top1 0 --max-perplexity-ratio 100
gate "two loose gates and one tight" 3 --max-kl 10 --min-top1 1 --max-perplexity-ratio 100

# ---- the float model against itself: nothing differs, the tightest gates pass
expect 0 "" "" -- compare "$F" "$F" --tokens "$T" --context 64 --generate 8 --json "$work/self.json" --max-kl 0 --min-top1 1
check "float vs itself: kl 0, top1 1, top5 1, ratio 1, equal perplexities, no divergence" holds "$work/self.json" \
  "(j['kl_mean'] == j['kl_p99'] == j['kl_max'] == 0 and j['top1_agreement'] == j['top5_overlap'] == 1 and j['perplexity_ratio'] == 1
    and j['perplexity_a'] == j['perplexity_b'] and j['generate']['first_divergence'] == [None] * 4 and j['passed'] is True)"
if [[ $ort == 1 ]]; then
  check "float vs itself: perplexity and the rest are the oracle's" \
    bash -c "$py $q/lm_figures.py '$T' '$work/ort_f.npy' '$work/ort_f.npy' --context 64 --refeval '$work/self.json' >/dev/null"
fi
# the default context is the whole row: 2 windows of 130
expect 0 "" "" -- compare "$F" "$Q" --tokens "$T" --json "$work/whole.json"
check "no --context: 2 windows of 130, 258 predictions" holds "$work/whole.json" "j['windows'] == 2 and j['context'] == 130 and j['tokens'] == 258"
if [[ $ort == 1 ]]; then
  ortnode $q/lm_figures.js "$F" "$T" "$work/whole_f.npy" >/dev/null
  ortnode $q/lm_figures.js "$Q" "$T" "$work/whole_q.npy" >/dev/null
  check "no --context: the oracle's figures" \
    bash -c "$py $q/lm_figures.py '$T' '$work/whole_f.npy' '$work/whole_q.npy' --refeval '$work/whole.json' >'$work/whole.txt'"
fi

# ---- bad use: one line, exit 2
$py -c "
import numpy as np
t = np.load('$T')
np.save('$work/t_float.npy', t.astype(np.float32))
np.save('$work/t_double.npy', t.astype(np.float64))
big = t.copy(); big[1, 70] = 4321; np.save('$work/t_big.npy', big)
neg = t.copy(); neg[0, 3] = -5; np.save('$work/t_neg.npy', neg)
np.save('$work/t_1d.npy', t[0])"
expect 2 "" "^refeval: error: .*(decoder|input_ids)" -- compare examples/linreg.onnx examples/linreg.onnx --tokens "$T"
expect 2 "" "^refeval: error: --tokens .*t_float\.npy: expected int64 \(or int32\) ids of shape \(rows, length\), got " -- compare "$F" "$Q" --tokens "$work/t_float.npy"
expect 2 "" "^refeval: error: --tokens .*t_double\.npy: expected int64 \(or int32\) ids of shape \(rows, length\), got " -- compare "$F" "$Q" --tokens "$work/t_double.npy"
# an id outside the vocabulary, named with its window (row 1's second) and position
expect 2 "" "^refeval: error: .*4321 .*window 3 position 6" -- compare "$F" "$Q" --tokens "$work/t_big.npy" --context 64
expect 2 "" "^refeval: error: .*-5 .*window 0 position 3" -- compare "$F" "$Q" --tokens "$work/t_neg.npy" --context 64
expect 2 "" "^refeval: error: --tokens .*t_1d\.npy: expected int64 \(or int32\) ids of shape \(rows, length\), got " -- compare "$F" "$Q" --tokens "$work/t_1d.npy"
expect 2 "" "^refeval: error: " -- compare "$F" "$Q" --tokens "$T" --context 131
expect 2 "" "^refeval: error: .*missing\.npy" -- compare "$F" "$Q" --tokens "$work/missing.npy"
expect 2 "" "^refeval: error: " -- compare "$F" "$Q" --tokens "$T" --input-set "$work"
expect 2 "" "^refeval: error: .*--max-kl" -- compare "$F" "$Q" --max-kl 1
# the logits of every position, of one vocabulary: an export that keeps the last position's only
# (logits[:, -1]), and one whose vocabulary is padded by a column, are refused by name
$py - "$F" "$work" <<'PY'
import sys, onnx
from onnx import helper, TensorProto as T
for name, node, extra in (("last", "Gather", [helper.make_tensor("last", T.INT64, [], [-1])]),
                          ("padded", "Pad", [helper.make_tensor("pads", T.INT64, [6], [0, 0, 0, 0, 0, 1])])):
    m = onnx.load(sys.argv[1])
    for n in m.graph.node:
        n.output[:] = ["logits_all" if o == "logits" else o for o in n.output]
    m.graph.initializer.extend(extra)
    m.graph.node.append(helper.make_node(node, ["logits_all", extra[0].name], ["logits"], **({"axis": 1} if node == "Gather" else {})))
    next(o for o in m.graph.output if o.name == "logits").type.tensor_type.ClearField("shape")
    onnx.save(m, f"{sys.argv[2]}/{name}.onnx")
PY
expect 2 "" "^refeval: error: .*last\.onnx: logits of shape \(1, 4000\) for a window of 64 tokens: the comparison needs the logits of every position" \
  -- compare "$F" "$work/last.onnx" --tokens "$T" --context 64
expect 2 "" "^refeval: error: .*model\.onnx has a vocabulary of 4000, .*padded\.onnx of 4001: their predictions cannot be compared$" \
  -- compare "$F" "$work/padded.onnx" --tokens "$T" --context 64
# statistics over sets need the two models' outputs of one shape: a (2, 3) against a (3, 2) is named
$py -c "
import onnx
from onnx import helper, TensorProto as T
for name, shape in (('wide', [2, 3]), ('tall', [3, 2])):
    g = helper.make_graph([helper.make_node('Reshape', ['x', 's'], ['y'])], name, [helper.make_tensor_value_info('x', T.FLOAT, [6])],
                          [helper.make_tensor_value_info('y', T.FLOAT, shape)], [helper.make_tensor('s', T.INT64, [2], shape)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), '$work/' + name + '.onnx')"
expect 1 "" "^refeval: error: output 'y' in set seed 0: shapes \(2, 3\) and \(3, 2\) differ$" -- compare "$work/wide.onnx" "$work/tall.onnx" --random-sets 1

# ---- data mode: three input sets of .npy files, every output against numpy over ORT's outputs
$py - "$work" <<'PY'
import os, sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(11)
for k, length in enumerate((8, 16, 24)):
    d = f"{work}/set{k}"
    os.makedirs(d)
    np.save(f"{d}/input_ids.npy", rng.integers(0, 4000, (1, length)))
    np.save(f"{d}/attention_mask.npy", np.ones((1, length), np.int64))
    np.save(f"{d}/position_ids.npy", np.arange(length)[None])
    for layer in range(2):
        for kind in ("key", "value"):
            np.save(f"{d}/past_key_values.{layer}.{kind}.npy", np.zeros((1, 4, 0, 32), np.float32))
PY
sets=(--input-set "$work/set0" --input-set "$work/set1" --input-set "$work/set2")
D=$work/data.json
expect 0 "" "" -- compare "$F" "$Q" "${sets[@]}" --json "$D"
check "--input-set: mode data, 3 sets, logits and the 4 presents, passed" \
  holds "$D" "j['mode'] == 'data' and j['sets'] == 3 and sorted(o['name'] for o in j['outputs']) == ['logits'] + [f'present.{i}.{k}' for i in (0, 1) for k in ('key', 'value')] and j['passed'] is True"
if [[ $ort == 1 ]]; then
  ortnode $q/run_sets.js "$F" "$work/sets_f" "$work/set0" "$work/set1" "$work/set2" >/dev/null
  ortnode $q/run_sets.js "$Q" "$work/sets_q" "$work/set0" "$work/set1" "$work/set2" >/dev/null
  check "float vs int4 on 3 input sets: every output's figures are numpy's over ORT's outputs" \
    bash -c "$py $q/data_figures.py '$work/sets_f' '$work/sets_q' --refeval '$D' --set-names '$work/set0' '$work/set1' '$work/set2' >'$work/data.txt'"
  sed 's/^/  /' "$work/data.txt" | grep -E "logits|FAIL"
  $py -c "import json; j = json.load(open('$D')); [o for o in j['outputs'] if o['name'] == 'logits'][0]['snr_db_min'] *= 1.03; json.dump(j, open('$work/bad.json', 'w'))"
  check "the data oracle check rejects an snr_db_min 3% off" \
    bash -c "$py $q/data_figures.py '$work/sets_f' '$work/sets_q' --refeval '$work/bad.json' | grep -q '^differs from the oracle: logits snr_db_min$'"
fi
snr=$(field "$D" "min(o['snr_db_min'] for o in j['outputs'])")
cos=$(field "$D" "min(o['cosine_min'] for o in j['outputs'])")
expect 3 "" "" -- compare "$F" "$Q" "${sets[@]}" --min-snr "$($py -c "print($snr + 0.5)")" --json "$work/gate.json"
check "--min-snr 0.5 dB over the lowest ($snr dB): passed is false" holds "$work/gate.json" "j['passed'] is False"
expect 0 "" "" -- compare "$F" "$Q" "${sets[@]}" --min-snr "$($py -c "print($snr - 0.5)")"
expect 3 "" "" -- compare "$F" "$Q" "${sets[@]}" --min-cosine "$($py -c "print((1 + $cos) / 2)")"
expect 0 "" "" -- compare "$F" "$Q" "${sets[@]}" --min-cosine "$($py -c "print($cos - 1e-4)")"
# --random-sets: generated from seeds 5 and 6, the same figures on every run
expect 0 "" "" -- compare "$F" "$Q" --random-sets 2 --seed 5 --json "$work/r1.json"
expect 0 "" "" -- compare "$F" "$Q" --random-sets 2 --seed 5 --json "$work/r2.json"
check "--random-sets 2 --seed 5: 2 sets, the same figures twice" $py -c "
import json; a, b = (json.load(open(f'$work/r{k}.json')) for k in (1, 2)); assert a['sets'] == 2 and a['outputs'] == b['outputs'], (a, b)"
expect 0 "" "" -- compare "$F" "$F" "${sets[@]}" --json "$work/dself.json"
check "a model against itself on the sets: max_abs 0, cosine 1, top1 1" holds "$work/dself.json" \
  "all(o['max_abs'] == 0 and abs(o['cosine_min'] - 1) < 1e-12 and o['top1_agreement'] == 1 for o in j['outputs'])"
# One int4 model (accuracy_level 4) against itself run as ONNX Runtime runs it (int8 products):
# the same model exact is KL 0; with --emulate-accuracy-level-b the predictions move apart.
L4=$src/tests/data/ort/decoders_genai_level4/int4_asym_b1/model.onnx
$py -c "import numpy as np; np.save('$work/t96.npy', np.random.default_rng(2).integers(0, 96, (2, 32)).astype(np.int64))"
expect 0 "" "" -- compare "$L4" "$L4" --tokens "$work/t96.npy" --json "$work/l4.json"
check "level-4 model against itself, exact: KL 0" holds "$work/l4.json" "j['kl_mean'] == 0"
expect 0 "" "" -- compare "$L4" "$L4" --tokens "$work/t96.npy" --emulate-accuracy-level-b --json "$work/l4e.json"
check "level-4 model against its ORT int8 arithmetic: small KL, not 0" holds "$work/l4e.json" "0 < j['kl_mean'] < 1e-2"
finish
