#!/usr/bin/env python3
"""Writes the broken files a user can hand refeval, one defect each, for tests/cli/diagnostics_test.sh:
models (protobuf, tensors, external data, graphs, functions, attributes), input files (.pb, .npy),
tokenizer.json files and profiles. Each file's name says what is wrong with it.

  malformed_inputs.py OUT_DIR
"""
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
FLOAT = TensorProto.FLOAT


def path(name):
    return os.path.join(OUT, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def model(nodes, inputs=None, outputs=None, initializers=(), opsets=(("", 17),), functions=(), sparse=(), ir=8):
    inputs = inputs if inputs is not None else [helper.make_tensor_value_info("X", FLOAT, [2])]
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("Y", FLOAT, [2])]
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers), sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], functions=list(functions))
    m.ir_version = ir
    return m


def save(name, m):
    write(name, m.SerializeToString())


def identity():
    return [helper.make_node("Identity", ["X"], ["Y"], name="copy")]


def bare(name, data_type, dims):
    """A TensorProto with no data (helper.make_tensor would check the data against the shape)."""
    return TensorProto(name=name, data_type=data_type, dims=dims)


def add_w(w):
    """Y = X + W, W the initializer under test."""
    return model([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], initializers=[w])


def varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def field(number, payload):
    """A length-delimited protobuf field, for fields the installed onnx package does not know."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def models():
    write("empty.onnx", b"")
    m = model(identity())
    m.ir_version = 99
    save("ir_version_99.onnx", m)
    save("opset_imported_twice.onnx", model(identity(), opsets=(("", 17), ("", 13))))
    save("input_element_type_99.onnx", model(identity(), inputs=[helper.make_tensor_value_info("X", 99, [2])]))

    w = numpy_helper.from_array(np.ones(2, np.float32), "")
    save("initializer_without_name.onnx", add_w(w))

    def external(name, location, **keys):
        w = bare("W", FLOAT, [2])
        w.data_location = TensorProto.EXTERNAL
        for k, v in [("location", location), *keys.items()]:
            e = w.external_data.add()
            e.key, e.value = k, v
        save(name, add_w(w))
    write("four_bytes.bin", b"\0\0\0\0")
    write("eight_bytes.bin", b"\0" * 8)
    external("external_absolute.onnx", "/etc/hostname")
    external("external_offset_word.onnx", "eight_bytes.bin", offset="ten")
    external("external_missing_file.onnx", "no_such.bin")
    external("external_length_3.onnx", "eight_bytes.bin", length="3")
    external("external_beyond_end.onnx", "four_bytes.bin")

    w = bare("W", FLOAT, [2])
    w.float_data.extend([1.0, 2.0, 3.0])
    save("float_data_3_for_2.onnx", add_w(w))
    w = helper.make_tensor("W", FLOAT, [2], [1.0, 2.0])
    w.data_type = 99
    save("initializer_element_type_99.onnx", add_w(w))
    w = helper.make_tensor("W", FLOAT, [2], [1.0, 2.0])
    w.segment.begin, w.segment.end = 0, 2
    save("segmented_initializer.onnx", add_w(w))
    save("negative_dimension.onnx", add_w(bare("W", FLOAT, [-1])))
    save("too_many_elements.onnx", add_w(bare("W", FLOAT, [2**40, 2**40])))
    w = bare("W", TensorProto.STRING, [1])
    w.raw_data = b"abcd"
    save("strings_in_raw_data.onnx", add_w(w))

    def sparse(name, indices, dims=(2,)):
        values = numpy_helper.from_array(np.ones(1, np.float32), "W")
        s = helper.make_sparse_tensor(values, indices, list(dims))
        save(name, model([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], sparse=[s]))
    sparse("sparse_int32_indices.onnx", numpy_helper.from_array(np.array([0], np.int32), "i"))
    sparse("sparse_two_indices_one_value.onnx", numpy_helper.from_array(np.array([0, 1], np.int64), "i"))
    sparse("sparse_index_out_of_range.onnx", numpy_helper.from_array(np.array([5], np.int64), "i"))

    save("cycle.onnx", model([helper.make_node("Neg", ["b"], ["a"], name="first"),
                              helper.make_node("Neg", ["a"], ["b"], name="second"),
                              helper.make_node("Add", ["X", "a"], ["Y"], name="add")]))
    save("domain_not_imported.onnx", model([helper.make_node("Thing", ["X"], ["Y"], name="thing", domain="com.example")]))
    save("gelu_at_opset_17.onnx", model([helper.make_node("Gelu", ["X"], ["Y"], name="gelu")]))
    save("unknown_attribute.onnx", model([helper.make_node("Relu", ["X"], ["Y"], name="relu", colour=3)]))
    save("output_not_produced.onnx", model(identity(), outputs=[helper.make_tensor_value_info("Z", FLOAT, [2])]))
    save("then_branch_an_int.onnx", model([helper.make_node("If", ["C"], ["Y"], name="if", then_branch=1, else_branch=2)],
                                          inputs=[helper.make_tensor_value_info("C", TensorProto.BOOL, [])]))
    save("axis_a_float.onnx", model([helper.make_node("Softmax", ["X"], ["Y"], name="softmax", axis=0.5)]))
    save("axis_out_of_int_range.onnx", model([helper.make_node("Softmax", ["X"], ["Y"], name="softmax", axis=2**40)]))
    save("cast_without_to.onnx", model([helper.make_node("Cast", ["X"], ["Y"], name="cast")]))
    save("add_missing_input.onnx", model([helper.make_node("Add", ["X", ""], ["Y"], name="add")]))
    save("add_of_a_sequence.onnx", model([helper.make_node("SequenceConstruct", ["X"], ["S"], name="seq"),
                                          helper.make_node("Add", ["S", "X"], ["Y"], name="add")]))
    save("add_of_strings.onnx", model([helper.make_node("Add", ["X", "X"], ["Y"], name="add")],
                                      inputs=[helper.make_tensor_value_info("X", TensorProto.STRING, [2])],
                                      outputs=[helper.make_tensor_value_info("Y", TensorProto.STRING, [2])]))
    save("add_2x3_and_4.onnx", model([helper.make_node("Add", ["X", "W"], ["Y"], name="add")],
                                     inputs=[helper.make_tensor_value_info("X", FLOAT, [2, 3])],
                                     initializers=[numpy_helper.from_array(np.ones(4, np.float32), "W")]))

    # Relu has one output: a second one is never computed.
    save("relu_with_two_outputs.onnx", model([helper.make_node("Relu", ["X"], ["Y", "Z"], name="relu")]))
    save("reads_relu_second_output.onnx", model([helper.make_node("Relu", ["X"], ["R", "Z"], name="relu"),
                                                 helper.make_node("Neg", ["Z"], ["Y"], name="neg")]))

    local = ("local", 1)
    calls_itself = helper.make_function("local", "f", ["x"], ["y"], [helper.make_node("f", ["x"], ["y"], domain="local")],
                                        [helper.make_opsetid("", 17), helper.make_opsetid(*local)])
    save("function_calls_itself.onnx", model([helper.make_node("f", ["X"], ["Y"], name="call", domain="local")],
                                             opsets=(("", 17), local), functions=[calls_itself]))
    neg = helper.make_function("local", "f", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], [helper.make_opsetid("", 17)])
    save("function_given_3_inputs.onnx", model([helper.make_node("f", ["X", "X", "X"], ["Y"], name="call", domain="local")],
                                               opsets=(("", 17), local), functions=[neg]))
    # A function's attribute defaults (FunctionProto field 11, IR 9) that are not an AttributeProto.
    plain = model([helper.make_node("f", ["X"], ["Y"], name="call", domain="local")], opsets=(("", 17), local), ir=9)
    write("function_attribute_default_garbage.onnx",
          plain.SerializeToString() + field(25, neg.SerializeToString() + field(11, b"\xff\xff\xff")))


def input_files():
    """Feeds: --input X=FILE for the models below (X is float32 [2])."""
    write("junk.pb", b"\xff\xff\xff\xff garbage")
    np.save(path("two.npy"), np.ones(2, np.float32))
    np.save(path("int64.npy"), np.ones(2, np.int64))
    np.save(path("two_by_two.npy"), np.ones((2, 2), np.float32))
    save("identity.onnx", model(identity()))
    seq = helper.make_tensor_sequence_value_info("X", FLOAT, [2])
    save("sequence_input.onnx", model([helper.make_node("SequenceLength", ["X"], ["Y"], name="length")], inputs=[seq],
                                      outputs=[helper.make_tensor_value_info("Y", TensorProto.INT64, [])]))
    opt = helper.make_value_info("X", helper.make_optional_type_proto(helper.make_tensor_type_proto(FLOAT, [2])))
    save("optional_input.onnx", model([helper.make_node("OptionalHasElement", ["X"], ["Y"], name="has")], inputs=[opt],
                                      outputs=[helper.make_tensor_value_info("Y", TensorProto.BOOL, [])], opsets=(("", 18),)))
    mp = onnx.ValueInfoProto(name="X")
    mp.type.map_type.key_type = TensorProto.INT64
    mp.type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(FLOAT, []))
    save("map_input.onnx", model(identity(), inputs=[mp], outputs=[helper.make_value_info("Y", mp.type)]))

    s = onnx.SequenceProto(name="X", elem_type=99)
    write("sequence_kind_99.pb", s.SerializeToString())
    o = onnx.OptionalProto(name="X", elem_type=99)
    write("optional_kind_99.pb", o.SerializeToString())
    values = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR,
                                tensor_values=[numpy_helper.from_array(np.array(1.0, np.float32))])
    write("map_2_keys_1_value.pb", onnx.MapProto(name="X", key_type=TensorProto.INT64, keys=[1, 2], values=values).SerializeToString())
    values = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR,
                                tensor_values=[numpy_helper.from_array(np.ones(2, np.float32))])
    write("map_value_not_scalar.pb", onnx.MapProto(name="X", key_type=TensorProto.INT64, keys=[1], values=values).SerializeToString())

    def npy(name, header, data=b"", version=1):
        header = header.encode()
        size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
        write(name, b"\x93NUMPY" + bytes([version, 0]) + size + header + data)
    npy_header = "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}"
    write("not_npy.npy", b"PK\x03\x04 a zip file, not an array")
    write("version_2_cut.npy", b"\x93NUMPY\x02\x00\x10\x00")
    npy("version_9.npy", npy_header.format("<f4", "(2,)"), version=9)
    write("header_cut.npy", b"\x93NUMPY\x01\x00\xff\x00{'descr'")
    npy("header_without_descr.npy", "{'fortran_order': False, 'shape': (2,), }")
    npy("shape_of_words.npy", npy_header.format("<f4", "(two,)"))
    npy("shape_negative.npy", npy_header.format("<f4", "(-2,)"))
    npy("data_cut.npy", npy_header.format("<f4", "(2,)"), b"\0\0\0\0")
    npy("dtype_f.npy", npy_header.format("<f", "(2,)"))
    npy("dtype_fx.npy", npy_header.format("<fx", "(2,)"))
    npy("dtype_f3.npy", npy_header.format("<f3", "(2,)"))
    npy("dtype_object.npy", npy_header.format("|O8", "(2,)"))
    npy("shape_too_many_elements.npy", npy_header.format("<f4", f"({2**40}, {2**40})"))


def tokenizers():
    """tokenizer.json files, each a small valid WordLevel tokenizer with one thing wrong."""
    def tok(name, **changes):
        t = {"model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hi": 1}, "unk_token": "[UNK]"},
             "pre_tokenizer": {"type": "Whitespace"}}
        t.update(changes)
        write(name, json.dumps(t))
    write("top_level_array.json", "[1, 2]")
    write("no_model.json", "{}")
    tok("model_null.json", model=None)
    tok("model_type_unigram_number.json", model={"type": 7})
    tok("model_without_type.json", model={"vocab": {}})
    tok("model_a_string.json", model="WordLevel")
    tok("added_tokens_object.json", added_tokens={})
    tok("added_token_a_number.json", added_tokens=[5])
    tok("added_token_id_negative.json", added_tokens=[{"id": -1, "content": "x"}])
    tok("unk_token_a_number.json", model={"type": "WordLevel", "vocab": {"hi": 1}, "unk_token": 3})
    tok("lowercase_a_string.json", normalizer={"type": "BertNormalizer", "lowercase": "yes"})
    tok("vocab_id_text.json", model={"type": "WordLevel", "vocab": {"hi": "one"}, "unk_token": "hi"})
    tok("vocab_an_array.json", model={"type": "WordLevel", "vocab": [], "unk_token": "hi"})
    tok("pattern_a_number.json", pre_tokenizer={"type": "Split", "pattern": 5, "behavior": "Isolated"})
    tok("pattern_a_glob.json", pre_tokenizer={"type": "Split", "pattern": {"Glob": "*"}, "behavior": "Isolated"})
    tok("replace_without_content.json", normalizer={"type": "Replace", "pattern": {"String": "a"}})
    tok("behavior_unknown.json", pre_tokenizer={"type": "Split", "pattern": {"String": " "}, "behavior": "Shout"})
    tok("delimiter_two_characters.json", pre_tokenizer={"type": "CharDelimiterSplit", "delimiter": "ab"})
    tok("metaspace_scheme_sometimes.json", pre_tokenizer={"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"})
    tok("decoder_scheme_sometimes.json", decoder={"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"})
    tok("strip_content_two_characters.json", decoder={"type": "Strip", "content": "ab", "start": 1, "stop": 0})
    tok("metaspace_replacement_empty.json", decoder={"type": "Metaspace", "replacement": "", "prepend_scheme": "always"})
    tok("strip_start_a_string.json", decoder={"type": "Strip", "content": " ", "start": "one", "stop": 0})
    tok("strip_accents_a_string.json", normalizer={"type": "BertNormalizer", "strip_accents": "yes"})
    tok("truncation_a_number.json", truncation=5)
    tok("truncation_direction_up.json", truncation={"max_length": 4, "direction": "Up"})
    tok("truncation_negative.json", truncation={"max_length": -1, "direction": "Right"})
    tok("truncation_shorter_than_specials.json", truncation={"max_length": 1, "direction": "Right"},
        post_processor={"type": "BertProcessing", "sep": ["hi", 1], "cls": ["hi", 1]})
    tok("bert_sep_a_string.json", post_processor={"type": "BertProcessing", "sep": "x", "cls": ["hi", 1]})
    tok("bert_sep_without_id.json", post_processor={"type": "BertProcessing", "sep": ["hi"], "cls": ["hi", 1]})
    tok("post_processor_unknown.json", post_processor={"type": "Shuffle"})

    def template(name, single, specials):
        tok(name, post_processor={"type": "TemplateProcessing", "single": single, "pair": [], "special_tokens": specials})
    a = {"Sequence": {"id": "A", "type_id": 0}}
    template("template_sequence_b.json", [{"Sequence": {"id": "B", "type_id": 0}}], {})
    template("template_special_not_listed.json", [a, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}], {})
    template("template_special_id_negative.json", [a, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
             {"[SEP]": {"id": "[SEP]", "ids": [-1], "tokens": ["[SEP]"]}})
    template("template_item_unknown.json", [a, {"Word": {}}], {})
    template("template_a_twice.json", [a, a], {})

    def bpe(name, merges, **extra):
        tok(name, model={"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": merges, **extra})
    bpe("bpe_dropout.json", [], dropout=0.1)
    bpe("bpe_merge_three_tokens.json", ["a b c"])
    bpe("bpe_merge_a_number.json", [7])
    bpe("bpe_unk_not_in_vocab.json", [], unk_token="[UNK]")
    write("cut_short.json", '{"model": {"type": "WordLevel", ')
    tok("normalizer_precompiled.json", normalizer={"type": "Precompiled"})
    tok("model_unigram.json", model={"type": "Unigram", "vocab": []})
    tok("pre_tokenizer_unicode_scripts.json", pre_tokenizer={"type": "UnicodeScripts"})
    tok("decoder_ctc.json", decoder={"type": "CTC"})
    tok("regex_unclosed.json", pre_tokenizer={"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"})
    deep = {"type": "Lowercase"}
    for _ in range(65):
        deep = {"type": "Sequence", "normalizers": [deep]}
    tok("normalizers_65_deep.json", normalizer=deep)
    bpe("bpe_merge_unknown_token.json", ["a x"])
    tok("wordpiece_unk_missing.json", model={"type": "WordPiece", "vocab": {"hi": 0}, "unk_token": "[UNK]",
                                             "continuing_subword_prefix": "##", "max_input_chars_per_word": 100})


def profiles():
    write("profile_an_object.json", '{"traceEvents": 1}')
    write("profile_no_event.json", "[1, 2\n")
    write("profile_no_node_events.json", json.dumps([{"cat": "Session", "name": "session_initialization", "ph": "X", "ts": 1, "dur": 5}]))


def main():
    os.makedirs(OUT, exist_ok=True)
    models()
    input_files()
    tokenizers()
    profiles()


if __name__ == "__main__":
    main()
