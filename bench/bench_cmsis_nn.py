"""tractile's generated code beside CMSIS-NN on the MLPerf Tiny models, layer by layer, on the
emulated Cortex-M4 (mps2-an386), counted the same way (QEMU -icount, SysTick, calibrated).

    python bench/bench_cmsis_nn.py --cmsis-nn PATH [--models kws,vww,ic,ad] [--opt speed|size]

PATH is a checkout of ARM-software/CMSIS-NN (``git clone https://github.com/ARM-software/CMSIS-NN``);
without one the benchmark says how to get one and exits 0.

tractile: the model compiled for the Cortex-M4 and verified bit for bit on a random input
(``tractile compile --target cortex-m4 --verify``), its instructions per node from the profiled
build. CMSIS-NN: one firmware per model whose ``layerN`` functions call CMSIS-NN's int8 kernels
(``arm_convolve_wrapper_s8``, ``arm_depthwise_conv_wrapper_s8``, ``arm_fully_connected_s8``,
``arm_elementwise_add_s8``, ``arm_avgpool_s8``/``arm_max_pool_s8``, ``arm_softmax_s8``) with the
layer's shapes and quantization as TFLite Micro's CMSIS-NN kernels prepare them, each on the
interpreter's value of its input for that same model input; every output is compared with the
interpreter's (TFLite Micro's flavour, as the Cortex-M targets compile). Both sides are built
with the firmware's flags (-O2 by default) by arm-none-eabi-gcc.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from cmsis_nn_layers import KERNELS, Layer, c_array, read_layers  # noqa: E402

MODELS_DIR = HERE.parent.parent / "shared" / "models" / "mlperf_tiny"
MODELS = {"kws": "kws_dscnn_int8", "vww": "vww_96_int8", "ic": "resnet8_int8", "ad": "ad01_int8"}
#: CMSIS-NN's sources the kernels above need (globs under Source/)
SOURCES = ("ConvolutionFunctions/*_s8*.c", "ConvolutionFunctions/arm_nn_mat_mult_kernel_s8_s16.c",
           "ConvolutionFunctions/arm_nn_mat_mult_kernel_row_offset_s8_s16.c",
           "ConvolutionFunctions/arm_nn_depthwise_conv_s8_core.c", "ConvolutionFunctions/arm_nn_mat_mult_s8.c",
           "FullyConnectedFunctions/*_s8*.c", "NNSupportFunctions/*.c", "BasicMathFunctions/arm_elementwise_add_s8.c",
           "PoolingFunctions/*_s8*.c", "PoolingFunctions/arm_avgpool_get_buffer_sizes_s8.c",
           "SoftmaxFunctions/arm_softmax_s8.c", "SoftmaxFunctions/arm_nn_softmax_common_s8.c")
#: the files of other types (int4, int16, float) the int8 kernels do not need
OTHER_TYPES = re.compile(r"_s4|f16|f32|_s32|^(?!.*s8).*s16")
HOW_TO_GET = ("CMSIS-NN is not here: give a checkout with --cmsis-nn PATH, e.g.\n"
              "  git clone https://github.com/ARM-software/CMSIS-NN /tmp/cmsis-nn\n"
              "  python bench/bench_cmsis_nn.py --cmsis-nn /tmp/cmsis-nn\n"
              "skipped: no CMSIS-NN checkout")


def cmsis_objects(root: Path, flags: list[str], cache: Path) -> list[Path]:
    """CMSIS-NN's int8 kernels compiled once per checkout and flags (cached)."""
    sources = sorted({p for pattern in SOURCES for p in (root / "Source").glob(pattern)
                      if not OTHER_TYPES.search(p.name)})
    key = hashlib.sha256((str(root.resolve()) + " ".join(flags)).encode()).hexdigest()[:12]
    folder = cache / f"cmsis-nn-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    objects = []
    for source in sources:
        target = folder / (source.stem + ".o")
        if not target.exists():
            done = subprocess.run(["arm-none-eabi-gcc", *flags, "-I", str(root / "Include"), "-c", str(source),
                                   "-o", str(target)], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"building {source.name} failed:\n{done.stderr[-2000:]}")
        objects.append(target)
    return objects


def main_source(layers: list[Layer], inputs: dict[str, np.ndarray], scratch: int) -> str:
    """``main.c``: each layer timed by the SysTick clock, its output printed (run = layer index)."""
    lines = ['#include <stdint.h>', '#include <string.h>', '#include "arm_nnfunctions.h"', '#include "tl_platform.h"',
             f"static int8_t scratch[{scratch}] __attribute__((aligned(8)));"]
    largest = max(int(np.prod(layer.output_shape)) for layer in layers)
    lines.append(f"static int8_t output_buffer[{largest}] __attribute__((aligned(8)));")
    for layer in layers:
        lines += layer.constants
        for slot, name in enumerate(layer.input_names):
            lines.append(c_array(f"layer{layer.index}_in{slot}", inputs[name], "int8_t"))
        lines.append(f"static int layer{layer.index}(const int8_t *input, const int8_t *input_b, int8_t *output) {{\n"
                     f"  (void)input_b;\n{layer.body}}}")
    calls = []
    for layer in layers:
        second = f"layer{layer.index}_in1" if len(layer.input_names) > 1 else "NULL"
        count = int(np.prod(layer.output_shape))
        calls.append(f"  start = tl_clock();\n  status = layer{layer.index}(layer{layer.index}_in0, {second}, "
                     f"output_buffer);\n  ticks = tl_clock() - start;\n"
                     f"  report({layer.index}, status, ticks, {count});")
    lines.append(REPORT)
    lines.append("int main(void) {\n  uint64_t start, ticks;\n  int status;\n  tl_platform_init();\n"
                 + "\n".join(calls) + "\n  start = tl_clock();\n  tl_calibration_loop();\n"
                 "  tl_write(\"k \");\n  put_u64(tl_clock() - start);\n  tl_write(\"\\ne\\n\");\n  return 0;\n}")
    return "\n".join(lines) + "\n"


REPORT = r"""
static void put_u64(uint64_t value) {
  char text[24];
  int at = 23;
  text[at] = 0;
  do {
    text[--at] = (char)('0' + (int)(value % 10u));
    value /= 10u;
  } while (value);
  tl_write(text + at);
}
/* as the test firmware prints: o RUN PART HEX (run = layer), n LAYER TICKS, f LAYER STATUS */
static void report(int layer, int status, uint64_t ticks, int count) {
  static const char digits[] = "0123456789abcdef";
  char text[2 * 48 + 2];
  int at = 0, i, part = 0;
  for (i = 0; i < count; ++i) {
    text[at++] = digits[(uint8_t)output_buffer[i] >> 4];
    text[at++] = digits[(uint8_t)output_buffer[i] & 15];
    if (at == 2 * 48 || i + 1 == count) {
      text[at++] = '\n';
      text[at] = 0;
      tl_write("o "); put_u64((uint64_t)layer); tl_write(" "); put_u64((uint64_t)part++); tl_write(" ");
      tl_write(text);
      at = 0;
    }
  }
  tl_write("n "); put_u64((uint64_t)layer); tl_write(" "); put_u64(ticks); tl_write("\n");
  if (status) { tl_write("f "); put_u64((uint64_t)layer); tl_write(" "); put_u64((uint64_t)status); tl_write("\n"); }
}
"""


def reference_values(path: Path, x: np.ndarray, names: set[str]) -> dict[str, np.ndarray]:
    """The interpreter's value of every named TFLite tensor (TFLite Micro's flavour) for input ``x``."""
    import tractile
    from tractile.compile.targets.verify import with_flavour
    from tractile.graph import OutletId

    model = with_flavour(tractile.load(path), "micro")
    by_name = {node.name: node.id for node in model.nodes}
    found = sorted(name for name in names if name in by_name)
    outlets = [OutletId(by_name[name], 0) for name in found]
    values = model.plan(outlets).state().run([x])
    return {name: np.asarray(value) for name, value in zip(found, values)}


def run_cmsis(layers: list[Layer], values: dict[str, np.ndarray], root: Path, opt: str, folder: Path):
    from tractile.compile.targets.boards import board_for
    from tractile.compile.targets.firmware import OPT_FLAGS, Firmware, run_emulator
    from tractile.compile.targets.harness import CALIBRATION, platform_header
    from tractile.compile.targets.startup import CORTEX_M_STARTUP, linker_script

    board = board_for("cortex-m4")
    flags = [*board.flags, *OPT_FLAGS[opt], "-ffunction-sections", "-fdata-sections"]
    objects = cmsis_objects(root, flags, Path(tempfile.gettempdir()))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tl_platform.h").write_text(platform_header(board))
    (folder / "startup.c").write_text(CORTEX_M_STARTUP)
    (folder / "main.c").write_text(main_source(layers, values, 64 * 1024))
    (folder / "link.ld").write_text(linker_script(board, 64 * 1024))
    for name in ("main", "startup"):
        done = subprocess.run(["arm-none-eabi-gcc", *flags, "-std=gnu99", "-I", str(root / "Include"), "-I",
                               str(folder), "-c", f"{name}.c", "-o", f"{name}.o"], cwd=folder, capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"building {name}.c failed:\n{done.stderr[-3000:]}")
    done = subprocess.run(["arm-none-eabi-gcc", *flags, "--specs=nano.specs", "-nostartfiles", "-T", "link.ld",
                           "main.o", "startup.o", *map(str, objects), "-o", "firmware.elf", "-Wl,--gc-sections",
                           "-lm"], cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"linking the CMSIS-NN firmware failed:\n{done.stderr[-3000:]}")
    built = Firmware(folder, folder / "firmware.elf", board, 0, 0, 0, stack_bytes=64 * 1024)
    console = run_emulator(built, timeout=900)
    per_tick = CALIBRATION / console.calibration_ticks
    return console, per_tick


def bench_model(short: str, root: Path, opt: str, seed: int) -> tuple[int, int, int]:
    import tractile
    from tractile.compile.targets.verify import verify

    path = MODELS_DIR / f"{MODELS[short]}.tflite"
    layers = read_layers(path)
    model = tractile.load(path)
    fact = model.input_fact(0)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, tuple(int(d) for d in fact.shape)).astype(np.int8)
    names = {n for layer in layers for n in layer.input_names} | {layer.output_name for layer in layers}
    values = reference_values(path, x, names)
    input_name = model.input_names()[0]
    values[input_name] = x
    missing = [n for n in names if n not in values]
    if missing:
        raise SystemExit(f"{short}: no interpreter value for {missing[:3]}")
    report = verify(model, "cortex-m4", runs=0, inputs=[[x]], opt=opt,
                    folder=tempfile.mkdtemp(prefix=f"bench-cmsis-{short}-"), timeout=900)
    ours = {layer["name"].removesuffix(".pre"): layer["count"] for layer in report["layers"]}
    console, per_tick = run_cmsis(layers, values, root, opt, Path(tempfile.mkdtemp(prefix=f"bench-cmsis-nn-{short}-")))
    print(f"\n{short} ({path.name}): tractile verified {report['verified']}, "
          f"{report['cycles_per_inference']:,} instructions per inference")
    header = f"{'layer':>5} {'kernel':30} {'shape':34} {'MACs':>9} {'tractile':>10} {'CMSIS-NN':>10} {'ratio':>6} ok"
    print(header)
    print("-" * len(header))
    total_ours = total_theirs = 0
    for layer in layers:
        want = values[layer.output_name].reshape(-1).astype(np.int8)
        got = np.frombuffer(console.outputs.get(layer.index, b""), np.int8)
        ok = got.size == want.size and np.array_equal(got, want) and layer.index not in console.failures
        theirs = round(console.node_ticks.get(layer.index, 0) * per_tick)
        mine = ours.get(layer.output_name)
        total_theirs += theirs
        total_ours += mine or 0
        ratio = f"{mine / theirs:6.2f}" if mine and theirs else "     -"
        mine_text = f"{mine:>10,}" if mine is not None else f"{'fused':>10}"
        print(f"{layer.index:5} {KERNELS[layer.kind]:30} {layer.shape_text[:34]:34} {layer.macs:9,} {mine_text} "
              f"{theirs:>10,} {ratio} {'yes' if ok else 'NO'}")
        if not ok and got.size == want.size:
            differ = (got != want).reshape(-1, layer.output_shape[-1])
            channels = np.flatnonzero(differ.any(axis=0))
            largest = int(np.abs(got.astype(np.int32) - want.astype(np.int32)).max())
            print(f"      CMSIS-NN differs from the interpreter on {int(differ.sum())} values, channels "
                  f"{channels.tolist()[:8]}, by up to {largest}")
        elif not ok:
            print(f"      CMSIS-NN printed {got.size} values, the layer has {want.size}")
    print(f"{'':5} {'these layers':30} {'':34} {'':9} {total_ours:>10,} {total_theirs:>10,} "
          f"{total_ours / max(total_theirs, 1):6.2f}")
    return total_ours, total_theirs, report["cycles_per_inference"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmsis-nn", metavar="PATH", help="a checkout of ARM-software/CMSIS-NN")
    parser.add_argument("--models", default="kws,vww,ic,ad", help="comma-separated: kws, vww, ic, ad")
    parser.add_argument("--opt", default="speed", choices=("speed", "size"), help="-O2 (speed) or -Os (size)")
    parser.add_argument("--seed", type=int, default=0, help="of the random model input")
    args = parser.parse_args(argv)
    root = Path(args.cmsis_nn) if args.cmsis_nn else None
    if root is None or not (root / "Include" / "arm_nnfunctions.h").exists():
        print(HOW_TO_GET)
        return 0
    release = re.search(r'<release version="([^"]+)"', (root / "ARM.CMSIS-NN.pdsc").read_text()) \
        if (root / "ARM.CMSIS-NN.pdsc").exists() else None
    print(f"CMSIS-NN {release.group(1) if release else '(version unknown)'} from {root}, "
          f"arm-none-eabi-gcc -O{'2' if args.opt == 'speed' else 's'}, QEMU mps2-an386 -icount")
    totals = {}
    for short in args.models.split(","):
        if not (MODELS_DIR / f"{MODELS[short]}.tflite").exists():
            print(f"skipped {short}: {MODELS_DIR} has no {MODELS[short]}.tflite")
            continue
        totals[short] = bench_model(short, root, args.opt, args.seed)
    print(f"\n{'model':6} {'tractile (layers)':>18} {'CMSIS-NN (layers)':>18} {'ratio':>6} {'tractile (model)':>17}")
    for short, (ours, theirs, whole) in totals.items():
        print(f"{short:6} {ours:>18,} {theirs:>18,} {ours / max(theirs, 1):6.2f} {whole:>17,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
