"""Drive `acceval serve` with the official Triton client (tritonclient.http), binary and
JSON tensors, and compare its outputs with `acceval run`'s on the same input.

usage: tritonclient_check.py HOST:PORT MODEL INPUT.npy EXPECTED.npz
Prints one JSON object: per mode, per output, the shape and the max abs difference.
Exits 1 when a request fails or an output differs.
"""

import json
import sys

import numpy as np
import tritonclient.http as httpclient

url, model, input_path, expected_path = sys.argv[1:5]
x = np.load(input_path)
expected = dict(np.load(expected_path))

client = httpclient.InferenceServerClient(url=url)
assert client.is_server_live(), "server not live"
assert client.is_model_ready(model), "model not ready"
meta = client.get_model_metadata(model)
name = meta["inputs"][0]["name"]

result = {"metadata": meta, "modes": {}}
ok = True
for mode, binary in (("binary", True), ("json", False)):
    inp = httpclient.InferInput(name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    outs = [httpclient.InferRequestedOutput(o["name"], binary_data=binary) for o in meta["outputs"]]
    r = client.infer(model, [inp], outputs=outs, request_id="tc-" + mode)
    per = {}
    for o in meta["outputs"]:
        got = r.as_numpy(o["name"])
        want = expected[o["name"]]
        same_shape = list(got.shape) == list(want.shape)
        diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if same_shape else None
        per[o["name"]] = {"shape": list(got.shape), "dtype": str(got.dtype), "max_abs_diff": diff}
        ok = ok and same_shape and diff == 0.0
    result["modes"][mode] = {"id": r.get_response().get("id"), "outputs": per}

# A bad request surfaces as the server's {"error"} text.
try:
    bad = httpclient.InferInput(name, [1, 2], "FP32")
    bad.set_data_from_numpy(np.zeros((1, 2), dtype=np.float32), binary_data=True)
    client.infer(model, [bad])
    result["bad_request"] = "accepted (wrong)"
    ok = False
except Exception as e:  # tritonclient raises InferenceServerException
    result["bad_request"] = str(e)

print(json.dumps(result))
sys.exit(0 if ok else 1)
