"""An MLServer custom runtime that runs an ONNX model with onnxruntime on the CPU: a real
third-party KServe v2 server for `acceval qps` to measure (tests/serve.rs)."""

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(
            self.settings.parameters.uri, opts, providers=["CPUExecutionProvider"]
        )
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {i.name: NumpyCodec.decode_input(i).astype(np.float32) for i in payload.inputs}
        values = self.session.run(None, feeds)
        outputs = [
            NumpyCodec.encode_output(name=o.name, payload=v)
            for o, v in zip(self.session.get_outputs(), values)
        ]
        return InferenceResponse(model_name=self.name, id=payload.id, outputs=outputs)
