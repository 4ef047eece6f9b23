"""Time tractile's compiled host code against LiteRT (default kernels: XNNPACK) and tractile's interpreter.

    PYTHONPATH=src python bench/bench_host.py [--models kws_dscnn_int8,...] [--runs 200] [--threads 2]

Every engine runs in this one process on the same random input: tractile compiled for this
machine (``compile_model``, ``-O3 -march=native``), tractile interpreted, LiteRT with its
default resolver on one thread and on two. After warm-up runs the median of ``--runs`` timed
runs (set inputs, invoke, read outputs) is reported, and the ratios compiled / LiteRT (goal:
at most 1.5 on one thread, issue 28) and compiled / interpreted. Models: the MLPerf Tiny
reference models (int8), the shared TFLite models, and float versions of three MLPerf Tiny
architectures (ResNet-8, DS-CNN, MobileNetV1 0.25 at 96x96) built with Keras on random weights
and converted by TensorFlow (cached under /tmp; ``tensorflow`` needed for those only).
``--threads N`` instead compares the compiled code on one thread and on N (its large
convolutions and GEMMs split by rows, ``CompiledModel.set_threads``), with LiteRT on 1 and N.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from bench_tflite import inputs_for  # noqa: E402
from timing import load_average, median_and_fastest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "models"
SCRATCH = Path("/tmp") / "tractile_bench_host"
MLPERF = ("kws_dscnn_int8", "resnet8_int8", "vww_96_int8", "ad01_int8")
SHARED_TFLITE = ("person_detect", "micro_speech_quantized", "hello_world_int8", "hello_world_float",
                 "microflow_sine", "mnist_lstm_int8", "mnist_lstm_float")
#: the other shared TFLite models: LiteRT corrupts its heap on keyword_scrambled_8bit and lacks the audio
#: preprocessors' custom Signal ops (bench_tflite_auto.py times them against TFLite Micro instead)
NOT_LITERT = ("keyword_scrambled_8bit", "audio_preprocessor_int8", "audio_preprocessor_float")
FLOAT = ("resnet8_float", "kws_dscnn_float", "vww_96_float")


def median_time(run, runs: int, warmup: int = 10) -> tuple[float, float]:
    """The median and the fastest of ``runs`` timed calls (the fastest: what a loaded machine hides least)."""
    return median_and_fastest(run, runs, warmup)


def keras_float_model(name: str):
    """A float Keras model of an MLPerf Tiny architecture on random weights."""
    import tensorflow as tf

    layers = tf.keras.layers
    if name == "resnet8_float":
        x = inputs = tf.keras.Input((32, 32, 3), batch_size=1)
        x = layers.ReLU()(layers.Conv2D(16, 3, padding="same")(x))
        for filters, stride in ((16, 1), (32, 2), (64, 2)):
            y = layers.ReLU()(layers.Conv2D(filters, 3, stride, padding="same")(x))
            y = layers.Conv2D(filters, 3, padding="same")(y)
            if stride != 1:
                x = layers.Conv2D(filters, 1, stride)(x)
            x = layers.ReLU()(layers.Add()([x, y]))
        x = layers.Flatten()(layers.AveragePooling2D(8)(x))
        outputs = layers.Softmax()(layers.Dense(10)(x))
    elif name == "kws_dscnn_float":
        x = inputs = tf.keras.Input((49, 10, 1), batch_size=1)
        x = layers.ReLU()(layers.Conv2D(64, (10, 4), 2, padding="same")(x))
        for _ in range(4):
            x = layers.ReLU()(layers.DepthwiseConv2D(3, padding="same")(x))
            x = layers.ReLU()(layers.Conv2D(64, 1)(x))
        x = layers.Flatten()(layers.AveragePooling2D((25, 5))(x))
        outputs = layers.Softmax()(layers.Dense(12)(x))
    else:  # MobileNetV1, width 0.25, 96x96
        x = inputs = tf.keras.Input((96, 96, 3), batch_size=1)
        x = layers.ReLU(6.0)(layers.Conv2D(8, 3, 2, padding="same")(x))
        for filters, stride in ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), *[(128, 1)] * 5, (256, 2),
                                (256, 1)):
            x = layers.ReLU(6.0)(layers.DepthwiseConv2D(3, stride, padding="same")(x))
            x = layers.ReLU(6.0)(layers.Conv2D(filters, 1)(x))
        x = layers.Flatten()(layers.AveragePooling2D(3)(x))
        outputs = layers.Softmax()(layers.Dense(2)(x))
    model = tf.keras.Model(inputs, outputs)
    rng = np.random.default_rng(1)
    model.set_weights([rng.normal(0, 0.2, w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def model_path(name: str) -> Path:
    """The model's file; float ones are made (once) with TensorFlow; person_detect is rewritten by
    tractile (bias quantized dimension 0) so LiteRT loads it."""
    SCRATCH.mkdir(exist_ok=True)
    if name in MLPERF:
        return SHARED / "mlperf_tiny" / f"{name}.tflite"
    if name in FLOAT:
        path = SCRATCH / f"{name}.tflite"
        if not path.exists():
            import tensorflow as tf

            converter = tf.lite.TFLiteConverter.from_keras_model(keras_float_model(name))
            path.write_bytes(converter.convert())
        return path
    if name == "person_detect":
        from tractile.formats.tflite import load_tflite
        from tractile.formats.tflite.writer import write_model

        path = SCRATCH / "person_detect.tflite"
        path.write_bytes(write_model(load_tflite(SHARED / "tflite" / "person_detect.tflite")))
        return path
    return SHARED / "tflite" / f"{name}.tflite"


def litert_runner(path: Path, threads: int, values: list[np.ndarray]):
    """A function running LiteRT's interpreter (``threads`` threads) on ``values``, giving its outputs."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=threads)
    interpreter.allocate_tensors()
    details, outputs = interpreter.get_input_details(), interpreter.get_output_details()

    def run():
        for detail, value in zip(details, values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(o["index"]) for o in outputs]

    return run


def time_litert(path: Path, threads: int, values: list[np.ndarray], runs: int) -> tuple[float, float]:
    return median_time(litert_runner(path, threads, values), runs)


def bench(name: str, runs: int) -> dict:
    from tractile.compile import compile_model
    from tractile.formats.tflite import load_tflite

    path = model_path(name)
    model = load_tflite(path).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    compiled = compile_model(model, name=name)
    state = model.state()
    return {"compiled": median_time(lambda: compiled.run(values), runs),
            "interpreted": median_time(lambda: state.run(values), max(runs // 4, 10)),
            "litert1": time_litert(path, 1, values, runs), "litert2": time_litert(path, 2, values, runs)}


def bench_threads(name: str, threads: int, runs: int) -> dict:
    from tractile.compile import compile_model
    from tractile.formats.tflite import load_tflite

    path = model_path(name)
    model = load_tflite(path).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    compiled = compile_model(model, name=name)
    times, outputs = {}, {}
    for count in (1, threads):
        compiled.set_threads(count)
        outputs[count] = compiled.run(values)
        times[f"compiled{count}"] = median_time(lambda: compiled.run(values), runs)
    if not all(np.array_equal(a, b) for a, b in zip(outputs[1], outputs[threads])):
        raise AssertionError(f"{name}: outputs on {threads} threads differ from one thread's")
    times["litert1"] = time_litert(path, 1, values, runs)
    times[f"litert{threads}"] = time_litert(path, threads, values, runs)
    return times


def main_threads(models: list[str], threads: int, runs: int) -> None:
    header = (f"{'model':22} {'compiled 1t':>12} {f'compiled {threads}t':>12} {'speed-up':>9} {'LiteRT 1t':>10} "
              f"{f'LiteRT {threads}t':>10} {f'x LiteRT {threads}t':>12}")
    print("medians (us); speed-up: compiled 1t / compiled Nt (outputs checked equal)")
    print(header + "\n" + "-" * len(header))
    for name in models:
        try:
            t = {key: value[0] for key, value in bench_threads(name, threads, runs).items()}
        except Exception as error:  # a model one engine cannot run must not end the run
            print(f"{name:22} failed: {type(error).__name__}: {str(error)[:100]}")
            continue
        one, many = t["compiled1"], t[f"compiled{threads}"]
        print(f"{name:22} {one * 1e6:12.1f} {many * 1e6:12.1f} {one / many:8.2f}x {t['litert1'] * 1e6:10.1f} "
              f"{t[f'litert{threads}'] * 1e6:10.1f} {many / t[f'litert{threads}']:11.2f}x", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MLPERF + FLOAT + SHARED_TFLITE), help="comma-separated")
    parser.add_argument("--runs", type=int, default=200, help="timed runs per engine (median reported)")
    parser.add_argument("--threads", type=int, default=1,
                        help="compare the compiled code on 1 thread and on this many (and LiteRT likewise)")
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    if args.threads > 1:
        main_threads(args.models.split(","), args.threads, args.runs)
        print(f"load average after: {load_average()}")
        return 0
    header = (f"{'model':22} {'compiled':>9} {'interp.':>10} {'LiteRT 1t':>10} {'LiteRT 2t':>10} "
              f"{'x LiteRT 1t':>12} {'x LiteRT 2t':>12} {'x interp.':>10} {'best: x LiteRT 1t':>18}")
    print("medians (us) and ratios of medians; last column: ratio of the fastest runs")
    print(header + "\n" + "-" * len(header))
    for name in args.models.split(","):
        try:
            t = bench(name, args.runs)
        except Exception as error:  # a model one engine cannot run must not end the run
            print(f"{name:22} failed: {type(error).__name__}: {str(error)[:100]}")
            continue
        med = {key: value[0] for key, value in t.items()}
        ratios = [med["compiled"] / med[key] for key in ("litert1", "litert2", "interpreted")]
        print(f"{name:22} {med['compiled'] * 1e6:9.1f} {med['interpreted'] * 1e6:10.1f} {med['litert1'] * 1e6:10.1f} "
              f"{med['litert2'] * 1e6:10.1f} {ratios[0]:11.2f}x {ratios[1]:11.2f}x {ratios[2]:9.2f}x "
              f"{t['compiled'][1] / t['litert1'][1]:17.2f}x", flush=True)
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
