"""Lay out an MLServer model repository serving one ONNX file under a name.

usage: make_repo.py REPO_DIR MODEL.onnx NAME HTTP_PORT GRPC_PORT METRICS_PORT
"""

import json
import os
import shutil
import sys

repo, model, name, http_port, grpc_port, metrics_port = sys.argv[1:7]
here = os.path.dirname(os.path.abspath(__file__))
mdir = os.path.join(repo, name)
os.makedirs(mdir, exist_ok=True)
shutil.copy(os.path.join(here, "onnx_runtime.py"), mdir)
with open(os.path.join(repo, "settings.json"), "w") as f:
    json.dump(
        {
            "host": "127.0.0.1",
            "http_port": int(http_port),
            "grpc_port": int(grpc_port),
            "metrics_port": int(metrics_port),
            "parallel_workers": 0,
            "load_models_at_startup": True,
        },
        f,
    )
with open(os.path.join(mdir, "model-settings.json"), "w") as f:
    json.dump(
        {
            "name": name,
            "implementation": "onnx_runtime.OnnxRuntimeModel",
            "parameters": {"uri": os.path.abspath(model)},
        },
        f,
    )
