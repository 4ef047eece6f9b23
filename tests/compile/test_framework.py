"""The compiler's framework: entry points, errors, host execution, generated C hygiene."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate
from tractile.errors import RunError, TractileError, UnsupportedOpError
from tractile.formats.tflite import load_tflite

from ..conftest import shared_model
from .harness import assert_builds_without_warnings, check_against_interpreter, compiled


def mlp_proto(batch="N"):
    """A float 1->16->16->1 MLP with ReLUs, as an ONNX exporter writes it (Gemm nodes)."""
    rng = np.random.default_rng(1)
    inits = []
    nodes = []
    width = [1, 16, 16, 1]
    name = "x"
    for layer in range(3):
        w = rng.standard_normal((width[layer + 1], width[layer])).astype(np.float32)
        b = rng.standard_normal(width[layer + 1]).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{layer}"), numpy_helper.from_array(b, f"b{layer}")]
        nodes.append(helper.make_node("Gemm", [name, f"w{layer}", f"b{layer}"], [f"g{layer}"], transB=1,
                                      name=f"dense{layer}"))
        name = f"g{layer}"
        if layer < 2:
            nodes.append(helper.make_node("Relu", [name], [f"r{layer}"], name=f"relu{layer}"))
            name = f"r{layer}"
    nodes.append(helper.make_node("Identity", [name], ["y"], name="out"))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_hello_world_int8_matches_upstream_and_interpreter_on_every_input(compile_cache):
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    every = [[np.array([[v]], np.int8)] for v in range(-128, 128)]
    cm = check_against_interpreter(model, compile_cache, inputs=every)
    outputs = [int(cm.run([np.array([[v]], np.int8)])[0][0, 0]) for v in (-128, -64, 0, 64)]
    assert outputs == [4, 126, 4, -126]


def test_float_sine_model_within_tolerance(compile_cache):
    model = tractile.load(shared_model("tflite/hello_world_float.tflite"))
    xs = [[np.array([[v]], np.float32)] for v in np.linspace(0, 2 * np.pi, 100, dtype=np.float32)]
    check_against_interpreter(model, compile_cache, inputs=xs)


def test_both_integer_flavours_compile_bit_exact(compile_cache):
    path = shared_model("tflite/microflow_sine.tflite")
    every = [[np.array([[v]], np.int8)] for v in range(-128, 128)]
    for flavour in ("reference", "micro"):
        model = load_tflite(path, flavour=flavour).into_optimized()
        cm = check_against_interpreter(model, compile_cache, inputs=every, name=f"sine_{flavour}")
        kernels = {node["kernel"] for node in cm.report["nodes"]}
        assert kernels == {"tl_dense_gemm_s8"}  # the host's GEMM, requantized in double precision for reference
        assert ("static const double" in cm.source.source) == (flavour == "reference")


def test_onnx_mlp_with_symbolic_batch_needs_a_value_then_compiles(compile_cache, tmp_path):
    proto = mlp_proto()
    model = tractile.load(proto)
    with pytest.raises(TractileError, match=r"symbol N has no value.*inputs: \"x\": N,1,f32"):
        generate(model)
    cm = check_against_interpreter(tractile.load(proto, inputs=["4,1,f32"]), compile_cache)
    assert cm.input_facts[0].shape == (4, 1)
    cm2 = compiled(tractile.load(proto), compile_cache, inputs=["3,1,f32"])
    assert cm2.output_facts[0].shape == (3, 1)


def test_every_unsupported_node_is_named_before_any_file_is_written(tmp_path):
    nodes = [helper.make_node("Acos", ["x"], ["a"], name="first_acos"),
             helper.make_node("Relu", ["a"], ["b"], name="fine_relu"),
             helper.make_node("Asinh", ["b"], ["y"], name="second_asinh")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    out = tmp_path / "out"
    with pytest.raises(UnsupportedOpError) as raised:
        generate(tractile.load(proto)).write(out)
    message = str(raised.value)
    assert '"first_acos" (Acos)' in message and '"second_asinh" (Asinh)' in message
    assert not out.exists()


def test_generated_code_builds_warning_free_with_gcc_and_clang(tmp_path):
    for index, path in enumerate(("tflite/hello_world_int8.tflite", "tflite/hello_world_float.tflite")):
        source = generate(tractile.load(shared_model(path)), name=f"m{index}")
        assert_builds_without_warnings(source, tmp_path / str(index))
    source = generate(tractile.load(mlp_proto(), inputs=["2,1,f32"]), name="mlp")
    assert_builds_without_warnings(source, tmp_path / "mlp")


def test_header_declares_the_api_and_io_macros():
    source = generate(tractile.load(shared_model("tflite/hello_world_int8.tflite")), name="sine")
    header = source.header
    for text in ("typedef struct", "} sine_ctx;", "void sine_init(sine_ctx *ctx);", "void sine_reset(sine_ctx *ctx);",
                 "int sine_invoke(sine_ctx *ctx, const int8_t *", "#define SINE_INPUT0_SHAPE {1, 1}",
                 "#define SINE_INPUT0_TYPE int8_t", "#define SINE_INPUT0_ZERO_POINT (-128)",
                 "#define SINE_OUTPUT0_COUNT 1", "#define SINE_ARENA_BYTES 32", "#define SINE_CONTEXT_BYTES"):
        assert text in header, text
    code = source.source
    assert 'node #3 "sequential/dense/MatMul' in code and "static const int8_t sequential_dense_MatMul_weights" in code
    for forbidden in ("malloc", "static int", "static float"):
        assert forbidden not in code


def test_runs_like_a_state_with_the_interpreters_input_checks(compile_cache):
    cm = compiled(tractile.load(shared_model("tflite/hello_world_int8.tflite")), compile_cache)
    name = cm.input_names[0]
    x = np.array([[10]], np.int8)
    by_name = cm.run({name: x})
    assert list(by_name) == cm.output_names
    np.testing.assert_array_equal(by_name[cm.output_names[0]], cm.run([x])[0])
    with pytest.raises(RunError, match="expected rank 2"):
        cm.run([np.zeros(3, np.int8)])
    with pytest.raises(RunError, match="datum type float32"):
        cm.run([np.zeros((1, 1), np.float32)])
    with pytest.raises(RunError, match="missing input"):
        cm.run({})


def test_contexts_are_independent_across_threads(compile_cache):
    model = tractile.load(mlp_proto(), inputs=["8,1,f32"])
    cm = compiled(model, compile_cache)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 1)).astype(np.float32) for _ in range(8)]
    expected = [cm.run([x])[0] for x in xs]
    results: dict[int, list] = {}

    def work(index: int) -> None:
        state = cm.state()
        results[index] = [state.run([xs[index]])[0] for _ in range(200)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in range(8):
        for got in results[index]:
            np.testing.assert_array_equal(got, expected[index])


def test_no_c_compiler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(TractileError, match="no C compiler found.*apt-get install gcc"):
        tractile.load(shared_model("tflite/hello_world_int8.tflite")).compile(cache_dir=tmp_path)


def test_outputs_that_are_inputs_or_reshapes_are_copied_or_shared(compile_cache):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["r"], name="dense"),
             helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flatten"),
             helper.make_node("Identity", ["x"], ["same"], name="passthrough")]
    shape = numpy_helper.from_array(np.array([6], np.int64), "shape")
    weights = numpy_helper.from_array(np.arange(9, dtype=np.float32).reshape(3, 3), "w")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("flat", TensorProto.FLOAT, [6]),
                               helper.make_tensor_value_info("same", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])], [shape, weights])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = tractile.load(proto)
    cm = check_against_interpreter(model, compile_cache)
    assert cm.source.source.count("memcpy(") >= 2


def test_the_documented_c_program_builds_and_prints_126(tmp_path):
    """docs/COMPILE.md's complete main.c, built with the generated files as a user would."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    doc = (Path(__file__).resolve().parents[2] / "docs" / "COMPILE.md").read_text()
    program = next(block for block in re.findall(r"```c\n(.*?)```", doc, re.S) if "int main" in block)
    generate(tractile.load(shared_model("tflite/hello_world_int8.tflite")), name="hello_world_int8").write(tmp_path)
    (tmp_path / "main.c").write_text(program)
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "main.c", "hello_world_int8.c", "-o",
                    "demo"], cwd=tmp_path, check=True)
    assert subprocess.run(["./demo"], cwd=tmp_path, capture_output=True, text=True).stdout.strip() == "126"


def test_a_ram_budget_is_met_or_refused_with_the_smallest_reached(capsys):
    from tractile.cli.main import main as cli_main
    from tractile.compile.budget import check_ram_budget, planned_ram

    path = str(shared_model("tflite/micro_speech_quantized.tflite"))
    source = generate(tractile.load(path), name="speech")
    needed = planned_ram(source.report)
    assert needed == source.report["arena_bytes"] + source.report["io_bytes"] < 5_968 + 1_964
    check_ram_budget(source, needed)
    with pytest.raises(tractile.TractileError, match=rf"needs at least {needed} B of RAM.*budget of {needed - 1} B"):
        check_ram_budget(source, needed - 1)
    assert cli_main(["compile", path, "--max-ram", str(needed - 1)]) != 0
    assert f"Raise --max-ram to {needed}" in capsys.readouterr().err
    assert cli_main(["compile", path, "--max-ram", str(needed), "--json"]) == 0


def test_supported_ops_lists_every_lowered_op_class_by_name():
    """Op classes whose ``name`` depends on the instance (a property) are listed by class name."""
    from tractile.compile.registry import supported_ops

    names = supported_ops()
    assert all(isinstance(name, str) and name.isidentifier() for name in names), names
    assert names == sorted(set(names))
    for expected in ("Conv", "MatMul", "LSTM", "ProjectedLstm", "Svdf", "Arithmetic", "UnaryOp", "AveragePool",
                     "Reduce"):
        assert expected in names, names
    assert not any("property" in name for name in names)


def test_a_model_is_optimized_once_on_its_way_to_c(monkeypatch, tmp_path, compile_cache):
    """Loading optimizes; generating, compiling and the command line's compile then take the
    optimized model as it is (a model changed since, by new input facts, is optimized again)."""
    from tractile import hooks
    from tractile.cli.main import main as cli_main

    runs = []
    optimize = hooks.provided("optimize")
    monkeypatch.setitem(hooks._PROVIDED, "optimize", lambda model: runs.append(model) or optimize(model))
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp_proto(batch=2).SerializeToString())
    model = tractile.load(path)
    assert len(runs) == 1 and model.is_optimized
    generate(model)
    model.compile(cache_dir=compile_cache)
    assert len(runs) == 1
    for extra in ([], ["--max-ram", "4096"]):
        assert cli_main(["compile", str(path), "-o", str(tmp_path / "c"), *extra]) == 0
        assert len(runs) == 2, extra
        runs.pop()
    generate(model, inputs=["3,1,f32"])  # new facts: the copy is optimized again
    assert len(runs) == 2
